"""Great Expectations suites for the raw tables and the marts.

Each suite validates two pandas DataFrames pulled from DuckDB (GX 1.x has no DuckDB
dialect): a one-row frame of the table's declared column types, against the expected
schema, and the few columns its value expectations need. Great Expectations is imported
lazily, on first validation: it costs seconds and hundreds of MB, which definitions
loading and the CLI's other commands should not pay.

The marts' expected schemas are read from the dbt YAML that enforces their contracts, so
the two can never disagree; the raw tables' come from the Python code that writes them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable

import duckdb
import polars as pl
import yaml

from paperhouse.dedup import ASSIGNMENT_SCHEMA
from paperhouse.ingest import RECORD_SCHEMA
from paperhouse.terms import TERM_OCCURRENCE_SCHEMA
from paperhouse.topics import PAPER_TOPIC_SCHEMA, TOPIC_TERM_SCHEMA

MARTS_YAML = Path(__file__).resolve().parents[2] / "dbt_project" / "models" / "marts" / "_marts__models.yml"
_POLARS_TO_DUCKDB = {pl.String: "VARCHAR", pl.Int32: "INTEGER", pl.Int64: "BIGINT", pl.Float64: "DOUBLE",
                     pl.Boolean: "BOOLEAN", pl.UInt32: "UINTEGER"}

# Facts: counts the expectations compare against, computed from the warehouse at check time.
Facts = dict[str, int]
ExpectationFactory = Callable[[Any, Facts], list]  # (gx.expectations module, facts) -> expectations


@dataclass(frozen=True)
class Suite:
    name: str  # the table it validates, e.g. "marts.papers"
    columns: tuple[str, ...]  # the only columns pulled for value expectations
    expectations: ExpectationFactory
    facts_sql: str | None = None  # one row of named counts, when expectations need them

    @property
    def schema_name(self) -> str:
        return self.name.split(".")[0]

    @property
    def table_name(self) -> str:
        return self.name.split(".")[1]


@dataclass(frozen=True)
class Outcome:
    expectation: str
    column: str | None
    success: bool
    observed: Any


@dataclass(frozen=True)
class SuiteResult:
    suite: str
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return all(o.success for o in self.outcomes)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.success]


def _duckdb_types(schema: dict) -> dict[str, str]:
    return {column: _POLARS_TO_DUCKDB[dtype] for column, dtype in schema.items()}


RAW_SCHEMAS: dict[str, dict[str, str]] = {
    "raw.source_records": _duckdb_types(
        {**RECORD_SCHEMA, "text": pl.String, "excerpt": pl.String, "normalized_text": pl.String}
    ),
    "raw.paper_assignments": _duckdb_types(ASSIGNMENT_SCHEMA),
    "raw.term_occurrences": _duckdb_types(TERM_OCCURRENCE_SCHEMA),
    "raw.topic_paper_weights": _duckdb_types(PAPER_TOPIC_SCHEMA),
    "raw.topic_term_weights": _duckdb_types(TOPIC_TERM_SCHEMA),
}


@cache
def mart_schemas() -> dict[str, dict[str, str]]:
    """``marts.<model>`` -> column -> DuckDB type, from the dbt contracts."""
    models = yaml.safe_load(MARTS_YAML.read_text())["models"]
    return {
        f"marts.{model['name']}": {column["name"]: column["data_type"].upper() for column in model["columns"]}
        for model in models
    }


def expected_schema(suite: Suite) -> dict[str, str]:
    return RAW_SCHEMAS.get(suite.name) or mart_schemas()[suite.name]


_COUNTS_OF_RECORDS = """
    select
        count(*) filter (where record_no is not null) as paragraphs_read,
        count(*) filter (where reject_reason is null) as accepted_records,
        count(*) filter (where reject_reason is not null and record_no is not null) as rejected_paragraphs
    from raw.source_records
"""

_COUNTS_OF_MERGES = """
    select
        (select count(*) from raw.source_records where reject_reason is null) as accepted_records,
        (select count(*) from marts.papers) as papers
