"""Reading a structured file (CSV, TSV, JSON lines, a JSON array of objects) into a frame of text.

``read_table`` gives every row the file holds, numbered from 1 in the file's order (blank rows are
no rows), each column as text, ``_problem`` for a row that could not be read and ``_repair`` for
one read by repairing it (``realigned_fields``: a separator the writer left unquoted). It raises
``UnparsableFile`` when the file as a whole cannot be read: a row-level fault costs that row
only, as a bad paragraph costs a text list only that paragraph.

CSV and TSV are read by Polars when they are clean: a strict read, with one column per header
name, raises on a row with more fields than the header (missing fields read as empty ones), and a
field across lines may be a stray quote that swallowed the rows after it. A TSV is read with
quoting, as spreadsheets write it, and without when that fails: scrapes write titles such as
`"Hey, that's not an ODE": ...` into unquoted fields. Any other file is read row by row by
``paperhouse.ingest.row_recovery``, tolerantly: a stray quote is text, a row with more fields than the
header is realigned where its fields can be anchored (``REPAIR`` names the repair), and a row that
cannot be is rejected alone. A CSV or TSV is unparsable as a whole only when it has no header, no
row after it, or no row that can be read.

JSON is read by Python's json module: one bad line of a JSON-lines file must cost one row, and a
value may be text in one object and a list or a number in the next, which a Polars reader
refuses; each value becomes text (a list as JSON list text, which the keyword reader splits).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from paperhouse.ingest.row_recovery import read_rows

# The fields a row can carry, and the column names each is recognised by (compared lower case,
# with runs of other characters than letters and digits as one underscore).
USUAL_NAMES = {
    "title": ("title", "paper_title"),
    "abstract": ("abstract", "paper_abstract"),
    "keywords": ("keywords", "keyword", "author_keywords"),
    "authors": ("authors", "author"),
    "year": ("year",),
    "venue": ("venue",),
    "decision": ("decision",),
    "external_id": ("id", "paper_id", "paperid"),
    "link": ("link", "url"),
}
FIELDS = tuple(USUAL_NAMES)
_FIELD_OF_NAME = {name: field for field, names in USUAL_NAMES.items() for name in names}
# A row's number, what made it unreadable, and what was repaired to read it, beside the fields.
ROW, PROBLEM, REPAIR = "_row", "_problem", "_repair"
_ERROR_CHARS = 160


class UnparsableFile(ValueError):
    """The file as a whole cannot be read as a table; ``str(e)`` is the reason."""


@dataclass(frozen=True)
class Table:
    columns: list[str]  # as the file names them
    fields: dict[str, str]  # recognised field -> the column read for it
    rows: pl.LazyFrame  # ROW, PROBLEM, REPAIR and one text column per recognised field, named by the field


def column_key(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def field_named(name: str) -> str | None:
    """The field a column (or a sidecar's target) names: ``Paper ID`` -> external_id."""
    key = column_key(name)
    return "external_id" if key == "external_id" else _FIELD_OF_NAME.get(key)


def recognise(columns: list[str], mapping: dict[str, str]) -> dict[str, str]:
    """Field -> column: the columns ``mapping`` names first (by name, case-insensitive), then the
    first column of each field's usual names."""
    by_key: dict[str, str] = {}
    for column in columns:
        by_key.setdefault(column_key(column), column)
    fields: dict[str, str] = {}
    for source, field in mapping.items():
        if column_key(source) in by_key and field not in fields:
            fields[field] = by_key[column_key(source)]
    taken = set(fields.values())
    for column in columns:
        field = _FIELD_OF_NAME.get(column_key(column))
        if field and field not in fields and column not in taken:
            fields[field] = column
    return fields


def read_table(
    text: str, file_format: str, mapping: dict[str, str] | None = None, needs: tuple[str, ...] = ()
) -> Table:
    """The file's rows; ``UnparsableFile`` when it is no table, or lacks a column for one of the
    fields it ``needs`` (told from a CSV's header before its rows are read: a large CSV that is no
    list, such as a labels file, costs its header only)."""
    mapping = mapping or {}

    def check(columns: list[str]) -> None:
        missing = [field for field in needs if field not in recognise(columns, mapping)]
        if missing:
            raise UnparsableFile(f"no {missing[0]} column (columns: {', '.join(columns)[:160]})")

    if file_format in ("csv", "tsv"):
        columns, frame = _read_delimited(text, "," if file_format == "csv" else "\t", check, mapping)
    else:
        columns, frame = _read_json(text, lines=file_format == "jsonl")
        check(columns)
    fields = recognise(columns, mapping)
    rows = frame.lazy().select(
        ROW,
        PROBLEM,
        REPAIR,
        *[
            pl.col(fields[field]).alias(field) if field in fields else pl.lit(None, pl.String).alias(field)
            for field in FIELDS
        ],
    )
    return Table(columns, fields, rows)


def _first_line(error: Exception) -> str:
    message = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return message[:_ERROR_CHARS]


def _read_delimited(
    text: str, separator: str, check: Callable[[list[str]], None], mapping: dict[str, str]
) -> tuple[list[str], pl.DataFrame]:
    text = text[_leading_blank_lines(text) :]
    data = text.encode("utf-8")
    quotes = ['"', None] if separator == "\t" else ['"']
    for quote in quotes:
        try:
            read = _read_strictly(data, separator, quote, check)
        except pl.exceptions.PolarsError:
            continue  # a TSV is read again without quoting, as spreadsheets and scrapes write it
        return read if read is not None else _read_tolerantly(text, separator, check, mapping)
    return _read_tolerantly(text, separator, check, mapping)


def _leading_blank_lines(text: str) -> int:
    """How many characters the blank lines before the header take."""
    match = re.match(r"(?:[ \t\r\f\v]*\n)+", text)
    return match.end() if match else 0


def _read_strictly(
    data: bytes, separator: str, quote: str | None, check: Callable[[list[str]], None]
) -> tuple[list[str], pl.DataFrame] | None:
    """The file read by Polars, the fast path; None when it needs reading row by row: a row with
    more fields than the header (a strict read raises), a field across lines (a stray quote may
    have swallowed the rows after it: ``paperhouse.ingest.row_recovery`` tells), a quoted field read
    without quoting, or no row read at all."""
    options = {"separator": separator, "quote_char": quote, "has_header": False}
    first = pl.read_csv(data, n_rows=1, infer_schema=False, raise_if_empty=False, truncate_ragged_lines=True, **options)
    if first.height == 0:
        return None  # no header, or a quote in it that runs to the end: the tolerant reader tells
    columns = [value or "" for value in first.row(0)]
    check(columns)
    names = [f"c{i}" for i in range(len(columns))]
    frame = pl.read_csv(
        data, schema=dict.fromkeys(names, pl.String), truncate_ragged_lines=False, missing_columns="insert", **options
    )
    columns_read = pl.col(names)
    if quote is None:
        # Read without quoting, a field that is a quoted one (whole, or cut at its line end with an
        # odd number of quotes left in it) keeps its quotes: the tolerant reader reads it as quoted.
        opens = columns_read.str.starts_with('"')
        doubtful = opens & (
            columns_read.str.ends_with('"') | (columns_read.str.count_matches('"', literal=True) % 2 == 1)
        )
    else:
        doubtful = columns_read.str.contains("\n", literal=True)
    if frame.select(pl.any_horizontal(doubtful).any()).item():
        return None
    values = [pl.col(name) for name in names]
    # A blank line reads as a row of empty fields: no record, as a blank line in a text list.
    blank = pl.all_horizontal([value.is_null() | (value.str.strip_chars() == "") for value in values])
    frame = (
        frame.slice(1)
        .filter(~blank)
        .with_columns(
            pl.int_range(1, pl.len() + 1, dtype=pl.Int32).alias(ROW),
            pl.lit(None, pl.String).alias(PROBLEM),
            pl.lit(None, pl.String).alias(REPAIR),
        )
        .rename(dict(zip(names, _unique(columns), strict=True)))
    )
    if frame.height == 0:
        return None  # header only, or rows Polars did not see
    return _unique(columns), frame


def _read_tolerantly(
    text: str, separator: str, check: Callable[[list[str]], None], mapping: dict[str, str]
) -> tuple[list[str], pl.DataFrame]:
    """The file read row by row (``paperhouse.ingest.row_recovery``): a row that cannot be read costs that
    row, a row with fields to spare is realigned where it can be."""

    def kinds_of(columns: list[str]) -> list[str | None]:
        check(columns)
        fields = recognise(columns, mapping)
        first = {column: i for i, column in reversed(list(enumerate(columns)))}
        kinds: list[str | None] = [None] * len(columns)
        for field, column in fields.items():
            kinds[first[column]] = field
        return kinds

    read = read_rows(text, separator, kinds_of)
    if read is None:
        raise UnparsableFile("no rows")
    if not read.values:
        raise UnparsableFile("header only, no rows")
    if all(problem is not None for problem in read.problems):
        kind = "CSV" if separator == "," else "TSV"
        raise UnparsableFile(f"unparsable file: {kind}: no row could be read (row 1: {read.problems[0]})")
    columns = _unique(read.columns)
    frame = pl.DataFrame(
        {
            ROW: pl.Series(range(1, len(read.values) + 1), dtype=pl.Int32),
            PROBLEM: pl.Series(read.problems, dtype=pl.String),
            REPAIR: pl.Series(read.repairs, dtype=pl.String),
            **{column: pl.Series([row[i] for row in read.values], dtype=pl.String) for i, column in enumerate(columns)},
        }
    )
    return columns, frame


def _unique(columns: list[str]) -> list[str]:
    """Column names made distinct for the frame (a repeated name gets ``#2``); the first keeps its name."""
    seen: dict[str, int] = {}
    unique = []
    for column in columns:
        seen[column] = seen.get(column, 0) + 1
        unique.append(column if seen[column] == 1 else f"{column}#{seen[column]}")
    return unique


def _read_json(text: str, lines: bool) -> tuple[list[str], pl.DataFrame]:
    if lines:
        records, problems = _json_lines(text)
    else:
        records, problems = _json_array(text)
    if not records:
        raise UnparsableFile("no rows")
    if all(problem is not None for problem in problems):
        raise UnparsableFile(f"unparsable file: no row holds a JSON object (row 1: {problems[0]})")
    columns: dict[str, None] = {}
    for record in records:
        columns.update(dict.fromkeys(record or {}))
    frame = pl.DataFrame(
        {
            ROW: pl.Series(range(1, len(records) + 1), dtype=pl.Int32),
            PROBLEM: pl.Series(problems, dtype=pl.String),
            REPAIR: pl.Series([None] * len(records), dtype=pl.String),
            **{
                column: pl.Series([_as_text((record or {}).get(column)) for record in records], dtype=pl.String)
                for column in columns
            },
        }
    )
    return list(columns), frame


def _json_lines(text: str) -> tuple[list[dict | None], list[str | None]]:
    records: list[dict | None] = []
    problems: list[str | None] = []
    # Split at line feeds only: a JSON string may hold U+2028 and other breaks str.splitlines cuts at.
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as error:
            records.append(None)
            problems.append(f"unparsable row: not JSON ({_first_line(error)})")
            continue
        record, problem = _object(value)
        records.append(record)
        problems.append(problem)
    return records, problems


def _json_array(text: str) -> tuple[list[dict | None], list[str | None]]:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise UnparsableFile(f"unparsable file: JSON: {_first_line(error)}") from error
    if not isinstance(value, list):
        raise UnparsableFile(f"unparsable file: JSON holds {_kind(value)}, not an array of objects")
    pairs = [_object(item) for item in value]
    return [record for record, _ in pairs], [problem for _, problem in pairs]


def _object(value: object) -> tuple[dict | None, str | None]:
    if isinstance(value, dict):
        return value, None
    return None, f"unparsable row: {_kind(value)}, not an object"


def _kind(value: object) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


def _as_text(value: object) -> str | None:
    """A JSON value as text: lists as JSON list text (their items' names, for author objects)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return json.dumps([_item_text(item) for item in value], ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _item_text(item: object) -> str:
    if isinstance(item, dict) and isinstance(item.get("name"), str):
        return item["name"]
    return item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
