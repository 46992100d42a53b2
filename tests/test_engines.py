"""Choosing the engine, and what each engine asks of dbt (no Spark session needed here)."""

import os
from pathlib import Path

import duckdb
import polars as pl
import pytest

from orchestration.warm_dbt.project import build_args, flag_value
from paperhouse import engines
from paperhouse.cli import build_parser
from paperhouse.engines.local import LocalCompute
from paperhouse.engines.spark.handover import (
    drop_parquet_views,
    export_raw_tables,
    import_marts,
    keep_parquet_views,
    mart_folder,
    raw_table_folder,
    view_parquet_tables,
)
from paperhouse.settings import variable


def test_engine_comes_from_the_argument_then_the_environment_then_the_default(monkeypatch):
    monkeypatch.delenv(variable("engine"), raising=False)
    assert engines.selected_engine() == "duckdb"
    monkeypatch.setenv(variable("engine"), "Spark")
    assert engines.selected_engine() == "spark"
    assert engines.selected_engine("duckdb") == "duckdb"
    with pytest.raises(ValueError, match="expected one of duckdb, spark"):
        engines.selected_engine("flink")


def test_spark_warehouse_folder_is_configurable(monkeypatch, tmp_path):
    monkeypatch.delenv(variable("spark_warehouse"), raising=False)
    warehouse = tmp_path / "data" / "paperhouse.duckdb"
    assert engines.spark_warehouse_dir(warehouse) == tmp_path / "data" / "spark-warehouse"
    monkeypatch.setenv(variable("spark_warehouse"), str(tmp_path / "elsewhere"))
    assert engines.spark_warehouse_dir(warehouse) == tmp_path / "elsewhere"
    assert engines.spark_warehouse_dir(warehouse, tmp_path / "given") == tmp_path / "given"


def test_each_engine_builds_its_own_dbt_target():
    duckdb_args = build_args("/w/paperhouse.duckdb", target=LocalCompute.dbt_target)
    # The default target is left to the profile, so a warm dbt's parse (made without one) serves it.
    assert flag_value(duckdb_args, "--target") is None
    spark_args = build_args("/w/paperhouse.duckdb", target=engines.DBT_TARGETS["spark"])
    assert flag_value(spark_args, "--target") == "spark"
    assert spark_args[: len(duckdb_args)] == duckdb_args


def test_the_spark_master_reaches_dbt_as_a_variable_of_its_command_not_the_environment(monkeypatch, tmp_path):
    from paperhouse.engines.spark.compute import SparkCompute

    MASTER_VARIABLE = variable("spark_master")

    monkeypatch.delenv(MASTER_VARIABLE, raising=False)
    assert SparkCompute(tmp_path).dbt_vars["spark_master"] == "local[2]"
    monkeypatch.setenv(MASTER_VARIABLE, "local[1]")
    assert SparkCompute(tmp_path).dbt_vars["spark_master"] == "local[1]"
    given = SparkCompute(tmp_path, master="local-cluster[2,1,1024]")
    args = build_args("/w/paperhouse.duckdb", target="spark", variables=given.dbt_vars)
    assert "local-cluster[2,1,1024]" in flag_value(args, "--vars")
    assert os.environ[MASTER_VARIABLE] == "local[1]"  # left as it was
    profile = (Path(__file__).parents[1] / "dbt_project" / "profiles.yml").read_text(encoding="utf-8")
    assert "spark.master: \"{{ var('spark_master'," in profile


def test_cli_run_takes_an_engine():
    parser = build_parser()
    assert parser.parse_args(["run", "--engine", "spark"]).engine == "spark"
    assert parser.parse_args(["run"]).engine is None
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--engine", "flink"])


