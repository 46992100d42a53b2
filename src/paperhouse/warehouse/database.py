"""The DuckDB side: connections, writing frames through Arrow and reading them back safely.

Two files per warehouse: the *build* database, written by the one run that holds the run lock,
and the *published* warehouse readers open (``paperhouse.warehouse.publishing`` swaps the one in as the
other, atomically)."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

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
# Row groups of what paperhouse writes: half DuckDB's default (122,880 rows). A transaction's
# appends to a table that stay below one row group go through the write-ahead log, and are
# compressed when the connection closes, on one thread: 100,000 new records took 3.5 s to close.
# Appends of a row group or more are written to the file as they come.
ROW_GROUP_ROWS = 61_440


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


def column_names(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> list[str]:
    """The columns of a table of the current database, in their order."""
    rows = con.execute(
        "select column_name from duckdb_columns() where database_name = current_database()"
        " and schema_name = ? and table_name = ? order by column_index",
        [schema, table],
    ).fetchall()
    return [name for (name,) in rows]


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
