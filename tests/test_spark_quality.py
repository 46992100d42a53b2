"""The Great Expectations suites on Spark DataFrames report what they report on DuckDB: for a table
that passes, and for tables built to break each kind of expectation the suites use, the same
outcomes, each with the same success and the same unexpected count (and, where there are at most
five unexpected values, the same ones: both engines then report them all). The same rows reach
both: each DuckDB table is written to the warehouse folder's Parquet, as the Spark engine lays it out.

One difference is stated and checked: Parquet carries no NOT NULL constraint, so on Spark a column
the contract declares NOT NULL counts as such when it holds no null."""

import math
from pathlib import Path

import duckdb
import pytest

from paperhouse.engines.spark.tables import duckdb_type_name, read_table, table_location, warehouse_sql
from paperhouse.engines.spark.validation import NOT_NULL, declared_types, validate_suite_on_spark
from paperhouse.quality import validation as quality
from paperhouse.quality.expected_schemas import expected_schema, mart_schemas
from paperhouse.quality.gx import GX_DATA_SOURCE, great_expectations
from paperhouse.quality.suites import SUITES_BY_NAME
from paperhouse.quality.validation import validate_suite

pytestmark = pytest.mark.spark

HASH = "ab" * 32


@pytest.fixture
def con(tmp_path: Path):
    connection = duckdb.connect(str(tmp_path / "w.duckdb"))
    connection.execute("create schema raw; create schema marts")
    yield connection
    connection.close()


# A value of each type for the NOT NULL columns a test leaves out.
FILLERS = {"VARCHAR": "x", "INTEGER": 1, "BIGINT": 1, "DOUBLE": 0.5, "BOOLEAN": False, "TIMESTAMP": "2026-01-01"}


def _table(con, table: str, rows: list[dict], types: dict[str, str] | None = None) -> None:
    """``table`` with the columns and types its suite expects (or ``types``) and these rows: columns
    not given are null, or a filler where the type is NOT NULL."""
    types = types or expected_schema(table)
    con.execute(f"create table {table} ({', '.join(f'{c} {t}' for c, t in types.items())})")
    fillers = {c: FILLERS[t.removesuffix(NOT_NULL)] for c, t in types.items() if t.endswith(NOT_NULL)}
    for row in ({**fillers, **row} for row in rows):
        con.execute(f"insert into {table} ({', '.join(row)}) values ({', '.join('?' * len(row))})", list(row.values()))


def _export(con, warehouse: Path) -> None:
    """Every raw table (or view) and mart, as a Parquet folder where the Spark engine keeps it."""
    tables = con.execute(
        "select schema_name, table_name from duckdb_tables() where schema_name in ('raw', 'marts')"
        " union all select schema_name, view_name from duckdb_views() where schema_name = 'raw'"
    ).fetchall()
    for schema, name in tables:
        folder = Path(table_location(f"{schema}.{name}", warehouse))
        folder.mkdir(parents=True, exist_ok=True)
        con.execute(f"copy {schema}.{name} to '{folder / 'part-0.parquet'}' (format parquet)")


def _examples(values: list) -> list[str]:
    return sorted(repr(None if isinstance(v, float) and math.isnan(v) else v) for v in values)


def _comparable(result) -> dict:
    """Each outcome's success and observed count or value; its unexpected values when there are few."""
    comparable = {}
    for o in result.outcomes:
        observed = o.observed
        if isinstance(observed, dict) and "unexpected_count" in observed:
            few = observed["unexpected_count"] <= 5
            observed = (observed["unexpected_count"], _examples(observed.get("examples", [])) if few else None)
        comparable[(o.expectation, str(o.column))] = (o.success, repr(observed))
    return comparable


def _both(con, spark, warehouse: Path, table: str):
    _export(con, warehouse)
    suite = SUITES_BY_NAME[table]
    on_duckdb, on_spark = validate_suite(con, suite), validate_suite_on_spark(spark, suite, warehouse)
    assert _comparable(on_spark) == _comparable(on_duckdb)
    return on_spark


def _failed(result) -> set[tuple[str, str]]:
    return {(o.expectation.removeprefix("expect_"), str(o.column)) for o in result.failures}


def _weights(con, rows):
    """``rows`` of (paper_id, topic_id, weight); a paper's first row is its primary topic."""
    seen = set()
    flagged = [(*row, row[0] not in seen and not seen.add(row[0])) for row in rows]
    columns = ("paper_id", "topic_id", "weight", "is_primary")
    _table(con, "raw.topic_paper_weights", [dict(zip(columns, r, strict=True)) for r in flagged])


