import html
import re
import unicodedata

import polars as pl
import pytest
from corpus import awkward_texts, seed_abstracts
from polars.testing import assert_series_equal

from paperhouse.ingest.normalize import (
    CONTROL_CHARACTERS,
    ENTITY_CANDIDATE,
    NFKC_STABLE,
    _nfkc,
    clean_text,
    decode_entities,
    joined_words,
    normalized_text,
    only_where,
    strip_controls,
    strip_tags,
    words,
)

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
    return pl.DataFrame({"text": [*texts, None]})


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


SCRAPED = [
    "&quot;a&quot; &amp; &#39;b&#x27; &lt;i&gt;c&lt;/i&gt; &nbsp;d &amp;quot;e&amp;quot; &amp;amp;lt;f "
    "&copy &notin; &#0;",
    '<p>One</p><p>two<br/>three<BR>four</p> H<sub>2</sub>O x<sup>n</sup> <i class="x">i</i> <jats:p>j</jats:p>',
    "<mml:math><mml:mi>x</mml:mi></mml:math> <!-- a comment --> <a href='u'>link</a> <img src=\"f.png\" />",
    "n<k and m>1, 0<t<1, a < b > c, <b and c>, x<y, i<3, <foo>, R&D, Q&A, AT&T, &foo; & amp;",
    "ctl\x00nul\x01\x02\x08\x0e\x1b\x7f\x80\x84\x86\x9f sep\x1cA\x1dB\x1eC\x1fD ws\t\x0b\x0c\r\n\x85end",
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("H<sub>2</sub>O and <i>x</i><b>y</b>", "H2O and xy"),
        ("one<br>two<br/>three<br />four</p><p>five", "one two three four  five"),
        ('<span class="k" data-x=\'1\'>kept</span> <A HREF="u">link</A>', "kept link"),
        ("<jats:title>Abstract</jats:title><jats:p>We <jats:italic>do</jats:italic>.</jats:p>", " Abstract  We do. "),
        ("<mml:math><mml:msub><mml:mi>x</mml:mi><mml:mn>2</mml:mn></mml:msub></mml:math>", "x2"),
        ("a <!-- hidden\nnote --> b", "a  b"),
        # Not tags: comparisons, a tag name followed by words, unknown names.
        *[(kept, kept) for kept in ["n<k and m>1, 0<t<1, a < b > c", "<b and c>, x<y, <foo>, <3, < p>", "<i=1>"]],
    ],
)
def test_tags_are_stripped_and_comparisons_kept(text, expected):
    assert pl.DataFrame({"t": [text]}).select(strip_tags(pl.col("t")))["t"][0] == expected


def test_entities_decode_as_html_unescape_does_until_nothing_changes():
    def plain(text):
        while (decoded := html.unescape(text)) != text:
            text = decoded
        return text

    texts = [*SCRAPED, "&amp;amp;quot;x&amp;amp;quot;", "&lt;", "no entity", "&"]
    decoded = pl.DataFrame({"t": texts}).select(decode_entities(pl.col("t")))["t"].to_list()
    assert decoded == [plain(text) for text in texts]
    assert decoded[0].startswith('"a" & \'b\' <i>c</i> \u00a0d "e" <f © ∉ \ufffd')


def test_stray_controls_go_separators_become_spaces_and_whitespace_stays():
    characters = [chr(c) for c in range(0xA0)]
    stripped = pl.DataFrame({"t": [f"a{c}b" for c in characters]}).select(strip_controls(pl.col("t")))["t"].to_list()
    for character, text in zip(characters, stripped, strict=True):
        if character in "\t\n\x0b\x0c\r\x85" or character.isprintable():
            assert text == f"a{character}b", repr(character)
        elif "\x1c" <= character <= "\x1f":
            assert text == "a b", repr(character)
        else:
            assert text == "ab", repr(character)
            assert re.fullmatch(CONTROL_CHARACTERS, character)


@pytest.mark.parametrize("repair", [strip_controls, decode_entities, strip_tags])
def test_repairs_only_where_a_quick_scan_says_equal_repairs_everywhere(repair):
    """Each repair runs only on the rows its scan picks (what ``paperhouse.ingest.reading`` does): the rows
    it skips would not have changed."""
    scans = {
        strip_controls: pl.col("text").str.contains(CONTROL_CHARACTERS),
        decode_entities: pl.col("text").str.contains(ENTITY_CANDIDATE),
        strip_tags: pl.col("text").str.contains("<", literal=True),
    }
    texts = texts_to_compare().vstack(pl.DataFrame({"text": SCRAPED + [line for s in SCRAPED for line in s.split()]}))
    frame = texts.select(fast=only_where(scans[repair], pl.col("text"), repair), plain=repair(pl.col("text")))
    assert_series_equal(frame["fast"], frame["plain"], check_names=False)
    assert (frame["fast"] != texts["text"]).sum() >= 3  # the texts do hold what it repairs