"""


def _unique(gxe, *columns):
    if len(columns) == 1:
        return gxe.ExpectColumnValuesToBeUnique(column=columns[0])
    return gxe.ExpectCompoundColumnsToBeUnique(column_list=list(columns), ignore_row_if="any_value_is_missing")


def _not_null(gxe, *columns):
    return [gxe.ExpectColumnValuesToNotBeNull(column=c) for c in columns]


SUITES: tuple[Suite, ...] = (
    Suite(
        "raw.source_records",
        ("source_file", "record_no", "file_sha256", "reject_reason", "has_normalized_text"),
        lambda gxe, facts: [
            *_not_null(gxe, "source_file", "has_normalized_text"),
            _unique(gxe, "source_file", "record_no"),
            gxe.ExpectColumnValuesToBeBetween(column="record_no", min_value=1),
            gxe.ExpectColumnValueLengthsToEqual(column="file_sha256", value=64),
            # Every accepted paragraph carries the text matching needs.
            gxe.ExpectColumnValuesToBeInSet(column="has_normalized_text", value_set=[True]),
        ],
    ),
    Suite(
        "raw.paper_assignments",
        ("source_file", "record_no", "paper_id", "match_kind", "similarity"),
        lambda gxe, facts: [
            *_not_null(gxe, "source_file", "record_no", "paper_id", "match_kind", "similarity"),
            _unique(gxe, "source_file", "record_no"),
            gxe.ExpectColumnValuesToMatchRegex(column="paper_id", regex=r"^p_[0-9a-f]{16}$"),
            gxe.ExpectColumnValuesToBeInSet(column="match_kind", value_set=["canonical", "exact", "near"]),
            gxe.ExpectColumnValuesToBeBetween(column="similarity", min_value=0, max_value=1),
            # Dedup loses no record: one assignment per accepted record.
            gxe.ExpectTableRowCountToEqual(value=facts["accepted_records"]),
        ],
        facts_sql=_COUNTS_OF_RECORDS,
    ),
    Suite(
        "raw.term_occurrences",
        ("paper_id", "term", "n_words", "count"),
        lambda gxe, facts: [
            *_not_null(gxe, "paper_id", "term"),
            _unique(gxe, "paper_id", "term"),
            gxe.ExpectColumnValuesToBeBetween(column="n_words", min_value=1, max_value=4),
            gxe.ExpectColumnValuesToBeBetween(column="count", min_value=1),
        ],
    ),
    Suite(
        "raw.topic_paper_weights",
        ("paper_id", "topic_id", "weight"),
        lambda gxe, facts: [
            *_not_null(gxe, "paper_id", "topic_id", "weight"),
            _unique(gxe, "paper_id", "topic_id"),
            gxe.ExpectColumnValuesToBeBetween(column="weight", min_value=0, max_value=1),
        ],
    ),
    Suite(
        "raw.topic_term_weights",
        ("topic_id", "term", "weight"),
        lambda gxe, facts: [
            *_not_null(gxe, "topic_id", "term", "weight"),
            _unique(gxe, "topic_id", "term"),
            gxe.ExpectColumnValuesToBeBetween(column="weight", min_value=0),
        ],
    ),
    Suite(
        "marts.papers",
        ("paper_id", "abstract", "n_sources"),
        lambda gxe, facts: [
            *_not_null(gxe, "paper_id", "abstract"),
            _unique(gxe, "paper_id"),
            gxe.ExpectColumnValuesToBeBetween(column="n_sources", min_value=1),
            # Dedup only merges: never more papers than accepted records.
            gxe.ExpectTableRowCountToBeBetween(min_value=0, max_value=facts["accepted_records"]),
        ],
        facts_sql=_COUNTS_OF_RECORDS,
    ),
    Suite(
        "marts.paper_sources",
        ("source_file", "record_no", "paper_id", "match_kind", "similarity"),
        lambda gxe, facts: [
            *_not_null(gxe, "source_file", "record_no", "paper_id", "match_kind", "similarity"),
            _unique(gxe, "source_file", "record_no"),
            gxe.ExpectColumnValuesToBeInSet(column="match_kind", value_set=["canonical", "exact", "near"]),
            gxe.ExpectColumnValuesToBeBetween(column="similarity", min_value=0, max_value=1),
            # Accepted + rejected = paragraphs read: nothing is lost silently.
            gxe.ExpectTableRowCountToEqual(value=facts["paragraphs_read"] - facts["rejected_paragraphs"]),
        ],
        facts_sql=_COUNTS_OF_RECORDS,
    ),
    Suite(
        "marts.rejected_records",
        ("source_file", "reason"),
        lambda gxe, facts: [*_not_null(gxe, "source_file", "reason")],
    ),
    Suite(
        "marts.terms",
        ("term_id", "term", "doc_freq"),
        lambda gxe, facts: [
            *_not_null(gxe, "term_id", "term", "doc_freq"),
            _unique(gxe, "term_id"),
            _unique(gxe, "term"),
            gxe.ExpectColumnValuesToBeBetween(column="doc_freq", min_value=1),
        ],
    ),
    Suite(
        "marts.paper_terms",
        ("paper_id", "term_id", "weight", "rank"),
        lambda gxe, facts: [
            *_not_null(gxe, "paper_id", "term_id", "weight", "rank"),
            _unique(gxe, "paper_id", "term_id"),
            gxe.ExpectColumnValuesToBeBetween(column="weight", min_value=0, max_value=1.000001),
            gxe.ExpectColumnValuesToBeBetween(column="rank", min_value=1),
        ],
    ),
    Suite(
        "marts.topics",
        ("topic_id", "label", "n_papers"),
        lambda gxe, facts: [
            *_not_null(gxe, "topic_id", "label", "n_papers"),
            _unique(gxe, "topic_id"),
            gxe.ExpectColumnValuesToBeBetween(column="n_papers", min_value=0),
        ],
    ),
    Suite(
        "marts.paper_topics",
        ("paper_id", "topic_id", "weight", "primary_topics_of_paper"),
        lambda gxe, facts: [
            *_not_null(gxe, "paper_id", "topic_id", "weight"),
            _unique(gxe, "paper_id", "topic_id"),
            gxe.ExpectColumnValuesToBeBetween(column="weight", min_value=0, max_value=1),
            # Every paper has exactly one primary topic (papers without any row show up as 0).
            gxe.ExpectColumnValuesToBeBetween(column="primary_topics_of_paper", min_value=1, max_value=1),
        ],
    ),
    Suite(
        "marts.duplicate_groups",
        ("paper_id", "source_file", "record_no", "match_kind", "matched_by", "similarity"),
        lambda gxe, facts: [
            *_not_null(gxe, "paper_id", "source_file", "record_no", "matched_by"),
            _unique(gxe, "source_file", "record_no"),
            gxe.ExpectColumnValuesToBeInSet(column="match_kind", value_set=["exact", "near"]),
            gxe.ExpectColumnValuesToBeBetween(column="similarity", min_value=0, max_value=1),
            # Every merged record is listed: accepted records minus one canonical record per paper.
            gxe.ExpectTableRowCountToEqual(value=facts["accepted_records"] - facts["papers"]),
        ],
        facts_sql=_COUNTS_OF_MERGES,
    ),
    Suite(
        "marts.topic_terms",
        ("topic_id", "term_id", "rank"),
        lambda gxe, facts: [
            *_not_null(gxe, "topic_id", "term_id", "rank"),
            _unique(gxe, "topic_id", "term_id"),
        ],
    ),
)
SUITES_BY_NAME = {suite.name: suite for suite in SUITES}

# Columns some suites compute rather than read.
_DERIVED_COLUMNS = {
    "has_normalized_text": "reject_reason is not null or length(normalized_text) > 0",
    "primary_topics_of_paper": "count(*) filter (where is_primary) over (partition by paper_id)",
}


def _data_query(suite: Suite) -> str:
    select = ", ".join(
        f"{_DERIVED_COLUMNS[c]} as {c}" if c in _DERIVED_COLUMNS else f'"{c}"' for c in suite.columns
    )
    query = f'select {select} from "{suite.schema_name}"."{suite.table_name}"'
    if suite.name == "marts.paper_topics":
        # Papers with no topic row at all must count as zero primary topics.
        query += (
            " union all select paper_id, null, null, 0 from marts.papers"
            " where paper_id not in (select paper_id from marts.paper_topics)"
        )
    return query


@cache
def _gx():
    """Import Great Expectations and make one ephemeral context, once per process."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batches = context.data_sources.add_pandas("paperhouse").add_dataframe_asset("frames")
    return gx, batches.add_batch_definition_whole_dataframe("frame")


