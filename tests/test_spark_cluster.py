"""The graph's Python stages on Spark's `local-cluster` master: two executor processes, as on a
cluster (the whole graph on both engines: tests/test_spark_engine.py)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyspark
import pytest
from warehouses import seeds_with_an_export

from paperhouse.settings import variable

pytestmark = [pytest.mark.slow, pytest.mark.spark]

# Spark's `local-cluster` master: two executor processes (1 GB each), as on a cluster. Each executor
# logs the tasks it ran in its own folder (SPARK_WORKER_DIR).
LOCAL_CLUSTER = "local-cluster[2,1,1024]"

# The raw tables of the exact steps, on the columns the marts of tests/engine_comparison.py's EXACT
# take from them.
EXACT_RAW = {
    "source_records": ["source_file", "record_no", "venue", "year", "title", "text", "reject_reason"],
    "paper_assignments": ["source_file", "record_no", "paper_id", "match_kind", "canonical_record_no"],
    "terms": ["term", "kind", "n_words", "doc_freq"],
    "paper_terms": ["paper_id", "term", "occurrences", "rank"],
    "paper_keyphrases": ["paper_id", "rank", "keyphrase", "term"],
}


def test_a_local_cluster_computes_the_python_stages_on_its_executors_as_duckdb_does(seeds_and_export_build, tmp_path):
    """The graph's Python stages (tests/python_stages.py) on two executor processes, as on a
    cluster: every function they ship to the executors gets there and runs, both executors run some
    of the tasks, and the exact steps give DuckDB's rows. (The dbt models on Spark are the same SQL
    whichever master runs it: tests/test_spark_engine.py and tests/test_dbt_spark.py.)"""
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
