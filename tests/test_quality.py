"""The Great Expectations suites pass on good tables and fail, with observed values, on bad ones."""

import gc
import os
import re
import subprocess
import sys
import time
import weakref
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import yaml

from paperhouse.quality import validation as quality
from paperhouse.quality.expected_schemas import MART_YAMLS, mart_schemas
from paperhouse.quality.gx import GX_DATA_SOURCE, frame_batches, great_expectations, validate_frame
from paperhouse.quality.suites import SUITES_BY_NAME, Suite
from paperhouse.quality.validation import SuiteWorker, _pandas_frame, validate_suite
from paperhouse.settings import DBT_PROJECT_DIR


@pytest.fixture
def con(tmp_path: Path):
    connection = duckdb.connect(str(tmp_path / "w.duckdb"))
    connection.execute("create schema raw")
    yield connection
    connection.close()


def _topic_weights(con, rows):
    """``rows`` of (paper_id, topic_id, weight); a paper's first row is its primary topic."""
    con.execute(
        "create or replace table raw.topic_paper_weights "
        "(paper_id varchar, topic_id integer, weight double, is_primary boolean)"
    )
    seen = set()
    flagged = [(*row, row[0] not in seen and not seen.add(row[0])) for row in rows]
    con.executemany("insert into raw.topic_paper_weights values (?, ?, ?, ?)", flagged)


def test_suite_passes_on_a_valid_table(con):
    _topic_weights(con, [("p_1", 1, 0.75), ("p_1", 2, 0.25), ("p_2", 1, 1.0)])
    result = validate_suite(con, SUITES_BY_NAME["raw.topic_paper_weights"])
    assert result.success, result.failures


def test_suite_reports_each_failed_expectation_with_observed_values(con):
    _topic_weights(con, [("p_1", 1, 0.75), ("p_1", 1, 1.5), (None, 2, 0.5)])
    result = validate_suite(con, SUITES_BY_NAME["raw.topic_paper_weights"])
    failed = {(o.expectation, str(o.column)) for o in result.failures}
    assert ("expect_column_values_to_not_be_null", "paper_id") in failed
    assert ("expect_column_values_to_be_between", "weight") in failed
    assert ("expect_compound_columns_to_be_unique", "['paper_id', 'topic_id']") in failed
    weight_failure = next(o for o in result.failures if o.column == "weight")
    assert weight_failure.observed["unexpected_count"] == 1 and 1.5 in weight_failure.observed["examples"]


def test_ranges_of_integer_columns_are_checked_on_the_numbers_gx_vectorises(con):
    # DuckDB's INTEGER would reach GX as int32, which it range-checks one Python call per value.
    con.execute(
        "create table raw.paper_terms (paper_id varchar, term varchar, occurrences integer, weight double, "
        "rank integer)"
    )
    con.execute("insert into raw.paper_terms values ('p_1', 'graph', 2, 0.5, 1), ('p_1', 'sae', null, 0.4, 0)")
    frame = _pandas_frame(con, "select occurrences, weight, rank, rank::float as ratio from raw.paper_terms")
    assert {column: str(dtype) for column, dtype in frame.dtypes.items()} == {
        "occurrences": "float64",
        "weight": "float64",
        "rank": "int64",
        "ratio": "float64",
    }
    result = validate_suite(con, SUITES_BY_NAME["raw.paper_terms"])
    failures = {o.column: o for o in result.failures}
    assert set(failures) == {"rank"} and failures["rank"].observed["examples"] == [0]


def _outcomes(result) -> dict:
    return {
        (o.expectation, str(o.column)): (
            o.success,
            o.observed["unexpected_count"],
            sorted(map(str, o.observed.get("examples", []))),
        )
        for o in result.outcomes
        if isinstance(o.observed, dict) and "unexpected_count" in o.observed
    }


