"""The corpus step's terms as Spark jobs (``index_terms_on_spark``): the same terms, document
frequencies, aliases and ranked terms as ``paperhouse.nlp.terms.extraction.index_words``, with no paper's words
on the driver.

Per partition of papers (``mapInArrow``, the bodies in ``paperhouse.engines.spark.term_partitions``, which
call the single-machine code): acronym definitions, capitalised words, the verb sample's word
uses, each paper's n-gram counts, and at the end each paper's weights and ranks. Corpus-wide, as
Spark aggregations: the verbs' votes, the acronyms' majority long forms, each term's sums, the
spelling merges, document frequencies and ``phrase_recurrence``.

What reaches the driver, and its bound: the verb sample's distinct words with two counts (the
first ``VERB_SAMPLE_PAPERS`` papers' vocabulary, as ``terms.spell`` reads it), the distinct
(acronym, long form) votes that hold a majority (one per acronym at most) and which of those
acronyms some paper writes in lower case, and a handful of scalars (the number of papers, the last
id of the verb sample, ``phrase_recurrence``). All of them are handed to the executors as
arguments of the partition bodies. Everything the size of the corpus or its vocabulary stays in
Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import polars as pl

from paperhouse.engines.spark import term_partitions as parts
from paperhouse.engines.spark.frames import spark_schema_of_arrow
from paperhouse.nlp.terms.extraction import MAX_TERMS_PER_PAPER, VERB_SAMPLE_PAPERS
from paperhouse.nlp.terms.words import verb_lemmas

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class SparkTermIndex:
    """``paperhouse.nlp.terms.extraction.TermIndex`` as Spark DataFrames, with the same columns."""

    terms: DataFrame  # TERM_SCHEMA: term, kind, n_words, doc_freq, idf
    paper_terms: DataFrame  # PAPER_TERM_SCHEMA: paper_id, term, occurrences, weight, rank
    aliases: DataFrame  # ALIAS_SCHEMA: alias, term, alias_kind, papers
    weights: DataFrame  # paper_id, term, weight: the entries of ``TermWeights.matrix``
    cached: tuple[DataFrame, ...] = ()  # what the four are read from, held in Spark's cache

    def unpersist(self) -> None:
        """Let go of the cached tables the index is read from."""
        for frame in self.cached:
            frame.unpersist()


def _map(frame: DataFrame, body, schema: pa.Schema) -> DataFrame:
    """``frame.mapInArrow`` of a partition body of ``term_partitions`` and its Arrow schema."""
    return frame.mapInArrow(body, spark_schema_of_arrow(schema))


def index_terms_on_spark(papers: DataFrame, max_words: int = 4, max_terms: int = MAX_TERMS_PER_PAPER) -> SparkTermIndex:
    """``paper_id`` and ``text`` (as written) of each paper, one row per paper -> its ranked terms,
    as ``paperhouse.nlp.terms.extraction.index_terms`` gives them on one machine."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    papers = papers.select("paper_id", "text").persist()
    n_papers = papers.select("paper_id").distinct().count()
    verbs = _verbs(papers)
    definitions = _map(papers, parts.definitions_of, parts.DEFINITION_SCHEMA).persist()
    majority = _majority_long_forms(papers, definitions)
    counts = _map(
        papers, partial(parts.ngram_counts_of, verbs=verbs, majority=majority, max_words=max_words), parts.COUNT_SCHEMA
    ).persist()
    capitalised = (
        _map(papers, parts.capitalised_of, parts.CAPITALISED_SCHEMA)
        .groupBy(F.col("word").alias("term"))
        .agg(F.sum("capital_uses").alias("capital_uses"))
    )

    # Spelling variants merge into the one written most often, then the first in sort order (Spark,
    # like Polars, orders strings by code point); a term is dropped when the one it became is stock.
    annotated = _map(_term_sums(counts), parts.annotated_terms_of, parts.ANNOTATED_SCHEMA)
    by_key = Window.partitionBy("key").orderBy(F.desc("uses"), F.asc("term"))
    annotated = annotated.select(
        "*", F.first("term").over(by_key).alias("preferred"), F.first("stock").over(by_key).alias("preferred_stock")
    ).persist()
    merged = (
        counts.join(annotated.select("term", "preferred", "preferred_stock"), on="term")
        .filter(~F.col("preferred_stock"))
        .groupBy("paper_id", F.col("preferred").alias("term"))
        .agg(F.sum("count").cast("int").alias("count"), F.sum("heads").cast("int").alias("heads"))
    ).persist()

    sums = _term_sums(merged).join(capitalised, "term", "left").fillna(0, subset=["capital_uses"])
    terms = _map(sums, partial(parts.described_terms_of, n_papers=n_papers), parts.TERM_SCHEMA).persist()
    recurrence = _phrase_recurrence(terms)
    weighed = _map(
        merged.join(terms.select("term", "idf", "doc_freq", "head_share", "n_words"), on="term").repartition(
            "paper_id"
        ),
        partial(parts.weighed_terms_of, recurrence=recurrence, max_terms=max_terms),
        parts.WEIGHED_SCHEMA,
    ).persist()

    aliases = _aliases(definitions, annotated, terms).persist()
    index = SparkTermIndex(
        terms=terms.select("term", "kind", "n_words", "doc_freq", "idf"),
        paper_terms=weighed.filter(~F.col("linking")).select("paper_id", "term", "occurrences", "weight", "rank"),
        aliases=aliases,
        weights=weighed.filter(F.col("linking")).select("paper_id", "term", "weight"),
        cached=(terms, weighed, aliases),
    )
    # Materialised before the inputs they were computed from go.
    weighed.count()
    aliases.count()
    for frame in (papers, definitions, counts, annotated, merged):
        frame.unpersist()
    return index


