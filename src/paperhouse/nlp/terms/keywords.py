"""Author keywords as terms: each distinct keyword matched to the mined term of the same meaning, or
made a term of its own (kind ``keyword``).

Exports give their papers' author keywords (``marts.paper_keywords``); the terms are mined from the
abstracts (``paperhouse.nlp.terms.extraction``). A keyword is read as the terms read a long form: its words (a
trailing parenthesis such as "(GANs)" aside), the boilerplate words the chunker drops ("large",
"novel") dropped, each word singular, and then keyed as spelling variants are
(``term_words.variant_key``: no spaces or hyphens, -ize, -or). So "Graph Neural Networks",
"graph-neural network" and "large language models" meet "graph neural network" and "language
model". A keyword that is an acronym defined in the abstracts ("GAN", "GANs"), written as acronyms
are (two capitals in a word, by most of its authors: "Adam" is no ADAM), matches the term its long
form became (``TermIndex.aliases``), before a mined term spelled like it that no abstract expands.
A keyword holding what a term's words leave out ("0.35 micron", "3D reconstruction") matches
nothing: it would meet a term it does not mean. Keywords that match no mined term are grouped by
that key into terms of kind ``keyword``, each shown as most of its papers' authors write it (lower
case).

This only names the term of each keyword: counting papers, the aliases and the merge into
``marts.terms`` are dbt's (``int_paper_keywords``, ``terms``, ``term_aliases``). Keyword terms
never enter ``paper_terms``, so topics and similar papers stay what the texts say. Text lists
carry no keywords: then there is nothing to match and nothing is computed.
"""

from __future__ import annotations

import polars as pl

from paperhouse.nlp.terms.acronym_expansion import TOKEN
from paperhouse.nlp.terms.words import FUNCTION_WORDS, STOPWORDS, singular, variant_key

# raw.keyword_terms: one row per distinct keyword key.
KEYWORD_TERM_SCHEMA = {
    "keyword_key": pl.String,  # as marts.paper_keywords keys a keyword: lower case, single spaces
    "term": pl.String,  # the mined term it joins, or its own term's text
    "kind": pl.String,  # that term's kind: a mined kind, or keyword
    "n_words": pl.Int32,  # words of the term
    "matched_by": pl.String,  # term (by its key), acronym (by an acronym alias), null (a keyword term)
}

KEYWORD_KIND = "keyword"

MATCHES = ("term", "acronym")

# The keyword keys of every accepted record, keyed as marts.paper_keywords keys them, with the papers
# whose authors give each and whether most write it as an acronym is written (two capitals in a word:
# GAN, MoE; not Adam). Text lists' records have no keywords: nothing is read for them.
KEYWORDS_SQL = r"""
    with keywords as (
        select assignments.paper_id, unnest(records.keywords) as keyword
        from raw.source_records as records
        inner join raw.paper_assignments as assignments using (source_file, record_no)
        where records.keywords is not null and len(records.keywords) > 0
    )
    select
        trim(regexp_replace(lower(keyword), '\s+', ' ', 'g')) as keyword_key,
        cast(count(distinct paper_id) as integer) as papers,
        avg(cast(regexp_matches(keyword, '\p{Lu}\S*\p{Lu}') as integer)) >= 0.5 as capitalised
    from keywords
    group by keyword_key
"""

_KEYWORD_COUNTS = {"keyword_key": pl.String, "papers": pl.Int32, "capitalised": pl.Boolean}

# Words the chunker drops from a phrase that are not function words ("large", "novel"): a long
# form loses them too (acronym_expansion.acronym_definitions).
_BOILERPLATE = sorted(STOPWORDS - FUNCTION_WORDS)

_TRAILING_PARENTHESIS = r"\s*\([^()]*\)\s*$"


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=KEYWORD_TERM_SCHEMA)