def test_a_table_validated_in_parts_gives_the_outcomes_of_the_whole(con, monkeypatch):
    con.execute(
        "create table raw.paper_terms (paper_id varchar, term varchar, occurrences integer, weight double, "
        "rank integer)"
    )
    rows = [(f"p_{paper}", f"term {rank}", 1, 0.5, rank) for paper in range(12) for rank in range(1, 4)]
    rows += [
        ("p_3", "term 1", 2, 0.25, 4),
        ("p_7", None, 1, 0.5, 4),
        ("p_9", "term 9", 1, 1.5, 4),
        (None, "x", 1, 0.5, 1),
    ]
    con.executemany("insert into raw.paper_terms values (?, ?, ?, ?, ?)", rows)
    whole = validate_suite(con, SUITES_BY_NAME["raw.paper_terms"])

    pulled = []
    pull = quality._pandas_frame
    monkeypatch.setattr(quality, "_pandas_frame", lambda *args: pulled.append(len(frame := pull(*args))) or frame)
    monkeypatch.setattr(quality, "ROWS_PER_PART", 5)
    in_parts = validate_suite(con, SUITES_BY_NAME["raw.paper_terms"])
    assert len(pulled) == 8 and sum(pulled) == len(rows)  # 40 rows in parts of 5 on average
    assert _outcomes(in_parts) == _outcomes(whole)
    failed = {column for (_, column), (success, _, _) in _outcomes(whole).items() if not success}
    assert failed == {"paper_id", "term", "weight", "['paper_id', 'term']"}


def test_parts_must_keep_the_rows_of_each_key_together():
    with pytest.raises(ValueError, match="parts by"):
        Suite("raw.x", unique=(("term",),), parts_by="paper_id")


def test_schema_drift_fails_the_suite(con):
    con.execute("create table raw.topic_paper_weights (paper_id varchar, topic_id varchar, weight double, extra int)")
    result = validate_suite(con, SUITES_BY_NAME["raw.topic_paper_weights"])
    failures = {o.expectation: o for o in result.failures}
    assert failures["expect_column_distinct_values_to_equal_set"].observed["examples"] == ["extra"]
    assert failures["expect_column_values_to_be_in_set"].observed["examples"] == ["topic_id VARCHAR", "extra INTEGER"]


def test_a_missing_column_is_named(con):
    con.execute("create table raw.topic_paper_weights (paper_id varchar, topic_id integer)")
    result = validate_suite(con, SUITES_BY_NAME["raw.topic_paper_weights"])
    assert {o.expectation for o in result.failures} == {"expect_column_distinct_values_to_equal_set"}
    assert sorted(result.failures[0].observed["missing"]) == ["is_primary", "weight"]  # in no fixed order


def test_frames_are_validated_without_hashing_every_value():
    _, context = great_expectations()
    with frame_batches(context) as batch_definition:
        batch = batch_definition.get_batch(batch_parameters={"dataframe": pd.DataFrame({"weight": [0.5, 1.0]})})
        assert "pandas_data_fingerprint" not in batch.batch_markers
    # Each validation's data source is gone after it, and with it the frame its engine held.
    assert GX_DATA_SOURCE not in {source.name for source in context.data_sources.all().values()}


def test_missing_table_fails_instead_of_passing(con):
    result = validate_suite(con, SUITES_BY_NAME["marts.papers"])
    assert not result.success


def test_mart_schemas_come_from_the_dbt_contracts():
    schemas = mart_schemas()
    assert schemas["marts.papers"]["paper_id"] == "VARCHAR NOT NULL"  # a not_null constraint
    assert schemas["marts.papers"]["method_name"] == "VARCHAR"
    assert schemas["marts.paper_topics"]["is_primary"] == "BOOLEAN NOT NULL"
    assert {
        f"marts.{t}"
        for t in ("papers", "paper_sources", "rejected_records", "terms", "paper_terms", "topics", "paper_topics")
    } <= set(schemas)


def test_every_mart_suite_knows_its_contract_whichever_yaml_file_holds_it():
    schemas = mart_schemas()
    marts = {suite.name for suite in SUITES_BY_NAME.values() if suite.schema_name == "marts"}
    assert marts <= set(schemas)
    assert len(MART_YAMLS) > 1 and {"marts.topic_trends", "marts.term_trends", "marts.emerging_terms"} <= marts


