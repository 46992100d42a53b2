"""Markup never becomes a word (issue 51): every reader decodes entities and strips tags in every
text column (abstracts of text lists and exports, titles, keywords, a list's header), however a
scrape broke them, and the terms, keywords and method names read off them are never an entity's
or a tag's name. The terms drop such names too, should a repair ever miss one."""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path

import polars as pl
import pytest
from corpus import seed_abstracts
from hypothesis import given, settings
from hypothesis import strategies as st

from paperhouse.dedup.papers import assign_papers
from paperhouse.ingest.judging import repair_paragraphs
from paperhouse.ingest.normalize import WORD_PATTERN, normalized_text, repair_text
from paperhouse.ingest.parse_cache import read_records
from paperhouse.ingest.structured_inputs import _item_lists, split_items
from paperhouse.ingest.table_reading import ROW
from paperhouse.nlp.names import extract_method_names
from paperhouse.nlp.terms.extraction import index_terms
from paperhouse.nlp.terms.keywords import keyword_terms
from paperhouse.nlp.terms.words import MARKUP_WORDS

# Real words, none of them an entity's or a tag's name.
WORDS = [
    "graph",
    "neural",
    "network",
    "diffusion",
    "protein",
    "molecule",
    "sparse",
    "attention",
    "kernel",
    "quantum",
    "reinforcement",
    "learning",
    "transformer",
    "robust",
    "policy",
    "gradient",
]
# Named entities that decode to no letter, with whether a scrape may drop their semicolon (all may:
# the legacy names and the usual punctuation's).
NAMED = [
    "amp",
    "lt",
    "gt",
    "quot",
    "apos",
    "nbsp",
    "mdash",
    "ndash",
    "hellip",
    "rsquo",
    "lsquo",
    "ldquo",
    "rdquo",
    "laquo",
    "raquo",
    "middot",
    "times",
    "minus",
    "thinsp",
    "ensp",
]
# Code points of punctuation and spaces (no ";" or ",": they separate keywords).
NUMERIC = [32, 33, 34, 38, 39, 40, 41, 46, 60, 62, 160, 183, 8211, 8212, 8216, 8217, 8220, 8221, 8230]
INLINE_TAGS = ["i", "b", "em", "sub", "sup", "span", "jats:italic", "italic", "sc", "mml:mi", "mi", "mo", "xref"]
BLOCK_TAGS = ["p", "jats:p", "div", "li", "td", "title", "jats:title", "label", "mtd", "sec"]
ATTRIBUTES = ["", ' class="x"', " id='a1'", " ref-type=bibr", ' style="a>b"', " nowrap", " xmlns:mml='u'"]

# What a repaired text must not hold: a reference to a name or code point, or a tag of a name above.
ENTITY_LEFT = re.compile(r"&\s*(?:#[0-9]+|#[xX][0-9a-fA-F]+|(?:" + "|".join(NAMED) + r")\b)", re.IGNORECASE)
TAG_NAMES = "|".join(re.escape(name) for name in {*INLINE_TAGS, *BLOCK_TAGS, "br", "mml:math", "mml:mrow"})
TAG_LEFT = re.compile(rf"</?\s*(?:{TAG_NAMES})\b[^<>]*>", re.IGNORECASE)
# Entity and tag names the marts' words must never be (the issue's list, and more).
NOT_WORDS = {"gt", "lt", "amp", "quot", "apos", "nbsp", "mdash", "rsquo", "sub", "sup", "br", "div", "mml", "mi", "mo"}


def escaped(text: str, times: int) -> str:
    """``text`` escaped ``times`` times, as scrapes of scrapes leave it."""
    for _ in range(times):
        text = text.replace("&", "&amp;")
    return text


@st.composite
def entities(draw) -> str:
    kind = draw(st.sampled_from(["named", "decimal", "hex", "split", "upper"]))
    if kind in ("named", "split", "upper"):
        name = draw(st.sampled_from(NAMED if kind == "named" else ["amp", "lt", "gt", "quot", "nbsp"]))
        name = name.upper() if kind == "upper" else name
        semicolon = ";" if kind == "split" else draw(st.sampled_from([";", ""]))
        reference = (
            f"&{draw(st.sampled_from([' ', chr(10), '  ']))}{name};" if kind == "split" else f"&{name}{semicolon}"
        )
    else:
        code = draw(st.sampled_from(NUMERIC))
        digits = str(code) if kind == "decimal" else "x" + format(code, draw(st.sampled_from(["x", "X"])))
        reference = f"&#{digits}{draw(st.sampled_from([';', '']))}"
    return escaped(reference, draw(st.integers(0, 4)))


