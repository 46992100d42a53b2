"""The topic model on Spark: fitted on the driver on the sample ``fit_topics`` uses, then applied per
partition (``paperhouse.engines.spark.topic_partitions``).

On the driver, bounded whatever the corpus's size: the topic vocabulary (at most
``MAX_VOCABULARY`` terms, chosen by a Spark aggregation of the weights), the sample's rows of the
weight matrix and its texts (every ``n // TOPIC_SAMPLE``-th paper id: 4,000 to 8,000 papers, at
most 30 entries each), the NMF fits of ``fit_sample`` and the subtopic fits of ``fit_split``, and
the topics' sizes (k counts, and k x subtopics). A corpus whose sample is all of it (under
``2 * TOPIC_SAMPLE`` papers) is fitted and placed on the driver by ``fit_topics`` itself.

Per partition: each paper placed in the topics and its primary topic's subtopics, and its share
rows. Placing is NMF's solver with the model fixed, and it stops at a tolerance relative to its
batch: shares agree with a placing of the whole corpus to that tolerance, not bit for bit.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix

from paperhouse.engines.spark import topic_partitions
from paperhouse.engines.spark.frames import spark_schema_of_arrow
from paperhouse.nlp.sklearn_setup import import_sklearn
from paperhouse.nlp.terms.weights import TermWeights
from paperhouse.nlp.topics.model import (
    MAX_VOCABULARY,
    SUBTOPIC_LEVEL,
    TOPIC_LEVEL,
    TOPIC_SAMPLE,
    TopicModel,
    fit_sample,
    fit_topics,
    number_topics,
    sample_ids,
    spread_sample,
    subtopic_tables,
    term_rows,
    topic_rows,
    topic_shares,
)
from paperhouse.nlp.topics.subtopics import fit_split
from paperhouse.nlp.topics.top_terms import top_terms

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class SparkTopicModel:
    """``TopicModel`` with the papers' shares as Spark DataFrames (PAPER_TOPIC_SCHEMA) and the
    topics' own tables, small, as Polars frames."""

    paper_topics: DataFrame
    topic_terms: pl.DataFrame
    topics: pl.DataFrame
    selection: pl.DataFrame
    subtopics: pl.DataFrame
    paper_subtopics: DataFrame
    subtopic_terms: pl.DataFrame


def fit_topics_on_spark(
    papers: DataFrame,
    weights: DataFrame,
    collect_weights,
    previous_size: int | None = None,
) -> SparkTopicModel:
    """``fit_topics`` for ``papers`` (``paper_id``, ``text``) and their term ``weights`` (``paper_id``,
    ``term``, ``weight``: ``SparkTermIndex.weights``). ``collect_weights()`` gives the weights as
    ``TermWeights`` on the driver, for a corpus small enough to be its own sample."""
    from pyspark.sql import functions as F

    spark = papers.sparkSession
    ids = papers.select("paper_id").distinct()
    n_papers = ids.count()
    if n_papers < 2 * TOPIC_SAMPLE:
        matrix = collect_weights()
        texts = _texts(papers, sample_ids(matrix.paper_ids))
        return _on_spark(spark, fit_topics(matrix, texts=texts, previous_size=previous_size))
    terms = _topic_vocabulary(weights, n_papers)
    vocabulary = spark.createDataFrame([(term,) for term in terms], "term string")
    entries = weights.join(F.broadcast(vocabulary), on="term")
    chosen = spread_sample_ids(ids, n_papers, TOPIC_SAMPLE)
    sample = _matrix(
        entries.join(spark.createDataFrame([(i,) for i in chosen], "paper_id string"), on="paper_id"),
        pl.Series(chosen, dtype=pl.String),
        terms,
    )
    texts = _texts(papers, sample.paper_ids)["text"].fill_null("").to_list()
    import_sklearn()
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        fit = fit_sample(sample.matrix, terms, n_papers, texts, previous_size, None, pool)
        described = [top_terms(row, fit.held, terms) for row in fit.best.model.components_]
        sample_primary = topic_shares(fit.best.sample_weights).argmax(axis=1)
        splits = list(
            pool.map(
                lambda c: fit_split(sample.matrix[np.flatnonzero(sample_primary == c)], described[c], terms, fit.held),
                range(len(described)),
            )
        )
    placed = (
        ids.join(entries, on="paper_id", how="left")
        .repartition("paper_id")
        .mapInArrow(
            partial(topic_partitions.placed_papers_of, model=fit.best.model, terms=list(terms), splits=splits),
            spark_schema_of_arrow(topic_partitions.PLACED_SCHEMA),
        )
        .persist()
    )
    k = len(described)
    sizes = np.zeros(k, dtype=np.int64)
    subtopic_sizes = [np.zeros(len(split.described), dtype=np.int64) for split in splits]
    for row in placed.groupBy("primary", "subtopic_primary").count().collect():
        sizes[row["primary"]] += row["count"]
        subtopic_sizes[row["primary"]][row["subtopic_primary"]] += row["count"]
    topic_id = number_topics(sizes, described, terms, 1)
    subtopics, subtopic_terms, subtopic_ids = subtopic_tables(
        topic_id, [split.described for split in splits], subtopic_sizes, terms
    )

    def share_rows(level: int) -> DataFrame:
        body = partial(
            topic_partitions.share_rows_of,
            topic_id=topic_id.tolist(),
            subtopic_ids=[ids.tolist() for ids in subtopic_ids],
            level=level,
        )
        return placed.mapInArrow(body, spark_schema_of_arrow(topic_partitions.SHARE_SCHEMA)).persist()

    paper_topics, paper_subtopics = share_rows(TOPIC_LEVEL), share_rows(SUBTOPIC_LEVEL)
    paper_topics.count(), paper_subtopics.count()
    placed.unpersist()
    return SparkTopicModel(
        paper_topics,
        term_rows(topic_id, described, terms),
        topic_rows(topic_id, TOPIC_LEVEL, [None] * k, described, terms, sizes),
        fit.selection,
        subtopics,
        paper_subtopics,
        subtopic_terms,
    )


