"""Dedup as Spark jobs gives what ``assign_papers`` gives: the same papers, canonical records, match
kinds and evidence, on the bundled seeds and their variants, a synthetic corpus full of near
duplicates, and the real dev lists.

No tolerance is allowed anywhere: the Spark stages hash, sign, band and verify with the same
functions on the same texts, so every signature, bucket and candidate pair is the same, and the
floats are computed by the same operations from the same integers.
"""

import random

import numpy as np
import polars as pl
import pytest
from corpus import SEEDS, seed_abstracts
from polars.testing import assert_frame_equal
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components as scipy_components

from paperhouse.dedup.papers import ASSIGNMENT_SCHEMA, assign_papers
from paperhouse.dedup.params import DedupParams
from paperhouse.engines.spark.components import connected_components
from paperhouse.engines.spark.dedup import assign_papers_on_spark, numbered_texts
from paperhouse.evaluation import real_data, synth
from paperhouse.evaluation.variants import VARIANTS
from paperhouse.ingest.normalize import clean_text, joined_words, normalized_text
from paperhouse.ingest.parse_cache import read_records

pytestmark = pytest.mark.spark

DEFAULT_PARAMS = DedupParams()
RECORD_COLUMNS = ["source_file", "record_no", "file_sha256", "normalized_text"]


def records_of(texts: list[str], per_file: int = 1_000) -> pl.DataFrame:
    """One record per text, ``per_file`` records to a file, normalised as ingest normalises them."""
    return pl.DataFrame(
        {
            "source_file": [f"list_{i // per_file:03d}.txt" for i in range(len(texts))],
            "record_no": [i % per_file + 1 for i in range(len(texts))],
            "file_sha256": [f"{i // per_file:064x}" for i in range(len(texts))],
            "text": texts,
        },
        schema_overrides={"record_no": pl.Int32},
    ).select(*RECORD_COLUMNS[:3], normalized_text=normalized_text(clean_text(pl.col("text"))))


def on_spark(spark, records: pl.DataFrame, params: DedupParams = DEFAULT_PARAMS, partitions: int = 3) -> pl.DataFrame:
    frame = spark.createDataFrame(records.select(RECORD_COLUMNS).to_arrow()).repartition(partitions)
    assigned = assign_papers_on_spark(frame, params).toArrow()
    return pl.from_arrow(assigned).sort("source_file", "record_no")


def assert_same_assignments(spark, records: pl.DataFrame, params: DedupParams = DEFAULT_PARAMS) -> pl.DataFrame:
    expected = assign_papers(records, params)
    assert_frame_equal(on_spark(spark, records, params), expected)
    return expected


def variants_of_the_seeds() -> list[str]:
    """The bundled abstracts, every kind of variant of some of them, and a revision of a revision
    (c reaches its paper only through b: evidence against the canonical text comes from a second
    verification)."""
    abstracts = seed_abstracts()
    rng = random.Random(3)
    texts = list(abstracts)
    for index in range(0, len(abstracts), 5):
        texts += [variant(abstracts[index], rng) for variant in VARIANTS.values()]
    texts += [abstracts[7]] * 2  # exact copies: one record is canonical, the others "exact"
    original, ending, opening = (abstracts[40 + offset].split() for offset in range(3))
    n = len(original)
    revised = original[: int(n * 0.72)] + ending[: int(n * 0.2)]
    texts += [" ".join(revised), " ".join(opening[: int(n * 0.2)] + revised[int(n * 0.28) :])]
    return texts


def test_the_bundled_seeds_as_ingest_reads_them(spark):
    records = read_records(SEEDS).filter(pl.col("reject_reason").is_null()).select(RECORD_COLUMNS)
    expected = assert_same_assignments(spark, records)
    assert expected.height == 76