@st.composite
def tagged(draw, word: str) -> str:
    """``word`` inside a tag (or an empty one beside it), escaped or not."""
    name = draw(st.sampled_from(INLINE_TAGS + BLOCK_TAGS))
    attributes = draw(st.sampled_from(ATTRIBUTES))
    form = draw(st.sampled_from(["around", "empty", "break", "math"]))
    if form == "around":
        markup = f"<{name}{attributes}>{word}</{name}>"
    elif form == "empty":
        markup = f"<{name}{attributes}/>{word}"
    elif form == "break":
        markup = f"{word}<br{draw(st.sampled_from(['', '/', ' /', '/ ']))}>"
    else:
        markup = f"<mml:math><mml:mrow><mml:mi>{word}</mml:mi></mml:mrow></mml:math>"
    times = draw(st.integers(0, 3))
    return escaped(html.escape(markup, quote=False), times - 1) if times else markup


@st.composite
def marked(draw, word: str) -> str:
    """``word`` alone, after an entity, in a tag, or both."""
    form = draw(st.sampled_from(["plain", "entity", "tag", "both"]))
    text = draw(tagged(word)) if form in ("tag", "both") else word
    return f"{draw(entities())} {text}" if form in ("entity", "both") else text


@st.composite
def scraped_texts(draw) -> tuple[str, list[str]]:
    """A text of real words, each marked up or not, and the words."""
    chosen = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8))
    return " ".join([draw(marked(word)) for word in chosen]), chosen


def words_of(texts: pl.Series) -> list[list[str]]:
    return pl.select(normalized_text(pl.lit(texts)).str.extract_all(WORD_PATTERN)).to_series().to_list()


def assert_clean(text: str) -> None:
    assert not ENTITY_LEFT.search(text), text
    assert not TAG_LEFT.search(text), text


@settings(max_examples=50, deadline=None)
@given(scraped_texts())
def test_abstracts_lose_every_entity_and_tag_and_keep_their_words(scraped):
    text, words = scraped
    repaired = repair_paragraphs(pl.LazyFrame({"raw_text": [text]})).collect()
    assert_clean(repaired["text"][0])
    assert words_of(repaired["text"]) == [words]
    assert repaired["raw_text"][0] == text  # the paragraph as read stays as read


@settings(max_examples=50, deadline=None)
@given(scraped_texts())
def test_titles_are_repaired_as_abstracts_are(scraped):
    text, words = scraped
    title = pl.select(repair_text(pl.lit(text))).to_series()
    abstract = repair_paragraphs(pl.LazyFrame({"raw_text": [text]})).collect()["text"]
    assert title[0] == abstract[0]
    assert words_of(title) == [words]


@st.composite
def keyword_fields(draw) -> tuple[str, list[str]]:
    """Keywords as an export writes them: marked-up words, separated by semicolons or commas."""
    chosen = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5, unique=True))
    separator = draw(st.sampled_from(["; ", ", ", ";", " ;"]))
    return separator.join(draw(marked(word)) for word in chosen), chosen


@settings(max_examples=50, deadline=None)
@given(keyword_fields())
def test_keywords_are_split_where_their_text_separates_them_not_at_an_entity(field):
    """Entities end in a semicolon, a separator too: the items are the keywords, repaired."""
    text, chosen = field
    items = _item_lists(pl.LazyFrame({ROW: [1], "keywords": [text]}), "keywords").collect()["keywords"]
    assert len(items) == 1
    for item in items[0]:
        assert_clean(item)
    assert words_of(items[0]) == [[word] for word in chosen]


