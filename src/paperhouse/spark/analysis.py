"""The corpus step on Spark: ``paperhouse.analysis.analyse``'s terms, topics and similar papers.

The terms are Spark jobs (``paperhouse.spark.term_index``); the topic model is fitted on the
driver on its bounded sample and applied per partition (``paperhouse.spark.topics``). The
neighbour search is not a Spark job yet: ``similar_papers`` runs on the driver from the collected
weight matrix, each paper's best 30 shared terms (at most 30 entries per paper, 16 bytes each with
their indices: 0.5 GB at 10^6 papers) and every paper id. Method names are not computed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix

from paperhouse.similar import SIMILAR_SCHEMA, similar_papers
from paperhouse.spark.term_index import SparkTermIndex, index_terms_on_spark
from paperhouse.spark.topics import SparkTopicModel, fit_topics_on_spark
from paperhouse.term_weights import TermWeights, weight_matrix

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class SparkCorpusAnalysis:
    """``paperhouse.analysis.CorpusAnalysis`` without the method names: the terms as Spark
    DataFrames, the topic model's tables as Polars frames, the similar papers as a DataFrame."""

    index: SparkTermIndex
    model: SparkTopicModel
    similar: DataFrame  # SIMILAR_SCHEMA
    weights: TermWeights  # index.weights collected (collect_weights): what the neighbour search read


def analyse_on_spark(spark: SparkSession, papers: DataFrame, previous_topics: int | None = None) -> SparkCorpusAnalysis:
    """``paper_id`` and ``text`` (as written) of each paper, a DataFrame of ``spark`` -> its terms,
    topics and most similar papers, as ``analyse`` finds them. ``previous_topics``: the last run's
    number of topics (``paperhouse.topic_sizes.choose``)."""
    index = index_terms_on_spark(papers)
    weights = collect_weights(papers, index)  # for the neighbour search, which runs on the driver
    model = fit_topics_on_spark(papers, index.weights, lambda: weights, previous_topics)
    similar = similar_papers(weights)
    return SparkCorpusAnalysis(index, model, spark.createDataFrame(similar.to_arrow(), _similar_schema()), weights)


def collect_weights(papers: DataFrame, index: SparkTermIndex) -> TermWeights:
    """``index.weights`` on the driver, as ``index_words`` gives them: rows for every paper in id
    order (a paper without shared terms has an empty row), columns for the terms in sorted order."""
    if index.terms.isEmpty():  # no word a term could start with: index_words' empty index has no rows
        return TermWeights(csr_matrix((0, 0)), pl.Series("paper_id", [], pl.String), np.array([], dtype=str))
    paper_ids = pl.from_arrow(papers.select("paper_id").distinct().toArrow())["paper_id"].cast(pl.String).sort()
    entries = pl.from_arrow(index.weights.toArrow()).cast({"paper_id": pl.String, "term": pl.String})
    terms = entries["term"].unique().sort()
    return TermWeights(weight_matrix(entries, paper_ids, terms), paper_ids, terms.to_numpy())


def _similar_schema():
    from pyspark.sql.types import DoubleType, IntegerType, StringType, StructField, StructType

    types = {pl.String: StringType(), pl.Float64: DoubleType(), pl.Int32: IntegerType()}
    return StructType([StructField(name, types[dtype]) for name, dtype in SIMILAR_SCHEMA.items()])