def test_paper_without_primary_topic_fails_the_paper_topics_suite(con):
    con.execute("create schema marts")
    con.execute("create table marts.papers as select * from (values ('p_1'), ('p_2'), ('p_3')) t(paper_id)")
    con.execute(
        "create table marts.paper_topics as select * from (values ('p_1', 1, 0.9, true), ('p_1', 2, 0.1, false),"
        " ('p_2', 1, 0.5, true), ('p_2', 2, 0.5, true)) t(paper_id, topic_id, weight, is_primary)"
    )
    result = validate_suite(con, SUITES_BY_NAME["marts.paper_topics"])
    failure = next(o for o in result.failures if o.column == "primary_topics_of_paper")
    assert failure.observed["unexpected_count"] == 3  # p_2 twice (two primaries), p_3 once (none)
    assert sorted(failure.observed["examples"]) == [0, 2, 2]


def test_a_mart_that_lost_its_not_null_constraint_fails_the_schema_check(con):
    contract = mart_schemas()["marts.topics"]
    columns = ", ".join(f"{name} {declared.removesuffix(' NOT NULL')}" for name, declared in contract.items())
    con.execute("create schema marts")
    con.execute(f"create table marts.topics ({columns})")
    result = validate_suite(con, SUITES_BY_NAME["marts.topics"])
    type_failure = next(o for o in result.failures if o.expectation == "expect_column_values_to_be_in_set")
    assert "topic_id INTEGER" in type_failure.observed["examples"]
    assert contract["topic_id"] == "INTEGER NOT NULL"


def test_dbt_tests_a_key_of_every_mart_whose_suite_leaves_keys_to_dbt():
    models = [model for path in MART_YAMLS for model in yaml.safe_load(path.read_text())["models"]]
    keyed = {
        model["name"]
        for model in models
        for test in [*model.get("data_tests", []), *(t for c in model["columns"] for t in c.get("data_tests", []))]
        if test == "unique" or (isinstance(test, dict) and "unique_combination_of_columns" in test)
    }
    marts = {suite.table_name for suite in SUITES_BY_NAME.values() if suite.schema_name == "marts"}
    assert marts - keyed == {"rejected_records"}  # rejected lines and unreadable files have no key


def test_the_suite_worker_reports_what_validating_here_reports_and_keeps_no_lock(tmp_path: Path):
    database = tmp_path / "w.duckdb"
    with duckdb.connect(str(database)) as con:
        con.execute("create schema raw")
        _topic_weights(con, [("p_1", 1, 0.75), ("p_1", 1, 1.5), (None, 2, 0.5)])
    suite = SUITES_BY_NAME["raw.topic_paper_weights"]
    with duckdb.connect(str(database), read_only=True) as con:
        here = validate_suite(con, suite)
    worker = SuiteWorker()
    try:
        (in_worker,) = worker.validate(database, [suite])
        duckdb.connect(str(database)).close()  # a writing step opens the file while the worker lives
    finally:
        worker.close()
    assert not in_worker.success and repr(in_worker) == repr(here)  # repr: the examples hold a NaN


