"""`paperhouse run --engine spark` against the default engine: one graph, the same answers.

Both engines build the bundled seeds (and, with the real data present, the dev lists) through the
whole Dagster graph; the published warehouses are compared mart by mart. Exact where the step is
exact (ingest, dedup, paper ids, terms); where a step is approximate the tolerance is stated below
and checked.
"""

import os
import time
from pathlib import Path

import duckdb
import pyspark
import pytest
from corpus import SEEDS
from warehouses import paperhouse

from paperhouse.evaluation import real_data
from paperhouse.settings import variable

pytestmark = [pytest.mark.slow, pytest.mark.spark]

# Marts compared row for row on these columns (the keys and what the exact steps decide).
EXACT = {
    "papers": ["paper_id", "title", "abstract", "venue", "year", "n_sources", "word_count", "canonical_record_no"],
    "paper_sources": ["source_file", "record_no", "paper_id", "match_kind"],
    "duplicate_groups": None,  # every column but timestamps
    "paper_id_aliases": ["alias_id", "paper_id"],
    "rejected_records": None,
    "terms": ["term_id", "term", "kind", "n_words", "doc_freq", "key_papers"],
    "paper_terms": ["paper_id", "term_id", "rank", "occurrences"],
    "paper_keyphrases": ["paper_id", "rank", "keyphrase", "term_id"],
    "venue_summary": ["venue", "year", "papers", "records", "duplicates", "rejected_records", "named_methods"],
}


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str, str]]:
    return con.execute(
        "select column_name, data_type, is_nullable from information_schema.columns"
        " where table_schema = 'marts' and table_name = ? order by ordinal_position",
        [table],
    ).fetchall()


def _rows(con: duckdb.DuckDBPyConnection, table: str, columns: list[str] | None) -> list[tuple]:
    if columns is None:
        columns = [c for c, dtype, _ in _columns(con, table) if not dtype.startswith("TIMESTAMP")]
    select = ", ".join(f'"{c}"' for c in columns)
    return con.execute(f"select {select} from marts.{table} order by all").fetchall()


def _build(folder: Path, seeds: Path, engine: str, **variables: str) -> Path:
    """`paperhouse run --engine ENGINE` (with these environment ``variables``), in a process of its
    own: its Spark session (a JVM with this build's warehouse folder) is not the test run's shared one."""
    warehouse = folder / engine / "paperhouse.duckdb"
    environment = os.environ | {variable("spark_warehouse"): str(folder / engine / "spark-warehouse")} | variables
    run = paperhouse("run", "--seeds", str(seeds), "--warehouse", str(warehouse), "--engine", engine, env=environment)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return warehouse


def _compare(duckdb_build: Path, spark_build: Path) -> None:
    with (
        duckdb.connect(str(duckdb_build), read_only=True) as local,
        duckdb.connect(str(spark_build), read_only=True) as spark,
    ):
        tables = [
            t
            for (t,) in local.execute(
                "select table_name from information_schema.tables where table_schema = 'marts' order by 1"
            ).fetchall()
        ]
        for table in tables:
            # The contract: the same columns, types and nullability.
            assert _columns(spark, table) == _columns(local, table), table
        for table, columns in EXACT.items():
            assert _rows(spark, table, columns) == _rows(local, table, columns), table
        # Topics: fitted on the same sample by the same model, applied per partition on Spark.
        # The number of topics and each paper's primary topic agree but for near-ties: at most 2%
        # of the papers may change their primary topic.
        topics = "select count(*) from marts.topics where level = 1"
        assert spark.execute(topics).fetchone() == local.execute(topics).fetchone()
        primary = "select paper_id, primary_topic_id from marts.papers"
        local_primary = dict(local.execute(primary).fetchall())
        spark_primary = dict(spark.execute(primary).fetchall())
        assert spark_primary.keys() == local_primary.keys()
        moved = sum(spark_primary[p] != t for p, t in local_primary.items())
        assert moved <= 0.02 * len(local_primary), f"{moved} of {len(local_primary)} papers changed topic"
        # Similar papers: at least 90% of each engine's (paper, neighbour) pairs are the other's.
        pairs = "select paper_id, similar_paper_id from marts.similar_papers"
        local_pairs = set(local.execute(pairs).fetchall())
        spark_pairs = set(spark.execute(pairs).fetchall())
        assert len(local_pairs & spark_pairs) >= 0.9 * len(local_pairs)


# Spark's `local-cluster` master: two executor processes (1 GB each), as on a cluster. Each executor
# logs the tasks it ran in its own folder (SPARK_WORKER_DIR).
LOCAL_CLUSTER = "local-cluster[2,1,1024]"


@pytest.fixture(scope="module")
def seeds_builds(seeds_build, tmp_path_factory) -> tuple[Path, Path]:
    """The shared DuckDB build of the bundled seeds, and the Spark engine's, on a local cluster."""
    folder = tmp_path_factory.mktemp("engines")
    (folder / "started").write_text(str(time.time()))
    spark = _build(
        folder, SEEDS, "spark", PAPERHOUSE_SPARK_MASTER=LOCAL_CLUSTER, SPARK_WORKER_DIR=str(folder / "workers")
    )
    return seeds_build.warehouse, spark


def test_both_engines_publish_the_same_warehouse_from_the_seeds(seeds_builds):
    _compare(*seeds_builds)


def test_spark_marts_land_as_parquet_tables_in_the_warehouse_folder(seeds_builds):
    _, spark_build = seeds_builds
    marts = spark_build.parent / "spark-warehouse" / "marts"
    assert (marts / "papers").is_dir()
    assert any((marts / "papers").glob("*.parquet"))


def test_a_local_cluster_spreads_the_stages_over_its_executors(seeds_builds):
    """The Spark build of the seeds ran on two executor processes, as on a cluster (and published
    the same warehouse as DuckDB's: the test above); both executors ran some of its tasks."""
    folder = seeds_builds[1].parent.parent
    started = float((folder / "started").read_text())
    # local-cluster's executors log under SPARK_WORKER_DIR where Spark honours it, else under
    # Spark's own folder (SPARK_HOME/work): the logs of this build are those written since it began.
    logs = [
        *(folder / "workers").glob("app-*/*/stderr"),
        *(Path(pyspark.__file__).parent / "work").glob("app-*/*/stderr"),
    ]
    tasks = {
        f"{log.parent.parent.name}/{log.parent.name}": log.read_text(errors="replace").count("Finished task")
        for log in logs
        if log.stat().st_mtime >= started
    }
    executors = {executor for executor, finished in tasks.items() if finished}
    assert len(executors) >= 2, tasks


def test_both_engines_agree_on_the_dev_lists(tmp_path):
    lists = real_data.realdata_dir() / "conferences" / "inputs"
    if not lists.is_dir():
        pytest.skip(f"no real data at {lists} (set {variable('realdata')})")
    _compare(_build(tmp_path, lists, "duckdb"), _build(tmp_path, lists, "spark"))
