"""``paperhouse.nlp.similar.similar_papers`` as Spark jobs: the same search, its work in Spark's tasks.

A corpus of at most ``exact_limit`` papers (20,000: a field's lists) is searched whole in one task
(``similar_partitions.searched_whole``): its weight matrix is at most 20,000 papers' best 30 terms
(about 10 MB), and the answer is the single-machine one, bit for bit.

Past that, the inverted file of ``similar_papers`` is laid out over the cluster:
- on the driver, bounded whatever the corpus's size: the shared vocabulary (the terms two papers
  hold), the rows of ``FIT_SAMPLE`` papers (20,000, spread over the sorted ids as on one machine),
  the LSA model fitted on them (``dims`` x shared terms) and the k-means cells of their vectors
  (one per ``cell_size`` papers, ``dims`` floats each);
- per partition: each paper's LSA vector, home cell and the ``probes`` cells it visits;
- per cell (a group of about ``cell_size`` members and ``probes`` times as many visitors): each
  visitor's k nearest members by LSA cosine;
- as joins and aggregations: each paper's k best over the cells it visited, the words' document
  frequencies of the profiles, and each pair's profile cosine (``profile_entries``), which is
  ``score`` and ``rank``.
The profiles are float64 here and float32 on one machine: a score may differ in its fourth
decimal where it rounds at a half, and equal scores may rank the other way.
"""

from __future__ import annotations

import math
from functools import partial

import polars as pl
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from paperhouse.engines.spark import similar_partitions as parts
from paperhouse.engines.spark.frames import spark_schema_of_arrow, to_polars
from paperhouse.engines.spark.topics import spread_sample_ids
from paperhouse.nlp.similar import FIT_SAMPLE, fit_cells, fit_lsa, projected

SIMILAR_SPARK_SCHEMA = "paper_id string, similar_paper_id string, score double, rank int"
_WEIGHT_ROWS = {"paper_id": pl.String, "term": pl.String, "weight": pl.Float64}


def similar_papers_on_spark(
    papers: DataFrame,
    weights: DataFrame,
    k: int = 5,
    dims: int = 128,
    exact_limit: int = 20_000,
    cell_size: int = 2000,
    probes: int = 3,
) -> DataFrame:
    """``papers`` (``paper_id``) and their term ``weights`` (``paper_id``, ``term``, ``weight``:
    ``SparkTermIndex.weights``) -> the k most similar papers of each (``SIMILAR_SCHEMA``)."""
    ids = papers.select("paper_id").distinct()
    n_papers = ids.count()
    weights = weights.select("paper_id", "term", "weight")
    if n_papers <= exact_limit:
        rows = ids.join(weights, on="paper_id", how="left").withColumn("corpus", F.lit(0))
        # A lambda, not a partial: applyInArrow reads the function's signature for its kind.
        return rows.groupBy("corpus").applyInArrow(
            lambda table: parts.searched_whole(table, k, dims, exact_limit), SIMILAR_SPARK_SCHEMA
        )

    spark = papers.sparkSession
    held = weights.groupBy("term").agg(F.count("*").alias("papers")).filter(F.col("papers") >= 2)
    terms = sorted(row["term"] for row in held.select("term").collect())
    if len(terms) < 2:
        return spark.createDataFrame([], SIMILAR_SPARK_SCHEMA)
    vocabulary = spark.createDataFrame([(term,) for term in terms], "term string")
    rows = ids.join(weights.join(F.broadcast(vocabulary), on="term"), on="paper_id", how="left")

    chosen = spark.createDataFrame([(i,) for i in spread_sample_ids(ids, n_papers, FIT_SAMPLE)], "paper_id string")
    sample = parts.weights_of(to_polars(rows.join(F.broadcast(chosen), on="paper_id"), _WEIGHT_ROWS), terms)
    svd = fit_lsa(sample.matrix, n_papers, dims)
    cells = fit_cells(projected(svd, sample.matrix), n_papers, cell_size)
    del sample

    place = partial(parts.placed_in_cells_of, terms=terms, svd=svd, cells=cells, probes=probes)
    placed = rows.repartition("paper_id").mapInArrow(place, spark_schema_of_arrow(parts.PLACED_SCHEMA)).persist()
    visits = placed.select("paper_id", "vector", F.col("home").alias("cell"), F.lit(True).alias("member"))
    visits = visits.unionByName(
        placed.select("paper_id", "vector", F.explode("probes").alias("cell"), F.lit(False).alias("member"))
    )
    near = visits.groupBy("cell").applyInArrow(
        lambda table: parts.neighbours_in_cell(table, k), spark_schema_of_arrow(parts.NEAR_SCHEMA)
    )
    by_nearness = Window.partitionBy("paper_id").orderBy(F.desc("near"), F.asc("similar_paper_id"))
    pairs = near.withColumn("place", F.row_number().over(by_nearness)).filter(F.col("place") <= k)
    found = ranked(rescored(pairs.select("paper_id", "similar_paper_id"), profile_entries(weights, n_papers)), k)
    found = found.localCheckpoint()
    placed.unpersist()
    return found


