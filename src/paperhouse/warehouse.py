"""The DuckDB side: writing frames through Arrow, reading safely, publishing atomically."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import polars as pl

RAW_SCHEMA = "raw"


@contextmanager
def connect(database: Path, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection that is always closed, so no lock outlives the block that needed it."""
    if not read_only:
        database.parent.mkdir(parents=True, exist_ok=True)
    elif not database.exists():
        raise FileNotFoundError(f"no warehouse at {database}: run `paperhouse run` first")
    con = duckdb.connect(str(database), read_only=read_only)
    try:
        yield con
    finally:
        con.close()


def write_table(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """Replace ``raw.<table>`` with the frame, handed over as Arrow (no copy through Python)."""
    con.register("incoming_frame", frame.to_arrow())
    try:
        con.execute(f'create schema if not exists "{RAW_SCHEMA}"')
        con.execute(f'create or replace table "{RAW_SCHEMA}"."{table}" as select * from incoming_frame')
    finally:
        con.unregister("incoming_frame")


def read_frame(con: duckdb.DuckDBPyConnection, sql: str, parameters: list | None = None) -> pl.DataFrame:
    return con.execute(sql, parameters or []).pl()


def publish(build_database: Path, warehouse: Path) -> Path:
    """Swap a copy of the build database in as the warehouse, atomically.

    Readers holding the old file keep reading the old version (the rename does not touch
    their open inode); new readers get the new version whole. A crash before the rename
    leaves the previous warehouse as it was.
    """
    with connect(build_database) as con:
        con.execute("checkpoint")
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    staging = warehouse.with_name(f".{warehouse.name}.publishing")
    shutil.copyfile(build_database, staging)
    with open(staging, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(staging, warehouse)
    directory = os.open(warehouse.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return warehouse
