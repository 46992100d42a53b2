"""The parse cache: the judged records of every file content in the seeds folder, by content key.

Kept in the build database beside what it speeds up: ``raw.parsed_files`` (one row per content:
parser version, rows, when and by which run it was parsed) and ``raw.parsed_records`` (its rows,
``paperhouse.ingest.reading.PARSED_RECORD_SCHEMA``). A content's key is a text list's SHA-256, or a
structured file's SHA-256 hashed with its sidecar, companion and the venue and year its name
gives (``paperhouse.ingest.input_files``). A run hashes every file, parses only contents the cache does
not hold for the current parser version, and forgets contents that are no longer in the folder.
Renaming a file costs nothing (but a structured file whose name gives another venue or year);
changing one byte re-parses that file, and changing a sidecar or companion re-parses its list.

``raw.source_records`` is a view: each file of the folder (``raw.seed_files``) joined to the
cached rows of its content, plus one row per file that could not be read. The text of a record
is stored once, in the cache, and parsed batches go to DuckDB as they are parsed, so no step
holds the whole folder in memory. The cache keeps ``raw_text`` only where cleaning changed the
paragraph (null where it equals ``text``, which the view fills back in): for nearly every
abstract the two are one string, and compressing it twice was a third of the append's time.

Every write that a reader of the cache sees happens inside one transaction, so a run killed at
any point leaves the cache, the files and the records consistent. Parsed rows are first staged,
in transactions of their own, in a table no view reads (``raw.parsed_records_staging``) and moved
into the cache by that one transaction (renamed to be the cache when no cached row stays): a
transaction keeps every frame it scanned alive until it commits, so appending the parsed batches
inside it held all of them (10^6 records: memory grew 1 GB per append of 122,880 records).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from paperhouse.common.faults import failpoint
from paperhouse.ingest.input_files import INPUT_PATTERNS
from paperhouse.ingest.reading import (
    PARSED_RECORD_SCHEMA,
    SOURCE_RECORD_SCHEMA,
    AcceptanceRules,
    FolderRead,
    parser_version,
    read_folder,
)
from paperhouse.warehouse.database import (
    RAW_SCHEMA,
    ROW_GROUP_ROWS,
    column_names,
    connect,
    create_table,
    registered,
    table_exists,
    write_table,
)

APPEND_ROWS = 2 * ROW_GROUP_ROWS  # see _CacheWriter
# The texts are stored as DuckDB would choose to store prose anyway (FSST); named, every segment
# is compressed without first being analysed for each other method: 10^5 abstracts staged in
# 2.0-2.6 s instead of 2.3-3.3 s (alternately, three times each), the file the same size.
TEXT_COMPRESSION = {"text": "fsst", "normalized_text": "fsst", "excerpt": "fsst"}
FILES_TABLE = "parsed_files"
RECORDS_TABLE = "parsed_records"
STAGING_TABLE = "parsed_records_staging"
FILES_SCHEMA = {
    "content_key": pl.String,
    "parser_version": pl.String,
    "n_rows": pl.Int64,
    "parsed_at": pl.Datetime("us"),  # UTC
    "parsed_by_run": pl.String,
}
# The cache's tables: their columns and how their texts are stored. The staged rows are laid out as
# the records they become (a first build renames the staged table into the cache).
_TABLES = {RECORDS_TABLE: (PARSED_RECORD_SCHEMA, TEXT_COMPRESSION), FILES_TABLE: (FILES_SCHEMA, None)}
SOURCE_RECORDS_VIEW = f"""
    create view {RAW_SCHEMA}.source_records as
    select {", ".join(SOURCE_RECORD_SCHEMA)}
    from (
        select files.source_file, records.* replace (coalesce(records.raw_text, records.text) as raw_text)
        from {RAW_SCHEMA}.seed_files as files
        inner join {RAW_SCHEMA}.{RECORDS_TABLE} as records using (content_key)
        where files.status in ('parsed', 'reused')
        union all by name
        select source_file, reason as reject_reason from {RAW_SCHEMA}.seed_files where status = 'unread'
    )
