"""The history of check evaluations behind ``marts.quality_runs``: one row per check per run.

``raw.check_evaluations`` only ever grows (keyed by run, asset and check), and like the
paper-id registry it lives in the build database and travels with every published warehouse:
a full refresh, a damaged build database restored from the published file, or a rebuilt
folder keep it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import duckdb
import polars as pl

from paperhouse.warehouse.database import RAW_SCHEMA, append_rows, table_exists

TABLE = "check_evaluations"
KEY = ("run_id", "asset", "check_name")
CHECK_EVALUATION_SCHEMA = {
    "run_id": pl.String,
    "evaluated_at": pl.Datetime("us"),  # UTC
    "asset": pl.String,
    "check_name": pl.String,
    "passed": pl.Boolean,
    "severity": pl.String,
    "observed": pl.String,  # JSON
    "description": pl.String,
}


def evaluation_row(
    run_id: str,
    timestamp: float,
    asset: str,
    check_name: str,
    passed: bool,
    severity: str,
    observed: dict[str, Any],
    description: str | None,
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "evaluated_at": datetime.fromtimestamp(timestamp, UTC).replace(tzinfo=None),
        "asset": asset,
        "check_name": check_name,
        "passed": passed,
        "severity": severity,
        "observed": json.dumps(observed, sort_keys=True, default=str),
        "description": description,
    }


def frame(rows: Iterable[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=CHECK_EVALUATION_SCHEMA).sort("evaluated_at", *KEY)


def append(con: duckdb.DuckDBPyConnection, evaluations: pl.DataFrame) -> tuple[int, int]:
    """Add the evaluations not recorded yet; returns the rows added and the rows in all."""
    before = _count(con)
    append_rows(con, TABLE, evaluations, key=KEY)
    total = _count(con)
    return total - before, total


def _count(con: duckdb.DuckDBPyConnection) -> int:
    if not table_exists(con, RAW_SCHEMA, TABLE):
        return 0
    return con.execute(f"select count(*) from {RAW_SCHEMA}.{TABLE}").fetchone()[0]
