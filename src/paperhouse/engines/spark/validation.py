"""The Great Expectations suites (``paperhouse.quality.suites``) validated against Spark DataFrames of the
warehouse's tables, with GX's Spark execution engine: the same ``SuiteResult`` as the DuckDB
engine's ``quality.validate_suite``, so the checks stay blocking with either engine.

Every expectation runs as an aggregation in Spark (nulls, ranges, sets and patterns as counts of
the rows that fail a predicate, keys as counts over a window of each key, row counts as counts);
the driver receives the counts and at most twenty unexpected values of each, never the rows. So
a table needs no parts (``Suite.parts_by``), however large. The schema is the Parquet footers'
(metadata), described in DuckDB's type names and checked by ``gx_validation.validate_schema``,
as on DuckDB. Parquet files carry no NOT NULL constraint: a column the contract declares NOT
NULL counts as such when it holds no null, one more aggregation over the table.

GX's engine runs in the process's active SparkSession (``SparkSession.builder.getOrCreate()``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from paperhouse.engines.spark.tables import duckdb_type_name, read_table, warehouse_sql
from paperhouse.quality.expected_schemas import expected_schema
from paperhouse.quality.gx import (
    GX_DATA_SOURCE,
    Outcome,
    SuiteResult,
    great_expectations,
    validate_frame,
    validate_schema,
)
from paperhouse.quality.suites import SUITES, Suite

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

NOT_NULL = " NOT NULL"


@contextmanager
def spark_frame_batches(context) -> Iterator:
    """A batch definition of a Spark data source made for one validation and deleted after it, with
    it GX's engine and the batch it keeps. ``persist=False``: the caller caches the frame, and
    lets go of it after the validation."""
    source = context.data_sources.add_spark(GX_DATA_SOURCE, persist=False)
    try:
        yield source.add_dataframe_asset("frames").add_batch_definition_whole_dataframe("frame")
    finally:
        context.data_sources.delete(GX_DATA_SOURCE)


def validate_suite_on_spark(spark: SparkSession, suite: Suite, warehouse_dir: str | Path) -> SuiteResult:
    """The suite's outcomes over its table in the warehouse folder (``spark.tables.table_location``)."""
    gx, _ = great_expectations()
    table = read_table(spark, suite.name, warehouse_dir)
    if table is None:
        return SuiteResult(suite.name, [Outcome("table_exists", None, False, f"no table {suite.name}")])
    expected = expected_schema(suite.name)
    outcomes = validate_schema(declared_types(table, expected), expected)
    if not set(table.columns) >= set(expected):
        # The schema outcomes name the missing columns; expectations on a column that is not there cannot run.
        return SuiteResult(suite.name, outcomes)
    facts = warehouse_sql(spark, suite.facts_sql, warehouse_dir).first().asDict() if suite.facts_sql else {}
    if expectations := suite.expectations(gx.expectations, facts):
        rows = warehouse_sql(spark, suite.rows_query("`"), warehouse_dir)
        # Each expectation's counts and examples are a Spark job of their own: cached, the table is read
        # (and a suite's join and window computed) once, not once a job.
        rows.cache()
        try:
            outcomes += _validate_rows(rows, expectations)
        finally:
            rows.unpersist()
    return SuiteResult(suite.name, outcomes)


def _validate_rows(rows: DataFrame, expectations: list) -> list[Outcome]:
    """The outcomes BASIC reports, in two passes. Every Spark job costs a fixed tenth of a second or
    more, and BASIC's examples of unexpected values are a job for each expectation: the expectations of
    each row are screened first for success alone (the counts bundled into a few jobs), and only the
    failing ones are validated again for their counts and examples. One that holds has none to
    report: its outcome is what BASIC reports of it, no row unexpected. Row counts report their
    observed value, pass or fail, so they go to the second pass at once."""
    of_rows = [e for e in expectations if _of_each_row(e)]
    screened = validate_frame(rows, of_rows, spark_frame_batches, result_format="BOOLEAN_ONLY") if of_rows else []
    failed = {(o.expectation, str(o.column)) for o in screened if not o.success}
    reported = [e for e in expectations if not _of_each_row(e) or (e.expectation_type, str(_columns(e))) in failed]
    held = [o for o in screened if o.success]
    return held + (validate_frame(rows, reported, spark_frame_batches) if reported else [])


def _of_each_row(expectation) -> bool:
    return not expectation.expectation_type.startswith("expect_table_")


def _columns(expectation) -> str | list[str] | None:
    """The column(s) an expectation names, as ``Outcome.column`` holds them."""
    return getattr(expectation, "column", None) or getattr(expectation, "column_list", None)


def declared_types(table: DataFrame, expected: dict[str, str]) -> list[tuple[str, str]]:
    """(column, DuckDB type with `` NOT NULL`` where it holds) of each of the table's columns, in
    order. NOT NULL where Spark's schema says so, or where the contract asks for it and the column
    holds no null: the one aggregation here, over those columns only."""
    from pyspark.sql import functions as F

    asked = [
        field.name
        for field in table.schema.fields
        if field.nullable and expected.get(field.name, "").endswith(NOT_NULL)
    ]
    nulls = table.select([F.count_if(F.col(c).isNull()).alias(c) for c in asked]).first().asDict() if asked else {}
    return [
        (
            field.name,
            duckdb_type_name(field.dataType) + (NOT_NULL if not field.nullable or nulls.get(field.name) == 0 else ""),
        )
        for field in table.schema.fields
    ]


def validate_warehouse_on_spark(
    spark: SparkSession, warehouse_dir: str | Path, suites: tuple[Suite, ...] = SUITES
) -> list[SuiteResult]:
    return [validate_suite_on_spark(spark, suite, warehouse_dir) for suite in suites]
