"""The DuckDB side: writing frames through Arrow, reading safely, recovering and publishing atomically.

Two files per warehouse. The *build* database (``Paths.build_database``) is written by the one
run that holds the run lock (``paperhouse.locking``). The *published* warehouse
(``Paths.warehouse``) is what readers open; nothing ever opens it for writing. Publishing
checkpoints the build database, copies it beside the warehouse, syncs it to disk and renames
it over the warehouse in one step, so a reader sees the old version whole or the new one
whole, and a reader that keeps the old file open keeps reading the old version. Folders built
from the warehouse (the Parquet export, the dashboard) are swapped in the same way, through a
symbolic link (``publish_folder``).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from paperhouse.faults import failpoint

RAW_SCHEMA = "raw"
# What `paperhouse query` and `paperhouse check` open: read-only, no files outside the warehouse
# (no COPY TO, ATTACH, read_csv or extension installs), and settings the SQL cannot change back.
READER_CONFIG = {"enable_external_access": False, "lock_configuration": True}
# Settings that close others: set once the connection is open, in this order (with external access
# off, DuckDB refuses to be given a spill directory; with the configuration locked, any setting).
_LOCKING_SETTINGS = ("enable_external_access", "lock_configuration")
# DuckDB's cache of blocks and its operators' memory, per process (dbt's too: profiles.yml). Its
# default, 80% of the machine, let a cache of blocks already on disk grow beside the frames of a
# step: within one transaction, ingesting 5 * 10^5 records held 1 GB of them. Operators past the
# limit spill to disk.
MEMORY_LIMIT = "2GB"
_COPY_CHUNK = 1 << 20
# Row groups of what paperhouse writes: half DuckDB's default (122,880 rows). A transaction's
# appends to a table that stay below one row group go through the write-ahead log, and are
# compressed when the connection closes, on one thread: 100,000 new records took 3.5 s to close.
# Appends of a row group or more are written to the file as they come.
ROW_GROUP_ROWS = 61_440

log = logging.getLogger(__name__)


@contextmanager
def connect(
    database: Path | None, read_only: bool = False, config: dict | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection that is always closed, so no lock outlives the block that needed it. With no
    ``database``, an in-memory one, under the same memory limit and spilling where the others do
    (DuckDB's own default for it is ``.tmp`` in the working directory)."""
    config = {"memory_limit": MEMORY_LIMIT, "temp_directory": _spill_directory()} | (config or {})
    locks = {name: config.pop(name) for name in _LOCKING_SETTINGS if name in config}
    if read_only:
        if not database.exists():
            raise FileNotFoundError(f"no warehouse at {database}: run `paperhouse run` first")
        con = duckdb.connect(str(database), read_only=True, config=config)
    else:
        con = duckdb.connect(config=config)
        if database is not None:
            database.parent.mkdir(parents=True, exist_ok=True)
            # Attached rather than opened, for the row group size; named as opening it would name it.
            con.execute(
                f"attach {sql_literal(str(database))} as {sql_identifier(database.stem)} (row_group_size "
                f"{ROW_GROUP_ROWS})"
            )
            con.execute(f"use {sql_identifier(database.stem)}")
    for name, value in locks.items():
        con.execute(f"set {sql_identifier(name)} = {sql_literal(str(value).lower())}")
    try:
        yield con
    finally:
        con.close()


def _spill_directory() -> str:
    """Where one connection spills what its memory limit cannot hold: a directory of its own.

    DuckDB 1.5 names spill files by block size only, in ``<database>.tmp`` beside the file (``.tmp``
    in the working directory for an attached one), so processes that spill at once into the same
    directory overwrite each other's blocks: two processes reading 10^6 papers' texts from one
    warehouse both crashed (duckdb/duckdb#24811 names them by process, on DuckDB's main branch).
    DuckDB creates the directory when it first spills and removes it when the connection closes;
    ``TMPDIR`` says where."""
    return str(Path(tempfile.gettempdir()) / f"paperhouse-spill-{os.getpid()}-{uuid.uuid4().hex[:12]}")


