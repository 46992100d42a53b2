"""Materialisation metadata every Python asset reports: row count, column schema, a preview."""

from __future__ import annotations

from typing import Any

import polars as pl
from dagster import MetadataValue, TableColumn, TableSchema

_PREVIEW_CHARS = 80


def frame_metadata(
    frame: pl.DataFrame, preview_rows: int = 5, row_count: int | None = None, **extra: Any
) -> dict[str, Any]:
    """``row_count`` when ``frame`` holds only the first rows of what the asset wrote."""
    preview = frame.head(preview_rows).with_columns(
        pl.col(pl.String).str.slice(0, _PREVIEW_CHARS).str.replace_all(r"\|", "/")
    )
    return {
        "dagster/row_count": frame.height if row_count is None else row_count,
        "dagster/column_schema": TableSchema(
            columns=[TableColumn(name=name, type=str(dtype)) for name, dtype in frame.schema.items()]
        ),
        "preview": MetadataValue.md(_markdown_table(preview)),
        **extra,
    }


def _markdown_table(frame: pl.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, rule, *rows])


def counts_table(frame: pl.DataFrame) -> MetadataValue:
    """A small frame (e.g. counts by reason) as a markdown table."""
    return MetadataValue.md(_markdown_table(frame))
