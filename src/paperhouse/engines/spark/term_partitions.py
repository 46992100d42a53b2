"""The terms' work on one Spark partition: the bodies that ``mapInArrow`` runs on executors.

Each takes the partition's Arrow record batches and yields record batches of a fixed schema
(``*_SCHEMA`` here, the same as Spark DDL in ``paperhouse.engines.spark.analysis``). They call the
single-machine code of ``paperhouse.nlp.terms.extraction`` and its modules on a Polars frame of the partition's
rows: a partition of papers is a small corpus whose corpus-wide inputs (the verbs, the majority
long forms of acronyms, the terms' document frequencies) are handed in. No pyspark here: executors
import only what they run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import polars as pl
import pyarrow as pa

from paperhouse.engines.spark.frames import record_batches
from paperhouse.nlp.terms.acronym_expansion import acronym_definitions, acronym_expansions, lowercase_uses
from paperhouse.nlp.terms.extraction import CAPITALISED_SCHEMA as CAPITALISED_WORDS
from paperhouse.nlp.terms.extraction import (
    MAX_TERMS_PER_PAPER,
    PaperWords,
    capitalised_words,
    count_paper_ngrams,
    spell,
    word_pieces,
)
from paperhouse.nlp.terms.table import describe_terms, stock_term
from paperhouse.nlp.terms.weights import weigh
from paperhouse.nlp.terms.words import variant_key, verb_uses

# Texts searched for acronym definitions at once, as ``terms.read_words`` does.
_DEFINITION_BATCH = 20_000

VERB_USE_SCHEMA = pa.schema([("token", pa.string()), ("uses", pa.int64()), ("verb_uses", pa.int64())])
DEFINITION_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("alias", pa.string()),
        ("key", pa.string()),
        ("lemmas", pa.list_(pa.string())),
        ("is_own", pa.bool_()),
    ]
)
KEY_SCHEMA = pa.schema([("key", pa.string())])
CAPITALISED_SCHEMA = pa.schema([("word", pa.string()), ("capital_uses", pa.int64())])
COUNT_SCHEMA = pa.schema(
    [("paper_id", pa.string()), ("term", pa.string()), ("count", pa.int32()), ("heads", pa.int32())]
)
SUMS_SCHEMA = pa.schema([("term", pa.string()), ("papers", pa.int64()), ("uses", pa.int64()), ("heads", pa.int64())])
ANNOTATED_SCHEMA = pa.schema([*SUMS_SCHEMA, ("key", pa.string()), ("stock", pa.bool_())])
TERM_SCHEMA = pa.schema(
    [
        ("term", pa.string()),
        ("kind", pa.string()),
        ("n_words", pa.int32()),
        ("doc_freq", pa.int32()),
        ("idf", pa.float64()),
        ("head_share", pa.float64()),
    ]
)
LONG_FORM_SCHEMA = pa.schema([("alias", pa.string()), ("key", pa.string())])
WEIGHED_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("term", pa.string()),
        ("occurrences", pa.int32()),
        ("weight", pa.float64()),
        ("rank", pa.int32()),
        ("linking", pa.bool_()),
    ]
)

# The majority long forms handed to each partition, in the column order of ``acronym_expansions``.
MAJORITY_SCHEMA = {
    "key": pl.String,
    "lemmas": pl.List(pl.String),
    "alias": pl.String,
    "paper_id": pl.String,
    "defined": pl.Boolean,
}


def frame_of(batches: Iterable[pa.RecordBatch]) -> pl.DataFrame | None:
    """The partition's rows as one frame; None for an empty partition."""
    batches = [batch for batch in batches if batch.num_rows]
    return pl.from_arrow(pa.Table.from_batches(batches)) if batches else None


def _numbered_papers(batches: Iterable[pa.RecordBatch]) -> pl.DataFrame | None:
    """``paper_id``, ``text`` and ``paper_idx``: the paper's rank among the partition's ids, in that order."""
    papers = frame_of(batches)
    if papers is None:
        return None
    return papers.with_columns(paper_idx=pl.col("paper_id").rank("dense").cast(pl.UInt32) - 1).sort("paper_idx")


def verb_uses_of(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``verb_uses`` of the partition's papers (the verb sample's: the caller filters them)."""
    papers = _numbered_papers(batches)
    if papers is not None:
        yield from record_batches(verb_uses(word_pieces(papers).collect()), VERB_USE_SCHEMA)


def definitions_of(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Every acronym definition of the partition's papers (``acronym_definitions``), and whether it
    is the paper's own expansion: a paper that also writes the key in lower case expands nothing."""
    papers = _numbered_papers(batches)
    if papers is None:
        return
    definitions = acronym_definitions(papers, _DEFINITION_BATCH)
    own = acronym_expansions(definitions, papers).filter("defined").select("paper_id", "key", is_own=pl.lit(True))
    flagged = definitions.join(own, on=["paper_id", "key"], how="left").with_columns(pl.col("is_own").fill_null(False))
    yield from record_batches(flagged, DEFINITION_SCHEMA)


