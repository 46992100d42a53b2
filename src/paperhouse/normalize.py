"""Text normalisation as Polars expressions, so it runs vectorised over every record.

Two levels:
- ``clean_text``: what a reader sees: hard-wrapped lines joined, whitespace collapsed.
- ``normalized_text``: what matching sees: Unicode NFKC, markup (``*x*``, ``_x_``,
  ``\\textit{x}``, ``$x$``, backticks) stripped, quote and dash variants unified,
  lower case. Two records with the same normalised text are exact duplicates.
"""

from __future__ import annotations

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
