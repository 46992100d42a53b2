from datetime import UTC, datetime

import polars as pl
from dagster import AssetExecutionContext, AssetSpec, MaterializeResult, multi_asset

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.engine import EngineResource
from orchestration.metadata import counts_table, frame_metadata
from orchestration.resources import WarehouseResource
from paperhouse.common.faults import failpoint
from paperhouse.dedup import registry
from paperhouse.warehouse.database import write_table

_ACCEPTED_RECORDS = """
    select source_file, record_no, file_sha256, normalized_text from raw.source_records
    where reject_reason is null order by source_file, record_no
"""


@multi_asset(
    specs=[
        AssetSpec(
            ["raw", "paper_assignments"],
            deps=[["raw", "source_records"]],
            kinds={"polars", "numpy", "duckdb", "spark"},
            owners=OWNERS,
            description=(
                "The paper behind every accepted record: exact duplicates by normalised text, near duplicates "
                "(revisions, truncations, rewordings) by MinHash LSH candidates verified on word shingles. "
                "`paper_id` comes from the paper-id registry: a paper keeps the id it was first given, whatever "
                "files are added; a new paper mints one from its canonical text."
            ),
        ),
        AssetSpec(
            ["raw", "paper_id_registry"],
            deps=[["raw", "source_records"]],
            kinds={"duckdb"},
            owners=OWNERS,
            description=(
                "Every record text ever accepted (by SHA-256 of its normalised words) and the paper id it was "
                "first given. Rows are only added, never changed or removed; it travels in every published "
                "warehouse, so ids survive a lost build database."
            ),
        ),
    ],
    group_name="dedup",
    pool=WRITER_POOL,
)
def paper_assignments(context: AssetExecutionContext, warehouse: WarehouseResource, engine: EngineResource):
    with warehouse.build_connection() as con:
        known = registry.load(con)
    # Not bound to a name here: assign_papers holds the only reference to the records, and drops
    # their texts once it has keyed them (1.7 GB at 10^6 records).
    compute = engine.compute(warehouse.paths.warehouse)
    resolution = compute.assign_papers(
        warehouse.read_frame(_ACCEPTED_RECORDS, large=("normalized_text",)),
        known,
        context.run.run_id,
        datetime.now(UTC),
    )
    assignments = resolution.assignments
    with warehouse.build_connection() as con:
        # Assignments and the registry entries naming them change together or not at all.
        con.begin()
        write_table(con, "paper_assignments", assignments)
        registry.append(con, resolution.new_entries)
        failpoint("dedup.before_commit")
        con.commit()
    by_kind = assignments.group_by("match_kind").len("records").sort("match_kind")
    papers = resolution.papers
    merged_groups = assignments.filter(pl.col("match_kind") != "canonical")["paper_id"].n_unique()
    context.log.info(
        f"{assignments.height} records -> {papers} papers ({resolution.kept} kept their id, {resolution.minted} new)"
    )
    yield MaterializeResult(
        asset_key=["raw", "paper_assignments"],
        metadata=frame_metadata(
            # Merged records first: they are what a person wants to see.
            assignments.sort(pl.col("match_kind") == "canonical", "paper_id"),
            papers=papers,
            duplicates_merged=assignments.height - papers,
            groups_with_duplicates=merged_groups,
            records_by_match_kind=counts_table(by_kind),
            papers_keeping_their_id=resolution.kept,
            papers_with_new_id=resolution.minted,
            papers_merging_registered_ids=resolution.merged,
            papers_losing_a_contested_id=resolution.contested,
        ),
    )
    yield MaterializeResult(
        asset_key=["raw", "paper_id_registry"],
        metadata={
            "dagster/row_count": known.height + resolution.new_entries.height,
            "entries_added": resolution.new_entries.height,
            "distinct_ids": pl.concat([known["paper_id"], resolution.new_entries["paper_id"]]).n_unique(),
        },
    )
