"""A failed check says what it asserts and shows the rows that break it (paperhouse.quality.check_failures).
The whole-run path (a failing dbt test printed by `paperhouse run`) is in tests/test_pipeline.py."""

import json

import duckdb
import pytest

from orchestration.dbt_resource import dbt_project
from paperhouse.quality.check_failures import explanation, invariant_in_words, offending_rows


@pytest.fixture(scope="module")
def tests_of_the_project() -> dict:
    nodes = json.loads(dbt_project().manifest_path.read_text())["nodes"]
    return {node["name"]: node for node in nodes.values() if node["resource_type"] == "test"}


def test_every_singular_test_says_what_it_asserts(tests_of_the_project):
    singular = {name: node for name, node in tests_of_the_project.items() if not node.get("test_metadata")}
    assert "assert_topic_hierarchy" in singular
    for name, node in singular.items():
        assert node.get("description"), f"{name}: describe it in dbt_project/tests/_singular__tests.yml"
    assert "primary subtopic lies under its primary topic" in invariant_in_words(singular["assert_topic_hierarchy"])


def test_every_generic_test_is_put_in_words(tests_of_the_project):
    generic = [node for node in tests_of_the_project.values() if node.get("test_metadata")]
    assert generic
    for node in generic:
        words = invariant_in_words(node)
        assert node["test_metadata"]["name"] in words or "`" in words
        assert "its model" not in words, node["name"]
    not_null = next(n for n in generic if n["test_metadata"]["name"] == "not_null")
    column, model = not_null["column_name"], not_null["attached_node"].split(".")[-1]
    assert invariant_in_words(not_null) == f"`{column}` of `{model}` is never null"
    ranges = next(n for n in generic if n["test_metadata"]["name"] == "rows_satisfy")
    assert invariant_in_words(ranges).startswith("every row of `")


def test_offending_rows_are_the_first_five_the_query_returns(tmp_path):
    database = tmp_path / "w.duckdb"
    with duckdb.connect(str(database)) as con:
        con.execute("create table t as select range as topic_id, 'x' || range as label from range(12)")
    rows = offending_rows(database, "select topic_id, label from t where topic_id % 2 = 1 order by topic_id;")
    assert rows["topic_id"].to_list() == [1, 3, 5, 7, 9]
    line = explanation("every topic is even", rows, failures=6)
    assert line.startswith("every topic is even: 6 rows break it; e.g. topic_id=1, label=x1 | topic_id=3")
    assert explanation("one", rows.head(0), failures=1) == "one: 1 row breaks it"
