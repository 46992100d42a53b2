"""Great Expectations suites for the raw tables and the marts.

Each suite validates two pandas DataFrames pulled from DuckDB (GX 1.x has no DuckDB
dialect): the table's columns, one row each with its declared type, against the expected
schema, and the few columns its value expectations need. Great Expectations is imported
lazily, on first validation: it costs seconds and hundreds of MB, which definitions
loading and the CLI's other commands should not pay. A run validates in a ``SuiteWorker``
process, which pays that import while the run does its first steps.

The marts' expected schemas are read from the dbt YAML that enforces their contracts, so
the two can never disagree; the raw tables' come from the Python code that writes them.

The raw tables are Python's output, so their suites check everything: nulls, keys, ranges,
counts. On the marts, dbt owns keys and nulls (its tests, and NOT NULL constraints that
DuckDB enforces on insert); their suites check the schema as built, nullability included,
the counts against the raw tables, and value ranges.
"""

from __future__ import annotations

import atexit
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import yaml

from paperhouse.check_history import CHECK_EVALUATION_SCHEMA
from paperhouse.dedup import ASSIGNMENT_SCHEMA
from paperhouse.ingest import SOURCE_RECORD_SCHEMA
from paperhouse.keyword_terms import KEYWORD_KIND, KEYWORD_TERM_SCHEMA, MATCHES
from paperhouse.names import NAME_SCHEMA
from paperhouse.registry import REGISTRY_SCHEMA
from paperhouse.settings import DBT_PROJECT_DIR
from paperhouse.similar import SIMILAR_SCHEMA
from paperhouse.terms import ALIAS_KINDS, ALIAS_SCHEMA, PAPER_TERM_SCHEMA, TERM_KINDS, TERM_SCHEMA
from paperhouse.topic_ids import EVENTS as TOPIC_ID_EVENTS
from paperhouse.topic_ids import REGISTRY_SCHEMA as TOPIC_ID_REGISTRY_SCHEMA
from paperhouse.topics import PAPER_TOPIC_SCHEMA, TOPIC_SCHEMA, TOPIC_TERM_SCHEMA
from paperhouse.warehouse import connect, duckdb_type
from paperhouse.workers import WorkerProcess

MARTS_YAML = DBT_PROJECT_DIR / "models" / "marts" / "_marts__models.yml"
# Every file of the marts' model properties: the main one and those of one subject (_trends__models.yml).
MART_YAMLS = tuple(sorted(MARTS_YAML.parent.glob("_*__models.yml")))

# Facts: counts the expectations compare against, computed from the warehouse at check time.
Facts = dict[str, int]

# Rows pulled into one pandas frame at most, for suites that name a ``parts_by`` column: the 27M rows
# of raw.paper_terms at 10^6 papers, pulled whole, held 5.6 GB while GX validated them.
ROWS_PER_PART = 4_000_000


