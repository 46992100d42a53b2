import polars as pl
import pytest

from paperhouse.normalize import clean_text, normalized_text

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