def _validate(frame, expectations: list) -> list[Outcome]:
    gx, batch_definition = _gx()
    suite = gx.ExpectationSuite(name="paperhouse", expectations=expectations)
    result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(suite)
    return [
        Outcome(
            expectation=r.expectation_config.type,
            column=r.expectation_config.kwargs.get("column") or r.expectation_config.kwargs.get("column_list"),
            success=bool(r.success),
            observed=_observed(r.result),
        )
        for r in result.results
    ]


def _observed(result: dict) -> Any:
    if "observed_value" in result:
        return result["observed_value"]
    if result.get("unexpected_count"):
        return {"unexpected_count": result["unexpected_count"], "examples": result.get("partial_unexpected_list", [])[:5]}
    return {"unexpected_count": result.get("unexpected_count", 0)}


def validate_suite(con: duckdb.DuckDBPyConnection, suite: Suite) -> SuiteResult:
    gx, _ = _gx()
    actual_types = con.execute(
        "select column_name, data_type from information_schema.columns"
        " where table_schema = ? and table_name = ? order by ordinal_position",
        [suite.schema_name, suite.table_name],
    ).fetchall()
    if not actual_types:
        return SuiteResult(suite.name, [Outcome("table_exists", None, False, f"no table {suite.name}")])
    schema_frame = pl.DataFrame({name: [dtype] for name, dtype in actual_types}).to_pandas()
    expected = expected_schema(suite)
    schema_expectations = [gx.expectations.ExpectTableColumnsToMatchSet(column_set=list(expected), exact_match=True)]
    schema_expectations += [
        gx.expectations.ExpectColumnValuesToBeInSet(column=column, value_set=[dtype])
        for column, dtype in expected.items()
        if column in schema_frame.columns
    ]
    facts = dict(zip(*_facts(con, suite.facts_sql))) if suite.facts_sql else {}
    data_frame = con.execute(_data_query(suite)).df()
    outcomes = _validate(schema_frame, schema_expectations) + _validate(data_frame, suite.expectations(gx.expectations, facts))
    return SuiteResult(suite.name, outcomes)


def _facts(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], tuple]:
    cursor = con.execute(sql)
    return [d[0] for d in cursor.description], cursor.fetchone()


def validate_warehouse(con: duckdb.DuckDBPyConnection, suites: tuple[Suite, ...] = SUITES) -> list[SuiteResult]:
    return [validate_suite(con, suite) for suite in suites]