@dataclass(frozen=True)
class Suite:
    """What must hold for one table, declared; ``expectations`` turns it into GX expectations."""

    name: str  # the table it validates, e.g. "marts.papers"
    not_null: tuple[str, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()  # keys, single or compound
    between: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    in_set: dict[str, tuple] = field(default_factory=dict)
    regex: dict[str, str] = field(default_factory=dict)
    computed: dict[str, str] = field(default_factory=dict)  # column -> SQL over the table
    facts_sql: str | None = None  # one row of named counts that ``row_count`` bounds come from
    row_count: Callable[[Facts], tuple[int | None, int | None]] | None = None  # (min, max)
    rows_from: str | None = None  # the FROM clause of the pulled rows, when not the table alone
    # A column of every unique key: rows sharing its value are validated together, ROWS_PER_PART at a
    # time. Only for expectations of each row and of keys, which hold of a table if they hold of its parts.
    parts_by: str | None = None

    def __post_init__(self) -> None:
        if self.parts_by and (self.row_count or self.rows_from or any(self.parts_by not in key for key in self.unique)):
            raise ValueError(
                f"{self.name}: parts by {self.parts_by} need it in every unique key, and no row count or join"
            )

    @property
    def schema_name(self) -> str:
        return self.name.split(".")[0]

    @property
    def table_name(self) -> str:
        return self.name.split(".")[1]

    @property
    def columns(self) -> tuple[str, ...]:
        """The only columns pulled from DuckDB: those the expectations name."""
        named = [*self.not_null, *(c for key in self.unique for c in key), *self.between, *self.in_set, *self.regex]
        return tuple(dict.fromkeys(named))

    def expectations(self, gxe, facts: Facts) -> list:
        expectations = [gxe.ExpectColumnValuesToNotBeNull(column=c) for c in self.not_null]
        for key in self.unique:
            expectations.append(
                gxe.ExpectColumnValuesToBeUnique(column=key[0])
                if len(key) == 1
                else gxe.ExpectCompoundColumnsToBeUnique(column_list=list(key), ignore_row_if="any_value_is_missing")
            )
        expectations += [
            gxe.ExpectColumnValuesToBeBetween(column=c, min_value=lo, max_value=hi)
            for c, (lo, hi) in self.between.items()
        ]
        expectations += [gxe.ExpectColumnValuesToBeInSet(column=c, value_set=list(v)) for c, v in self.in_set.items()]
        expectations += [gxe.ExpectColumnValuesToMatchRegex(column=c, regex=r) for c, r in self.regex.items()]
        if self.row_count:
            low, high = self.row_count(facts)
            expectations.append(
                gxe.ExpectTableRowCountToEqual(value=low)
                if low == high
                else gxe.ExpectTableRowCountToBeBetween(min_value=low, max_value=high)
            )
        return expectations


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
    return {column: duckdb_type(dtype) for column, dtype in schema.items()}


RAW_SCHEMAS: dict[str, dict[str, str]] = {
    "raw.source_records": _duckdb_types(SOURCE_RECORD_SCHEMA),
    "raw.paper_assignments": _duckdb_types(ASSIGNMENT_SCHEMA),
    "raw.paper_id_registry": _duckdb_types(REGISTRY_SCHEMA),
    "raw.terms": _duckdb_types(TERM_SCHEMA),
    "raw.paper_terms": _duckdb_types(PAPER_TERM_SCHEMA),
    "raw.term_aliases": _duckdb_types(ALIAS_SCHEMA),
    "raw.keyword_terms": _duckdb_types(KEYWORD_TERM_SCHEMA),
    "raw.paper_names": _duckdb_types(NAME_SCHEMA),
    "raw.topics": _duckdb_types(TOPIC_SCHEMA),
    "raw.similar_papers": _duckdb_types(SIMILAR_SCHEMA),
    "raw.topic_paper_weights": _duckdb_types(PAPER_TOPIC_SCHEMA),
    "raw.topic_term_weights": _duckdb_types(TOPIC_TERM_SCHEMA),
    "raw.topic_id_registry": _duckdb_types(TOPIC_ID_REGISTRY_SCHEMA),
    "raw.check_evaluations": _duckdb_types(CHECK_EVALUATION_SCHEMA),
}


@cache
def mart_schemas() -> dict[str, dict[str, str]]:
    """``marts.<model>`` -> column -> DuckDB type, from the dbt contracts."""
    models = [model for path in MART_YAMLS for model in yaml.safe_load(path.read_text())["models"]]
    return {
        f"marts.{model['name']}": {column["name"]: _declared_type(column) for column in model["columns"]}
        for model in models
    }


# The contracts name types both engines know; DuckDB's information_schema names some by their alias.
# `string` is Spark's unbounded text type (its `varchar` needs a length); DuckDB makes it VARCHAR.
DUCKDB_TYPE_ALIASES = {"STRING": "VARCHAR"}


def _declared_type(column: dict) -> str:
    not_null = any(constraint["type"] == "not_null" for constraint in column.get("constraints", ()))
    declared = column["data_type"].upper()
    return DUCKDB_TYPE_ALIASES.get(declared, declared) + (" NOT NULL" if not_null else "")


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


_COUNTS_OF_PAPERS = "select count(*) as papers from raw.paper_assignments where match_kind = 'canonical'"

_MATCH_KINDS = ("canonical", "exact", "near")

SUITES: tuple[Suite, ...] = (
    Suite(
        "raw.source_records",
        not_null=("source_file",),
        unique=(("source_file", "record_no"),),
        between={"record_no": (1, None)},
        regex={"file_sha256": r"^[0-9a-f]{64}$"},
        # Every accepted paragraph carries the text matching needs.
        in_set={"has_normalized_text": (True,)},
        computed={"has_normalized_text": "reject_reason is not null or length(normalized_text) > 0"},
    ),
    Suite(
        "raw.paper_assignments",
        not_null=("source_file", "record_no", "paper_id", "match_kind", "similarity"),
        unique=(("source_file", "record_no"),),
        between={"similarity": (0, 1)},
        in_set={"match_kind": _MATCH_KINDS},
        regex={"paper_id": r"^p_[0-9a-f]{16}$", "text_hash": r"^[0-9a-f]{64}$"},
        # Dedup loses no record: one assignment per accepted record.
        facts_sql=_COUNTS_OF_RECORDS,
        row_count=lambda facts: (facts["accepted_records"], facts["accepted_records"]),
    ),
    Suite(
        "raw.terms",
        not_null=("term", "kind", "doc_freq", "idf"),
        unique=(("term",),),
        between={"n_words": (1, 4), "doc_freq": (1, None), "idf": (1, None)},
        in_set={"kind": TERM_KINDS},
    ),
    Suite(
        "raw.paper_terms",
        not_null=("paper_id", "term", "weight", "rank"),
        unique=(("paper_id", "term"), ("paper_id", "rank")),
        between={"occurrences": (1, None), "weight": (0, 1.000001), "rank": (1, None)},
        parts_by="paper_id",
    ),
    Suite(
        "raw.term_aliases",
        not_null=("alias", "term", "alias_kind"),
        unique=(("alias", "term"),),
        in_set={"alias_kind": ALIAS_KINDS},
    ),
    Suite(
        "raw.keyword_terms",
        not_null=("keyword_key", "term", "kind", "n_words"),
        unique=(("keyword_key",),),
        between={"n_words": (1, None)},
        # A keyword joins a mined term (its kind) or is a term of its own, kind keyword, matched by nothing.
        in_set={"kind": (*TERM_KINDS, KEYWORD_KIND), "matched_by": MATCHES, "is_own_term": (True,)},
        computed={"is_own_term": "(kind = 'keyword') = (matched_by is null)"},
    ),
    Suite(
        "raw.paper_names",
        not_null=("paper_id",),
        unique=(("paper_id",),),
        # One row per paper: every canonical record.
        facts_sql=_COUNTS_OF_PAPERS,
        row_count=lambda facts: (facts["papers"], facts["papers"]),
    ),
    Suite(
        "raw.topics",
        not_null=("topic_id", "level", "label", "n_papers"),
        unique=(("topic_id",),),
        between={"n_papers": (0, None), "coherence": (-1, 1)},
        in_set={"level": (1, 2)},
    ),
    Suite(
        "raw.topic_id_registry",
        not_null=("topic_id", "event", "level", "generation", "recorded_at"),
        unique=(("topic_id", "event"),),
        between={"generation": (1, None), "topic_id": (1, None)},
        in_set={"event": TOPIC_ID_EVENTS, "level": (1, 2)},
        # Every topic of this run holds an id the registry gave out (the registry only grows).
        facts_sql="select count(*) as topics from raw.topics",
        row_count=lambda facts: (facts["topics"], None),
    ),
    Suite(
        "raw.similar_papers",
        not_null=("paper_id", "similar_paper_id", "score", "rank"),
        unique=(("paper_id", "similar_paper_id"), ("paper_id", "rank")),
        between={"rank": (1, 5), "score": (-1.0001, 1.0001)},
        in_set={"is_self": (False,)},
        computed={"is_self": "paper_id = similar_paper_id"},
    ),
    Suite(
        "raw.paper_id_registry",
        not_null=("text_hash", "paper_id", "generation", "first_seen_at"),
        unique=(("text_hash",),),
        between={"generation": (1, None)},
        regex={"paper_id": r"^p_[0-9a-f]{16}$", "text_hash": r"^[0-9a-f]{64}$"},
        # Every text of this run's papers is registered (the registry only grows).
        facts_sql="select count(distinct text_hash) as current_texts from raw.paper_assignments",
        row_count=lambda facts: (facts["current_texts"], None),
    ),
    Suite(
        "raw.topic_paper_weights",
        not_null=("paper_id", "topic_id", "weight"),
        unique=(("paper_id", "topic_id"),),
        between={"weight": (0, 1)},
    ),
    Suite(
        "raw.topic_term_weights",
        not_null=("topic_id", "term", "weight"),
        unique=(("topic_id", "term"),),
        between={"weight": (0, None)},
    ),
    Suite(
        "marts.papers",
        between={"n_sources": (1, None)},
        # Dedup only merges: never more papers than accepted records.
        facts_sql=_COUNTS_OF_RECORDS,
        row_count=lambda facts: (0, facts["accepted_records"]),
    ),
    Suite(
        "marts.paper_sources",
        between={"similarity": (0, 1)},
        # Accepted + rejected = paragraphs read: nothing is lost silently.
        facts_sql=_COUNTS_OF_RECORDS,
        row_count=lambda facts: (facts["paragraphs_read"] - facts["rejected_paragraphs"],) * 2,
    ),
    Suite("marts.rejected_records"),
    Suite(
        "marts.duplicate_groups",
        between={"similarity": (0, 1)},
        # Every merged record is listed: accepted records minus one canonical record per paper.
        facts_sql=_COUNTS_OF_MERGES,
        row_count=lambda facts: (facts["accepted_records"] - facts["papers"],) * 2,
    ),
    Suite(
        "marts.paper_keywords",
        between={"keyword_no": (1, None)},
        # Every author keyword of every accepted record is listed, once.
        facts_sql=(
            "select cast(coalesce(sum(len(keywords)), 0) as bigint) as keywords"
            " from raw.source_records where reject_reason is null"
        ),
        row_count=lambda facts: (facts["keywords"],) * 2,
    ),
    Suite("marts.terms", between={"doc_freq": (1, None)}),
    Suite("marts.term_aliases"),
    Suite("marts.similar_papers", between={"rank": (1, 5)}),
    Suite("marts.paper_terms", between={"weight": (0, 1.000001), "rank": (1, None)}),
    Suite("marts.topics", between={"n_papers": (0, None)}),
    Suite(
        "marts.paper_topics",
        # Every paper has exactly one primary topic; a paper with no topic row at all counts 0. A left
        # join, not a union with the papers that have none: DuckDB 1.5 hangs on that union at 10^6 papers.
        between={"weight": (0, 1), "primary_topics_of_paper": (1, 1)},
        computed={"primary_topics_of_paper": "count(*) filter (where is_primary) over (partition by paper_id)"},
        rows_from="marts.papers left join marts.paper_topics using (paper_id)",
    ),
    Suite(
        "marts.paper_subtopics",
        # Every paper has exactly one primary subtopic, as it has one primary topic.
        between={"weight": (0, 1), "primary_subtopics_of_paper": (1, 1)},
        computed={"primary_subtopics_of_paper": "count(*) filter (where is_primary) over (partition by paper_id)"},
        rows_from="marts.papers left join marts.paper_subtopics using (paper_id)",
    ),
    Suite("marts.paper_id_aliases", regex={"alias_id": r"^p_[0-9a-f]{16}$"}),
    Suite("marts.topic_terms"),
    Suite("marts.subtopic_terms", between={"rank": (1, None)}),
    Suite("marts.topic_id_aliases", in_set={"level": (1, 2)}),
    Suite("marts.venue_summary", between={"papers": (0, None), "share_of_papers": (0, 1)}),
    Suite(
        "marts.topic_summary",
        between={"papers": (0, None), "share_of_list": (0, 1)},
        # One row per topic and list.
        facts_sql=(
            "select (select count(*) from marts.topics)"
            " * (select count(*) from (select distinct venue, year from marts.papers)) as rows"
        ),
        row_count=lambda facts: (facts["rows"], facts["rows"]),
    ),
    Suite("marts.term_summary", between={"papers": (1, None), "share_of_list": (0, 1)}),
    Suite(
        "marts.topic_trends",
        between={"papers": (0, None), "share_of_list": (0, 1), "share_change": (-1, 1)},
        # One row per topic and list with a year.
        facts_sql=(
            "select (select count(*) from marts.topics)"
            " * (select count(*) from (select distinct venue, year from marts.papers where year is not null)) as rows"
        ),
        row_count=lambda facts: (facts["rows"], facts["rows"]),
    ),
    Suite(
        "marts.term_trends",
        between={"papers": (0, None), "share_of_list": (0, 1), "share_change": (-1, 1)},
        # A row for each use of a term in a list with a year (term_summary's rows), and at most one more
        # for each, in the venue's next list.
        facts_sql="select count(*) as uses from marts.term_summary where year is not null",
        row_count=lambda facts: (facts["uses"], 2 * facts["uses"]),
    ),
    # A list testing one term asks the least z of a rise: sqrt(2 ln(1 / 0.05)) (docs/trends.md).
    Suite(
        "marts.emerging_terms",
        between={"rank": (1, None), "share_change": (0, 1), "growth_z": (math.sqrt(2 * math.log(1 / 0.05)), None)},
    ),
    Suite(
        "raw.check_evaluations",
        not_null=("run_id", "evaluated_at", "asset", "check_name", "passed", "severity"),
        unique=(("run_id", "asset", "check_name"),),
        in_set={"severity": ("ERROR", "WARN")},
    ),
    Suite(
        "marts.quality_runs",
        # The whole history: every row of raw.check_evaluations.
        facts_sql="select count(*) as evaluations from raw.check_evaluations",
        row_count=lambda facts: (facts["evaluations"], facts["evaluations"]),
    ),
)
SUITES_BY_NAME = {suite.name: suite for suite in SUITES}
# The data source each validation adds to GX's context and deletes after it.
GX_DATA_SOURCE = "paperhouse"


def _data_query(suite: Suite) -> str:
    # A suite that only counts rows pulls one constant per row: GX counts rows of a frame.
    select = (
        ", ".join(f"{suite.computed[c]} as {c}" if c in suite.computed else f'"{c}"' for c in suite.columns)
        or "true as counted"
    )
    rows = suite.rows_from or f'"{suite.schema_name}"."{suite.table_name}"'
    return f"select {select} from {rows}"


@cache
def _gx():
    """Import Great Expectations and make one ephemeral context, once per process."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.execution_engine import pandas_execution_engine

    # GX fingerprints every frame smaller than this many bytes by hashing all its values, a batch
    # marker nothing here reads: 0.6 s of each validation of raw.paper_terms at 10^5 papers, a
    # third of it. This threshold is the only switch GX has for it.
    pandas_execution_engine.HASH_THRESHOLD = 0
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return gx, context


@contextmanager
def _frame_batches(context) -> Iterator:
    """A batch definition of a data source made for one validation and deleted after it. GX's
    execution engine keeps the last batch and every metric computed on it until the next
    validation (at 10^6 papers, 650 MB of the last part of ``raw.paper_terms``, held by the suite
    worker through the corpus step that follows, the run's peak); deleting the data source lets go
    of its engine, and so of them, through GX's public API (about 10 ms a validation)."""
    source = context.data_sources.add_pandas(GX_DATA_SOURCE)
    try:
        yield source.add_dataframe_asset("frames").add_batch_definition_whole_dataframe("frame")
    finally:
        batches = source.get_execution_engine().batch_manager
        batches.reset_batch_cache()
        batches.batch_data_cache.clear()
        context.data_sources.delete(GX_DATA_SOURCE)


def _validate(frame, expectations: list) -> list[Outcome]:
    gx, context = _gx()
    suite = gx.ExpectationSuite(name="paperhouse", expectations=expectations)
    # BASIC has all ``_observed`` reports (observed value, unexpected count and examples, missing
    # values); SUMMARY adds value counts of the unexpected values, a fifth of the validation time.
    with _frame_batches(context) as batch_definition:
        result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(
            suite, result_format="BASIC"
        )
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
    if result.get("observed_value") is not None:
        return result["observed_value"]
    observed = {"unexpected_count": result.get("unexpected_count", 0)}
    if result.get("unexpected_count"):
        observed["examples"] = result.get("partial_unexpected_list", [])[:5]
    if result.get("partial_missing_list"):  # a set expectation: values that should be there and are not
        observed["missing"] = result["partial_missing_list"][:5]
    return observed


def validate_suite(con: duckdb.DuckDBPyConnection, suite: Suite) -> SuiteResult:
    gx, _ = _gx()
    actual_types = con.execute(  # duckdb_columns(), not information_schema.columns: 15 ms less a table
        "select column_name, data_type || if(is_nullable, '', ' NOT NULL') from duckdb_columns()"
        " where schema_name = ? and table_name = ? order by column_index",
        [suite.schema_name, suite.table_name],
    ).fetchall()
    if not actual_types:
        return SuiteResult(suite.name, [Outcome("table_exists", None, False, f"no table {suite.name}")])
    schema_frame = pl.DataFrame(
        {
            "column": [name for name, _ in actual_types],
            "column_type": [f"{name} {dtype}" for name, dtype in actual_types],
        }
    ).to_pandas()
    expected = expected_schema(suite)
    # Two expectations for the whole schema, failures naming the column: one per column cost GX's
    # fixed ~25 ms each, over half of all validation time.
    schema_expectations = [
        gx.expectations.ExpectColumnDistinctValuesToEqualSet(column="column", value_set=list(expected)),
        gx.expectations.ExpectColumnValuesToBeInSet(
            column="column_type", value_set=[f"{column} {dtype}" for column, dtype in expected.items()]
        ),
    ]
    outcomes = _validate(schema_frame, schema_expectations)
    if not {name for name, _ in actual_types} >= set(expected):
        # The schema outcomes name the missing columns; the values of a column that is not there cannot be pulled.
        return SuiteResult(suite.name, outcomes)
    facts = dict(zip(*_facts(con, suite.facts_sql), strict=True)) if suite.facts_sql else {}
    if expectations := suite.expectations(gx.expectations, facts):
        outcomes += _validate_rows(con, suite, expectations)
    return SuiteResult(suite.name, outcomes)


def _validate_rows(con: duckdb.DuckDBPyConnection, suite: Suite, expectations: list) -> list[Outcome]:
    """The expectations' outcomes over the suite's rows: pulled whole, or by parts of ``parts_by``."""
    query, parts = _data_query(suite), _parts(con, suite)
    if parts == 1:
        return _validate(_pandas_frame(con, query), expectations)
    # A value's rows all land in one part. Typed: an untyped parameter made DuckDB widen every hash to a
    # HUGEINT, ten times slower than the scan.
    in_part = f'{query} where hash("{suite.parts_by}") % ?::ubigint = ?::ubigint'
    return _combined([_validate(_pandas_frame(con, in_part, [parts, part]), expectations) for part in range(parts)])


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
        super().__init__(_gx)

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