def test_the_suite_worker_of_a_killed_run_lets_go_of_its_output_and_exits():
    started = (
        "import time\n"
        "from paperhouse.quality.validation import SuiteWorker\n"
        "print(SuiteWorker().pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    with subprocess.Popen([sys.executable, "-c", started], stdout=subprocess.PIPE, text=True) as run:
        worker = int(run.stdout.readline())
        run.kill()
        run.communicate(timeout=300)  # the end of the output arrives: the worker does not hold it
    deadline = time.monotonic() + 300  # a safety net: the worker exits at once
    while Path(f"/proc/{worker}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{worker}").exists(), f"the suite worker {worker} outlived its run"


def _generic_test(name: str, **arguments) -> str:
    """The SQL of one of the project's generic tests, as dbt renders it (a test it calls included)."""
    import jinja2

    source = (DBT_PROJECT_DIR / "tests" / "generic" / f"{name}.sql").read_text()
    body = re.search(r"{% test [^%]*%}(.*){% endtest %}", source, re.DOTALL).group(1)
    # The project's macros as DuckDB gets them: their default__ implementations.
    macros = jinja2.Template((DBT_PROJECT_DIR / "macros" / "portable_sql.sql").read_text()).module
    return jinja2.Template(body).render(
        **arguments, test_unique_combination_of_columns=_grain_check, key_hash=macros.default__key_hash
    )


def _grain_check(model: str, columns: list[str]) -> str:
    """The SQL of the project's generic test ``unique_combination_of_columns``, as dbt renders it."""
    return _generic_test("unique_combination_of_columns", model=model, combination_of_columns=columns)


@pytest.mark.parametrize("hash_buckets", [None, 3])
def test_the_grain_check_returns_exactly_the_repeated_keys(hash_buckets):
    """With DuckDB's hash, and with one that puts every key in one of three buckets: rows whose
    hashes collide are told apart by their keys."""
    con = duckdb.connect()
    con.execute("create table t as select i % 1000 as a, 'x' || (i // 1000) as b from range(5000) t(i)")  # unique
    con.execute("insert into t values (7, 'x2'), (7, 'x2'), (8, 'x9'), (null, 'x1'), (null, 'x1')")
    sql = _grain_check("t", ["a", "b"])
    if hash_buckets:
        con.execute(f"create macro few_buckets(a, b) as hash(a, b) % {hash_buckets}")
        sql = sql.replace("hash(", "few_buckets(")
    assert sorted(con.execute(sql).fetchall(), key=str) == sorted([(7, "x2", 3), (None, "x1", 2)], key=str)


def test_the_primary_key_check_returns_the_repeated_keys_and_the_keys_with_a_null():
    con = duckdb.connect()
    con.execute("create table t as select i % 1000 as a, 'x' || (i // 1000) as b from range(5000) t(i)")  # a key
    assert con.execute(_generic_test("primary_key", model="t", columns=["a", "b"])).fetchall() == []
    con.execute("insert into t values (7, 'x2'), (null, 'x1'), (8, null)")
    failing = con.execute(_generic_test("primary_key", model="t", columns=["a", "b"])).fetchall()
    assert sorted(failing, key=str) == sorted([(7, "x2", 2), (None, "x1", 1), (8, None, 1)], key=str)
    assert con.execute(_generic_test("primary_key", model="t", columns=["b"])).fetchall() != []  # b alone is no key


def test_a_validated_frame_is_let_go_once_its_outcomes_are_read():
    # GX's execution engine kept the last frame and its metrics until the next validation.
    gx, _ = great_expectations()
    frame = pd.DataFrame({"weight": [0.5, 1.0, 2.0]})
    let_go = weakref.ref(frame)
    (outcome,) = validate_frame(frame, [gx.expectations.ExpectColumnValuesToBeBetween(column="weight", max_value=1)])
    del frame
    gc.collect()
    assert let_go() is None
    assert not outcome.success and outcome.observed["unexpected_count"] == 1


def _resident_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_the_suite_worker_hands_back_what_a_validation_used(tmp_path: Path):
    database = tmp_path / "w.duckdb"
    with duckdb.connect(str(database)) as con:
        con.execute("create schema raw")
        con.execute(
            "create table raw.topic_paper_weights as select 'p_' || (i // 30) as paper_id,"
            " (i % 30)::integer as topic_id, 0.5::double as weight, i % 30 = 0 as is_primary"
            " from range(3000000) as t(i)"
        )
    worker = SuiteWorker()
    try:
        pid = worker.pid
        (small,) = worker.validate(database, [SUITES_BY_NAME["raw.check_evaluations"]])  # a missing table: loads GX
        before = _resident_mb(pid)
        (result,) = worker.validate(database, [SUITES_BY_NAME["raw.topic_paper_weights"]])
        after = _resident_mb(pid)
    finally:
        worker.close()
    assert result.success and not small.success
    assert after - before < 100, f"the worker kept {after - before:.0f} MB after validating 3M rows"
