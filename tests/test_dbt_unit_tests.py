"""dbt's unit tests (``dbt_project/models/marts/_*__unit_tests.yml``): each mart's SQL on fixed
inputs, on both targets. They test the code, not a run's data, so they run here, once per `make
test`, and production builds leave them out (``build_args``): the data tests and contracts still
run on every build."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from dbt_commands import dbt_folders, passed_unit_tests, unit_tests

from orchestration.warm_dbt.project import WITHOUT_UNIT_TESTS, build_args
from paperhouse.settings import venv_executable


def assert_every_unit_test_passes(work: Path, variables: dict, *target: str) -> None:
    """`dbt test --select test_type:unit` on the database or warehouse ``variables`` name: every
    unit test of the project's YAML passes."""
    command = [venv_executable("dbt"), "test", "--select", "test_type:unit", *target,
               "--vars", json.dumps(variables), *dbt_folders(work)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=work, check=False)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    expected = unit_tests()
    assert len(expected) >= 10 and passed_unit_tests(result.stdout) == expected, result.stdout[-5000:]


def test_production_builds_leave_the_unit_tests_out_and_run_the_data_tests(seeds_build):
    assert set(WITHOUT_UNIT_TESTS) <= set(build_args("/w/paperhouse.duckdb"))
    output = (seeds_build.build_database.parent / "run.log").read_text()
    assert "unit_test" not in output and not passed_unit_tests(output)
    summary = [line for line in output.splitlines() if "Done. PASS=" in line]
    assert summary and all(int(re.search(r"PASS=(\d+)", line)[1]) > 0 for line in summary), output[-3000:]


def test_every_unit_test_passes_on_duckdb(seeds_build, tmp_path):
    """On a copy of the seeds' build database (a unit test reads its inputs' columns from the models
    a build made)."""
    database = tmp_path / seeds_build.build_database.name
    shutil.copy(seeds_build.build_database, database)
    assert_every_unit_test_passes(tmp_path, {"database_path": str(database)})


@pytest.mark.spark
def test_every_unit_test_passes_on_spark(engines_spark_build, tmp_path):
    """On a copy of the shared Spark build's warehouse folder (its catalog included), in a dbt-spark
    session of its own."""
    copy = tmp_path / "spark-warehouse"
    shutil.copytree(engines_spark_build.warehouse.parent / "spark-warehouse", copy)
    spark = {"database_path": "paperhouse.duckdb", "spark_warehouse": str(copy), "spark_master": "local[2]"}
    assert_every_unit_test_passes(tmp_path, spark, "--target", "spark")