@pytest.mark.parametrize(
    ("raw", "repaired"),
    [
        ("a &amp;amp;amp;gt; b", "a > b"),  # escaped four times
        ("a &amp;amp;amp;amp;lt; b", "a < b"),  # five
        ("n & gt; 1", "n > 1"),  # split by a space
        ("x &\nlt; y", "x < y"),  # by a hard wrap
        ("a &amp; gt; b", "a > b"),  # split once decoded
        ("p &gt 0.05 and p &lt0.1", "p > 0.05 and p <0.1"),  # no semicolon
        ("fast &mdash each time, it&rsquo s", "fast — each time, it’ s"),  # names html.unescape wants with one
        ("&AMP; &Amp; &NBSP;x &QUOT;y&Quot;", '& & x "y"'),  # any case
        ("a &ampgt; b", "a > b"),  # "&amp;gt;" that lost a semicolon
        ("&#62; &#x3E; &#0062 &#X3e", "> > > >"),
        ("H<sub>2</sub>O, x<sup >2</sup >, <td nowrap>cell</td><br/ >end", "H2O, x2, cell end"),
        ("<jats:p>We <jats:italic toggle='yes'>do</jats:italic>.</jats:p>", "We do."),
        ("<mml:math display='block'><mml:mi>x</mml:mi><mml:mo>=</mml:mo><mml:mn>1</mml:mn></mml:math>", "x=1"),
        ("a <xref ref-type='bibr' rid='b1'>1</xref>, <ext-link>site</ext-link> b", "a 1, site b"),
        ("<![CDATA[kept]]> <?xml version='1.0'?>text <!DOCTYPE html>", "kept text"),
        ("&lt;i&gt;in vivo&lt;/i&gt; &amp;lt;b&amp;gt;bold&amp;lt;/b&amp;gt;", "in vivo bold"),
        ("&#60;sub&#62;2&#60;/sub&#62; and &lt;mml:mi&gt;y&lt;/mml:mi&gt;", "2 and y"),
        # INSPEC's notation for sub- and superscripts and symbols.
        ("For Si/sub 10/ and H/sub infinity / control in L/sub +//sup d/", "For Si10 and Hinfinity control in L+d"),
        ("a rate of 10/sup -3/ at /spl alpha/=0.1 and /spl les/ 2", "a rate of 10-3 at α=0.1 and ⩽ 2"),
        # No markup: left alone.
        ("R&D, Q&A, AT&T, S&P500, B\\&B, n<k and m>1, <b and c>, x<y, a &notation", None),
    ],
)
def test_broken_references_and_tags_are_repaired(raw, repaired):
    text = repair_paragraphs(pl.LazyFrame({"raw_text": [raw]})).collect()["text"][0]
    assert text == (raw if repaired is None else repaired)


def test_separated_keywords_are_split_after_their_entities_are_decoded():
    fields = ["Q&amp;A; R&amp;amp;D, x", "a &amp; b, c", "&lt;i&gt;GAN&lt;/i&gt;; VAE", '["R&amp;D; x"]']
    split = pl.DataFrame({"keywords": fields}).select(split_items(pl.col("keywords"))).to_series()
    assert [[item.strip() for item in items] for items in split.to_list()] == [
        ["Q&A", "R&D, x"],
        ["a & b", "c"],
        ["GAN", "VAE"],
        ['"R&amp;D; x"'],  # a quoted item stays whole, and is repaired as an item
    ]


def abstracts_with_markup() -> list[str]:
    """Bundled abstracts as scrapes leave them: escaped up to four times, with broken entities and
    HTML, JATS and MathML tags, escaped or not."""
    forms = [
        " It holds for n &gt; 1 (p &lt 0.05).",
        " It holds for n & gt; 1 and m &amp;amp;amp;gt; 2.",
        " We use H<sub>2</sub>O and O(n<sup>2</sup>) steps.",
        " &lt;i&gt;In vivo&lt;/i&gt; results &mdash on <jats:italic>real</jats:italic> data.",
        " <p>Code &amp; data</p><br/>are public.",
        " We set <mml:math><mml:mi>x</mml:mi><mml:mo>&gt;</mml:mo><mml:mn>0</mml:mn></mml:math>.",
    ]
    abstracts = seed_abstracts()[:24]
    return [
        escaped(html.escape(abstract, quote=True), i % 4) + escaped(forms[i % len(forms)], i % 3)
        for i, abstract in enumerate(abstracts)
    ]


