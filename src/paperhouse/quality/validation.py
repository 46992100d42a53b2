"""The Great Expectations suites (``paperhouse.quality.suites``) validated against a DuckDB warehouse.

Each suite validates two pandas DataFrames pulled from DuckDB (GX 1.x has no DuckDB
dialect): the table's columns, one row each with its declared type, against the expected
schema, and the few columns its value expectations need. A run validates in a ``SuiteWorker``
process, which pays GX's import while the run does its first steps. The Spark engine validates
the same suites on Spark DataFrames: ``paperhouse.engines.spark.validation``.
"""

from __future__ import annotations

import atexit
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from paperhouse.common.workers import WorkerProcess
from paperhouse.quality.expected_schemas import expected_schema
from paperhouse.quality.gx import Outcome, SuiteResult, great_expectations, validate_frame, validate_schema
from paperhouse.quality.suites import SUITES, SUITES_BY_NAME, Suite
from paperhouse.warehouse.database import connect

# Rows pulled into one pandas frame at most, for suites that name a ``parts_by`` column: the 27M rows
# of raw.paper_terms at 10^6 papers, pulled whole, held 5.6 GB while GX validated them.
ROWS_PER_PART = 4_000_000


def validate_suite(con: duckdb.DuckDBPyConnection, suite: Suite) -> SuiteResult:
    gx, _ = great_expectations()
    actual_types = con.execute(  # duckdb_columns(), not information_schema.columns: 15 ms less a table
        "select column_name, data_type || if(is_nullable, '', ' NOT NULL') from duckdb_columns()"
        " where schema_name = ? and table_name = ? order by column_index",
        [suite.schema_name, suite.table_name],
    ).fetchall()
    if not actual_types:
        return SuiteResult(suite.name, [Outcome("table_exists", None, False, f"no table {suite.name}")])
    expected = expected_schema(suite.name)
    outcomes = validate_schema(actual_types, expected)
    if not {name for name, _ in actual_types} >= set(expected):
        # The schema outcomes name the missing columns; the values of a column that is not there cannot be pulled.
        return SuiteResult(suite.name, outcomes)
    facts = dict(zip(*_facts(con, suite.facts_sql), strict=True)) if suite.facts_sql else {}
    if expectations := suite.expectations(gx.expectations, facts):
        outcomes += _validate_rows(con, suite, expectations)
    return SuiteResult(suite.name, outcomes)


def _validate_rows(con: duckdb.DuckDBPyConnection, suite: Suite, expectations: list) -> list[Outcome]:
    """The expectations' outcomes over the suite's rows: pulled whole, or by parts of ``parts_by``."""
    query, parts = suite.rows_query('"'), _parts(con, suite)
    if parts == 1:
        return validate_frame(_pandas_frame(con, query), expectations)
    # A value's rows all land in one part. Typed: an untyped parameter made DuckDB widen every hash to a
    # HUGEINT, ten times slower than the scan.
    in_part = f'{query} where hash("{suite.parts_by}") % ?::ubigint = ?::ubigint'
    return _combined(
        [validate_frame(_pandas_frame(con, in_part, [parts, part]), expectations) for part in range(parts)]
    )


def _parts(con: duckdb.DuckDBPyConnection, suite: Suite) -> int:
    """How many parts the suite's rows are validated in: one, unless it names ``parts_by``."""
    if not suite.parts_by:
        return 1
    rows = con.execute(  # the catalog's count: enough to size the parts by, and no scan
        "select estimated_size from duckdb_tables() where schema_name = ? and table_name = ?",
        [suite.schema_name, suite.table_name],
    ).fetchone()[0]
    return max(1, -(-rows // ROWS_PER_PART))


def _combined(parts: list[list[Outcome]]) -> list[Outcome]:
    """Each expectation's outcome over the whole table from its outcomes over the parts: one of each
    row holds if it holds in every part, and the unexpected rows add up."""
    combined = []
    for outcomes in zip(*parts, strict=True):
        unexpected = sum(outcome.observed["unexpected_count"] for outcome in outcomes)
        observed: dict[str, Any] = {"unexpected_count": unexpected}
        if unexpected:
            observed["examples"] = [e for outcome in outcomes for e in outcome.observed.get("examples", [])][:5]
        first = outcomes[0]
        combined.append(Outcome(first.expectation, first.column, all(o.success for o in outcomes), observed))
    return combined


def _pandas_frame(con: duckdb.DuckDBPyConnection, sql: str, parameters: list | None = None):
    """The query's rows as the pandas frame GX validates, through Arrow (several times faster than
    DuckDB's own pandas conversion for strings), numbers as int64 and float64: GX checks ranges of
    those with vectorised pandas, but of any other dtype (DuckDB's INTEGER is int32) with a Python
    call per value, 50 times slower. Arrow hands integers with nulls over as float64 already."""
    frame = con.execute(sql, parameters).to_arrow_table().to_pandas()
    wider = {
        column: "int64" if dtype.kind in "iu" and dtype.itemsize < 8 else "float64"
        for column, dtype in frame.dtypes.items()
        if dtype.kind in "iuf" and dtype not in (np.int64, np.float64)
    }
    return frame.astype(wider) if wider else frame


def _facts(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], tuple]:
    cursor = con.execute(sql)
    return [d[0] for d in cursor.description], cursor.fetchone()


def validate_warehouse(con: duckdb.DuckDBPyConnection, suites: tuple[Suite, ...] = SUITES) -> list[SuiteResult]:
    return [validate_suite(con, suite) for suite in suites]


class SuiteWorker(WorkerProcess):
    """Validates suites against a DuckDB file in a worker process that imports GX as it starts.

    Importing Great Expectations costs about 4.5 s of CPU. Started when a run starts, the worker
    pays it on the second core while the run loads Dagster, ingests and deduplicates, instead
    of in front of the first check. The worker opens the file read-only for one step's suites
    and closes it, so it never holds the lock a writing step needs.
    """

    def __init__(self) -> None:
        super().__init__(great_expectations)

    def validate(self, database: Path, suites: list[Suite]) -> list[SuiteResult]:
        return self.submit(_validate_file, str(database), [suite.name for suite in suites]).result()


@cache
def suite_worker() -> SuiteWorker:
    """The process's one worker, started on first use and stopped when the process exits."""
    worker = SuiteWorker()
    atexit.register(worker.close)
    return worker


def _validate_file(database: str, suite_names: list[str]) -> list[SuiteResult]:
    with connect(Path(database), read_only=True) as con:
        results = validate_warehouse(con, tuple(SUITES_BY_NAME[name] for name in suite_names))
    _hand_back_free_memory()
    return results


def _hand_back_free_memory() -> None:
    """In the worker, between steps: hand the memory freed by a validation back to the system.
    Arrow's allocator and glibc's keep freed pages for the next allocation, and the worker's
    next one may be minutes away, after the step with the run's peak (10^6 papers: the worker held
    976 MB after ``raw.paper_terms``, 337 MB with GX's batch forgotten and these pages handed back)."""
    import ctypes

    import pyarrow

    pyarrow.default_memory_pool().release_unused()
    malloc_trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # glibc's; other C libraries lack it
    if malloc_trim is not None:
        malloc_trim(0)
