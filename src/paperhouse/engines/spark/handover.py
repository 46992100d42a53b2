"""Tables handed between the build database and the Spark warehouse folder, as Parquet.

The Spark engine's dbt target reads each ``raw.<table>`` from ``<warehouse>/raw/<table>/`` and
writes each mart as a Parquet table under ``<warehouse>/marts/<table>/``
(``paperhouse.engines.spark.tables``). The marts come back into the build database in the contract's
column types and NOT NULL constraints, so the published DuckDB file is the same whichever engine
built it (docs/contract.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from paperhouse.engines.spark.tables import table_location
from paperhouse.warehouse.database import RAW_SCHEMA, connect, sql_literal

MARTS_SCHEMA = "marts"


def raw_table_folder(warehouse_dir: Path, table: str) -> Path:
    return Path(table_location(f"{RAW_SCHEMA}.{table}", warehouse_dir))


def mart_folder(warehouse_dir: Path, table: str) -> Path:
    return Path(table_location(f"{MARTS_SCHEMA}.{table}", warehouse_dir))


def view_parquet_tables(con: duckdb.DuckDBPyConnection, warehouse_dir: Path, tables: list[str]) -> None:
    """``raw.<table>`` in the build database as a view of the Parquet folder Spark wrote, so what
    reads the build database (run summaries, the id registries, the checks) reads Spark's rows."""
    con.execute(f'create schema if not exists "{RAW_SCHEMA}"')
    for table in tables:
        con.execute(f'drop table if exists "{RAW_SCHEMA}"."{table}"')
        con.execute(f'drop view if exists "{RAW_SCHEMA}"."{table}"')
        # A view takes no parameters: the path goes in as an escaped literal.
        con.execute(
            f'create view "{RAW_SCHEMA}"."{table}" as select * from '
            f"read_parquet({sql_literal(str(raw_table_folder(warehouse_dir, table) / '*.parquet'))})"
        )


def _parquet_views(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {
        name
        for (name,) in con.execute(
            "select view_name from duckdb_views() where schema_name = ? and sql like '%read_parquet(%'", [RAW_SCHEMA]
        ).fetchall()
    }


def drop_parquet_views(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the views ``view_parquet_tables`` made: the DuckDB engine writes those tables itself."""
    for table in sorted(_parquet_views(con)):
        con.execute(f'drop view "{RAW_SCHEMA}"."{table}"')


def keep_parquet_views(con: duckdb.DuckDBPyConnection) -> None:
    """Copy the rows of every view ``view_parquet_tables`` made into a table of the same name: the
    published file stands alone (its readers may not open other files, ``warehouse.connect_reader``)."""
    for table in sorted(_parquet_views(con)):
        con.execute(f'create table "{RAW_SCHEMA}"."{table}__kept" as select * from "{RAW_SCHEMA}"."{table}"')
        con.execute(f'drop view "{RAW_SCHEMA}"."{table}"')
        con.execute(f'alter table "{RAW_SCHEMA}"."{table}__kept" rename to "{table}"')


def export_raw_tables(build_database: Path, warehouse_dir: Path) -> dict[str, int]:
    """Every table and view of the build database's ``raw`` schema but the views of Spark's own
    Parquet (``view_parquet_tables``) as a Parquet folder of one file, replacing what an earlier
    run left; -> rows per table."""
    rows = {}
    with connect(build_database, read_only=True) as con:
        spark_written = _parquet_views(con)
        tables = [
            name
            for (name,) in con.execute(
                "select table_name from information_schema.tables where table_schema = ? order by table_name",
                [RAW_SCHEMA],
            ).fetchall()
            if name not in spark_written
        ]
        for table in tables:
            folder = raw_table_folder(warehouse_dir, table)
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            con.execute(
                f'copy (select * from "{RAW_SCHEMA}"."{table}") to {sql_literal(str(folder / "part-0.parquet"))} '
                "(format parquet)"
            )
            rows[table] = con.execute(f'select count(*) from "{RAW_SCHEMA}"."{table}"').fetchone()[0]
    return rows


def import_marts(build_database: Path, warehouse_dir: Path, schemas: dict[str, dict[str, str]]) -> dict[str, int]:
    """Each mart Spark built (``schemas``: ``marts.<table>`` -> column -> contract type, NOT NULL
    included) into the build database's ``marts`` schema; -> rows per table. Marts Spark has not
    built are left as they are."""
    rows = {}
    with connect(build_database) as con:
        con.execute(f"create schema if not exists {MARTS_SCHEMA}")
        for name, columns in schemas.items():
            table = name.removeprefix(f"{MARTS_SCHEMA}.")
            folder = mart_folder(warehouse_dir, table)
            if not any(folder.glob("*.parquet")):
                continue
            column_declarations = ", ".join(f'"{column}" {declared}' for column, declared in columns.items())
            con.begin()
            kind = con.execute(
                "select table_type from information_schema.tables where table_schema = ? and table_name = ?",
                [MARTS_SCHEMA, table],
            ).fetchone()
            if kind and kind[0] == "VIEW":
                con.execute(f'drop view {MARTS_SCHEMA}."{table}"')
            con.execute(f'create or replace table {MARTS_SCHEMA}."{table}" ({column_declarations})')
            # By name, cast to the declared types (Spark's counts are bigint where a contract says integer).
            con.execute(
                f'insert into {MARTS_SCHEMA}."{table}" by name select * from read_parquet(?)',
                [str(folder / "*.parquet")],
            )
            con.commit()
            rows[table] = con.execute(f'select count(*) from {MARTS_SCHEMA}."{table}"').fetchone()[0]
    return rows