def sql_literal(text: str) -> str:
    """``text`` as a SQL string, for the statements that take no parameters (ATTACH, COPY TO)."""
    return "'" + text.replace("'", "''") + "'"


def sql_identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier, for the statements that take no parameters (USE)."""
    return '"' + name.replace('"', '""') + '"'


@contextmanager
def connect_reader(warehouse: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The published warehouse, read-only and sandboxed: what `paperhouse query` hands to user SQL."""
    with connect(warehouse, read_only=True, config=READER_CONFIG) as con:
        yield con


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame) -> Iterator[None]:
    """A frame visible to SQL as ``name`` (handed over as Arrow) for the duration of the block.
    Data reaches SQL this way or as parameters, never by string formatting.

    Handed over in record batches of a row group each: DuckDB scans an Arrow table a batch per
    thread, and a frame that is one chunk (as a sort or a join leaves it) was written on one
    core (10^5 papers' raw.paper_terms, 2.7M rows: 1.5-1.9 s, 0.7-1.0 s in batches).

    Scanned without keeping the batches' order: kept, every core's share ended in a part-full row
    group, and the next checkpoint merged the parts by writing the whole table again (368,640
    abstracts: written in 3.5 s, then 2.1 s more and the file twice its size; 2.2 s unordered).
    Every statement over a frame writes it or counts it, and no order of its rows means a thing."""
    table = frame.to_arrow()
    con.register(name, pa.Table.from_batches(table.to_batches(max_chunksize=ROW_GROUP_ROWS), table.schema))
    ordered = con.execute("select current_setting('preserve_insertion_order')").fetchone()[0]
    con.execute("set preserve_insertion_order = false")
    try:
        yield
    finally:
        con.unregister(name)
        # After a statement that failed inside a transaction, no statement runs until the rollback:
        # the caller gets that failure, not this one (and rolls back and closes the connection).
        with suppress(duckdb.TransactionException):
            con.execute("set preserve_insertion_order = ?", [ordered])