"""


@dataclass(frozen=True)
class Intake:
    """What one incremental ingest did."""

    folder: FolderRead  # raw.seed_files
    forgotten: int  # cached contents no longer in the folder


def ingest(
    con: duckdb.DuckDBPyConnection,
    seeds_dir: Path,
    run_id: str | None = None,
    full_refresh: bool = False,
    rules: AcceptanceRules = AcceptanceRules(),
    glob: str | tuple[str, ...] = INPUT_PATTERNS,
) -> Intake:
    """Read the folder, parsing only new contents into the cache as they are parsed, and write
    ``raw.seed_files`` and the ``raw.source_records`` view over them, in one transaction."""
    version = parser_version(rules)
    known = set() if full_refresh else known_contents(con, version)
    con.execute(f"drop table if exists {RAW_SCHEMA}.{STAGING_TABLE}")  # what a killed run staged
    create_table(con, STAGING_TABLE, *_TABLES[RECORDS_TABLE])
    cache = _CacheWriter(con)
    folder = read_folder(seeds_dir, cache.keep, rules, known=known, glob=glob)
    cache.flush()
    con.begin()
    try:
        _take_staged_rows(con, known)
        _create_tables(con)
        forgotten = _index(con, folder, cache.rows_of_content, version, run_id, datetime.now(UTC))
        write_table(con, "seed_files", folder.files)
        _replace_source_records_view(con)
        _every_file_has_a_record(con)
        failpoint("ingest.before_commit")
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return Intake(folder=folder, forgotten=forgotten)


class _CacheWriter:
    """Stages parsed batches in whole DuckDB row groups, two or more at a time.

    DuckDB writes an append smaller than a row group to the write-ahead log, to be compressed on
    one thread at the next checkpoint; an append of a row group or more goes to the database
    file at once, rest included. So memory stays bounded, and a folder of up to two row groups
    (most) is one append that never passes through the log. Only the last append ends in a part
    of a row group: after one that did, the checkpoint merged the parts and wrote the whole table
    again (half the file left free).
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.rows_of_content: dict[str, int] = {}
        self._pending: list[pl.DataFrame] = []

    def keep(self, parsed: pl.DataFrame) -> None:
        unchanged = pl.col("raw_text").eq_missing(pl.col("text"))
        self._pending.append(parsed.with_columns(raw_text=pl.when(~unchanged).then("raw_text")))
        self.rows_of_content.update(parsed.group_by("content_key").len("n_rows").iter_rows())
        if sum(frame.height for frame in self._pending) >= APPEND_ROWS:
            pending = pl.concat(self._pending)
            whole = pending.height - pending.height % ROW_GROUP_ROWS
            self._stage(pending.head(whole))
            self._pending = [pending.slice(whole)]

    def flush(self) -> None:
        """Stage what is left: the last append."""
        if self._pending:
            self._stage(pl.concat(self._pending))
        self._pending = []

    def _stage(self, rows: pl.DataFrame) -> None:
        if rows.height:
            with registered(self.con, "parsed_rows", rows):
                self.con.execute(f"insert into {RAW_SCHEMA}.{STAGING_TABLE} by name select * from parsed_rows")


def read_records(
    seeds_dir: Path, rules: AcceptanceRules = AcceptanceRules(), glob: str | tuple[str, ...] = INPUT_PATTERNS
) -> pl.DataFrame:
    """All records of all seed files, parsed from scratch (in an in-memory database); one row per
    paragraph or failed file."""
    with connect(None) as con:
        ingest(con, seeds_dir, rules=rules, glob=glob)
        return source_records(con)


def read_abstracts(seeds_dir: Path, glob: str | tuple[str, ...] = INPUT_PATTERNS) -> list[str]:
    """The accepted abstracts of a folder, as text: material for synthetic and evaluation corpora."""
    return read_records(seeds_dir, glob=glob).filter(pl.col("reject_reason").is_null())["text"].to_list()