def test_the_seeds_with_variants_of_every_kind_and_a_chain(spark):
    expected = assert_same_assignments(spark, records_of(variants_of_the_seeds(), per_file=40))
    # The material reaches every way a record can meet its paper.
    assert set(expected["match_kind"]) == {"canonical", "exact", "near"}
    assert {"chain", "shingle_jaccard", "containment", "identical_text"} <= set(expected["matched_by"])


def test_buckets_are_capped_as_on_one_machine(spark):
    """With buckets of at most two texts, a paper with several copies is found only through the
    bands where no third text collides: fewer merges than uncapped, the same ones on Spark."""
    records = records_of(variants_of_the_seeds(), per_file=40)
    capped = DedupParams(max_bucket=2)
    expected = assert_same_assignments(spark, records, capped)
    assert expected["paper_id"].n_unique() > assign_papers(records)["paper_id"].n_unique()


def test_a_synthetic_corpus_of_10k_records_full_of_near_duplicates(spark):
    texts = [text for text, _, _ in synth.generate(seed_abstracts(), 10_000, duplicate_share=0.3, seed=5)]
    expected = assert_same_assignments(spark, records_of(texts))
    kinds = expected["match_kind"].value_counts()
    assert kinds.filter(pl.col("match_kind") == "near")["count"].item() > 1_000
    assert kinds.filter(pl.col("match_kind") == "exact")["count"].item() > 500


@pytest.mark.parametrize("source", sorted(real_data.SOURCES))
def test_the_real_dev_lists(spark, source):
    if not real_data.available():
        pytest.skip(f"the real lists are missing at {real_data.realdata_dir()} (PAPERHOUSE_REALDATA)")
    folder = real_data.realdata_dir() / real_data.SOURCES[source] / "inputs"
    records = read_records(folder).filter(pl.col("reject_reason").is_null()).select(RECORD_COLUMNS)
    assert_same_assignments(spark, records)


def test_no_records_give_no_rows_of_the_same_columns(spark):
    empty = pl.DataFrame(schema={"source_file": pl.String, "record_no": pl.Int32, "file_sha256": pl.String})
    assigned = on_spark(spark, empty.with_columns(normalized_text=pl.lit(None, dtype=pl.String)))
    assert assigned.height == 0
    assert assigned.columns == list(ASSIGNMENT_SCHEMA)


def test_texts_are_numbered_by_their_rank_among_the_sorted_keys_across_partitions(spark):
    keys = records_of(seed_abstracts() * 2).select(exact_key=joined_words(pl.col("normalized_text")))
    frame = spark.createDataFrame(keys.to_arrow()).repartition(5)
    numbered = pl.from_arrow(numbered_texts(frame).toArrow()).sort("doc")
    expected = keys.unique().sort("exact_key").with_row_index("doc").with_columns(pl.col("doc").cast(pl.Int64))
    assert_frame_equal(numbered.select("doc", "exact_key"), expected)


def test_components_of_long_chains_converge_in_few_rounds(spark):
    """Three paths of 1,000, 300 and 2 vertices, numbered at random: the smallest vertex of each
    path labels all of it, as scipy finds, in rounds that grow with the log of the length (plain
    propagation would need one round per vertex on the longest path)."""
    order = np.random.default_rng(0).permutation(1_302)
    paths = [order[:1_000], order[1_000:1_300], order[1_300:]]
    a = np.concatenate([path[:-1] for path in paths])
    b = np.concatenate([path[1:] for path in paths])
    edges = spark.createDataFrame(pl.DataFrame({"a": a, "b": b}).to_arrow()).repartition(3)
    found = connected_components(edges)
    labels = pl.from_arrow(found.labels.toArrow()).sort("vertex")
    _, expected = scipy_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(1_302, 1_302)), directed=False)
    assert labels["vertex"].to_list() == list(range(1_302))
    component_minimum = {label: min(np.flatnonzero(expected == label)) for label in set(expected)}
    assert labels["component"].to_list() == [component_minimum[label] for label in expected]
    assert found.rounds <= 2 * int(np.log2(1_000)) + 2