def test_a_valid_table_passes_on_both(con, spark, tmp_path):
    _weights(con, [("p_1", 1, 0.75), ("p_1", 2, 0.25), ("p_2", 1, 1.0)])
    result = _both(con, spark, tmp_path / "warehouse", "raw.topic_paper_weights")
    assert result.success and len(result.outcomes) == 2 + 6  # the schema's two, the suite's six
    # The data source made for each validation is gone after it, and with it GX's engine and batch.
    _, context = great_expectations()
    assert GX_DATA_SOURCE not in {source.name for source in context.data_sources.all().values()}


def test_nulls_keys_and_ranges_fail_alike(con, spark, tmp_path):
    # A repeated (paper, topic) key, a weight above 1, a null paper id (its row is no key: not a repeat).
    _weights(con, [("p_1", 1, 0.75), ("p_1", 1, 1.5), (None, 2, 0.5), ("p_3", 3, None)])
    result = _both(con, spark, tmp_path / "warehouse", "raw.topic_paper_weights")
    assert _failed(result) == {
        ("column_values_to_not_be_null", "paper_id"),
        ("column_values_to_not_be_null", "weight"),
        ("column_values_to_be_between", "weight"),
        ("compound_columns_to_be_unique", "['paper_id', 'topic_id']"),
    }


def test_a_repeated_single_column_key_and_ranges_at_both_ends_fail_alike(con, spark, tmp_path):
    term = {"kind": "phrase", "n_words": 2, "doc_freq": 3, "idf": 1.5}
    rows = [
        {**term, "term": "graph network"},
        {**term, "term": "graph network"},
        {**term, "term": "sparse autoencoder", "n_words": 5, "idf": 0.5},
        {**term, "term": "attention", "doc_freq": 0, "kind": "sentence"},
    ]
    _table(con, "raw.terms", rows)
    result = _both(con, spark, tmp_path / "warehouse", "raw.terms")
    assert _failed(result) == {
        ("column_values_to_be_unique", "term"),
        ("column_values_to_be_between", "n_words"),
        ("column_values_to_be_between", "idf"),
        ("column_values_to_be_between", "doc_freq"),
        ("column_values_to_be_in_set", "kind"),
    }


def test_patterns_fail_alike(con, spark, tmp_path):
    registered = {"generation": 1, "first_run_id": "r1", "first_seen_at": "2026-01-01 00:00:00"}
    rows = [
        {**registered, "text_hash": HASH, "paper_id": "p_0123456789abcdef"},
        {**registered, "text_hash": HASH.upper().replace("A", "a", 1), "paper_id": "p_0123456789ABCDEF"},
        {**registered, "text_hash": HASH[:-1], "paper_id": "paper 3"},
    ]
    _table(con, "raw.paper_id_registry", rows)
    _table(con, "raw.paper_assignments", [])
    result = _both(con, spark, tmp_path / "warehouse", "raw.paper_id_registry")
    assert _failed(result) == {
        ("column_values_to_match_regex", "paper_id"),
        ("column_values_to_match_regex", "text_hash"),
    }


def test_sets_of_columns_and_of_computed_values_fail_alike(con, spark, tmp_path):
    similar = {"score": 0.5, "rank": 1}
    rows = [
        {**similar, "paper_id": "p_1", "similar_paper_id": "p_2"},
        {**similar, "paper_id": "p_2", "similar_paper_id": "p_2"},  # itself: is_self, computed, must be false
        {**similar, "paper_id": "p_3", "similar_paper_id": "p_1", "rank": 6, "score": 1.5},
    ]
    _table(con, "raw.similar_papers", rows)
    result = _both(con, spark, tmp_path / "warehouse", "raw.similar_papers")
    assert _failed(result) == {
        ("column_values_to_be_in_set", "is_self"),
        ("column_values_to_be_between", "rank"),
        ("column_values_to_be_between", "score"),
    }


def test_row_counts_against_facts_of_other_tables_fail_alike(con, spark, tmp_path):
    assigned = {"record_no": 1, "similarity": 1.0, "text_hash": HASH}
    kinds = ("canonical", "canonical", "exact", "canonical")
    rows = [
        {**assigned, "source_file": f"f{i}", "paper_id": f"p_{i:016x}", "match_kind": k} for i, k in enumerate(kinds)
    ]
    _table(con, "raw.paper_assignments", rows)
    _table(con, "raw.paper_names", [{"paper_id": "p_0"}, {"paper_id": "p_1"}])  # three canonical records
    result = _both(con, spark, tmp_path / "warehouse", "raw.paper_names")
    (count,) = result.failures
    assert count.expectation == "expect_table_row_count_to_equal" and count.observed == 2


