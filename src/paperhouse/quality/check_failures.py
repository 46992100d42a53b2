"""What a failed check says: the invariant in words and up to five rows that break it.

A dbt test is a query returning the rows that break what it asserts (``dbt_project/tests`` and the
generic tests). When one fails, the run and the Dagster UI show what it asserts, read off the
test's node of dbt's manifest (a singular test's ``description``, or a sentence made from a generic
test's name and arguments), and the first rows its compiled query returns, read from the build
database. No Dagster here: ``orchestration.assets.dbt`` attaches this to the check result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from paperhouse.warehouse.database import connect

SHOWN_ROWS = 5
_VALUE_CHARS = 80


def invariant_in_words(node: Mapping[str, Any]) -> str:
    """What a dbt test asserts, from its manifest node: its own description, else a sentence made
    from a generic test's name and arguments (``unique`` of ``paper_id`` on ``papers``)."""
    if node.get("description"):
        return " ".join(str(node["description"]).split())
    metadata = node.get("test_metadata") or {}
    name, kwargs = metadata.get("name"), metadata.get("kwargs") or {}
    model = _model_of(node)
    column = kwargs.get("column_name")
    if name == "not_null":
        return f"`{column}` of `{model}` is never null"
    if name == "unique":
        return f"no two rows of `{model}` share `{column}`"
    if name == "accepted_values":
        return f"`{column}` of `{model}` is one of {kwargs.get('values')}"
    if name == "relationships":
        return f"every `{column}` of `{model}` is a `{kwargs.get('field')}` of `{_referenced(kwargs.get('to'))}`"
    if name in ("primary_key", "unique_combination_of_columns"):
        columns = kwargs.get("columns") or kwargs.get("combination_of_columns")
        return f"`{model}` has one row per {columns}"
    if name == "rows_satisfy":
        return f"every row of `{model}` satisfies " + " and ".join(kwargs.get("conditions") or [])
    if name:
        return f"`{name}` holds on `{model}` ({', '.join(f'{k}={v}' for k, v in kwargs.items() if k != 'model')})"
    return f"the rows `{node.get('name', 'the test')}` returns are none"


def _model_of(node: Mapping[str, Any]) -> str:
    """The model a test is attached to (a relationships test depends on two)."""
    attached = node.get("attached_node") or ""
    models = [attached] if attached else (node.get("depends_on") or {}).get("nodes", [])
    return ", ".join(model.split(".")[-1] for model in models) or "its model"


def _referenced(target: object) -> str:
    """``ref('terms')`` as dbt's manifest keeps a relationships test's target -> ``terms``."""
    found = re.fullmatch(r"""\s*ref\(\s*['"]([^'"]+)['"]\s*\)\s*""", str(target))
    return found.group(1) if found else str(target)


def offending_rows(database: Path, compiled_sql: str, limit: int = SHOWN_ROWS) -> pl.DataFrame:
    """The first ``limit`` rows a test's compiled query returns against ``database``, read only.
    The order is the query's own and stable for a given database (DuckDB orders a ``limit`` of
    an unordered query by its plan), which is what a person rereading the run wants."""
    query = compiled_sql.strip().rstrip(";")  # the project's own test, compiled by dbt: code, not data
    with connect(database, read_only=True) as con:
        return con.sql(query).limit(limit).pl()


def rows_in_words(rows: pl.DataFrame) -> list[str]:
    """Each row as ``column=value`` pairs, values cut to a readable length."""
    return [
        ", ".join(f"{column}={_short(value)}" for column, value in row.items()) for row in rows.iter_rows(named=True)
    ]


def explanation(invariant: str, rows: pl.DataFrame | None, failures: int | None) -> str:
    """One line for the run's summary and the check's description in the UI."""
    count = f"{failures} {'row breaks' if failures == 1 else 'rows break'} it" if failures is not None else "broken"
    shown = ""
    if rows is not None and rows.height:
        shown = "; e.g. " + " | ".join(rows_in_words(rows))
    return f"{invariant}: {count}{shown}"


def _short(value: object) -> str:
    text = "null" if value is None else str(value)
    text = " ".join(text.split())
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"