def profile_entries(weights: DataFrame, n_papers: int) -> DataFrame:
    """``paperhouse.nlp.similar.profiles`` as rows ``paper_id``, ``feature``, ``value``: each paper's
    terms (``"t <term>"``, its weights) and the words of its terms (``"w <word>"``, a word counted
    once per term that holds it, times ln((n + 1) / (papers + 1)) + 1), each half scaled to length
    1/sqrt(2)."""
    by_paper = Window.partitionBy("paper_id")
    terms = weights.select(
        "paper_id", F.concat(F.lit("t "), F.col("term")).alias("feature"), F.col("weight").alias("value")
    )
    words = (
        weights.select("paper_id", F.explode(F.split(F.col("term"), " ")).alias("word"))
        .groupBy("paper_id", "word")
        .agg(F.count("*").alias("count"))
    )
    idf = words.groupBy("word").agg((F.log(F.lit(n_papers + 1.0) / (F.count("*") + 1.0)) + 1.0).alias("idf"))
    words = words.join(idf, on="word").select(
        "paper_id",
        F.concat(F.lit("w "), F.col("word")).alias("feature"),
        (F.col("count") * F.col("idf")).alias("value"),
    )

    def scaled(half: DataFrame) -> DataFrame:
        length = F.sqrt(F.sum(F.col("value") * F.col("value")).over(by_paper))
        return half.withColumn("value", F.col("value") * math.sqrt(0.5) / length)

    return scaled(terms).unionByName(scaled(words))


def rescored(pairs: DataFrame, profiles: DataFrame) -> DataFrame:
    """Each (``paper_id``, ``similar_paper_id``) pair with its profiles' cosine as ``score`` (0 for
    profiles without a feature in common): a join on the features both hold, summed."""
    source = profiles.withColumnRenamed("value", "source_value")
    target = profiles.select(
        F.col("paper_id").alias("similar_paper_id"), "feature", F.col("value").alias("target_value")
    )
    products = (
        pairs.join(source, on="paper_id")
        .join(target, on=["similar_paper_id", "feature"])
        .groupBy("paper_id", "similar_paper_id")
        .agg(F.sum(F.col("source_value") * F.col("target_value")).alias("score"))
    )
    return pairs.join(products, on=["paper_id", "similar_paper_id"], how="left").fillna(0.0, subset=["score"])


def ranked(scored: DataFrame, k: int) -> DataFrame:
    """Each paper's k pairs of highest ``score`` (the lower id first among equals), ranked from 1,
    scores rounded to four decimals (half to even, as Polars rounds)."""
    by_score = Window.partitionBy("paper_id").orderBy(F.desc("score"), F.asc("similar_paper_id"))
    return (
        scored.withColumn("rank", F.row_number().over(by_score))
        .filter(F.col("rank") <= k)
        .select(
            "paper_id",
            "similar_paper_id",
            F.bround(F.col("score"), 4).cast("double").alias("score"),
            F.col("rank").cast("int").alias("rank"),
        )
    )
