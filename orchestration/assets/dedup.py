import polars as pl
from dagster import AssetExecutionContext, MaterializeResult, asset

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.metadata import counts_table, frame_metadata
from orchestration.resources import WarehouseResource
from paperhouse.dedup import assign_papers
from paperhouse.warehouse import read_frame, write_table


@asset(
    key=["raw", "paper_assignments"],
    deps=[["raw", "source_records"]],
    group_name="dedup",
    kinds={"polars", "numpy", "duckdb"},
    owners=OWNERS,
    pool=WRITER_POOL,
    description=(
        "The paper behind every accepted record: exact duplicates by normalised text, near duplicates "
        "(revisions, truncations, rewordings) by MinHash LSH candidates verified on word shingles. "
        "`paper_id` hashes the canonical record's normalised text, so it does not depend on file order."
    ),
)
def paper_assignments(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    with warehouse.build_connection() as con:
        records = read_frame(
            con,
            "select source_file, record_no, file_sha256, normalized_text from raw.source_records"
            " where reject_reason is null",
        )
        assignments = assign_papers(records)
        write_table(con, "paper_assignments", assignments)
    by_kind = assignments.group_by("match_kind").len("records").sort("match_kind")
    papers = assignments["paper_id"].n_unique()
    merged_groups = assignments.filter(pl.col("match_kind") != "canonical")["paper_id"].n_unique()
    context.log.info(f"{assignments.height} records -> {papers} papers")
    return MaterializeResult(
        metadata=frame_metadata(
            # Merged records first: they are what a person wants to see.
            assignments.sort(pl.col("match_kind") == "canonical", "paper_id"),
            papers=papers,
            duplicates_merged=assignments.height - papers,
            groups_with_duplicates=merged_groups,
            records_by_match_kind=counts_table(by_kind),
        )
    )
