"""`paperhouse run --engine spark` against the default engine: one graph, the same answers, measured
as `make bench` measures an engine.

Both engines build the engines' folder (tests/warehouses.py: the bundled seeds, an export beside
them, a labelled synthetic list and, with the real data present, the dev lists; the session's
shared builds) through the whole Dagster graph; the published
warehouses are compared mart by mart. Exact where the step is exact (ingest, dedup, paper ids,
terms); where a step is approximate the tolerance is stated below and checked.
"""

import re

import duckdb
import pytest
from engine_comparison import compare_engines
from warehouses import bench_measurement

from paperhouse.evaluation import bench_report, real_data

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def test_both_engines_publish_the_same_warehouse_from_the_engines_folder(engines_duckdb_build, engines_spark_build):
    compare_engines(engines_duckdb_build.warehouse, engines_spark_build.warehouse)


def test_the_engines_agree_on_thousands_of_real_abstracts(engines_spark_build):
    """The comparison above covers the dev lists of the real data (thousands of real abstracts,
    whose near-ties a toy corpus never has)."""
    assert real_data.available(), f"the real lists are missing at {real_data.realdata_dir()}"
    names = [path.name for path in real_data.input_lists("conferences")]
    with duckdb.connect(str(engines_spark_build.warehouse), read_only=True) as con:
        (papers,) = con.execute(
            "select count(distinct paper_id) from marts.paper_sources where source_file in (select unnest(?))", [names]
        ).fetchone()
    assert papers > 5000


def test_spark_marts_land_as_parquet_tables_in_the_warehouse_folder(engines_spark_build):
    marts = engines_spark_build.warehouse.parent / "spark-warehouse" / "marts"
    assert (marts / "papers").is_dir()
    assert any((marts / "papers").glob("*.parquet"))


def test_the_bench_measures_the_spark_engine_beside_duckdb(engines_duckdb_build, engines_spark_build, capsys):
    """The bench's ``measure_engine`` on one folder (the engines' folder, tests/warehouses.py, whose
    synthetic list labels its duplicates), by each engine: the session's shared builds."""
    duckdb_run, spark = bench_measurement(engines_duckdb_build), bench_measurement(engines_spark_build)
    assert duckdb_run["success"] and spark["success"], spark.get("failed")
    assert spark["papers"] == duckdb_run["papers"] > 300
    assert 0.9 <= spark["precision"] <= 1 and 0.5 <= spark["recall"] <= 1
    assert (spark["precision"], spark["recall"]) == (duckdb_run["precision"], duckdb_run["recall"])
    assert set(duckdb_run["steps"]) == set(spark["steps"])
    assert spark["peak_rss_mb"] >= spark["peak_process_rss_mb"] > 100
    bench_report.engines_table([{"abstracts": 300, "pipeline": duckdb_run, "engines": {"spark": spark}}])
    table = capsys.readouterr().out
    assert "300 abstracts: spark beside duckdb" in table
    assert re.search(rf"^papers +{duckdb_run['papers']} +{spark['papers']}$", table, re.MULTILINE), table
