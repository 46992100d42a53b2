"""One set of dbt models for both engines: from the same raw tables, `dbt build --target spark`
(dbt-spark, session method, on local Spark) builds the same marts as dbt-duckdb, with the same
columns, types and rows. The Spark side is the session's shared `paperhouse run --engine spark`; the
DuckDB side builds the models again from the very Parquet folders its models read.

The corpus is the engines' folder (tests/warehouses.py): the bundled seeds and an export beside them
that fills what text lists leave empty (exact and near copies of seed papers, titles, author
keywords, an earlier year of the venue for the trend marts, a rejected row), a synthetic list and,
with the real data present, the dev lists. The raw tables travel as the Spark engine's assets write them,
Parquet folders ``<warehouse>/raw/<table>/``; the marts land as Parquet tables
``<warehouse>/marts/<table>/``, read back here with DuckDB. Floats may differ in their last bits
(Spark's ``ln``/``sqrt`` are Java's, sums may add in another order): they are equal within a relative
1e-9. Everything else is equal exactly. `-m spark` selects the test; it needs Java, as Spark does.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
import yaml
from dbt_commands import dbt_folders, plain

from orchestration.warm_dbt.project import build_args
from paperhouse.settings import DBT_PROJECT_DIR, venv_executable

pytestmark = pytest.mark.spark

RELATIVE_TOLERANCE = 1e-9
SOURCES_YAML = DBT_PROJECT_DIR / "models" / "staging" / "_raw__sources.yml"


def raw_sources() -> list[str]:
    """The raw tables the dbt sources name: what the Spark target registers from the warehouse."""
    (raw,) = [source for source in yaml.safe_load(SOURCES_YAML.read_text())["sources"] if source["name"] == "raw"]
    return [table["name"] for table in raw["tables"]]


def raw_sources_read(manifest: Path, models: list[str]) -> set[str]:
    """The raw tables the models read, directly or through the models upstream of them."""
    parents = json.loads(manifest.read_text())["parent_map"]
    queue, seen = [f"model.paperhouse.{model}" for model in models], set()
    while queue:
        if (unique_id := queue.pop()) not in seen:
            seen.add(unique_id)
            queue.extend(parents.get(unique_id, []))
    return {unique_id.rsplit(".", 1)[1] for unique_id in seen if unique_id.startswith("source.paperhouse.raw.")}


def raw_parquet(warehouse: Path, table: str) -> str:
    return f"read_parquet('{warehouse / 'raw' / table}/*.parquet')"


def mart_parquet(warehouse: Path, table: str) -> str:
    return f"read_parquet('{warehouse / 'marts' / table}/*.parquet')"


def spark_dbt(args: list[str], warehouse: Path, work: Path) -> subprocess.CompletedProcess:
    """A dbt command on the spark target, in a dbt process of its own, as dagster-dbt runs one:
    dbt-spark's session, and its JVM, end with it."""
    command = [venv_executable("dbt"), *args, "--target", "spark", *dbt_folders(work)]
    environment = {**os.environ, "PAPERHOUSE_SPARK_WAREHOUSE": str(warehouse), "PAPERHOUSE_SPARK_MASTER": "local[2]"}
    return subprocess.run(command, env=environment, capture_output=True, text=True, cwd=work, check=False)


@pytest.fixture(scope="module")
def spark_build(engines_spark_build) -> tuple[Path, str]:
    """The Spark warehouse folder of the session's shared `paperhouse run --engine spark` (raw
    Parquet its Python stages wrote, the marts its `dbt build --target spark` wrote) and the run's
    dbt output."""
    build = engines_spark_build
    return build.warehouse.parent / "spark-warehouse", (build.build_database.parent / "run.log").read_text()


@pytest.fixture(scope="module")
def duckdb_build(spark_build, tmp_path_factory) -> Path:
    """The same dbt models built by dbt-duckdb, the default engine's target, from the very raw
    tables the Spark build's models read (its Parquet folders, loaded into a new build database)."""
    warehouse, _ = spark_build
    work = tmp_path_factory.mktemp("duckdb")
    database = work / "paperhouse.duckdb"
    with duckdb.connect(str(database)) as con:
        con.execute("create schema raw")
        for table in raw_sources():
            con.execute(f"create table raw.{table} as select * from {raw_parquet(warehouse, table)}")
    command = [venv_executable("dbt"), *build_args(database), *dbt_folders(work)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=work, check=False)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    return database


