"""The paper-id registry's naming on Spark (``paperhouse.engines.spark.registry``) gives what
``registry.resolve`` gives: run after run, the same ids, registry entries and counts, through
first runs, merges, splits, contested ids and minted ids that are taken.

Needs a JRE; a module-scoped session on local[2], stopped at the end.
"""

from dataclasses import asdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_registry import NOW, _texts_with_ids_in_order, groups_frame

from paperhouse.dedup import registry
from paperhouse.dedup.papers import ASSIGNMENT_SCHEMA, paper_id_for, text_hash

pytestmark = pytest.mark.spark

COUNTS = ("papers", "kept", "minted", "merged", "contested")


def assignments_of(groups: list[list[str]]) -> pl.DataFrame:
    frame = groups_frame(groups)
    return frame.select(
        [
            pl.col(name) if name in frame.columns else pl.lit(None, dtype).alias(name)
            for name, dtype in ASSIGNMENT_SCHEMA.items()
        ]
    ).cast(ASSIGNMENT_SCHEMA)


def replay(spark, runs: list[list[list[str]]], table: pl.DataFrame | None = None) -> list[registry.Resolution]:
    """Each run resolved by both engines against the registry as the previous runs left it;
    asserts they agree and returns the single-machine resolutions."""
    from paperhouse.engines.spark.frames import from_polars
    from paperhouse.engines.spark.registry import resolve_on_spark

    table = pl.DataFrame(schema=registry.REGISTRY_SCHEMA) if table is None else table
    resolutions = []
    for number, groups in enumerate(runs, start=1):
        assigned = assignments_of(groups)
        expected = registry.resolve(assigned, table, f"run-{number}", NOW)
        found = resolve_on_spark(
            from_polars(spark, assigned, ASSIGNMENT_SCHEMA).repartition(3), table, f"run-{number}", NOW
        )
        order = ["source_file", "record_no"]
        assert_frame_equal(found.assignments.sort(order), expected.assignments.sort(order))
        assert_frame_equal(found.new_entries, expected.new_entries)
        assert {k: asdict(found)[k] for k in COUNTS} == {k: asdict(expected)[k] for k in COUNTS}
        table = pl.concat([table, expected.new_entries])
        resolutions.append(expected)
    return resolutions


def test_first_runs_and_new_papers(spark):
    first, second = replay(
        spark, [[["alpha beta", "alpha beta gamma"], ["delta"]], [["alpha beta"], ["delta"], ["epsilon"]]]
    )
    assert (first.minted, second.kept, second.minted) == (2, 2, 1)


def test_a_merge_keeps_the_oldest_id(spark):
    older, younger = _texts_with_ids_in_order("merge")
    *_, merged = replay(spark, [[[older]], [[older], [younger]], [["the full version bridging both", older, younger]]])
    assert merged.merged == 1


def test_splits_and_contested_ids(spark):
    *_, split = replay(spark, [[["origin text", "copy one", "copy two"]], [["copy one", "copy two"], ["origin text"]]])
    assert split.contested == 1
    *_, contested = replay(spark, [[["origin", "left", "right"]], [["left"], ["right"]]])
    assert contested.contested == 1 and contested.minted == 1


def test_a_minted_id_that_is_taken_is_minted_again(spark):
    table = pl.DataFrame(
        {
            "text_hash": [text_hash("someone else")],
            "paper_id": [paper_id_for("newcomer")],
            "generation": [1],
            "first_run_id": ["r"],
            "first_seen_at": [NOW.replace(tzinfo=None)],
        },
        schema=registry.REGISTRY_SCHEMA,
    )
    (resolution,) = replay(spark, [[["newcomer"], ["bystander"]]], table)
    assert resolution.assignments.filter(pl.col("text_hash") == text_hash("newcomer"))["paper_id"][0] != paper_id_for(
        "newcomer"
    )
