"""Polars frames and Spark DataFrames, through Arrow: the schemas and batches a Spark stage that runs
the project's Polars code per partition (``mapInArrow``) declares and yields.

A Polars schema (``paperhouse.ingest.reading.SOURCE_RECORD_SCHEMA`` and the like) is the one definition of
a table's columns; its Spark schema is derived from it, so the two engines cannot drift apart.
Polars hands out large Arrow strings and lists, which a Spark stage does not take unless
``spark.sql.execution.arrow.useLargeVarTypes`` is set: batches are cast to the Spark schema's
Arrow form first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

PolarsSchema = Mapping[str, pl.DataType | type[pl.DataType]]


def spark_schema(schema: PolarsSchema) -> StructType:
    """The Spark schema of a Polars schema, in its column order (strings are Spark's ``string``,
    ``pl.Int32`` ``int``, ``pl.List(pl.String)`` ``array<string>``, naive datetimes ``timestamp_ntz``)."""
    return spark_schema_of_arrow(pl.DataFrame(schema=dict(schema)).to_arrow().schema)


def spark_schema_of_arrow(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema (a stage's batches declared in Arrow types)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def arrow_schema(schema: PolarsSchema) -> pa.Schema:
    """The Arrow schema Spark expects of a batch with these columns (plain, not large, strings)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema(schema))


def record_batches(frame: pl.DataFrame, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """``frame`` as Arrow record batches of ``schema`` (``arrow_schema``), to yield from ``mapInArrow``."""
    yield from frame.select(schema.names).to_arrow().cast(schema).to_batches()


def to_polars(df: DataFrame, schema: PolarsSchema | None = None) -> pl.DataFrame:
    """A Spark DataFrame collected to the driver as Polars (cast to ``schema`` when given): for
    small results and tests."""
    frame = pl.from_arrow(df.toArrow())
    if schema is None:
        return frame
    return frame.select([pl.col(name).cast(dtype) for name, dtype in schema.items()])


def from_polars(spark: SparkSession, frame: pl.DataFrame, schema: PolarsSchema | None = None) -> DataFrame:
    """A small Polars frame made on the driver as a Spark DataFrame of ``schema`` (default its own;
    columns of ``schema`` that ``frame`` lacks are null)."""
    schema = dict(frame.schema) if schema is None else schema
    if frame.is_empty():  # PySpark cannot take an Arrow table without chunks (a list column's)
        return spark.createDataFrame([], schema=spark_schema(schema))
    columns = [
        pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype) for name, dtype in schema.items()
    ]
    table = frame.select([column.alias(name) for column, name in zip(columns, schema, strict=True)]).to_arrow()
    return spark.createDataFrame(table.cast(arrow_schema(schema)), schema=spark_schema(schema))