def duckdb_marts(warehouse: Path) -> dict[str, list[tuple[str, str]]]:
    """Every mart of the DuckDB warehouse and its (column, type)s in order."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "select table_name, column_name, data_type from information_schema.columns"
            " where table_schema = 'marts' order by table_name, ordinal_position"
        ).fetchall()
    marts: dict[str, list[tuple[str, str]]] = {}
    for table, column, data_type in rows:
        marts.setdefault(table, []).append((column, data_type))
    return marts


def sort_key(row: tuple) -> tuple:
    # Floats sort by their first 9 significant digits, so that rows equal within the tolerance keep
    # the same order on both sides; None sorts last.
    return tuple((value is None, float(f"{value:.9g}") if isinstance(value, float) else value) for value in row)


def same_value(left, right) -> bool:
    if isinstance(left, float) and isinstance(right, float):
        return math.isclose(left, right, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12)
    return left == right


def test_dbt_builds_every_model_and_passes_every_test_on_spark(spark_build):
    """The run's dbt commands (the models, then the quality history) each ended with no error and
    nothing skipped, and between them built every model of the project."""
    _, output = spark_build
    summaries = [line for line in output.splitlines() if "Done. PASS=" in line]
    assert len(summaries) == 2, output[-5000:]
    for summary in summaries:
        assert "ERROR=0" in summary and "SKIP=0" in summary, summary
    finished = [line for line in output.splitlines() if line.startswith("Finished running")]
    built = sum(int(n) for line in finished for n in re.findall(r"(\d+) (?:table|view) models?", line))
    assert built == len(list((DBT_PROJECT_DIR / "models").rglob("*.sql"))), finished
    print("dbt build --target spark:", "; ".join(line.split("Done. ")[1] for line in summaries))


def test_every_mart_lands_as_parquet_with_the_contract_columns_and_types(duckdb_build, spark_build):
    warehouse, _ = spark_build
    marts = duckdb_marts(duckdb_build)
    assert len(marts) > 20
    with duckdb.connect() as con:
        for table, columns in marts.items():
            landed = con.execute(f"describe select * from {mart_parquet(warehouse, table)}").fetchall()
            assert [(name, data_type) for name, data_type, *_ in landed] == columns, table


def test_every_mart_has_the_same_rows_on_both_engines(duckdb_build, spark_build):
    warehouse, _ = spark_build
    with duckdb.connect() as con:
        con.execute(f"attach '{duckdb_build}' as duck (read_only)")
        compared = {}
        for table, columns in duckdb_marts(duckdb_build).items():
            select = ", ".join(f'"{name}"' for name, _ in columns)
            expected = sorted(con.execute(f"select {select} from duck.marts.{table}").fetchall(), key=sort_key)
            landed = con.execute(f"select {select} from {mart_parquet(warehouse, table)}").fetchall()
            actual = sorted(landed, key=sort_key)
            assert len(actual) == len(expected), table
            for expected_row, actual_row in zip(expected, actual, strict=True):
                differing = [
                    (name, want, got)
                    for (name, _), want, got in zip(columns, expected_row, actual_row, strict=True)
                    if not same_value(want, got)
                ]
                assert not differing, (table, differing)
            compared[table] = len(expected)
    # The export fills what text lists leave empty; the seeds the rest.
    assert all(compared[table] > 0 for table in ("duplicate_groups", "paper_keywords", "rejected_records"))
    assert all(compared[table] > 0 for table in ("papers", "terms", "paper_topics", "term_trends", "topic_summary"))


def test_term_ids_are_the_same_md5_prefix_on_both_engines(duckdb_build, spark_build):
    """term_id is a hash computed by each engine (dbt.hash): equal ids mean equal joins to terms."""
    warehouse, _ = spark_build
    with duckdb.connect() as con:
        rows = con.execute(f"select term, term_id from {mart_parquet(warehouse, 'terms')}").fetchall()
    assert rows
    assert all(term_id == "term_" + hashlib.md5(term.encode()).hexdigest()[:12] for term, term_id in rows)


def test_a_new_session_writes_the_marts_again_and_refuses_a_null_in_a_not_null_column(
    duckdb_build, spark_build, tmp_path
):
    """A later dbt command, in a new Spark session, builds part of the graph as on DuckDB: it finds
    the views of the last one in the warehouse's catalog, registers the sources again (here a
    rewritten raw folder) and replaces a mart's files, neither appending to them nor refusing the
    non-empty folder. A Parquet table takes no NOT NULL constraint, so the contract's are checked
    once it is written: a null fails the model, as DuckDB's insert fails."""
    warehouse, _ = spark_build
    copy = tmp_path / "warehouse"
    shutil.copytree(warehouse, copy)
    raw_topics = copy / "raw" / "topics" / "part-0.parquet"
    unlabelled = tmp_path / "topics.parquet"
    with duckdb.connect() as con:
        con.execute(
            f"copy (select * replace (if(topic_id = (select min(topic_id) from '{raw_topics}'), null, label) as label)"
            f" from '{raw_topics}') to '{unlabelled}' (format parquet)"
        )
    shutil.move(unlabelled, raw_topics)
    before = {path.name for path in (copy / "marts" / "paper_topics").glob("*.parquet")}
    # The folder as a var, as the orchestration passes the database path: it wins over the variable.
    variables = ["--vars", json.dumps({"database_path": "paperhouse.duckdb", "spark_warehouse": str(copy)})]
    original = {path.name for path in (warehouse / "marts" / "paper_topics").glob("*.parquet")}
    again = spark_dbt(["run", "--select", "topics", "paper_topics", *variables], warehouse, tmp_path)
    assert again.returncode != 0
    assert "not_null constraint violated" in again.stdout and "label (1 rows)" in again.stdout, again.stdout[-3000:]
    # paper_topics, which needs no label, was written
    output = plain(again.stdout)
    assert re.search(r"OK created sql table model marts\.paper_topics", output), output[-3000:]
    after = {path.name for path in (copy / "marts" / "paper_topics").glob("*.parquet")}
    assert after and not after & before  # new files in place of the old ones
    assert {path.name for path in (warehouse / "marts" / "paper_topics").glob("*.parquet")} == original
    # The command registered the raw sources its two models read (through the views upstream of
    # them), no others: each registration costs seconds of the catalog's.
    registered = set(
        re.findall(r"using parquet location '[^']*/raw/(\w+)'", (tmp_path / "logs" / "dbt.log").read_text())
    )
    assert registered == raw_sources_read(tmp_path / "target" / "manifest.json", ["topics", "paper_topics"])
    assert "topics" in registered and len(registered) < len(raw_sources())
    with duckdb.connect() as con:
        con.execute(f"attach '{duckdb_build}' as duck (read_only)")
        (rows,) = con.execute(f"select count(*) from {mart_parquet(copy, 'paper_topics')}").fetchone()
        (expected,) = con.execute("select count(*) from duck.marts.paper_topics").fetchone()
    assert rows == expected > 0
