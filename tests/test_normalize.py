import unicodedata

import polars as pl
import pytest
from polars.testing import assert_series_equal

from corpus import awkward_texts, seed_abstracts
from paperhouse.normalize import NFKC_STABLE, _nfkc, clean_text, joined_words, normalized_text, words

BASE = "We propose test-time correction of reasoning, a lightweight method - it works."


@pytest.mark.parametrize(
    "variant",
    [
        "We  propose\ntest-time correction of reasoning, a lightweight method - it works.",  # whitespace, wrap
        "We propose *test-time* correction of _reasoning_, a lightweight method - it works.",  # markdown
        "We propose \\textit{test-time} correction of \\emph{reasoning}, a lightweight method - it works.",  # LaTeX
        "We propose test‐time correction of reasoning, a lightweight method — it works.",  # dash variants
        "We propose test-time correction of reasoning, a lightweight method --- it works.",
        "ＷＥ propose test-time correction of reasoning, a lightweight method - it works.",  # NFKC full width
        "We propose test-\ntime correction of reasoning, a lightweight method - it works.",  # hyphen at wrap
    ],
)
def test_variants_normalise_to_the_same_text(variant):
    frame = pl.DataFrame({"text": [BASE, variant]}).select(normalized_text(clean_text(pl.col("text"))))
    assert frame["text"][0] == frame["text"][1]


def test_quotes_are_unified_and_math_markup_dropped():
    frame = pl.DataFrame({"text": ["“Harmless” ‘divergences’ of $n$-gram models"]})
    assert frame.select(normalized_text(pl.col("text")))["text"][0] == "\"harmless\" 'divergences' of n-gram models"


def test_trailing_ellipsis_marks_truncation_not_text():
    frame = pl.DataFrame({"text": ["The results hold ...", "The results hold…"]})
    assert frame.select(normalized_text(pl.col("text")))["text"].to_list() == ["the results hold"] * 2


def texts_to_compare() -> pl.DataFrame:
    """The bundled abstracts, awkward texts (each whole and each line), and every pair of whitespace characters."""
    whitespace = [chr(c) for c in range(0x3001) if chr(c).isspace()]
    awkward = awkward_texts()
    texts = [*seed_abstracts(), *awkward, *(line for text in awkward for line in text.splitlines())]
    texts += [f"a{x}{y}b{x}" for x in whitespace for y in ["", *whitespace]]
    return pl.DataFrame({"text": texts + [None]})


def test_clean_text_collapses_whitespace_runs_as_the_plain_pattern_does():
    plain = pl.col("text").str.replace_all(r"\s+", " ").str.strip_chars()
    frame = texts_to_compare().select(fast=clean_text(pl.col("text")), plain=plain)
    assert_series_equal(frame["fast"], frame["plain"], check_names=False)


def test_joined_words_are_the_words_joined_by_spaces():
    texts = texts_to_compare().vstack(pl.DataFrame({"text": ["", " -- ", "α-β 3.5x, (ok)!", "  lead and trail  "]}))
    frame = texts.select(
        fast=joined_words(normalized_text(pl.col("text"))), plain=words(normalized_text(pl.col("text"))).list.join(" ")
    )
    assert_series_equal(frame["fast"], frame["plain"], check_names=False)
    assert frame["fast"].str.contains(" ").any() and (frame["fast"] == "").any()


def test_nfkc_only_where_it_might_change_equals_nfkc_everywhere():
    frame = texts_to_compare().select(fast=_nfkc(pl.col("text")), plain=pl.col("text").str.normalize("NFKC"))
    assert_series_equal(frame["fast"], frame["plain"], check_names=False)
    assert (frame["fast"] != texts_to_compare()["text"]).any()  # the texts do hold what NFKC changes


def test_characters_taken_as_nfkc_stable_are():
    """A text made only of characters that are their own NFKC form, have combining class 0 and
    never combine with a character before them is its own NFKC form, whatever their order."""
    every_character = pl.Series([chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF])
    stable = every_character.filter(every_character.str.contains(f"^[{NFKC_STABLE}]$")).to_list()
    second_of_a_pair = {
        chr(int(parts[1], 16))
        for parts in (unicodedata.decomposition(chr(c)).split() for c in range(0x110000))
        if len(parts) == 2 and not parts[0].startswith("<")
    }
    assert len(stable) > 128
    for character in stable:
        assert unicodedata.normalize("NFKC", character) == character
        assert unicodedata.combining(character) == 0
        assert character not in second_of_a_pair