def test_raw_tables_go_out_and_marts_come_back_in_their_contract_types(tmp_path):
    build = tmp_path / "build.duckdb"
    with duckdb.connect(str(build)) as con:
        con.execute("create schema raw")
        con.execute("create table raw.papers_in as select range as n, 'p' || range as name from range(5)")
        con.execute("create view raw.papers_view as select n from raw.papers_in where n > 2")
    warehouse = tmp_path / "spark-warehouse"
    # A table Spark wrote itself is viewed, not copied onto itself.
    spark_written = raw_table_folder(warehouse, "from_spark")
    spark_written.mkdir(parents=True)
    pl.DataFrame({"k": [7]}).write_parquet(spark_written / "part-00000.parquet")
    with duckdb.connect(str(build)) as con:
        view_parquet_tables(con, warehouse, ["from_spark"])
        assert con.execute("select k from raw.from_spark").fetchall() == [(7,)]
    assert export_raw_tables(build, warehouse) == {"papers_in": 5, "papers_view": 2}
    assert pl.read_parquet(warehouse / "raw" / "papers_view" / "*.parquet")["n"].to_list() == [3, 4]
    assert pl.read_parquet(spark_written / "*.parquet")["k"].to_list() == [7]
    # Published, the file stands alone: the view's rows are kept as a table.
    kept = tmp_path / "kept.duckdb"
    with duckdb.connect(str(kept)) as con:
        view_parquet_tables(con, warehouse, ["from_spark"])
        keep_parquet_views(con)
    (spark_written / "part-00000.parquet").unlink()
    with duckdb.connect(str(kept), read_only=True) as con:
        assert con.execute("select k from raw.from_spark").fetchall() == [(7,)]
        assert con.execute("select table_type from information_schema.tables").fetchall() == [("BASE TABLE",)]
    pl.DataFrame({"k": [7]}).write_parquet(spark_written / "part-00000.parquet")
    # The DuckDB engine, on the same warehouse later, writes the table itself.
    with duckdb.connect(str(build)) as con:
        drop_parquet_views(con)
        assert con.execute("select count(*) from duckdb_views() where view_name = 'from_spark'").fetchone() == (0,)
        assert con.execute("select count(*) from duckdb_views() where view_name = 'papers_view'").fetchone() == (1,)

    # What Spark would have written: a bigint where the contract says integer.
    folder = mart_folder(warehouse, "counts")
    folder.mkdir(parents=True)
    pl.DataFrame({"label": ["a", "b"], "n": [1, 2]}, schema={"label": pl.String, "n": pl.Int64}).write_parquet(
        folder / "part-0.parquet"
    )
    schemas = {"marts.counts": {"label": "VARCHAR NOT NULL", "n": "INTEGER"}, "marts.not_built": {"x": "INTEGER"}}
    assert import_marts(build, warehouse, schemas) == {"counts": 2}
    with duckdb.connect(str(build), read_only=True) as con:
        columns = con.execute(
            "select column_name, data_type, is_nullable from information_schema.columns"
            " where table_schema = 'marts' order by ordinal_position"
        ).fetchall()
    assert columns == [("label", "VARCHAR", "NO"), ("n", "INTEGER", "YES")]


def test_a_mart_that_breaks_its_contract_is_refused(tmp_path):
    build = tmp_path / "build.duckdb"
    duckdb.connect(str(build)).close()
    folder = mart_folder(tmp_path, "counts")
    folder.mkdir(parents=True)
    pl.DataFrame({"label": [None, "b"]}, schema={"label": pl.String}).write_parquet(folder / "part-0.parquet")
    with pytest.raises(duckdb.ConstraintException):
        import_marts(build, Path(tmp_path), {"marts.counts": {"label": "VARCHAR NOT NULL"}})


def test_a_run_s_engine_setting_reaches_dbt_as_arguments_and_leaves_the_environment_alone(monkeypatch, tmp_path):
    from dagster import build_resources

    from orchestration.engine import EngineResource

    monkeypatch.setenv(variable("engine"), "duckdb")
    before = dict(os.environ)
    with build_resources({"engine": EngineResource(name="spark")}) as resources:
        assert resources.engine.selected == "spark"
        compute = resources.engine.compute(tmp_path / "paperhouse.duckdb")
        # The dbt step builds the engine's own target, with its warehouse as a variable.
        args = build_args(tmp_path / "paperhouse.duckdb", target=compute.dbt_target, variables=compute.dbt_vars)
        assert flag_value(args, "--target") == "spark"
        assert str(tmp_path / "spark-warehouse") in flag_value(args, "--vars")
        assert dict(os.environ) == before
    assert dict(os.environ) == before