def to_topic_model(model: SparkTopicModel) -> TopicModel:
    """The model with its papers' shares collected: for tests and small corpora."""
    from paperhouse.nlp.topics.model import PAPER_TOPIC_SCHEMA

    def collected(frame: DataFrame) -> pl.DataFrame:
        return pl.from_arrow(frame.toArrow()).cast(PAPER_TOPIC_SCHEMA).sort("paper_id", "topic_id")

    return TopicModel(
        collected(model.paper_topics),
        model.topic_terms,
        model.topics,
        model.selection,
        model.subtopics,
        collected(model.paper_subtopics),
        model.subtopic_terms,
    )


def _topic_vocabulary(weights: DataFrame, n_papers: int) -> np.ndarray:
    """``topics._topic_vocabulary`` as an aggregation: the terms held by at least two papers and at
    most half of them (two in a corpus of four or fewer), the ``MAX_VOCABULARY`` held most widely
    (ties in term order, as its stable sort over sorted columns keeps them), in term order."""
    from pyspark.sql import functions as F

    held = weights.groupBy("term").agg(F.count("*").alias("papers"))
    usable = held.filter((F.col("papers") >= 2) & (F.col("papers") <= max(2, 0.5 * n_papers)))
    widest = usable.orderBy(F.desc("papers"), F.asc("term")).limit(MAX_VOCABULARY).collect()
    return np.array(sorted(row["term"] for row in widest), dtype=object)


def spread_sample_ids(ids: DataFrame, n_papers: int, size: int) -> list[str]:
    """``spread_sample(n_papers, size)``'s papers of ``ids`` (one ``paper_id`` per row), sorted:
    every ``step``-th of the sorted ids, from the first."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    sample = spread_sample(n_papers, size)
    if sample.step is None:
        return sorted(row["paper_id"] for row in ids.collect())
    position = F.row_number().over(Window.orderBy("paper_id")) - 1
    ranked = ids.select("paper_id", position.alias("position"))
    chosen = ranked.filter(F.col("position") % sample.step == 0).select("paper_id").collect()
    return sorted(row["paper_id"] for row in chosen)


def _matrix(entries: DataFrame, paper_ids: pl.Series, terms: np.ndarray) -> TermWeights:
    """Collected ``entries`` (``paper_id``, ``term``, ``weight``) as rows of ``paper_ids``, columns of ``terms``."""
    rows = pl.from_arrow(entries.select("paper_id", "term", "weight").toArrow())
    rows = rows.cast({"paper_id": pl.String, "term": pl.String}).select(
        row=pl.col("paper_id").replace_strict(paper_ids, pl.int_range(len(paper_ids)), return_dtype=pl.Int64),
        column=pl.col("term").replace_strict(
            pl.Series(terms, dtype=pl.String), pl.int_range(len(terms)), return_dtype=pl.Int64
        ),
        weight="weight",
    )
    matrix = csr_matrix(
        (rows["weight"].to_numpy(), (rows["row"].to_numpy(), rows["column"].to_numpy())),
        shape=(len(paper_ids), len(terms)),
    )
    matrix.sort_indices()
    return TermWeights(matrix, paper_ids, terms)


def _texts(papers: DataFrame, chosen: pl.Series) -> pl.DataFrame:
    """``paper_id`` and ``text`` of the ``chosen`` papers, in their order (null for a missing text)."""
    from pyspark.sql import functions as F

    picked = papers.filter(F.col("paper_id").isin(chosen.to_list())).select("paper_id", "text")
    found = pl.from_arrow(picked.toArrow()).cast({"paper_id": pl.String, "text": pl.String})
    return chosen.alias("paper_id").to_frame().join(found, on="paper_id", how="left", maintain_order="left")


def _on_spark(spark, model: TopicModel) -> SparkTopicModel:
    """A model fitted on the driver, its papers' shares handed to Spark."""
    schema = spark_schema_of_arrow(topic_partitions.SHARE_SCHEMA)
    return SparkTopicModel(
        spark.createDataFrame(model.paper_topics.to_arrow().cast(topic_partitions.SHARE_SCHEMA), schema),
        model.topic_terms,
        model.topics,
        model.selection,
        model.subtopics,
        spark.createDataFrame(model.paper_subtopics.to_arrow().cast(topic_partitions.SHARE_SCHEMA), schema),
        model.subtopic_terms,
    )