def lowercase_keys_of(batches: Iterable[pa.RecordBatch], keys: list[str]) -> Iterator[pa.RecordBatch]:
    """Which of ``keys`` the partition's papers write as a lower-case word (``lowercase_uses``)."""
    papers = frame_of(batches)
    if papers is not None:
        used = lowercase_uses(papers, pl.Series(keys, dtype=pl.String)).select("key").unique()
        yield from record_batches(used, KEY_SCHEMA)


def capitalised_of(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``capitalised_words`` of the partition's papers."""
    papers = frame_of(batches)
    if papers is not None:
        yield from record_batches(capitalised_words(papers), CAPITALISED_SCHEMA)


def ngram_counts_of(
    batches: Iterable[pa.RecordBatch], verbs: pl.Series, majority: pl.DataFrame, max_words: int
) -> Iterator[pa.RecordBatch]:
    """Each paper's n-grams with their counts and heads (``count_paper_ngrams``), as
    ``paper_id``, ``term``, ``count``, ``heads``: the partition's papers split into words with
    the corpus' ``verbs``, their own acronyms expanded, else the corpus' ``majority`` long forms."""
    papers = _numbered_papers(batches)
    if papers is None:
        return
    own = acronym_expansions(acronym_definitions(papers, _DEFINITION_BATCH), papers).filter("defined")
    spelled, spellings = spell(papers, verbs)
    words = PaperWords(
        paper_index=papers.select("paper_idx", "paper_id"),
        spelled=spelled,
        spellings=spellings,
        expansions=pl.concat([own, majority.cast(own.schema)]),
        capitalised=pl.DataFrame(schema=CAPITALISED_WORDS),  # the kinds of terms are told corpus-wide
    )
    del papers, spelled
    counted = count_paper_ngrams(words, max_words)
    if counted is None:
        return
    parts, vocabulary = counted
    for part in parts:
        rows = part.join(words.paper_index, on="paper_idx").join(vocabulary, on="term_idx")
        yield from record_batches(rows, COUNT_SCHEMA)


def annotated_terms_of(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The terms' sums with what is decided per term: the key its spelling variants share
    (``variant_key``) and whether it is dropped (``stock_term``)."""
    sums = frame_of(batches)
    if sums is not None:
        annotated = sums.with_columns(key=variant_key(pl.col("term")), stock=stock_term(pl.col("term")))
        yield from record_batches(annotated, ANNOTATED_SCHEMA)


def described_terms_of(batches: Iterable[pa.RecordBatch], n_papers: int) -> Iterator[pa.RecordBatch]:
    """``describe_terms`` of the merged terms' sums, their ``capital_uses`` summed over the corpus."""
    sums = frame_of(batches)
    if sums is not None:
        yield from record_batches(describe_terms(sums, n_papers), TERM_SCHEMA)


def long_form_keys_of(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each own definition's alias and the ``variant_key`` of its long form (``acronym_aliases``)."""
    definitions = frame_of(batches)
    if definitions is not None:
        keyed = definitions.select("alias", key=variant_key(pl.col("lemmas").list.join(" ")))
        yield from record_batches(keyed, LONG_FORM_SCHEMA)


def weighed_terms_of(
    batches: Iterable[pa.RecordBatch], recurrence: float, max_terms: int = MAX_TERMS_PER_PAPER
) -> Iterator[pa.RecordBatch]:
    """``weigh`` for the partition's papers, every row of a paper here: ``paper_id``, ``term``,
    ``count``, ``heads`` with the term's corpus-wide ``idf``, ``doc_freq``, ``head_share`` and
    ``n_words``. Yields each paper's ranked best terms (``linking`` false) and its entries of the
    weight matrix (``linking`` true; ``occurrences`` and ``rank`` null).

    Terms are numbered in sorted order here, as the whole corpus' are: a paper's terms then meet
    in the same order, so ties rank alike and the sums of squares add up in the same order."""
    rows = frame_of(batches)
    if rows is None:
        return
    paper_ids = rows["paper_id"].unique().sort()
    vocabulary = rows.select("term").unique().sort("term").with_row_index("term_idx")
    terms = rows.unique("term").select("term", "idf", "doc_freq", "head_share", "n_words").join(vocabulary, on="term")
    numbered = (
        rows.join(vocabulary, on="term")
        .with_columns(paper_idx=pl.col("paper_id").rank("dense").cast(pl.UInt32) - 1)
        .sort("paper_idx")
        .select("paper_idx", "term_idx", "count", "heads")
    )
    del rows
    best, weights = weigh([numbered], terms, vocabulary, paper_ids, max_terms, recurrence)
    yield from record_batches(best.with_columns(linking=pl.lit(False)), WEIGHED_SCHEMA)
    entries = weights.matrix.tocoo()
    linking = pl.DataFrame(
        {
            "paper_id": paper_ids.gather(entries.row),
            "term": vocabulary["term"].gather(entries.col),
            "occurrences": pl.Series([None] * entries.nnz, dtype=pl.Int32),
            "weight": entries.data,
            "rank": pl.Series([None] * entries.nnz, dtype=pl.Int32),
            "linking": True,
        }
    )
    yield from record_batches(linking, WEIGHED_SCHEMA)
