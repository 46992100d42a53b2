"""``paperhouse.dedup.papers.assign_papers`` as Spark jobs: the same papers, canonical records and evidence.

Where the rows are independent, Spark's tasks run the single-machine code on Arrow batches
(``mapInArrow``): exact keys and text hashes (``dedup.keyed_records``, ``dedup.with_text_facts``),
shingles and MinHash signatures (``minhash.signatures``), band keys (``minhash.band_keys``), the
signature estimate of each colliding pair (``minhash.promising_pairs``), the verification of each
candidate pair on the texts' exact sets (``pair_verification``), and each record's row
(``dedup.assignment_rows``). What needs the whole corpus is Spark joins and aggregations: the
texts' numbers, the LSH buckets (capped at ``max_bucket`` as on one machine), the rule that lets
a fragment join only its best container (``dedup.paper_edges``), connected components
(``paperhouse.engines.spark.components``) and the canonical text and record of each paper.

Texts are numbered as on one machine (``doc``: the rank of the exact key among the sorted
distinct keys), so pairs keep their orientation (a < b) and every tie breaks the same way.
Results read more than once are checkpointed in the executors (``localCheckpoint``): a recomputed
Python stage would cost its time again, and the texts' numbers must not change between reads.
Nothing the size of the corpus comes to the driver: one row per partition (to number the texts)
and one answer per round of the components.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import numpy as np
import polars as pl
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from paperhouse.dedup.minhash import band_keys, promising_pairs, signatures, signed_texts
from paperhouse.dedup.papers import (
    ASSIGNMENT_SCHEMA,
    assignment_rows,
    keyed_records,
    paper_id_of,
    with_text_facts,
    word_count,
)
from paperhouse.dedup.params import DedupParams
from paperhouse.dedup.verification import sets_of_pairs, verify_pairs
from paperhouse.engines.spark.arrow_columns import Columns, matrix_of_bytes, rows_of_bytes
from paperhouse.engines.spark.components import connected_components

logger = logging.getLogger(__name__)

_DEFAULT_PARAMS = DedupParams()  # frozen: one instance serves every call

KEYED = Columns({"source_file": pl.String, "record_no": pl.Int32, "file_sha256": pl.String, "exact_key": pl.String})
TEXTS = Columns({"doc": pl.Int64, "exact_key": pl.String, "n_words": pl.Int64, "text_hash": pl.String})
SIGNED = Columns({"doc": pl.Int64, "n_shingles": pl.Int64, "signature": pl.Binary})
BAND_ROWS = Columns({"band": pl.Int32, "bucket": pl.Int64, "doc": pl.Int64})
PAIRS = Columns({"a": pl.Int64, "b": pl.Int64})
EVIDENCE = Columns(
    {
        "a": pl.Int64,
        "b": pl.Int64,
        "jaccard": pl.Float64,
        "containment": pl.Float64,
        "word_jaccard": pl.Float64,
        "size_a": pl.Float64,
        "size_b": pl.Float64,
        "matched_by": pl.String,
    }
)
ASSIGNMENTS = Columns(ASSIGNMENT_SCHEMA)

Batches = Iterator[pa.RecordBatch]


def assign_papers_on_spark(records: DataFrame, params: DedupParams = _DEFAULT_PARAMS) -> DataFrame:
    """``assign_papers`` of ``records`` (``source_file``, ``record_no``, ``file_sha256``,
    ``normalized_text``) as a Spark DataFrame: one row per record, the columns of
    ``ASSIGNMENT_SCHEMA``, in no particular order."""
    keyed = records.mapInArrow(_each_batch(keyed_records, KEYED), KEYED.ddl).localCheckpoint()
    texts = numbered_texts(keyed.select("exact_key"))
    candidates = candidate_pairs(texts, params)
    evidence = verified(candidates, texts, params).localCheckpoint()
    components = connected_components(paper_edges(evidence))
    logger.info("duplicate groups found in %d large-star/small-star rounds", components.rounds)

    papers = _texts_with_papers(texts, components.labels).localCheckpoint()
    to_canonical = papers.where(F.col("doc") != F.col("canonical_doc")).select(
        "doc", F.least("doc", "canonical_doc").alias("a"), F.greatest("doc", "canonical_doc").alias("b")
    )
    # Most texts were a candidate pair with their canonical text, so their evidence is at hand: only
    # those that reached their paper through another text are verified again.
    known = to_canonical.join(evidence, ["a", "b"])
    again = verified(to_canonical.join(evidence, ["a", "b"], "left_anti").select("a", "b"), texts, params)
    evidence_columns = ["jaccard", "containment", "word_jaccard", "matched_by"]
    canonical_evidence = known.select("doc", *evidence_columns).unionByName(
        to_canonical.join(again, ["a", "b"]).select("doc", *evidence_columns)
    )

    with_papers = (
        keyed.join(texts, "exact_key").select("source_file", "record_no", "file_sha256", "doc").join(papers, "doc")
    )
    canonical_record = (
        with_papers.where(F.col("doc") == F.col("canonical_doc"))
        .groupBy("canonical_doc")
        .agg(F.min(F.struct("file_sha256", "record_no", "source_file")).alias("first"))
        .select(
            "canonical_doc",
            F.col("first.file_sha256").alias("canonical_sha"),
            F.col("first.record_no").alias("canonical_record_no"),
            F.col("first.source_file").alias("canonical_source_file"),
        )
    )
    assigned = with_papers.join(canonical_evidence, "doc", "left").join(canonical_record, "canonical_doc")
    return assigned.mapInArrow(_assignment_batches, ASSIGNMENTS.ddl)


def numbered_texts(keys: DataFrame) -> DataFrame:
    """(``doc``, ``exact_key``, ``n_words``, ``text_hash``) of each distinct key, ``doc`` its rank
    among the sorted keys from 0.

    The keys are range-partitioned by the sort, so a key's rank is its row's position in its
    partition plus the sizes of the partitions before it: only those sizes come to the driver."""
    ordered = (
        keys.distinct()
        .orderBy("exact_key")
        .select("exact_key", F.spark_partition_id().alias("part"), F.monotonically_increasing_id().alias("position"))
        .localCheckpoint()  # the numbers below read these positions: they must not be computed again
    )
    parts = ordered.groupBy("part").agg(F.count("*").alias("rows"), F.min("position").alias("first")).collect()
    starts, before = [], 0
    for part in sorted(parts, key=lambda row: row["part"]):
        starts.append((part["part"], before - part["first"]))
        before += part["rows"]
    # monotonically_increasing_id numbers a partition's rows consecutively: position - first is the row's place in it.
    shift = ordered.sparkSession.createDataFrame(starts, "part int, shift bigint")
    numbered = ordered.join(F.broadcast(shift), "part").select(
        (F.col("position") + F.col("shift")).alias("doc"), "exact_key"
    )
    return numbered.mapInArrow(_each_batch(with_text_facts, TEXTS), TEXTS.ddl).localCheckpoint()


def candidate_pairs(texts: DataFrame, params: DedupParams = _DEFAULT_PARAMS) -> DataFrame:
    """``minhash.candidate_pairs`` of the numbered texts: (``a``, ``b``), a < b, that share a bucket
    of at most ``max_bucket`` texts in some band and whose signatures say a rule could hold."""
    signed = texts.mapInArrow(_signature_batches(params), SIGNED.ddl).localCheckpoint()
    band_rows = signed.mapInArrow(_band_batches(params), BAND_ROWS.ddl)
    bucket = ["band", "bucket"]
    shared = band_rows.withColumn("members", F.count("*").over(Window.partitionBy(*bucket))).where(
        F.col("members").between(2, params.max_bucket)
    )
    colliding = (
        shared.alias("x")
        .join(shared.alias("y"), bucket)
        .where(F.col("x.doc") < F.col("y.doc"))
        .select(F.col("x.doc").alias("a"), F.col("y.doc").alias("b"))
        .distinct()
    )

    def signed_as(side: str) -> DataFrame:
        return signed.select(
            F.col("doc").alias(side),
            F.col("n_shingles").alias(f"shingles_{side}"),
            F.col("signature").alias(f"sig_{side}"),
        )

    with_signatures = colliding.join(signed_as("a"), "a").join(signed_as("b"), "b")
    return with_signatures.mapInArrow(_promising_batches(params), PAIRS.ddl)


def verified(pairs: DataFrame, texts: DataFrame, params: DedupParams = _DEFAULT_PARAMS) -> DataFrame:
    """``pair_verification.verify_pairs`` of each (``a``, ``b``) pair of numbered texts: the
    ``EVIDENCE`` columns, ``matched_by`` null where no rule holds."""

    def keys_as(side: str) -> DataFrame:
        return texts.select(F.col("doc").alias(side), F.col("exact_key").alias(f"key_{side}"))

    with_keys = pairs.join(keys_as("a"), "a").join(keys_as("b"), "b")
    return with_keys.mapInArrow(_verification_batches(params), EVIDENCE.ddl)


def paper_edges(evidence: DataFrame) -> DataFrame:
    """``dedup.paper_edges`` in Spark: the pairs a rule merges by symmetry, and for each text merged
    only by being contained in others, the container with the highest Jaccard (ties: the smallest)."""
    merged = evidence.where(F.col("matched_by").isNotNull())
    symmetric = merged.where(F.col("matched_by") != "containment").select("a", "b")
    has_symmetric = symmetric.select(F.col("a").alias("fragment")).union(symmetric.select("b")).distinct()
    a_is_fragment = F.col("size_a") <= F.col("size_b")
    contained = (
        merged.where(F.col("matched_by") == "containment")
        .select(
            "a",
            "b",
            "jaccard",
            F.when(a_is_fragment, F.col("a")).otherwise(F.col("b")).alias("fragment"),
            F.when(a_is_fragment, F.col("b")).otherwise(F.col("a")).alias("container"),
        )
        .join(has_symmetric, "fragment", "left_anti")
    )
    best_first = Window.partitionBy("fragment").orderBy(F.col("jaccard").desc(), F.col("container").asc())
    best = contained.withColumn("rank", F.row_number().over(best_first)).where(F.col("rank") == 1)
    return symmetric.unionByName(best.select("a", "b"))


def _texts_with_papers(texts: DataFrame, labels: DataFrame) -> DataFrame:
    """Each text with its paper's canonical text: in its component, the text with the most words,
    ties to the smallest key (``doc``), as ``assign_papers`` chooses."""
    facts = texts.select("doc", "n_words", "text_hash")
    grouped = facts.join(labels.withColumnRenamed("vertex", "doc"), "doc", "left").withColumn(
        "component",
        F.coalesce("component", "doc"),  # a text in no edge is a paper of its own
    )
    canonical = (
        grouped.groupBy("component")
        .agg(F.min(F.struct((-F.col("n_words")).alias("fewer_words"), "doc")).alias("first"))
        .select("component", F.col("first.doc").alias("canonical_doc"))
    )
    about_canonical = facts.select(
        F.col("doc").alias("canonical_doc"),
        F.col("text_hash").alias("canonical_hash"),
        F.col("n_words").alias("canonical_n_words"),
    )
    return grouped.join(canonical, "component").join(about_canonical, "canonical_doc").drop("component")


# The Python bodies of the stages: each runs in Spark's tasks on Arrow batches.


def _each_batch(transform: Callable[[pl.DataFrame], pl.DataFrame], out: Columns) -> Callable[[Batches], Batches]:
    def run(batches: Batches) -> Batches:
        for batch in batches:
            yield from out.batches(transform(pl.from_arrow(batch)))

    return run


def _signature_batches(params: DedupParams) -> Callable[[Batches], Batches]:
    def run(batches: Batches) -> Batches:
        for batch in batches:
            texts = pl.from_arrow(batch)
            signature, n_shingles = signatures(texts["exact_key"], params)
            columns = [batch.column("doc").cast(pa.int64()), pa.array(n_shingles), rows_of_bytes(signature)]
            yield pa.RecordBatch.from_arrays(columns, schema=SIGNED.arrow)

    return run


def _band_batches(params: DedupParams) -> Callable[[Batches], Batches]:
    def run(batches: Batches) -> Batches:
        for batch in batches:
            signature = matrix_of_bytes(batch.column("signature"), np.uint32, params.num_bins)
            rows = signed_texts(signature)
            docs = batch.column("doc").to_numpy()[rows]
            for band in range(params.bands):
                bucket = band_keys(signature, rows, band, params).view(np.int64)  # Spark has no unsigned type
                band_column = np.full(len(rows), band, dtype=np.int32)
                yield pa.RecordBatch.from_arrays([band_column, bucket, docs], schema=BAND_ROWS.arrow)

    return run


def _promising_batches(params: DedupParams) -> Callable[[Batches], Batches]:
    """Each pair's two signatures side by side make a local table of 2n texts: pair i is (i, n + i)."""

    def run(batches: Batches) -> Batches:
        for batch in batches:
            n = batch.num_rows
            signature = np.concatenate(
                [matrix_of_bytes(batch.column(f"sig_{side}"), np.uint32, params.num_bins) for side in "ab"]
            )
            sizes = np.concatenate([batch.column(f"shingles_{side}").to_numpy() for side in "ab"])
            local = pl.DataFrame({"a": np.arange(n, dtype=np.uint32), "b": np.arange(n, 2 * n, dtype=np.uint32)})
            kept = promising_pairs(local, signature, sizes, params)["a"].to_numpy()
            pairs = pl.from_arrow(batch.select(["a", "b"]))
            yield from PAIRS.batches(pairs[kept])

    return run


