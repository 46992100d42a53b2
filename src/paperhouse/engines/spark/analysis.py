"""The corpus step on Spark: ``paperhouse.nlp.analysis.analyse``'s terms, topics and similar papers.

The terms are Spark jobs (``paperhouse.engines.spark.term_index``); the topic model is fitted on the
driver on its bounded sample and applied per partition (``paperhouse.engines.spark.topics``); the
neighbour search is Spark's too (``paperhouse.engines.spark.similar``). The weight matrix comes to the
driver only for a corpus the topic model fits whole (under ``2 * TOPIC_SAMPLE`` papers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix

from paperhouse.engines.spark.similar import similar_papers_on_spark
from paperhouse.engines.spark.term_index import SparkTermIndex, index_terms_on_spark
from paperhouse.engines.spark.topics import SparkTopicModel, fit_topics_on_spark
from paperhouse.nlp.terms.weights import TermWeights, weight_matrix

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class SparkCorpusAnalysis:
    """``paperhouse.nlp.analysis.CorpusAnalysis`` without the method names: the terms and the similar
    papers as Spark DataFrames, the topic model's tables as Polars frames."""

    index: SparkTermIndex
    model: SparkTopicModel
    similar: DataFrame  # SIMILAR_SCHEMA


def analyse_on_spark(spark: SparkSession, papers: DataFrame, previous_topics: int | None = None) -> SparkCorpusAnalysis:
    """``paper_id`` and ``text`` (as written) of each paper, a DataFrame of ``spark`` -> its terms,
    topics and most similar papers, as ``analyse`` finds them. ``previous_topics``: the last run's
    number of topics (``paperhouse.nlp.topics.sizes.choose``)."""
    index = index_terms_on_spark(papers)
    model = fit_topics_on_spark(papers, index.weights, lambda: collect_weights(papers, index), previous_topics)
    similar = similar_papers_on_spark(papers, index.weights)
    return SparkCorpusAnalysis(index, model, similar)


def collect_weights(papers: DataFrame, index: SparkTermIndex) -> TermWeights:
    """``index.weights`` on the driver, as ``index_words`` gives them: rows for every paper in id
    order (a paper without shared terms has an empty row), columns for the terms in sorted order."""
    if index.terms.isEmpty():  # no word a term could start with: index_words' empty index has no rows
        return TermWeights(csr_matrix((0, 0)), pl.Series("paper_id", [], pl.String), np.array([], dtype=str))
    paper_ids = pl.from_arrow(papers.select("paper_id").distinct().toArrow())["paper_id"].cast(pl.String).sort()
    entries = pl.from_arrow(index.weights.toArrow()).cast({"paper_id": pl.String, "term": pl.String})
    terms = entries["term"].unique().sort()
    return TermWeights(weight_matrix(entries, paper_ids, terms), paper_ids, terms.to_numpy())
