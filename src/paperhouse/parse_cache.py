"""The parse cache: the judged records of every file content in the seeds folder, by SHA-256.

Kept in the build database beside what it speeds up: ``raw.parsed_files`` (one row per content:
parser version, rows, when and by which run it was parsed) and ``raw.parsed_records`` (its rows,
``paperhouse.ingest.PARSED_RECORD_SCHEMA``). A run hashes every file, parses only contents
the cache does not hold for the current parser version, and forgets contents that are no
longer in the folder. Renaming a file costs nothing; changing one byte re-parses that file.

Every write happens inside the caller's transaction, together with the ``raw.source_records``
it produced, so a run killed at any point leaves the cache and the records consistent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import polars as pl

from paperhouse.faults import failpoint
from paperhouse.ingest import (
    PARSED_RECORD_SCHEMA,
    AcceptanceRules,
    FolderRead,
    assemble_records,
    parser_version,
    read_folder,
)
from paperhouse.warehouse import RAW_SCHEMA, registered, table_exists, write_table

FILES_TABLE = "parsed_files"
RECORDS_TABLE = "parsed_records"
FILES_SCHEMA = {
    "file_sha256": pl.String,
    "parser_version": pl.String,
    "n_rows": pl.Int64,
    "parsed_at": pl.Datetime("us"),  # UTC
    "parsed_by_run": pl.String,
}


@dataclass(frozen=True)
class Intake:
    """What one incremental ingest did."""

    records: pl.DataFrame  # raw.source_records
    folder: FolderRead  # raw.seed_files, and the contents parsed in this pass
    forgotten: int  # cached contents no longer in the folder


def ingest(
    con: duckdb.DuckDBPyConnection,
    seeds_dir: Path,
    run_id: str | None = None,
    full_refresh: bool = False,
    rules: AcceptanceRules = AcceptanceRules(),
) -> Intake:
    """Read the folder, parsing only new contents, and write ``raw.seed_files``,
    ``raw.source_records`` and the cache in one transaction."""
    version = parser_version(rules)
    known = set() if full_refresh else known_contents(con, version)
    folder = read_folder(seeds_dir, rules, known=known)
    reused = load_contents(con, folder.shas & known)
    records = assemble_records(folder.files, pl.concat([folder.parsed, reused]))
    missing = folder.files.join(records.select("source_file").unique(), on="source_file", how="anti")
    if missing.height:  # every file yields a row: a paragraph, or why it has none
        raise RuntimeError(f"no records for {missing.height} files, e.g. {missing['source_file'][0]!r}")
    con.begin()
    forgotten = store(con, folder, version, run_id, datetime.now(timezone.utc))
    write_table(con, "seed_files", folder.files)
    write_table(con, "source_records", records)
    failpoint("ingest.before_commit")
    con.commit()
    return Intake(records=records, folder=folder, forgotten=forgotten)


def known_contents(con: duckdb.DuckDBPyConnection, version: str) -> set[str]:
    """Contents whose parsed rows the cache holds, all of them, for this parser version (an
    entry whose rows do not add up is not trusted: that content is parsed again)."""
    if not (table_exists(con, RAW_SCHEMA, FILES_TABLE) and table_exists(con, RAW_SCHEMA, RECORDS_TABLE)):
        return set()
    rows = con.execute(
        f"select file_sha256 from {RAW_SCHEMA}.{FILES_TABLE} as files"
        f" inner join (select file_sha256, count(*) as n_cached from {RAW_SCHEMA}.{RECORDS_TABLE} group by all)"
        " using (file_sha256) where files.parser_version = ? and files.n_rows = n_cached",
        [version],
    )
    return {sha for (sha,) in rows.fetchall()}


def load_contents(con: duckdb.DuckDBPyConnection, shas: set[str]) -> pl.DataFrame:
    """The cached rows of these contents."""
    if not shas:
        return pl.DataFrame(schema=PARSED_RECORD_SCHEMA)
    wanted = pl.DataFrame({"file_sha256": sorted(shas)}, schema={"file_sha256": pl.String})
    with registered(con, "wanted_contents", wanted):
        rows = con.execute(
            f"select * from {RAW_SCHEMA}.{RECORDS_TABLE} semi join wanted_contents using (file_sha256)"
        ).pl()
    return rows.select([pl.col(name).cast(dtype) for name, dtype in PARSED_RECORD_SCHEMA.items()])


def store(con: duckdb.DuckDBPyConnection, folder: FolderRead, version: str, run_id: str | None, now: datetime) -> int:
    """Keep the contents parsed in this pass, forget those no longer in the folder; returns how
    many contents were forgotten. Call inside a transaction."""
    _create_tables(con)
    present = pl.DataFrame({"file_sha256": sorted(folder.shas)}, schema={"file_sha256": pl.String})
    parsed = folder.parsed
    index = (
        parsed.group_by("file_sha256")
        .len("n_rows")
        .with_columns(parser_version=pl.lit(version), parsed_at=pl.lit(_utc(now), pl.Datetime("us")),
                      parsed_by_run=pl.lit(run_id, pl.String))
        .select([pl.col(name).cast(dtype) for name, dtype in FILES_SCHEMA.items()])
        .sort("file_sha256")
    )
    with registered(con, "present_contents", present), registered(con, "new_rows", parsed), \
            registered(con, "new_index", index):
        forgotten = con.execute(
            f"select count(*) from {RAW_SCHEMA}.{FILES_TABLE} anti join present_contents using (file_sha256)"
        ).fetchone()[0]
        for table in (RECORDS_TABLE, FILES_TABLE):
            con.execute(
                f"delete from {RAW_SCHEMA}.{table} where file_sha256 not in (select file_sha256 from present_contents)"
                " or file_sha256 in (select file_sha256 from new_index)"
            )
        con.execute(f"insert into {RAW_SCHEMA}.{RECORDS_TABLE} by name select * from new_rows")
        con.execute(f"insert into {RAW_SCHEMA}.{FILES_TABLE} by name select * from new_index")
    return int(forgotten)


def _create_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"create schema if not exists {RAW_SCHEMA}")
    for table, schema in ((RECORDS_TABLE, PARSED_RECORD_SCHEMA), (FILES_TABLE, FILES_SCHEMA)):
        if not table_exists(con, RAW_SCHEMA, table):
            with registered(con, "empty_frame", pl.DataFrame(schema=schema)):
                con.execute(f"create table {RAW_SCHEMA}.{table} as select * from empty_frame")


def _utc(moment: datetime) -> datetime:
    """A naive UTC timestamp: plain TIMESTAMP columns read the same in every client and time zone."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None)