def write_export_and_list(folder: Path) -> None:
    abstracts = abstracts_with_markup()
    keywords = ["R&amp;D; graph", "Q&amp;amp;A, &lt;i&gt;diffusion&lt;/i&gt;", "&quot;GAN&quot;; it&rsquo;s"]
    with (folder / "ICML2024_papers.csv").open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["paper_id", "title", "keywords", "abstract"])
        for i, abstract in enumerate(abstracts[:12]):
            title = escaped(f"Robust &amp; Fast &lt;i&gt;Learning&lt;/i&gt; {i} &gt; all", i % 3)
            writer.writerow([f"p{i}", title, keywords[i % len(keywords)], abstract])
    header = escaped("ICLR 2026 Papers &amp; <b>Posters</b>", 1)
    (folder / "iclr.txt").write_text(header + "\n\n" + "\n\n".join(abstracts[12:]) + "\n", encoding="utf-8")


def test_no_term_keyword_or_name_of_an_export_and_a_list_is_markup(tmp_path):
    """A tiny export and text list full of markup, read as a run reads them, then their terms,
    keyword terms and method names: none holds an entity's or a tag's name as a word."""
    write_export_and_list(tmp_path)
    records = read_records(tmp_path)
    accepted = records.filter(pl.col("reject_reason").is_null())
    assert accepted.height == 24
    for column in ("text", "title", "header", "venue"):
        for value in accepted[column].drop_nulls():
            assert_clean(value)
            assert not re.search(r"&[A-Za-z#]", value), value
    for keywords in accepted["keywords"].drop_nulls():
        for keyword in keywords:
            assert_clean(keyword)
            assert not set(re.findall(r"\w+", keyword.lower())) & NOT_WORDS, keyword
    assert set(accepted["venue"]) == {"ICML", "ICLR & Posters"}
    assert set(accepted.filter(pl.col("title").is_not_null())["keywords"].explode()) == {
        "R&D",
        "graph",
        "Q&A",
        "diffusion",
        "GAN",
        "it’s",
    }

    papers = assign_papers(accepted).filter(pl.col("match_kind") == "canonical")
    texts = papers.join(accepted, on=["source_file", "record_no"]).select("paper_id", "text")
    index = index_terms(texts)
    keywords = (
        accepted.join(papers, on=["source_file", "record_no"])
        .select("paper_id", keyword=pl.col("keywords"))
        .explode("keyword")
        .drop_nulls()
        .group_by(keyword_key=pl.col("keyword").str.to_lowercase())
        .agg(
            papers=pl.col("paper_id").n_unique(),
            capitalised=pl.col("keyword").str.contains(r"\p{Lu}\S*\p{Lu}").mean() >= 0.5,
        )
    )
    keyword_index = keyword_terms(keywords, index.terms, index.aliases)
    names = extract_method_names(texts)
    for label, values in {
        "term": index.terms["term"],
        # Aliases are acronyms as papers define them ("mutual information (MI)"): no markup's.
        "alias": index.aliases.filter(pl.col("alias_kind") != "acronym")["alias"],
        "keyword term": keyword_index["term"],
        "method name": names["method_name"].drop_nulls(),
        "long form": names["method_long_form"].drop_nulls(),
    }.items():
        for value in values:
            assert not set(re.findall(r"[\w-]+", value.lower())) & NOT_WORDS, (label, value)
    assert index.terms.height > 100 and keyword_index.height == 6


def test_markup_words_a_repair_missed_are_no_terms_but_a_defined_acronym_still_expands():
    """The terms' second line of defence: an entity's or tag's name left in a text ends a phrase
    and is no term; "GT" that a paper defines still becomes its long form."""
    texts = [
        "We use ground truth (GT) labels for graph neural networks. The GT labels help.",
        "Accuracy gt 90 on graph neural networks with sub sampling, amp quot and the gt labels.",
        "Graph neural networks give molecule property prediction gt lt nbsp mrow.",
    ]
    index = index_terms(pl.DataFrame({"paper_id": ["a", "b", "c"], "text": texts}))
    terms = set(index.terms["term"])
    assert not {word for term in terms for word in term.split()} & MARKUP_WORDS
    assert {"ground truth label", "graph neural network", "molecule property prediction"} <= terms
    assert index.aliases.filter(pl.col("alias") == "GT")["term"].to_list() == ["ground truth"]
