"""``paperhouse.dedup.registry.resolve`` as Spark joins: the same ids, entries and counts.

Most papers are simple: their texts claim one registered id that no other paper claims (they
keep it), or none (they mint ``p_`` + their canonical text's hash, unless another text holds
that id). Those are joins and aggregations. What is left needs the registry's order: papers that
claim several ids or share one with another paper (merges and splits since the last run), and
new papers whose minted id is taken (a 16-hex-digit prefix shared by two texts). Only those rows
come to the driver, where ``registry.name_claimants`` and ``registry.minted_id`` settle them as
on one machine: a few rows per merge or split, none on a run that adds papers.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from paperhouse.dedup.papers import ASSIGNMENT_SCHEMA
from paperhouse.dedup.registry import (
    CLAIM_ORDER,
    Resolution,
    id_candidates,
    name_claimants,
    naming_frame,
    next_generation,
    registry_entries,
)
from paperhouse.engines.spark.frames import from_polars, to_polars


def resolve_on_spark(assignments: DataFrame, registry: pl.DataFrame, run_id: str | None, now: datetime) -> Resolution:
    """``registry.resolve`` of ``assignments`` (a Spark DataFrame of ``ASSIGNMENT_SCHEMA``, as
    ``assign_papers_on_spark`` gives it) against the ``registry`` table; the resolved assignments
    are collected for the build database."""
    spark = assignments.sparkSession
    known = from_polars(spark, registry.select("text_hash", "paper_id", "generation"))
    groups = assignments.groupBy(F.col("paper_id").alias("group")).agg(
        F.min(F.when(F.col("match_kind") == "canonical", F.col("text_hash"))).alias("canonical_hash")
    )
    texts = assignments.select(F.col("paper_id").alias("group"), "text_hash").distinct()
    id_age = known.groupBy("paper_id").agg(F.min("generation").alias("generation"))
    is_origin = F.substring("text_hash", 1, 16) == F.substring("paper_id", 3, 16)
    claims = (
        texts.join(known.select("text_hash", "paper_id"), on="text_hash")
        .groupBy("group", "paper_id")
        .agg(F.count("*").alias("n_texts"), F.max(is_origin).alias("has_origin"))
        .join(id_age, on="paper_id")
        .join(groups, on="group")
        .withColumn("claimants", F.count("*").over(_window("paper_id")))
        .withColumn("ids", F.count("*").over(_window("group")))
        .localCheckpoint()
    )
    # An id one paper claims alone, and that paper no other: it keeps it, in any order.
    alone = (F.col("claimants") == 1) & (F.col("ids") == 1)
    tangled = to_polars(claims.filter(~alone)).sort(CLAIM_ORDER[0], descending=CLAIM_ORDER[1])
    settled = name_claimants(tangled)
    named = claims.filter(alone).select("group", F.col("paper_id").alias("final_id"))
    if settled:
        named = named.unionByName(from_polars(spark, naming_frame(settled)))
    named = named.localCheckpoint()

    unnamed = groups.join(named, on="group", how="left_anti")
    candidate = unnamed.withColumn("final_id", F.concat(F.lit("p_"), F.substring("canonical_hash", 1, 16)))
    taken = known.select(F.col("paper_id").alias("final_id")).unionByName(named.select("final_id")).distinct()
    free = candidate.join(taken, on="final_id", how="left_anti").withColumn(
        "uses", F.count("*").over(_window("final_id"))
    )
    minted = free.filter(F.col("uses") == 1).select("group", "final_id").localCheckpoint()
    # The rest (a taken or shared prefix) in group order, as one machine mints them.
    crowded = to_polars(unnamed.join(minted, on="group", how="left_anti")).sort("group")
    if crowded.height:
        minted = minted.unionByName(from_polars(spark, naming_frame(_mint_crowded(crowded, taken, minted))))
    naming = named.unionByName(minted)

    resolved = (
        assignments.join(naming.withColumnRenamed("group", "paper_id"), on="paper_id", how="left")
        .withColumn("paper_id", F.col("final_id"))
        .drop("final_id")
        .select(*assignments.columns)
        .localCheckpoint()
    )
    unregistered = to_polars(
        resolved.select("text_hash", "paper_id")
        .dropDuplicates(["text_hash"])
        .join(known, on="text_hash", how="left_anti")
    )
    oldest = claims.withColumn("place", F.row_number().over(_window("group").orderBy("generation", "paper_id")))
    oldest = oldest.filter(F.col("place") == 1).select("group", F.col("paper_id").alias("oldest"))
    n_groups, n_minted = groups.count(), minted.count()
    resolution = Resolution(
        assignments=to_polars(resolved, ASSIGNMENT_SCHEMA),
        new_entries=registry_entries(unregistered, next_generation(registry), run_id, now),
        papers=n_groups,
        kept=n_groups - n_minted,
        minted=n_minted,
        merged=claims.filter(F.col("ids") > 1).select("group").distinct().count(),
        contested=oldest.join(naming, on="group").filter(F.col("oldest") != F.col("final_id")).count(),
    )
    return resolution


def _window(column: str):
    from pyspark.sql import Window

    return Window.partitionBy(column)


def _mint_crowded(crowded: pl.DataFrame, taken: DataFrame, minted: DataFrame) -> dict[str, str]:
    """``registry.minted_id`` of each of the ``crowded`` groups, in their order, against the ids
    already ``taken`` or ``minted``: only the few candidates each tries are looked up."""
    named: dict[str, str] = {}
    for group, canonical_hash in crowded.select("group", "canonical_hash").iter_rows():
        for tried in _batches(id_candidates(canonical_hash), 8):
            used = {
                row["final_id"]
                for row in taken.unionByName(minted.select("final_id")).filter(F.col("final_id").isin(tried)).collect()
            }
            free = [c for c in tried if c not in used and c not in named.values()]
            if free:
                named[group] = free[0]
                break
    return named


def _batches(candidates, size: int):
    while True:
        yield [next(candidates) for _ in range(size)]