def keyword_terms(keywords: pl.DataFrame, terms: pl.DataFrame, aliases: pl.DataFrame) -> pl.DataFrame:
    """``keyword_key`` and ``papers`` of each distinct keyword (``KEYWORDS_SQL``), the mined ``terms``
    (``term``, ``kind``) and their ``aliases`` (``alias``, ``term``, ``alias_kind``, ``papers``) ->
    ``KEYWORD_TERM_SCHEMA``: the term each keyword joins. No keywords, no work."""
    if keywords.height == 0:
        return empty()
    keywords = keywords.cast(_KEYWORD_COUNTS).filter(pl.col("keyword_key").str.len_chars() > 0)
    read = _read_keywords(keywords)
    by_key = (
        terms.lazy()
        .select("term", "kind", "doc_freq", key=variant_key(pl.col("term")))
        # Spellings were merged by this key, so a key names one term; the most used wins should two meet.
        .sort(["key", "doc_freq", "term"], descending=[False, True, False])
        .drop("doc_freq")
        .unique("key", keep="first", maintain_order=True)
    )
    acronyms = (
        aliases.lazy()
        .filter(pl.col("alias_kind") == "acronym")
        .select("term", "papers", acronym=_singular_words(pl.col("alias").str.to_lowercase()))
        .join(terms.lazy().select("term", "kind"), on="term")
        .sort(["acronym", "papers", "term"], descending=[False, True, False])
        .unique("acronym", keep="first", maintain_order=True)
        .select("acronym", acronym_term="term", acronym_kind="kind")
    )
    matched = (
        read.lazy()
        .with_columns(mined_key=pl.when("matchable").then("key"))
        .join(by_key.rename({"term": "key_term", "kind": "key_kind", "key": "mined_key"}), on="mined_key", how="left")
        .join(acronyms, left_on="single", right_on="acronym", how="left")
        .with_columns(
            # A mined phrase or word spelled like the keyword; else the long form of the acronym the
            # keyword is ("GANs"); else a mined acronym spelled like it.
            matched_by=pl.when(pl.col("key_term").is_not_null() & (pl.col("key_kind") != "acronym"))
            .then(pl.lit("term"))
            .when(pl.col("acronym_term").is_not_null())
            .then(pl.lit("acronym"))
            .when(pl.col("key_term").is_not_null())
            .then(pl.lit("term"))
        )
        .with_columns(
            term=pl.when(pl.col("matched_by") == "term").then("key_term").otherwise("acronym_term"),
            kind=pl.when(pl.col("matched_by") == "term").then("key_kind").otherwise("acronym_kind"),
        )
        .collect()
    )
    unmatched = matched.filter(pl.col("matched_by").is_null())
    # A keyword term is shown as most of its papers' authors write it, then the first such spelling.
    shown = (
        unmatched.group_by("key", "shown")
        .agg(pl.col("papers").sum())
        .sort(["key", "papers", "shown"], descending=[False, True, False])
        .unique("key", keep="first", maintain_order=True)
        .select("key", own_term="shown")
    )
    # A shown spelling that is a mined term's text is that term (a key the reading could not give it).
    own = (
        unmatched.join(shown, on="key")
        .join(terms.select(own_term="term", mined_kind="kind"), on="own_term", how="left")
        .select(
            "keyword_key",
            term="own_term",
            kind=pl.coalesce("mined_kind", pl.lit(KEYWORD_KIND)),
            matched_by=pl.when(pl.col("mined_kind").is_not_null()).then(pl.lit("term")),
        )
    )
    merged = pl.concat(
        [matched.filter(pl.col("matched_by").is_not_null()).select("keyword_key", "term", "kind", "matched_by"), own],
        how="vertical_relaxed",
    )
    return (
        merged.join(terms.select("term", mined_words="n_words"), on="term", how="left")
        # A hyphenated compound is one word, as in a mined term.
        .with_columns(n_words=pl.coalesce("mined_words", pl.col("term").str.count_matches(" ").cast(pl.Int32) + 1))
        .select(list(KEYWORD_TERM_SCHEMA))
        .sort("keyword_key")
        .cast(KEYWORD_TERM_SCHEMA)
    )


def _read_keywords(keywords: pl.DataFrame) -> pl.DataFrame:
    """Each keyword key with ``shown`` (the text before a trailing parenthesis, "generative
    adversarial networks (gans)": what is matched, and how a keyword term of it is written; the long
    form decides, not the parenthesis: an acronym means different things in different fields),
    ``key`` (its words as a term's: boilerplate dropped, singular, spelling key), ``single`` (its one
    word's singular, when it is one word written as an acronym: GANs) and ``matchable``.

    Only a keyword made of words is matched: one holding what the terms' words leave out (digits
    outside a word, "0.35 micron", "3d reconstruction"; a slash) would meet a term it does not mean
    ("micron"), so it keeps a key of its own, its spelling's."""
    split = keywords.with_columns(
        shown=pl.col("keyword_key").str.replace(_TRAILING_PARENTHESIS, "").str.strip_chars(),
    ).with_columns(shown=pl.when(pl.col("shown").str.len_chars() > 0).then("shown").otherwise("keyword_key"))
    normalised = pl.col("shown").str.normalize("NFKC")
    words = normalised.str.extract_all(TOKEN)
    split = split.with_columns(
        words=words.list.eval(pl.element().filter(~pl.element().is_in(_BOILERPLATE))),
        matchable=~normalised.str.replace_all(TOKEN, "").str.contains(r"[\p{L}\p{N}]"),
    )
    lemmas = _singular_words(pl.col("words").list.join(" "))
    phrase = pl.when(pl.col("matchable") & (pl.col("words").list.len() > 0)).then(lemmas).otherwise(pl.col("shown"))
    return split.select(
        "keyword_key",
        "papers",
        "shown",
        "matchable",
        key=variant_key(phrase),
        single=pl.when(pl.col("matchable") & pl.col("capitalised") & (words.list.len() == 1)).then(
            _singular_words(words.list.first())
        ),
    )


def _singular_words(text: pl.Expr) -> pl.Expr:
    """Each space-separated word of the text singular (``term_words.singular``), once per distinct word."""
    return text.map_batches(_singular_texts, return_dtype=pl.String)


def _singular_texts(texts: pl.Series) -> pl.Series:
    distinct = texts.drop_nulls().unique()
    lemmas = {text: " ".join(singular(word) for word in text.split(" ")) for text in distinct.to_list()}
    return texts.replace_strict(lemmas, default=None, return_dtype=pl.String) if lemmas else texts