def table_exists(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> bool:
    return bool(
        con.execute(
            "select count(*) from duckdb_tables() where database_name = current_database()"
            " and schema_name = ? and table_name = ?",
            [schema, table],
        ).fetchone()[0]
    )


_POLARS_TO_DUCKDB = {
    pl.String: "VARCHAR",
    pl.Int32: "INTEGER",
    pl.Int64: "BIGINT",
    pl.Float64: "DOUBLE",
    pl.Boolean: "BOOLEAN",
    pl.UInt32: "UINTEGER",
    pl.Datetime("us"): "TIMESTAMP",
    pl.List(pl.String): "VARCHAR[]",
}


def duckdb_type(dtype: pl.DataType) -> str:
    return _POLARS_TO_DUCKDB[dtype]


def create_table(
    con: duckdb.DuckDBPyConnection,
    table: str,
    schema: dict[str, pl.DataType],
    compression: dict[str, str] | None = None,
) -> None:
    """An empty ``raw.<table>`` with these columns, declared, each stored with the ``compression``
    method named for it (DuckDB's choice for the others). Not ``create table as`` an empty frame:
    DuckDB 1.5.6 then loses the rows of a later append of a row group or more made in the same
    transaction (they count 0, before and after the commit)."""
    compression = compression or {}
    column_declarations = ", ".join(
        f'"{name}" {duckdb_type(dtype)}' + (f" using compression {compression[name]}" if name in compression else "")
        for name, dtype in schema.items()
    )
    con.execute(f'create schema if not exists "{RAW_SCHEMA}"')
    con.execute(f'create table "{RAW_SCHEMA}"."{table}" ({column_declarations})')


def write_table(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """Replace ``raw.<table>`` with the frame, handed over as Arrow (no copy through Python)."""
    with registered(con, "incoming_frame", frame):
        con.execute(f'create schema if not exists "{RAW_SCHEMA}"')
        con.execute(f'create or replace table "{RAW_SCHEMA}"."{table}" as select * from incoming_frame')


def append_rows(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame, key: tuple[str, ...]) -> None:
    """Add the frame's rows whose ``key`` is not in ``raw.<table>`` yet (inside the caller's
    transaction), creating the table from the frame's schema; existing rows are never touched."""
    key_columns = ", ".join(f'"{column}"' for column in key)
    with registered(con, "new_rows", frame):
        con.execute(f'create schema if not exists "{RAW_SCHEMA}"')
        con.execute(f'create table if not exists "{RAW_SCHEMA}"."{table}" as select * from new_rows limit 0')
        con.execute(
            f'insert into "{RAW_SCHEMA}"."{table}" by name select * from new_rows'
            f' anti join "{RAW_SCHEMA}"."{table}" using ({key_columns})'
        )


def read_frame(
    con: duckdb.DuckDBPyConnection, sql: str, parameters: list | None = None, large: tuple[str, ...] = ()
) -> pl.DataFrame:
    """The query's result as a frame.

    DuckDB hands it over as Arrow batches, and a batch's memory goes back only when every column
    of it is gone: ids kept after the texts are dropped would keep the texts (10^6 records: 1.8 GB
    held through the whole dedup). So every column but the ``large`` ones a caller drops early is
    copied into memory of its own.
    """
    frame = con.execute(sql, parameters or []).pl()
    return frame.with_columns(_copied(frame[name]) for name in frame.columns if large and name not in large)


def _copied(column: pl.Series) -> pl.Series:
    arrow = column.to_arrow()
    return pl.Series(column.name, pa.concat_arrays([arrow, arrow[:0]]))  # concatenating copies, even one array


class BuildDatabaseLocked(RuntimeError):
    """Another process keeps the build database open (a leftover of a killed run, or a tool
    someone pointed at the build file instead of the published warehouse)."""


def _is_lock_conflict(error: duckdb.Error) -> bool:
    return "could not set lock" in str(error).lower()


def _check_build_database(database: Path) -> None:
    """Open the build database for writing (replaying its write-ahead log, if a run died) and
    read every table in full (checksums are verified block by block as they are read), so that
    damage shows now, not half-way through the run. It costs about what publishing's copy does."""
    with connect(database) as con:
        tables = con.execute(
            "select schema_name, table_name from duckdb_tables() where database_name = current_database() order by all"
        ).fetchall()
        for schema, table in tables:
            con.execute(f'select count(*), bit_xor(hash(t)) from "{schema}"."{table}" as t').fetchall()


def prepare_build_database(build_database: Path, warehouse: Path, lock_wait: float = 120.0) -> str:
    """Make sure the run can write the build database; says what it did.

    - It opens and its carried-over tables read whole: used as it is.
    - Another process holds it open: wait up to ``lock_wait`` seconds (the Great Expectations
      worker of a killed run lets go within moments), then fail with a clear message.
    - Neither it nor the published warehouse exists: a first run, it starts empty ("new").
    - It is missing, or cannot be opened or read (a torn file): it is moved aside to
      ``*.damaged`` and rebuilt from a copy of the published warehouse, which holds the parse
      cache and the paper-id registry as they were at the last publish, so paper ids survive.
      Without a published warehouse, the run starts from an empty database.
    """
    started = time.monotonic()
    deadline = started + lock_wait
    problem = "missing"
    while build_database.exists():
        try:
            _check_build_database(build_database)
            waited = time.monotonic() - started
            return "ok" + (f" (waited {waited:.1f} s for another process to close it)" if waited >= 0.5 else "")
        except duckdb.Error as error:
            if _is_lock_conflict(error):
                if time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise BuildDatabaseLocked(
                    f"the build database {build_database} is held open by another process: "
                    + str(error).splitlines()[0]
                ) from error
            problem = f"damaged ({str(error).splitlines()[0][:200]})"
            _move_aside(build_database)
    build_database.parent.mkdir(parents=True, exist_ok=True)
    if problem == "missing" and not warehouse.exists():
        return "new"  # the first run for this warehouse
    if warehouse.exists():
        try:
            with connect(warehouse, read_only=True) as con:
                con.execute("select count(*) from duckdb_tables()").fetchall()
            _copy_synced(warehouse, build_database)
            _check_build_database(build_database)
            return f"build database {problem}: restored from the published warehouse"
        except (duckdb.Error, OSError) as error:
            log.warning("the published warehouse cannot seed the build database: %s", error)
            _move_aside(build_database)
    return f"build database {problem}: starting from an empty one"


def _move_aside(database: Path) -> None:
    for path in (database, database.with_name(database.name + ".wal")):
        if path.exists():
            os.replace(path, path.with_name(path.name + ".damaged"))


def _copy_synced(source: Path, target: Path) -> None:
    """Copy in chunks and sync the copy to disk (``publish.copy_chunk`` fails mid-copy)."""
    with open(source, "rb") as reader, open(target, "wb") as writer:
        while chunk := reader.read(_COPY_CHUNK):
            writer.write(chunk)
            failpoint("publish.copy_chunk")
        writer.flush()
        os.fsync(writer.fileno())


def _fsync(path: Path) -> None:
    """Sync a file, or a folder's entries (so a rename in it survives a crash), to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(build_database: Path, warehouse: Path) -> Path:
    """Swap a copy of the build database in as the warehouse, atomically.

    Readers holding the old file keep reading the old version (the rename does not touch
    their open inode); new readers get the new version whole. A crash before the rename
    leaves the previous warehouse as it was, and at worst a staging file the next publish
    overwrites.
    """
    with connect(build_database) as con:
        con.execute("checkpoint")
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    staging = warehouse.with_name(f".{warehouse.name}.publishing")
    _copy_synced(build_database, staging)
    failpoint("publish.before_replace")
    os.replace(staging, warehouse)
    _fsync(warehouse.parent)
    return warehouse


def publish_folder(target: Path, build: Callable[[Path], None]) -> Path:
    """Build a new version of a folder and swap it in atomically, like ``publish`` does a file.

    ``build`` fills a fresh folder beside the versions already published; its files and the
    folder are synced to disk, then ``target`` (a symbolic link to the current version) is
    replaced by rename, so a reader listing ``target`` sees the old version whole or the new one
    whole. A failed build or a crash before the rename leaves the previous version published.
    The version just replaced stays (a reader that resolved the link just before the swap can
    still open its files); older ones, and folders of builds that died, are removed.
    """
    versions = target.with_name(f".{target.name}.versions")
    versions.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%dT%H%M%S-"), dir=versions))
    staging.chmod(0o755)  # mkdtemp's 0700 would hide the files from readers running as other users
    try:
        build(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for path in (*staging.rglob("*"), staging, versions):
        _fsync(path)
    previous = target.resolve() if target.is_symlink() else None
    if target.is_dir() and not target.is_symlink():  # a folder made by hand: it becomes the previous version
        previous = versions / f"{staging.name}-previous"
        os.replace(target, previous)
    link = target.with_name(f".{target.name}.link")
    link.unlink(missing_ok=True)
    link.symlink_to(staging.relative_to(target.parent))
    os.replace(link, target)
    _fsync(target.parent)
    for old in versions.iterdir():
        if old not in (staging, previous):
            shutil.rmtree(old, ignore_errors=True)
    return target


def export_marts(warehouse: Path, target: Path) -> dict[str, int]:
    """Every table of schema ``marts`` as ``<table>.parquet`` in ``target``, published atomically;
    says how many rows each holds. Reads the published warehouse, read-only."""
    counts: dict[str, int] = {}
    with connect(warehouse, read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(
                "select table_name from duckdb_tables() where schema_name = 'marts' order by table_name"
            ).fetchall()
        ]

        def write(folder: Path) -> None:
            for table in tables:
                # DuckDB's own Parquet writer, on every core and with no frame in between: 10^5
                # abstracts' marts in 1.5 s, against 2.7 s through Polars (the same columns and rows).
                target = folder / f"{table}.parquet"
                (counts[table],) = con.execute(
                    f"copy (select * from marts.{sql_identifier(table)}) to {sql_literal(str(target))}"
                    " (format parquet, compression zstd)"
                ).fetchone()

        publish_folder(target, write)
    return counts


def remove_stale_files(warehouse: Path) -> None:
    """A staging file a killed publish left behind is never read; it only takes disk space."""
    staging = warehouse.with_name(f".{warehouse.name}.publishing")
    if staging.exists():
        staging.unlink()
