"""Text normalisation as Polars expressions, so it runs vectorised over every record.

Repairs of scraped text come first (``only_where`` runs each on the rows that need it):
- ``strip_controls``: stray C0/C1 control characters dropped (information separators become a
  space; tab, line breaks, vertical tab, form feed and NEL are whitespace and stay).
- ``decode_entities``: HTML/XML character references decoded as ``html.unescape`` does, again
  while that changes the text (``&amp;quot;`` is ``"``); a name without its semicolon only when no
  letter or digit follows it (``&gt 0``, never the ``&not`` of ``&notation``).
- ``repair_entities``: what readers run: ``decode_entities``, and also references a scrape broke,
  ``&amp;`` split by whitespace or a hard wrap (``& gt;``, ``&\ngt;``), the usual names left
  without their semicolon (``&mdash``, ``&rsquo``), ``&AMP``/``&Nbsp`` in any case.
- ``strip_tags``: HTML, JATS and MathML tags dropped, their inner text kept; block tags (``<p>``,
  ``<br/>``, ``<li>``, ...) become a space. ``strip_tag_markup`` also drops the older notation of
  IEEE/INSPEC abstracts (``H/sub 2/``, ``10/sup -3/``, ``/spl alpha/``), as ``<sub>`` would be.

Then two levels:
- ``clean_text``: what a reader sees: hard-wrapped lines joined, whitespace collapsed.
- ``normalized_text``: what matching sees: Unicode NFKC, markup (``*x*``, ``_x_``,
  ``\\textit{x}``, ``$x$``, backticks) stripped, quote and dash variants unified,
  lower case. Two records with the same normalised text are exact duplicates.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from html.entities import html5

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
# What may start a character reference: "&#", or "&" and two name characters (the shortest
# entity names), whitespace between them allowed (a scrape's "& gt;", a hard wrap's "&\ngt;");
# "R&D" and "Q&A" are no candidates.
ENTITY_CANDIDATE = r"&\s*(?:#|[A-Za-z][A-Za-z0-9])"
# Double escaping is undone this many times at most ("&amp;amp;lt;" is three; scrapes of scrapes
# reach five). Each round only shortens the text; the bound keeps a pathological one cheap.
_ENTITY_ROUNDS = 8
# A character reference as a scrape leaves it: numeric, or a name, with or without its semicolon.
# The name takes every letter and digit there is, so "&notation" is a name ("notation", none),
# not "&not" and "ation" as ``html.unescape`` reads it.
_REFERENCE = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{1,31})(;?)")
# Names scrapes leave without their semicolon that ``html.unescape`` only decodes with it (it
# decodes the 106 legacy names, ``&gt``, ``&amp``, ``&nbsp``, ``&eacute``, without): punctuation,
# spaces, arrows, relations and Greek letters.
_NAMES_WITHOUT_SEMICOLON = frozenset(
    """apos mdash ndash hellip rsquo lsquo rdquo ldquo sbquo bdquo lsaquo rsaquo bull prime Prime minus thinsp
    ensp emsp zwnj zwj lrm rlm trade euro dagger Dagger permil larr rarr harr uarr darr lArr rArr hArr asymp
    equiv infin notin isin sdot oline frasl lowast radic prop le ge ne alpha beta gamma delta epsilon zeta eta
    theta iota kappa lambda mu nu xi omicron pi rho sigma sigmaf tau upsilon phi chi psi omega Alpha Beta Gamma
    Delta Epsilon Zeta Eta Theta Iota Kappa Lambda Mu Nu Xi Omicron Pi Rho Sigma Tau Upsilon Phi Chi Psi
    Omega""".split()
)
# The names of markup itself, decoded whatever their case ("&AMP;" and "&Nbsp" too): a scrape
# that wrote them otherwise still meant them.
_CASELESS_NAMES = {name: html5[f"{name};"] for name in ("amp", "lt", "gt", "quot", "apos", "nbsp")}
# A reference split by whitespace, a scrape's "& gt;" or a hard wrap's "&\ngt;" (also what is
# left of "&amp; gt;"), joined again: only these names, and the semicolon needed.
_SPLIT_REFERENCE = re.compile(r"&\s+(amp|lt|gt|quot|apos|nbsp|#[0-9]+|#[xX][0-9a-fA-F]+)\s*;", re.IGNORECASE)
# Tags by name, so that "n<k and m>1" stays: block tags become a space, inline ones nothing
# ("H<sub>2</sub>O" is H2O). HTML's, JATS' and MathML's. Any tag may carry a namespace (jats:p,
# mml:mi); attributes need a value (but for a few of HTML's), and any namespaced tag not named
# here counts as inline.
_BLOCK_TAGS = (
    "abstract|ack|address|article|article-title|aside|blockquote|body|boxed-text|br|break|caption|center|col"
    "|colgroup|dd|def|def-item|def-list|disp-formula|disp-quote|div|dl|dt|fig|figcaption|figure|fn|footer"
    "|h[1-6]|head|header|hr|html|kwd|kwd-group|label|li|list|list-item|main|mlabeledtr|mtable|mtd|mtr|nav|ol|p"
    "|pre|ref|ref-list|sec|section|statement|table|table-wrap|tbody|td|tfoot|th|thead|title|title-group"
    "|trans-abstract|tr|ul"
)
_INLINE_TAGS = (
    "a|abbr|abbrev|alternatives|annotation|annotation-xml|b|bdi|bdo|big|bold|chem-struct|cite|code|del|dfn"
    "|em|email|ext-link|font|i|img|inline-formula|inline-graphic|ins|italic|kbd|maction|maligngroup"
    "|malignmark|mark|math|menclose|merror|mfenced|mfrac|mglyph|mi|mmultiscripts|mn|mo|monospace|mover"
    "|mpadded|mphantom|mprescripts|mroot|mrow|ms|mspace|msqrt|mstyle|msub|msubsup|msup|mtext|munder"
    "|munderover|named-content|nobr|overline|q|roman|s|samp|sans-serif|sc|semantics|small|span|strike"
    "|strong|styled-content|sub|sup|tex-math|tt|u|underline|uri|var|wbr|xref"
)
_NAMESPACE = r"(?:[A-Za-z][\w.-]*:)?"
# Attributes: a name and a value, or one of the few HTML attributes that stand alone ("<b and c>"
# stays text: "and" is none of them).
_BOOLEAN_ATTRIBUTES = "allowfullscreen|async|checked|compact|defer|disabled|hidden|ismap|nowrap|noshade|open|selected"
_ATTRIBUTE = rf"""\s+(?:[A-Za-z_:][\w:.-]*\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'<>=]+)|(?i:{_BOOLEAN_ATTRIBUTES})\b)"""
_TAG_END = rf"(?:{_ATTRIBUTE})*\s*/?\s*>"
_BLOCK_TAG = f"</?{_NAMESPACE}(?i:{_BLOCK_TAGS}){_TAG_END}"
# Also comments, processing instructions, a doctype and CDATA's brackets (its text kept).
_INLINE_TAG = (
    rf"</?(?:{_NAMESPACE}(?i:{_INLINE_TAGS})|[A-Za-z][\w.-]*:[A-Za-z][\w.-]*){_TAG_END}"
    r"|(?s:<!--.*?-->)|<\?[A-Za-z][^<>]*\?>|<!(?i:doctype)[^<>]*>|<!\[CDATA\[|\]\]>"
)
# What may hold a tag, or the notation IEEE/INSPEC abstracts use for sub- and superscripts and
# symbols: "H/sub 2/", "10/sup -3/", "/spl alpha/".
TAG_CANDIDATE = r"<|\]\]>|/(?:sub|sup|spl) "
_SCRIPT_NOTATION = r"/su[bp] ([^/\n]{1,40}?) ?/"
_SYMBOL_NOTATION = r"/spl ([A-Za-z]{1,32}) ?/"


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
    return text.map_elements(unescape, return_dtype=pl.String, skip_nulls=True)


def repair_entities(text: pl.Expr) -> pl.Expr:
    """``decode_entities``, and the references scrapes break (``repair_entities_of``); what every
    reader runs on every text column. Also only on the rows holding an ``ENTITY_CANDIDATE``."""
    return text.map_elements(repair_entities_of, return_dtype=pl.String, skip_nulls=True)


def unescape(text: str) -> str:
    """Character references decoded until none is left (double escaping undone)."""
    return _until_unchanged(text, _decoded)


def repair_entities_of(text: str) -> str:
    """``unescape``, with the references a scrape broke: split by whitespace (``& gt;``, also
    after a round, ``&amp; gt;``), usual names without their semicolon (``&mdash``), the markup
    names in any case (``&AMP;``)."""
    return _until_unchanged(text, lambda text: _decoded(_SPLIT_REFERENCE.sub(r"&\1;", text), repair=True))


def _until_unchanged(text: str, decode: Callable[[str], str]) -> str:
    for _ in range(_ENTITY_ROUNDS):
        if "&" not in text:  # nothing (left) to decode: spare the round that would say so
            break
        decoded = decode(text)
        if decoded == text:
            break
        text = decoded
    return text


def _decoded(text: str, repair: bool = False) -> str:
    """One round: each reference decoded once, so "&amp;gt;" is "&gt;" (the next round's)."""
    return _REFERENCE.sub(lambda match: _character(match, repair), text)


def _character(match: re.Match, repair: bool) -> str:
    name, semicolon = match.groups()
    if name[0] == "#":
        return html.unescape(match.group(0))  # code points as HTML reads them: 0x80-0x9f as Windows-1252
    if semicolon and f"{name};" in html5:
        return html5[f"{name};"]
    if not semicolon and name in html5:  # a legacy name: &gt, &amp, &nbsp, &eacute
        return html5[name]
    letters = name.rstrip("0123456789")
    if not semicolon and letters != name and letters in html5:  # "&gt90%", "p&lt0.05"
        return html5[letters] + name[len(letters) :]
    if repair:
        if not semicolon and name in _NAMES_WITHOUT_SEMICOLON:
            return html5[f"{name};"]
        if name.lower() in _CASELESS_NAMES:
            return _CASELESS_NAMES[name.lower()]
        # "&ampgt;" is "&amp;gt;" that lost a semicolon: the next round decodes "&gt;".
        rest = name[3:]
        if name[:3].lower() == "amp" and (f"{rest};" in html5 or rest in html5 or rest in _NAMES_WITHOUT_SEMICOLON):
            return f"&{rest}{semicolon}"
    return match.group(0)


def strip_tags(text: pl.Expr) -> pl.Expr:
    return text.str.replace_all(_BLOCK_TAG, " ").str.replace_all(_INLINE_TAG, "")


def strip_tag_markup(text: pl.Expr) -> pl.Expr:
    """``strip_tags``, and the notation of IEEE/INSPEC abstracts: a sub- or superscript's text kept
    in place as ``<sub>``'s is ("Si/sub 10/" is "Si10"), a symbol as its character ("/spl alpha/"
    is "α", an unknown name its name). For the rows holding a ``TAG_CANDIDATE``."""
    symbols = text.str.contains(_SYMBOL_NOTATION)
    with_symbols = only_where(
        symbols, text, lambda rows: rows.map_elements(_symbols, return_dtype=pl.String, skip_nulls=True)
    )
    return strip_tags(with_symbols).str.replace_all(_SCRIPT_NOTATION, "$1")


def _symbols(text: str) -> str:
    return re.sub(_SYMBOL_NOTATION, lambda match: html5.get(f"{match.group(1)};", match.group(1)), text)


def repair_text(text: pl.Expr) -> pl.Expr:
    """A text column repaired as abstracts are (``paperhouse.ingest.judging``): control characters,
    entities, tags, whitespace; each repair only on the rows that need it."""
    text = only_where(text.str.contains(CONTROL_CHARACTERS), text, strip_controls)
    text = only_where(text.str.contains(ENTITY_CANDIDATE), text, repair_entities)
    text = only_where(text.str.contains(TAG_CANDIDATE), text, strip_tag_markup)
    return clean_text(text)


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
