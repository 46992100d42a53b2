import polars as pl
from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.metadata import counts_table, frame_metadata
from orchestration.resources import WarehouseResource
from paperhouse.ingest import read_records
from paperhouse.warehouse import write_table


@asset(
    key=["raw", "source_records"],
    group_name="ingest",
    kinds={"polars", "duckdb"},
    owners=OWNERS,
    pool=WRITER_POOL,
    description=(
        "Every paragraph of every `*.txt` list in the seeds folder, decoded, split and normalised, with "
        "provenance (file, SHA-256, encoding, position, venue, year). Paragraphs that are no abstract, and "
        "files that yield none, carry a `reject_reason` instead of being dropped."
    ),
)
def source_records(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    seeds_dir = warehouse.paths.seeds_dir
    if not seeds_dir.is_dir():
        raise Failure(f"seeds folder {seeds_dir} does not exist (set PAPERHOUSE_SEEDS_DIR or the warehouse resource)")
    records = read_records(seeds_dir)
    with warehouse.build_connection() as con:
        write_table(con, "source_records", records)
    rejected = records.filter(pl.col("reject_reason").is_not_null())
    by_reason = (
        rejected.group_by(reason=pl.col("reject_reason").str.replace(r":.*", ""))
        .len("records")
        .sort("records", descending=True)
    )
    context.log.info(f"read {records['source_file'].n_unique()} files from {seeds_dir}")
    return MaterializeResult(
        metadata=frame_metadata(
            records.select("source_file", "record_no", "venue", "year", "encoding", "reject_reason", "text"),
            seeds_dir=str(seeds_dir),
            files_read=records["source_file"].n_unique(),
            records_accepted=records.height - rejected.height,
            records_rejected=rejected.height,
            rejected_by_reason=counts_table(by_reason),
        )
    )
