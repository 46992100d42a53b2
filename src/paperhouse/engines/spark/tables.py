"""The warehouse's tables on the Spark engine: where each one's Parquet lives, a DataFrame of it,
Spark SQL over them by their warehouse names, and their column types in DuckDB's words.

A warehouse folder holds the raw tables the Python stages write, ``<warehouse>/raw/<table>/``,
and the marts dbt-spark builds as tables of database ``marts`` in the same folder,
``<warehouse>/marts/<table>/``. Both are Parquet folders, read
here by path: the session needs no catalog entry for them, so any session (a check step's, a
test's) reads the tables the build wrote in another process.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

# Schema -> its folder under the warehouse: dbt-spark writes the marts to ``<warehouse>/marts/``
# (the spark target's ``location_root``).
SCHEMA_FOLDERS = {"raw": "raw", "marts": "marts"}
# A table as the suites' SQL names it.
TABLE_NAME = re.compile(r"\b(raw|marts)\.([A-Za-z_]\w*)\b")

# Spark's type -> DuckDB's name for it, as ``duckdb_columns()`` reports it and the contracts say it.
_DUCKDB_NAMES = {
    "StringType": "VARCHAR",
    "CharType": "VARCHAR",
    "VarcharType": "VARCHAR",
    "BooleanType": "BOOLEAN",
    "ByteType": "TINYINT",
    "ShortType": "SMALLINT",
    "IntegerType": "INTEGER",
    "LongType": "BIGINT",
    "FloatType": "FLOAT",
    "DoubleType": "DOUBLE",
    "DateType": "DATE",
    # Spark's TIMESTAMP is an instant (shown in the session's time zone), DuckDB's TIMESTAMP a naive
    # value: the naive one is TIMESTAMP_NTZ on Spark.
    "TimestampNTZType": "TIMESTAMP",
    "TimestampType": "TIMESTAMP WITH TIME ZONE",
    "BinaryType": "BLOB",
}


def table_location(table: str, warehouse_dir: str | Path) -> str:
    """The Parquet folder of ``raw.<t>`` or ``marts.<t>`` in the warehouse folder (a path or a URI)."""
    schema, name = table.split(".")
    return f"{str(warehouse_dir).rstrip('/')}/{SCHEMA_FOLDERS[schema]}/{name}"


def read_table(spark: SparkSession, table: str, warehouse_dir: str | Path) -> DataFrame | None:
    """A DataFrame of the table's Parquet folder, or None when the warehouse has no such table: no
    folder, or one without a Parquet file (a writer that died first; Spark writes a file, with the
    schema, even of no rows). Only the footers are read here; rows are read by what is done with the frame."""
    from pyspark.errors import AnalysisException

    try:
        return spark.read.parquet(table_location(table, warehouse_dir))
    except AnalysisException as error:
        if error.getCondition() in ("PATH_NOT_FOUND", "UNABLE_TO_INFER_SCHEMA"):
            return None
        raise


def warehouse_sql(spark: SparkSession, query: str, warehouse_dir: str | Path) -> DataFrame:
    """Spark SQL over the warehouse's tables, named as DuckDB names them (``raw.<t>``, ``marts.<t>``):
    each becomes, for this query, a temporary view of its Parquet folder (``raw__<t>``)."""

    def view_of(match: re.Match) -> str:
        view = f"{match[1]}__{match[2]}"
        frame = read_table(spark, match[0], warehouse_dir)
        if frame is None:
            raise FileNotFoundError(f"no table {match[0]} in {warehouse_dir}")
        frame.createOrReplaceTempView(view)
        return view

    _define_duckdb_functions(spark)
    return spark.sql(TABLE_NAME.sub(view_of, query))


def _define_duckdb_functions(spark: SparkSession) -> None:
    """DuckDB's functions that the suites' SQL uses and Spark lacks under any name DuckDB shares."""
    spark.sql("create or replace temporary function array_length(a array<string>) returns int return size(a)")


def duckdb_type_name(data_type: DataType) -> str:
    """DuckDB's name of the type a Spark column holds (``VARCHAR``, ``INTEGER``, ``VARCHAR[]``); a type
    DuckDB's tables here never hold keeps Spark's name, so a schema check names it."""
    from pyspark.sql.types import ArrayType, DecimalType

    if isinstance(data_type, ArrayType):
        return f"{duckdb_type_name(data_type.elementType)}[]"
    if isinstance(data_type, DecimalType):
        return f"DECIMAL({data_type.precision},{data_type.scale})"
    return _DUCKDB_NAMES.get(type(data_type).__name__, data_type.simpleString().upper())
