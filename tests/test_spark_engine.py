"""`paperhouse run --engine spark` against the default engine: one graph, the same answers.

Both engines build the engines' folder (tests/warehouses.py: the bundled seeds, an export beside
them, a labelled synthetic list and, with the real data present, the dev lists; the session's
shared builds) through the whole Dagster graph; the published
warehouses are compared mart by mart. Exact where the step is exact (ingest, dedup, paper ids,
terms); where a step is approximate the tolerance is stated below and checked.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyspark
import pytest
from engine_comparison import compare_engines
from warehouses import seeds_with_an_export

from paperhouse.evaluation import real_data
from paperhouse.settings import variable

pytestmark = [pytest.mark.slow, pytest.mark.spark]

# Spark's `local-cluster` master: two executor processes (1 GB each), as on a cluster. Each executor
# logs the tasks it ran in its own folder (SPARK_WORKER_DIR).
LOCAL_CLUSTER = "local-cluster[2,1,1024]"

# The raw tables of the exact steps, on the columns the marts of EXACT take from them.
EXACT_RAW = {
    "source_records": ["source_file", "record_no", "venue", "year", "title", "text", "reject_reason"],
    "paper_assignments": ["source_file", "record_no", "paper_id", "match_kind", "canonical_record_no"],
    "terms": ["term", "kind", "n_words", "doc_freq"],
    "paper_terms": ["paper_id", "term", "occurrences", "rank"],
    "paper_keyphrases": ["paper_id", "rank", "keyphrase", "term"],
}


def test_both_engines_publish_the_same_warehouse_from_the_engines_folder(engines_duckdb_build, engines_spark_build):
    compare_engines(engines_duckdb_build.warehouse, engines_spark_build.warehouse)


def test_the_engines_agree_on_thousands_of_real_abstracts(engines_spark_build):
    """The comparison above covers the dev lists of the real data (thousands of real abstracts,
    whose near-ties a toy corpus never has) whenever the real data is present."""
    lists = real_data.realdata_dir() / "conferences" / "inputs"
    if not lists.is_dir():
        pytest.skip(f"no real data at {lists} (set {variable('realdata')})")
    names = [path.name for path in lists.glob("*.txt")]
    with duckdb.connect(str(engines_spark_build.warehouse), read_only=True) as con:
        (papers,) = con.execute(
            "select count(distinct paper_id) from marts.paper_sources where source_file in (select unnest(?))", [names]
        ).fetchone()
    assert papers > 5000


def test_spark_marts_land_as_parquet_tables_in_the_warehouse_folder(engines_spark_build):
    marts = engines_spark_build.warehouse.parent / "spark-warehouse" / "marts"
    assert (marts / "papers").is_dir()
    assert any((marts / "papers").glob("*.parquet"))


def test_a_local_cluster_computes_the_python_stages_on_its_executors_as_duckdb_does(seeds_and_export_build, tmp_path):
    """The graph's Python stages (tests/python_stages.py) on two executor processes, as on a
    cluster: every function they ship to the executors gets there and runs, both executors run some
    of the tasks, and the exact steps give DuckDB's rows. (The dbt models on Spark are the same SQL
    whichever master runs it: the comparison above and tests/test_dbt_spark.py.)"""
    seeds = seeds_with_an_export(tmp_path)
    environment = os.environ | {
        variable("spark_warehouse"): str(tmp_path / "spark-warehouse"),
        variable("spark_master"): LOCAL_CLUSTER,
        "SPARK_WORKER_DIR": str(tmp_path / "workers"),
    }
    started = time.time()
    stages = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("python_stages.py")),
            str(seeds),
            str(tmp_path / "w.duckdb"),
            "spark",
        ],
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert stages.returncode == 0, stages.stdout[-3000:] + stages.stderr[-3000:]
    with (
        duckdb.connect(str(seeds_and_export_build.build_database), read_only=True) as local,
        duckdb.connect() as cluster,
    ):
        for table, columns in EXACT_RAW.items():
            select = ", ".join(f'"{c}"' for c in columns)
            folder = tmp_path / "spark-warehouse" / "raw" / table
            expected = local.execute(f"select {select} from raw.{table} order by all").fetchall()
            actual = cluster.execute(
                f"select {select} from read_parquet(?) order by all", [f"{folder}/*.parquet"]
            ).fetchall()
            assert expected and actual == expected, table
    # local-cluster's executors log under SPARK_WORKER_DIR where Spark honours it, else under
    # Spark's own folder (SPARK_HOME/work): the logs of this run are those written since it began.
    logs = [
        *(tmp_path / "workers").glob("app-*/*/stderr"),
        *(Path(pyspark.__file__).parent / "work").glob("app-*/*/stderr"),
    ]
    tasks = {
        f"{log.parent.parent.name}/{log.parent.name}": log.read_text(errors="replace").count("Finished task")
        for log in logs
        if log.stat().st_mtime >= started
    }
    executors = {executor for executor, finished in tasks.items() if finished}
    assert len(executors) >= 2, tasks
