"""Acronyms defined in the abstracts ("sparse autoencoders (SAEs)"), expanded in place in the coded
words, so that an acronym and its long form count as one term."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from paperhouse.common.arrays import slices
from paperhouse.nlp.terms.acronyms import POSSIBLE_DEFINITION, find_definitions
from paperhouse.nlp.terms.words import FUNCTION_WORDS, STOPWORDS, lemma_column, variant_key

TOKEN = r"\p{L}[\p{L}\p{N}]*(?:-[\p{L}\p{N}]+)*"


# The regex engine scans for a few dozen short keys at once at full speed but slows tenfold past
# that (16 keys: 0.3 s on 100k abstracts, 64: 4 s), so keys are looked for 16 at a time.
_KEYS_PER_PATTERN = 16


def position_in(values: pl.Expr, vocabulary: pl.Series) -> pl.Expr:
    """Each value's position in ``vocabulary`` (distinct values, every value among them): its code."""
    return values.replace_strict(vocabulary, pl.int_range(len(vocabulary), dtype=pl.UInt32))


def _normalise_phrase(phrase: pl.Expr) -> pl.Expr:
    """A long form as the tokeniser would see it: lower case, one space between words."""
    return phrase.str.normalize("NFKC").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()


def acronym_definitions(papers: pl.DataFrame, batch_size: int) -> pl.DataFrame:
    """``paper_id``, ``alias`` (as written), ``key`` (its token), ``lemmas`` (the long form's words)."""
    # A batch at a time: the texts that may define an acronym are most texts, and filtering copies them.
    rows = [
        (paper_id, definition.short_form, definition.long_form)
        for batch in slices(papers, batch_size)
        for paper_id, text in batch.filter(pl.col("text").str.contains(POSSIBLE_DEFINITION))
        .select("paper_id", "text")
        .iter_rows()
        for definition in find_definitions(text)
    ]
    frame = pl.DataFrame(rows, schema={"paper_id": pl.String, "alias": pl.String, "long_form": pl.String}, orient="row")
    frame = frame.with_columns(
        key=pl.col("alias").str.to_lowercase(),
        words=_normalise_phrase(pl.col("long_form")).str.extract_all(TOKEN),
    )
    # Long forms that hold a function word ("mixture of experts") are split by the chunker; they stay
    # apart. Boilerplate words go, as the chunker drops them: "large language model" -> "language model".
    frame = frame.with_columns(
        pl.col("words").list.eval(pl.element().filter(~pl.element().is_in(STOPWORDS - FUNCTION_WORDS)))
    )
    frame = frame.filter(
        pl.col("words").list.len().is_between(1, 4)
        & ~pl.col("words").list.eval(pl.element().is_in(FUNCTION_WORDS)).list.any()
        & pl.col("key").str.contains(f"^{TOKEN}$")
    )
    lemmas = lemma_column(
        frame.select("paper_id", "key", "words").with_row_index("definition").explode("words"), "words"
    )
    lemmas = (
        lemmas.sort("definition", maintain_order=True)
        .group_by("definition", maintain_order=True)
        .agg("paper_id", "key", lemmas=pl.col("lemma"))
        .with_columns(pl.col("paper_id").list.first(), pl.col("key").list.first())
    )
    return (
        frame.with_row_index("definition")
        .join(lemmas.select("definition", "lemmas"), on="definition")
        .select("paper_id", "alias", "key", "lemmas")
        .unique(["paper_id", "key"], keep="first", maintain_order=True)
    )


def acronym_expansions(definitions: pl.DataFrame, papers: pl.DataFrame) -> pl.DataFrame:
    """Which token to expand, in which paper, into which words.

    A paper's own definition wins. Elsewhere the corpus' majority long form applies, when it
    holds a majority. A key that is also written as an ordinary lower-case word ("rise" for
    RISE) is never expanded where it appears so: only capitals mark an acronym.
    """
    lowercase = lowercase_uses(papers, definitions["key"].unique())
    own = definitions.join(lowercase, on=["paper_id", "key"], how="anti")
    votes = definitions.group_by("key", "lemmas").agg(papers=pl.len(), alias=pl.col("alias").mode().sort().first())
    majority = (
        votes.with_columns(share=pl.col("papers") / pl.col("papers").sum().over("key"))
        .sort(["key", "papers", "lemmas"], descending=[False, True, False])
        .group_by("key", maintain_order=True)
        .first()
        .filter(pl.col("share") > 0.5)
        .join(lowercase.select("key").unique(), on="key", how="anti")
    )
    return pl.concat(
        [
            own.select("key", "lemmas", "alias", paper_id="paper_id", defined=pl.lit(True)),
            majority.select("key", "lemmas", "alias", paper_id=pl.lit(None, pl.String), defined=pl.lit(False)),
        ]
    )


def lowercase_uses(papers: pl.DataFrame, keys: pl.Series) -> pl.DataFrame:
    """``paper_id``, ``key``: the papers that write a key as a whole lower-case word ("rise")."""
    # Only a key of lower-case letters and digits can be written so.
    written = keys.filter(keys.str.contains(r"^\p{Ll}[\p{Ll}\p{N}]*$")).sort().to_list()
    patterns = [
        r"\b(?:" + "|".join(re.escape(key) for key in written[start : start + _KEYS_PER_PATTERN]) + r")\b"
        for start in range(0, len(written), _KEYS_PER_PATTERN)
    ]
    return (
        pl.concat(
            [pl.DataFrame(schema={"paper_id": pl.String, "key": pl.String}).lazy()]
            + [
                papers.lazy().select("paper_id", key=pl.col("text").str.extract_all(pattern)).explode("key")
                for pattern in patterns
            ]
        )
        .drop_nulls("key")
        .unique()
        .collect()
    )


