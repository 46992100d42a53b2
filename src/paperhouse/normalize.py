"""Text normalisation as Polars expressions, so it runs vectorised over every record.

Repairs of scraped text come first (``only_where`` runs each on the rows that need it):
- ``strip_controls``: stray C0/C1 control characters dropped (information separators become a
  space; tab, line breaks, vertical tab, form feed and NEL are whitespace and stay).
- ``decode_entities``: HTML/XML character references decoded as ``html.unescape`` does, again
  while that changes the text (``&amp;quot;`` is ``"``).
- ``strip_tags``: HTML, JATS and MathML tags dropped, their inner text kept; block tags (``<p>``,
  ``<br/>``, ``<li>``, ...) become a space.

Then two levels:
- ``clean_text``: what a reader sees: hard-wrapped lines joined, whitespace collapsed.
- ``normalized_text``: what matching sees: Unicode NFKC, markup (``*x*``, ``_x_``,
  ``\\textit{x}``, ``$x$``, backticks) stripped, quote and dash variants unified,
  lower case. Two records with the same normalised text are exact duplicates.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import polars as pl

_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u0060\u00b4"  # single-quote look-alikes
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"

# Characters a text may hold and still be its own NFKC form, as each of them is, with combining class 0
# and combining with no character before it: ASCII, and the dashes and quotes abstracts are full of.
NFKC_STABLE = r"\x00-\x7f\u2010\u2012-\u2015\u2018-\u201f"
# Whitespace that collapses into one space: every run of it except a lone space. The same text as
# replacing each run of whitespace, several times faster, as most runs are a lone space left alone.
_COLLAPSIBLE_WHITESPACE = r"\s{2,}|[^\S ]"
# Words, as matching sees them: runs of letters and digits.
_WORD_CHARACTERS = r"\p{L}\p{N}"
WORD_PATTERN = f"[{_WORD_CHARACTERS}]+"
# What separates words, each run of it becoming one space: every run except a lone space, left as
# it is (the same text as replacing every run, about 3 times faster: most runs are a lone space).
_BETWEEN_WORDS = f"[^{_WORD_CHARACTERS}]{{2,}}|[^{_WORD_CHARACTERS} ]"

# Control characters that are no text: the C0 and C1 controls but the whitespace ones (tab, line
# feed, vertical tab, form feed, carriage return, NEL), which ``clean_text`` turns into spaces.
CONTROL_CHARACTERS = r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]"
# The information separators (Python's whitespace) become a space; the other controls go.
_SEPARATOR_CONTROLS = r"[\x1c-\x1f]"
_STRAY_CONTROLS = r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]"
# What may start a character reference ``html.unescape`` decodes: "&#", or "&" and two name
# characters (the shortest entity names); "R&D" and "Q&A" are no candidates.
ENTITY_CANDIDATE = r"&(?:#|[A-Za-z][A-Za-z0-9])"
# Double escaping is undone this many times at most ("&amp;amp;lt;" is three).
_ENTITY_ROUNDS = 3
# Tags by name, so that "n<k and m>1" stays: block tags become a space, inline ones nothing
# ("H<sub>2</sub>O" is H2O). Any tag may carry a namespace (jats:p, mml:mi); attributes need a
# value, and any namespaced tag not named here counts as inline.
_BLOCK_TAGS = (
    "address|article|blockquote|br|break|caption|dd|div|dl|dt|figcaption|figure|footer|h[1-6]|header|hr"
    "|li|list|list-item|ol|p|pre|sec|section|table|tbody|td|tfoot|th|thead|title|tr|ul"
)
_INLINE_TAGS = (
    "a|abbr|annotation|b|bdi|bdo|big|bold|cite|code|del|dfn|em|font|i|img|inline-formula|ins|italic|kbd"
    "|mark|math|mfrac|mi|mn|mo|monospace|mover|mroot|mrow|ms|mspace|msqrt|mstyle|msub|msubsup|msup"
    "|mtext|munder|munderover|q|s|samp|sc|semantics|small|span|strike|strong|sub|sup|tex-math|tt|u"
    "|underline|var|wbr"
)
_NAMESPACE = r"(?:[A-Za-z][\w.-]*:)?"
_TAG_END = r"""(?:\s+[A-Za-z_:][\w:.-]*\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'<>=]+))*\s*/?>"""
_BLOCK_TAG = f"</?{_NAMESPACE}(?i:{_BLOCK_TAGS}){_TAG_END}"
_INLINE_TAG = rf"</?(?:{_NAMESPACE}(?i:{_INLINE_TAGS})|[A-Za-z][\w.-]*:[A-Za-z][\w.-]*){_TAG_END}|(?s:<!--.*?-->)"


def rows_where(needed: pl.Expr, text: pl.Expr) -> pl.Expr:
    """``text`` on the rows where ``needed`` holds, the others null *and* empty: a null row keeps
    its string, which a regular expression still scans (when 1 row in 100 needed a repair, the
    repair cost as much as on all of them), while Python is not called for null rows."""
    return pl.when(needed).then(pl.when(needed).then(text).otherwise(pl.lit("")))


def only_where(
    needed: pl.Expr, text: pl.Expr, repair: Callable[[pl.Expr], pl.Expr], otherwise: pl.Expr | None = None
) -> pl.Expr:
    """``repair(text)`` on the rows where ``needed`` holds, ``otherwise`` (``text``) elsewhere, at
    the cost of the rows repaired: most abstracts need no repair at all."""
    return pl.when(needed).then(repair(rows_where(needed, text))).otherwise(text if otherwise is None else otherwise)


def strip_controls(text: pl.Expr) -> pl.Expr:
    return text.str.replace_all(_SEPARATOR_CONTROLS, " ").str.replace_all(_STRAY_CONTROLS, "")


def decode_entities(text: pl.Expr) -> pl.Expr:
    """In Python, one text at a time: hand it only the rows holding an ``ENTITY_CANDIDATE``."""
    return text.map_elements(_unescape, return_dtype=pl.String, skip_nulls=True)


def _unescape(text: str) -> str:
    for _ in range(_ENTITY_ROUNDS):
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
        if "&" not in text:  # nothing left to decode: spare the round that would say so
            break
    return text


def strip_tags(text: pl.Expr) -> pl.Expr:
    return text.str.replace_all(_BLOCK_TAG, " ").str.replace_all(_INLINE_TAG, "")


def clean_text(text: pl.Expr) -> pl.Expr:
    """Join hard-wrapped lines (a line break inside a paragraph is a space) and trim."""
    return text.str.replace_all(_COLLAPSIBLE_WHITESPACE, " ").str.strip_chars()


def normalized_text(text: pl.Expr) -> pl.Expr:
    return clean_text(strip_markup(text)).str.to_lowercase()


def strip_markup(text: pl.Expr) -> pl.Expr:
    """NFKC, LaTeX and Markdown markup removed, quotes and dashes unified; case kept."""
    expr = _nfkc(text)
    # LaTeX: \textit{x} -> x (repeated twice for one level of nesting), then bare commands.
    for _ in range(2):
        expr = expr.str.replace_all(r"\\[A-Za-z]+\*?\{([^{}]*)\}", "$1")
    expr = (
        expr.str.replace_all(r"\\[A-Za-z]+\*?", " ")
        .str.replace_all(r"[{}$]", "")
        # Markdown emphasis and code: *x*, **x**, _x_, `x` (underscores inside words stay).
        .str.replace_all(r"[*`]+", "")
        .str.replace_all(r"(^|[^\p{L}\p{N}])_+|_+([^\p{L}\p{N}]|$)", "$1$2")
        .str.replace_all(f"[{_QUOTES}]", "'")
        .str.replace_all(f"[{_DOUBLE_QUOTES}]", '"')
        .str.replace_all(f"[{_DASHES}]+|-{{2,}}", "-")
        .str.replace_all(r"(\p{L})-\s+(\p{Ll})", "$1-$2")  # a hyphen at a hard wrap: "fine-\n tuning"
        .str.replace_all(r"(\.\s*){3,}$|…$", "")  # a trailing ellipsis marks truncation, not text
    )
    return expr


def _nfkc(text: pl.Expr) -> pl.Expr:
    """Unicode NFKC, run only on texts holding a character outside ``NFKC_STABLE`` (the others are
    null in the column handed to it, so it skips them): most abstracts need no change at all."""
    might_change = text.str.contains(f"[^{NFKC_STABLE}]")
    return pl.coalesce(pl.when(might_change).then(text).str.normalize("NFKC"), text)


def words(normalized: pl.Expr) -> pl.Expr:
    """The list of words of a normalised text (punctuation dropped)."""
    return normalized.str.extract_all(WORD_PATTERN)


def joined_words(normalized: pl.Expr) -> pl.Expr:
    """``words`` joined by single spaces, without building the lists (a third faster, and a million
    texts' lists are gigabytes)."""
    return normalized.str.replace_all(_BETWEEN_WORDS, " ").str.strip_chars(" ")