def _verbs(papers: DataFrame) -> pl.Series:
    """``verb_lemmas`` of the first ``VERB_SAMPLE_PAPERS`` papers in id order, as ``terms.spell``
    reads them: their words' uses summed over the partitions, the verbs chosen on the driver."""
    from pyspark.sql import functions as F

    ids = papers.select("paper_id").distinct().orderBy("paper_id").limit(VERB_SAMPLE_PAPERS)
    last_id = ids.agg(F.max("paper_id")).first()[0]
    sample = papers.filter(F.col("paper_id") <= F.lit(last_id)) if last_id is not None else papers
    uses = (
        _map(sample, parts.verb_uses_of, parts.VERB_USE_SCHEMA)
        .groupBy("token")
        .agg(F.sum("uses").alias("uses"), F.sum("verb_uses").alias("verb_uses"))
    )
    return verb_lemmas(_to_polars(uses, parts.VERB_USE_SCHEMA))


def _majority_long_forms(papers: DataFrame, definitions: DataFrame) -> pl.DataFrame:
    """The corpus' majority long form of each acronym, as ``acronym_expansions`` chooses it: the
    long form of more than half of the papers defining the acronym (its alias: the one written most
    often, then the first in order), unless some paper writes the acronym as a lower-case word."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_alias = definitions.groupBy("key", "lemmas", "alias").agg(F.count("*").alias("uses"))
    by_long_form = Window.partitionBy("key", "lemmas")
    votes = (
        by_alias.select(
            "key",
            "lemmas",
            "alias",
            F.sum("uses").over(by_long_form).alias("papers"),
            F.row_number().over(by_long_form.orderBy(F.desc("uses"), F.asc("alias"))).alias("alias_rank"),
        )
        .filter(F.col("alias_rank") == 1)
        .select(
            "key",
            "lemmas",
            "alias",
            (F.col("papers") / F.sum("papers").over(Window.partitionBy("key"))).alias("share"),
        )
    )
    candidates = votes.filter(F.col("share") > 0.5).select("key", "lemmas", "alias").collect()
    majority = pl.DataFrame(
        {
            "key": [row["key"] for row in candidates],
            "lemmas": [list(row["lemmas"]) for row in candidates],
            "alias": [row["alias"] for row in candidates],
            "paper_id": [None] * len(candidates),
            "defined": [False] * len(candidates),
        },
        schema=parts.MAJORITY_SCHEMA,
    )
    if majority.height == 0:
        return majority
    keys = majority["key"].to_list()
    lowercase = _map(papers, partial(parts.lowercase_keys_of, keys=keys), parts.KEY_SCHEMA).distinct().collect()
    return majority.filter(~pl.col("key").is_in([row["key"] for row in lowercase]))


def _term_sums(counts: DataFrame) -> DataFrame:
    """``term``, ``papers``, ``uses``, ``heads`` of every term of the (paper, term) counts."""
    from pyspark.sql import functions as F

    return counts.groupBy("term").agg(
        F.count("*").alias("papers"),
        F.sum("count").cast("long").alias("uses"),
        F.sum("heads").cast("long").alias("heads"),
    )


def _phrase_recurrence(terms: DataFrame) -> float:
    """``term_weights.phrase_recurrence`` as one aggregation: of the (paper, phrase) pairs, the share
    whose phrase another paper uses too."""
    from pyspark.sql import functions as F

    phrases = terms.filter(F.col("n_words") > 1)
    shared, uses = phrases.agg(
        F.sum(F.when(F.col("doc_freq") >= 2, F.col("doc_freq")).otherwise(0)).cast("long"),
        F.sum("doc_freq").cast("long"),
    ).first()
    return float(shared / uses) if uses else 0.0


def _aliases(definitions: DataFrame, annotated: DataFrame, terms: DataFrame) -> DataFrame:
    """``ALIAS_SCHEMA``: each own acronym definition's alias and the term its long form became
    (``acronym_aliases``), and each merged spelling and its term, for the terms that are kept."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kept = terms.select("term")
    term_keys = annotated.select("term", "key").join(kept, on="term")
    long_forms = _map(
        definitions.filter("is_own").select("alias", "lemmas"), parts.long_form_keys_of, parts.LONG_FORM_SCHEMA
    )
    acronyms = (
        long_forms.join(term_keys, on="key")
        .groupBy("alias", "term")
        .agg(F.count("*").cast("int").alias("papers"))
        .select("alias", "term", F.lit("acronym").alias("alias_kind"), "papers", F.lit(0).alias("preference"))
    )
    spellings = (
        annotated.filter(F.col("term") != F.col("preferred"))
        .select(
            F.col("term").alias("alias"), F.col("preferred").alias("term"), F.col("papers").cast("int").alias("papers")
        )
        .join(kept, on="term")
        .select("alias", "term", F.lit("spelling").alias("alias_kind"), "papers", F.lit(1).alias("preference"))
    )
    # One row per (alias, term): an acronym's before a spelling's, as ``index_words`` keeps it.
    first = Window.partitionBy("alias", "term").orderBy("preference")
    return (
        acronyms.unionByName(spellings)
        .select("*", F.row_number().over(first).alias("kept"))
        .filter(F.col("kept") == 1)
        .select("alias", "term", "alias_kind", "papers")
    )


def _to_polars(frame: DataFrame, schema: pa.Schema) -> pl.DataFrame:
    """A small Spark result on the driver, as a Polars frame of ``schema``."""
    return pl.from_arrow(frame.toArrow().select(schema.names).cast(schema))