def test_a_count_of_array_elements_fails_alike(con, spark, tmp_path):
    # marts.paper_keywords lists every keyword of every accepted record: 3 here, and it lists 2.
    records = [
        {"source_file": "a.csv", "record_no": 1, "keywords": ["graphs", "attention"]},
        {"source_file": "a.csv", "record_no": 2, "keywords": ["sparsity"]},
        {"source_file": "a.csv", "record_no": 3, "keywords": None},
        {"source_file": "a.csv", "record_no": 4, "keywords": ["rejected"], "reject_reason": "too_short"},
    ]
    _table(con, "raw.source_records", records)
    keyword = {"paper_id": "p_1", "keyword_key": "graphs", "source_file": "a.csv", "record_no": 1}
    _table(con, "marts.paper_keywords", [{**keyword, "keyword_no": 1}, {**keyword, "keyword_no": 0}])
    result = _both(con, spark, tmp_path / "warehouse", "marts.paper_keywords")
    failures = {o.expectation: o for o in result.failures}
    assert failures["expect_table_row_count_to_equal"].observed == 2
    assert failures["expect_column_values_to_be_between"].observed["unexpected_count"] == 1  # keyword_no 0


def test_a_window_over_a_join_fails_alike(con, spark, tmp_path):
    _table(con, "marts.papers", [{"paper_id": p} for p in ("p_1", "p_2", "p_3")])
    topics = [("p_1", 1, 0.9, True), ("p_1", 2, 0.1, False), ("p_2", 1, 0.5, True), ("p_2", 2, 0.5, True)]
    _table(
        con,
        "marts.paper_topics",
        [dict(zip(("paper_id", "topic_id", "weight", "is_primary"), t, strict=True)) for t in topics],
    )
    result = _both(con, spark, tmp_path / "warehouse", "marts.paper_topics")
    (failure,) = result.failures  # p_2 twice (two primaries), p_3 once (no topic at all)
    assert failure.column == "primary_topics_of_paper" and failure.observed["unexpected_count"] == 3


def test_schema_drift_and_a_missing_column_fail_alike(con, spark, tmp_path):
    types = {"paper_id": "VARCHAR", "topic_id": "VARCHAR", "weight": "DOUBLE", "extra": "INTEGER"}
    _table(con, "raw.topic_paper_weights", [{"paper_id": "p_1", "topic_id": "1", "weight": 0.5}], types)
    _table(
        con, "raw.topic_term_weights", [{"topic_id": 1, "term": "graph"}], {"topic_id": "INTEGER", "term": "VARCHAR"}
    )
    drifted = _both(con, spark, tmp_path / "warehouse", "raw.topic_paper_weights")
    assert {o.expectation for o in drifted.failures} == {
        "expect_column_distinct_values_to_equal_set",
        "expect_column_values_to_be_in_set",
    }
    missing = _both(con, spark, tmp_path / "warehouse", "raw.topic_term_weights")
    assert [sorted(o.observed["missing"]) for o in missing.failures] == [["rank", "weight"]]


def test_parquet_holds_no_constraint_so_a_column_without_nulls_counts_as_not_null(con, spark, tmp_path):
    """The stated difference. A mart that lost its NOT NULL constraints: DuckDB, which keeps a table's
    constraints, fails each column that lost one; Spark, reading Parquet, which keeps none, fails
    only a column that holds a null."""
    contract = mart_schemas()["marts.topics"]
    assert contract["topic_id"] == "INTEGER NOT NULL"
    unconstrained = {c: t.removesuffix(NOT_NULL) for c, t in contract.items()}
    filled = {c: FILLERS[unconstrained[c]] for c, t in contract.items() if t.endswith(NOT_NULL)}
    suite, warehouse = SUITES_BY_NAME["marts.topics"], tmp_path / "warehouse"
    _table(con, "marts.topics", [filled], unconstrained)
    _export(con, warehouse)
    assert validate_suite_on_spark(spark, suite, warehouse).success
    table = read_table(spark, "marts.topics", warehouse)
    assert dict(declared_types(table, contract)) == contract
    assert _type_failures(validate_suite(con, suite)) == sorted(
        f"{c} {t}" for c, t in unconstrained.items() if contract[c].endswith(NOT_NULL)
    )

    con.execute("insert into marts.topics (topic_id, level, label, n_papers) values (null, 1, 'graphs', 2)")
    _export(con, warehouse)
    assert _type_failures(validate_suite_on_spark(spark, suite, warehouse)) == ["topic_id INTEGER"]