@dataclass(frozen=True)
class AcronymCodes:
    """The acronym expansions in lemma codes: which token is replaced, in which paper, by which words."""

    lemmas: pl.Series  # the words' lemmas, then the words that only long forms bring: what a code indexes
    is_key: np.ndarray  # by code: whether some expansion replaces the word
    own: pl.DataFrame  # ``paper_idx``, ``code``: each paper's own definitions
    borrowed: pl.DataFrame  # ``code``: the corpus' majority long forms
    words: pl.Series  # the codes of each long form's words: own's rows, then borrowed's


def acronym_codes(expansions: pl.DataFrame, lemmas: pl.Series, paper_index: pl.DataFrame) -> AcronymCodes:
    """``expansions`` in codes. Long forms may bring words the text never uses alone: they join the
    lemmas after the others, whose codes stay as they were."""
    lemmas = pl.concat([lemmas, expansions["lemmas"].explode().unique().sort()]).unique(maintain_order=True)
    expansions = (
        expansions.filter(pl.col("key").is_in(lemmas.implode()))
        .with_row_index("expansion")
        .explode("lemmas")
        .with_columns(code=position_in(pl.col("key"), lemmas), word=position_in(pl.col("lemmas"), lemmas))
        .group_by("expansion", maintain_order=True)
        .agg(pl.col("paper_id", "defined", "code").first(), codes="word")
    )
    own = expansions.filter("defined").join(paper_index, on="paper_id")
    borrowed = expansions.filter(~pl.col("defined"))
    is_key = np.zeros(len(lemmas), dtype=bool)
    is_key[expansions["code"].to_numpy()] = True
    return AcronymCodes(
        lemmas,
        is_key,
        own.select("paper_idx", "code"),
        borrowed.select("code"),
        pl.concat([own["codes"], borrowed["codes"]]),
    )


def expand_acronyms(tokens: pl.DataFrame, acronyms: AcronymCodes) -> pl.DataFrame:
    """Replace each acronym token by its long form's words, in place, inside the same chunk: a
    paper's own definition first, else the corpus' majority. Only tokens that are some acronym are
    looked up."""
    rows = np.flatnonzero(acronyms.is_key[tokens["code"].to_numpy()])
    chosen = (
        tokens[rows]
        .select("paper_idx", "code")
        .with_columns(row=rows)
        .join(acronyms.own.with_row_index("own"), on=["paper_idx", "code"], how="left")
        .join(acronyms.borrowed.with_row_index("borrowed"), on="code", how="left")
        .select("row", expansion=pl.coalesce("own", pl.col("borrowed") + acronyms.own.height))
        .drop_nulls()
        .sort("row")
    )
    if chosen.height == 0:
        return tokens
    return _replace_by_words(tokens, chosen["row"].to_numpy(), chosen["expansion"].to_numpy(), acronyms.words)


def _replace_by_words(tokens: pl.DataFrame, rows: np.ndarray, expansion: np.ndarray, words: pl.Series) -> pl.DataFrame:
    """The tokens with each of ``rows`` (ascending) replaced, in place and in its chunk, by the codes
    of its ``expansion``, a row of ``words``. On arrays: a list per token would outweigh the tokens."""
    lengths = words.list.len().to_numpy().astype(np.int64)
    offsets = np.cumsum(lengths) - lengths
    flat = words.explode().to_numpy()
    counts = np.ones(tokens.height, dtype=np.int64)
    counts[rows] = lengths[expansion]
    code = np.repeat(tokens["code"].to_numpy(), counts)
    n_words = counts[rows]
    within = np.arange(n_words.sum()) - np.repeat(np.cumsum(n_words) - n_words, n_words)
    first = np.cumsum(counts) - counts  # each token's first row in the output
    replaced = np.repeat(first[rows], n_words) + within
    code[replaced] = flat[np.repeat(offsets[expansion], n_words) + within]
    starts_chunk = np.repeat(tokens["starts_chunk"].to_numpy(), counts)
    starts_chunk[replaced[within > 0]] = False  # a long form's later words continue the acronym's chunk
    return pl.DataFrame(
        {"paper_idx": np.repeat(tokens["paper_idx"].to_numpy(), counts), "code": code, "starts_chunk": starts_chunk}
    )


def acronym_aliases(expansions: pl.DataFrame, terms: pl.DataFrame) -> pl.DataFrame:
    """Each acronym and the term its long form became (in its most common spelling)."""
    defined = expansions.filter("defined").with_columns(long=pl.col("lemmas").list.join(" "))
    keyed = defined.with_columns(key=variant_key(pl.col("long")))
    spelled = terms.select("term", key=variant_key(pl.col("term")))
    return (
        keyed.join(spelled, on="key")
        .group_by("alias", "term")
        .agg(papers=pl.len().cast(pl.Int32))
        .select("alias", "term", alias_kind=pl.lit("acronym"), papers="papers")
    )