def source_records(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """``raw.source_records`` by file name and position (a failed file's row first)."""
    rows = con.execute(f"select * from {RAW_SCHEMA}.source_records order by source_file, record_no nulls first").pl()
    return rows.select([pl.col(name).cast(dtype) for name, dtype in SOURCE_RECORD_SCHEMA.items()])


def known_contents(con: duckdb.DuckDBPyConnection, version: str) -> set[str]:
    """Contents whose parsed rows the cache holds, all of them, for this parser version (an
    entry whose rows do not add up is not trusted: that content is parsed again; nor is a cache
    whose columns are not those of ``PARSED_RECORD_SCHEMA``, as before ``repairs``)."""
    if not (table_exists(con, RAW_SCHEMA, FILES_TABLE) and table_exists(con, RAW_SCHEMA, RECORDS_TABLE)):
        return set()
    if set(column_names(con, RAW_SCHEMA, RECORDS_TABLE)) != set(PARSED_RECORD_SCHEMA):
        return set()
    if set(column_names(con, RAW_SCHEMA, FILES_TABLE)) != set(FILES_SCHEMA):
        return set()
    rows = con.execute(
        f"select content_key from {RAW_SCHEMA}.{FILES_TABLE} as files"
        f" inner join (select content_key, count(*) as n_cached from {RAW_SCHEMA}.{RECORDS_TABLE} group by all)"
        " using (content_key) where files.parser_version = ? and files.n_rows = n_cached",
        [version],
    )
    return {sha for (sha,) in rows.fetchall()}


def _take_staged_rows(con: duckdb.DuckDBPyConnection, known: set[str]) -> None:
    """The cache keeps the rows of the ``known`` contents and takes the staged ones. The rows it
    does not trust (another parser version, rows that do not add up, a full refresh) go: the
    contents still in the folder were parsed again."""
    if not known:  # a first build, a full refresh, a new parser version: no cached row stays
        # The staged table becomes the cache: copied into it, every text was compressed and
        # written a second time.
        con.execute(f"drop table if exists {RAW_SCHEMA}.{RECORDS_TABLE}")
        con.execute(f"alter table {RAW_SCHEMA}.{STAGING_TABLE} rename to {RECORDS_TABLE}")
        return
    trusted = pl.DataFrame({"content_key": sorted(known)}, schema={"content_key": pl.String})
    with registered(con, "trusted", trusted):
        con.execute(
            f"delete from {RAW_SCHEMA}.{RECORDS_TABLE} where content_key not in (select content_key from trusted)"
        )
    con.execute(f"insert into {RAW_SCHEMA}.{RECORDS_TABLE} by name select * from {RAW_SCHEMA}.{STAGING_TABLE}")
    con.execute(f"drop table {RAW_SCHEMA}.{STAGING_TABLE}")


def _index(
    con: duckdb.DuckDBPyConnection,
    folder: FolderRead,
    rows_of_content: dict[str, int],
    version: str,
    run_id: str | None,
    now: datetime,
) -> int:
    """Index the contents parsed in this pass, forget those no longer in the folder; returns how
    many contents were forgotten."""
    present = pl.DataFrame({"content_key": sorted(folder.content_keys)}, schema={"content_key": pl.String})
    index = pl.DataFrame(
        {
            "content_key": sorted(rows_of_content),
            "parser_version": version,
            "n_rows": [rows_of_content[key] for key in sorted(rows_of_content)],
            "parsed_at": _utc(now),
            "parsed_by_run": run_id,
        },
        schema=FILES_SCHEMA,
    )
    with registered(con, "present_contents", present), registered(con, "new_index", index):
        forgotten = con.execute(
            f"select count(*) from {RAW_SCHEMA}.{FILES_TABLE} anti join present_contents using (content_key)"
        ).fetchone()[0]
        con.execute(
            f"delete from {RAW_SCHEMA}.{RECORDS_TABLE}"
            " where content_key not in (select content_key from present_contents)"
        )
        con.execute(
            f"delete from {RAW_SCHEMA}.{FILES_TABLE}"
            " where content_key not in (select content_key from present_contents)"
            " or content_key in (select content_key from new_index)"
        )
        con.execute(f"insert into {RAW_SCHEMA}.{FILES_TABLE} by name select * from new_index")
    return int(forgotten)


def _replace_source_records_view(con: duckdb.DuckDBPyConnection) -> None:
    # Warehouses built before the view kept the records as a table.
    if table_exists(con, RAW_SCHEMA, "source_records"):
        con.execute(f"drop table {RAW_SCHEMA}.source_records")
    con.execute(f"drop view if exists {RAW_SCHEMA}.source_records")
    con.execute(SOURCE_RECORDS_VIEW)


def _every_file_has_a_record(con: duckdb.DuckDBPyConnection) -> None:
    """Every file yields a row: a paragraph, or why it has none (a companion's rows are its list's)."""
    missing = con.execute(
        f"select source_file from {RAW_SCHEMA}.seed_files"
        f" anti join (select distinct source_file from {RAW_SCHEMA}.source_records) using (source_file)"
        " where status != 'companion'"
    ).fetchall()
    if missing:
        raise RuntimeError(f"no records for {len(missing)} files, e.g. {missing[0][0]!r}")


def _create_tables(con: duckdb.DuckDBPyConnection) -> None:
    for table, (schema, compression) in _TABLES.items():
        if table_exists(con, RAW_SCHEMA, table) and set(column_names(con, RAW_SCHEMA, table)) != set(schema):
            # A cache of another layout (keyed by SHA-256, before content keys): none of it is trusted.
            con.execute(f"drop table {RAW_SCHEMA}.{table}")
        if not table_exists(con, RAW_SCHEMA, table):
            create_table(con, table, schema, compression)


def _utc(moment: datetime) -> datetime:
    """A naive UTC timestamp: plain TIMESTAMP columns read the same in every client and time zone."""
    return moment.astimezone(UTC).replace(tzinfo=None)