def _type_failures(result) -> list[str]:
    (types,) = [o for o in result.failures if o.expectation == "expect_column_values_to_be_in_set"]
    assert types.column == "column_type" and types.observed["unexpected_count"] <= 5
    return sorted(types.observed["examples"])


def test_a_missing_table_fails_on_both(con, spark, tmp_path):
    result = _both(con, spark, tmp_path / "warehouse", "marts.papers")
    assert [o.expectation for o in result.outcomes] == ["table_exists"] and not result.success
    assert read_table(spark, "marts.papers", tmp_path / "warehouse") is None
    Path(table_location("marts.papers", tmp_path / "warehouse")).mkdir(parents=True)  # a writer died before writing
    assert not validate_suite_on_spark(spark, SUITES_BY_NAME["marts.papers"], tmp_path / "warehouse").success


def test_a_table_duckdb_validates_in_parts_is_validated_whole_on_spark(con, spark, tmp_path, monkeypatch):
    rows = [(f"p_{paper}", f"term {rank}", 1, 0.5, rank) for paper in range(12) for rank in range(1, 4)]
    rows += [("p_3", "term 1", 2, 0.25, 4), ("p_7", None, 1, 0.5, 4), ("p_9", "term 9", 1, 1.5, 4)]
    columns = ("paper_id", "term", "occurrences", "weight", "rank")
    _table(con, "raw.paper_terms", [dict(zip(columns, r, strict=True)) for r in rows])
    monkeypatch.setattr(quality, "ROWS_PER_PART", 5)  # DuckDB: 39 rows in eight parts
    result = _both(con, spark, tmp_path / "warehouse", "raw.paper_terms")
    assert _failed(result) == {
        ("column_values_to_not_be_null", "term"),
        ("column_values_to_be_between", "weight"),
        ("compound_columns_to_be_unique", "['paper_id', 'term']"),
    }


def test_tables_are_read_where_the_engine_writes_them(tmp_path):
    assert table_location("raw.paper_terms", tmp_path) == f"{tmp_path}/raw/paper_terms"
    assert table_location("marts.papers", "s3a://bucket/w/") == "s3a://bucket/w/marts/papers"


def test_spark_types_are_named_as_duckdb_names_them(spark):
    frame = spark.sql(
        "select 'a' as s, 1 as i, 1L as l, 1.0D as d, true as b, array('a') as a,"
        " timestamp_ntz'2026-01-01 00:00:00' as naive, timestamp'2026-01-01 00:00:00' as instant"
    )
    assert [duckdb_type_name(f.dataType) for f in frame.schema.fields] == [
        "VARCHAR",
        "INTEGER",
        "BIGINT",
        "DOUBLE",
        "BOOLEAN",
        "VARCHAR[]",
        "TIMESTAMP",
        "TIMESTAMP WITH TIME ZONE",
    ]


def test_sql_names_warehouse_tables_as_duckdb_does(con, spark, tmp_path):
    _table(con, "raw.source_records", [{"source_file": "a", "keywords": ["x", "y"]}, {"source_file": "b"}])
    _export(con, tmp_path / "warehouse")
    query = "select sum(array_length(keywords)) as n, count(*) as rows from raw.source_records"
    assert warehouse_sql(spark, query, tmp_path / "warehouse").first().asDict() == {"n": 2, "rows": 2}
    with pytest.raises(FileNotFoundError, match=r"marts\.papers"):
        warehouse_sql(spark, "select count(*) from marts.papers", tmp_path / "warehouse")


@pytest.mark.parametrize("table", ["raw.source_records", "raw.paper_terms", "marts.papers", "marts.paper_topics"])
def test_a_seeds_build_passes_on_spark_as_on_duckdb(seeds_build, spark, tmp_path, table):
    with duckdb.connect(str(seeds_build.build_database), read_only=True) as con:
        result = _both(con, spark, tmp_path / "warehouse", table)
    assert result.success, result.failures
    assert len(result.outcomes) > 2  # values checked, not only the schema