def _verification_batches(params: DedupParams) -> Callable[[Batches], Batches]:
    """The batch's texts numbered 0, 1, ... in the order of their numbers, so local pairs keep a < b."""

    def run(batches: Batches) -> Batches:
        for batch in batches:
            pairs = pl.from_arrow(batch)
            sides = [pairs.select(doc=side, exact_key=f"key_{side}") for side in ("a", "b")]
            texts = pl.concat(sides).unique("doc").sort("doc").with_row_index("local")
            local = texts.select("doc", "local")
            numbered = (
                pairs.select("a", "b")
                .join(local.rename({"doc": "a", "local": "local_a"}), on="a", maintain_order="left")
                .join(local.rename({"doc": "b", "local": "local_b"}), on="b", maintain_order="left")
            )
            local_pairs = numbered.select(a="local_a", b="local_b")
            keys = texts["exact_key"]
            n_words = texts.select(word_count(pl.col("exact_key"))).to_series().to_numpy()
            shingles, word_sets = sets_of_pairs(local_pairs, keys, n_words, params)
            evidence = verify_pairs(local_pairs, shingles, word_sets, params)
            global_doc = texts["doc"].to_numpy()
            evidence = evidence.with_columns(
                a=global_doc[evidence["a"].to_numpy()], b=global_doc[evidence["b"].to_numpy()]
            )
            yield from EVIDENCE.batches(evidence)

    return run


def _assignment_batches(batches: Batches) -> Batches:
    for batch in batches:
        assigned = pl.from_arrow(batch).with_columns(paper_id=paper_id_of(pl.col("canonical_hash")))
        yield from ASSIGNMENTS.batches(assignment_rows(assigned))
