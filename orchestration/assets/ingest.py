import polars as pl
from dagster import AssetExecutionContext, Config, Failure, MaterializeResult, asset
from pydantic import Field

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.engine import EngineResource
from orchestration.metadata import counts_table, frame_metadata
from orchestration.resources import WarehouseResource
from paperhouse.warehouse.database import read_frame

# Rejected records by the kind of reason (the text before its first colon), most frequent first.
REJECTS_BY_REASON = """
    select regexp_replace(reject_reason, ':.*', '') as reason, count(*) as records
    from raw.source_records where reject_reason is not null group by 1 order by 2 desc, 1
"""
# Accepted records repaired (entities decoded, tags stripped, control bytes dropped), by repair.
REPAIRS_BY_KIND = """
    select repair, count(*) as records
    from (select unnest(string_split(repairs, ',')) as repair from raw.source_records where repairs is not null)
    group by 1 order by 2 desc, 1
"""


class IngestConfig(Config):
    full_refresh: bool = Field(
        default=False,
        description="Ignore the parse cache and parse every file again (paper ids are kept: the registry "
        "is not reset).",
    )


@asset(
    key=["raw", "source_records"],
    group_name="ingest",
    kinds={"polars", "duckdb", "spark"},
    owners=OWNERS,
    pool=WRITER_POOL,
    description=(
        "Every paragraph of every `*.txt` list and every row of every structured input (`*.csv`, `*.tsv`, "
        "`*.jsonl`, `*.json`) in the seeds folder, decoded, split and normalised, with provenance (file, "
        "SHA-256, encoding, position, venue, year; an export's id, link, title, authors, keywords and "
        "decision). Records that are no abstract, and files that yield none (or cannot be read, or are no "
        "file, or are tables without an abstract column), carry a `reject_reason` instead of being dropped; "
        "HTML entities, tags and stray control bytes are repaired (`repairs` says which). "
        "Incremental: every file is hashed, only contents not in the parse cache are parsed "
        "(`full_refresh` parses all); `raw.seed_files` lists what this run saw and did, companion tables "
        "of decisions included."
    ),
)
def source_records(
    context: AssetExecutionContext, config: IngestConfig, warehouse: WarehouseResource, engine: EngineResource
) -> MaterializeResult:
    seeds_dir = warehouse.paths.seeds_dir
    if not seeds_dir.is_dir():
        raise Failure(f"seeds folder {seeds_dir} does not exist (set PAPERHOUSE_SEEDS_DIR or the warehouse resource)")
    compute = engine.compute(warehouse.paths.warehouse)
    intake = compute.ingest(seeds_dir, warehouse.paths.build_database, context.run.run_id, config.full_refresh)
    with warehouse.build_connection() as con:
        rows, paragraphs, rejected, repaired = con.execute(
            "select count(*), count(record_no), count(reject_reason), count(repairs) from raw.source_records"
        ).fetchone()
        by_reason = read_frame(con, REJECTS_BY_REASON)
        by_repair = read_frame(con, REPAIRS_BY_KIND)
        preview = read_frame(
            con,
            "select source_file, record_no, venue, year, encoding, reject_reason, text from raw.source_records"
            " order by source_file, record_no nulls first limit 5",
        )
    folder, forgotten = intake.folder, intake.forgotten
    unread = folder.files.filter(pl.col("status") == "unread")
    context.log.info(
        f"{folder.files.height} files in {seeds_dir}: {folder.count('parsed')} parsed, "
        f"{folder.count('reused')} unchanged"
        f" (parse cache), {unread.height} unread; {paragraphs} paragraphs, {rejected} rejected records,"
        f" {repaired} repaired"
    )
    for name, reason in unread.select("source_file", "reason").iter_rows():
        context.log.warning(f"not read: {name!r}: {reason}")
    return MaterializeResult(
        metadata=frame_metadata(
            preview,
            row_count=rows,
            seeds_dir=str(seeds_dir),
            files_read=folder.files.height,
            files_parsed=folder.count("parsed"),
            files_reused=folder.count("reused"),
            files_unread=unread.height,
            files_companion=folder.count("companion"),
            contents_forgotten=forgotten,
            full_refresh=config.full_refresh,
            paragraphs_read=paragraphs,
            records_accepted=rows - rejected,
            records_rejected=rejected,
            records_repaired=repaired,
            rejected_by_reason=counts_table(by_reason),
            repaired_by_kind=counts_table(by_repair),
            unread_files=counts_table(unread.select("source_file", "reason")),
        )
    )
