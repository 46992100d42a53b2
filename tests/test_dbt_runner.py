"""dbt in its worker process: results stream back, failures raise, the database is let go of,
the project is parsed once per warehouse until a file changes. A two-model project with the
real profile (so its `keep_open: true`, and the worker closing the database after a command, is what is tested)."""

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from orchestration import dbt_runner
from paperhouse.settings import DBT_PROJECT_DIR

PROJECT = """
name: tiny
version: "1.0.0"
config-version: 2
profile: paperhouse
models:
  tiny:
    +materialized: table
"""
MODELS = """
version: 2
models:
  - name: numbers
    columns:
      - name: n
        data_tests: [unique, not_null]
  - name: odd_numbers
    columns:
      - name: n
        data_tests:
          - accepted_values:
              arguments:
                values: [1, 3, 5, 7]
"""
SLOW_MODEL = "select sum(i) as total from range(50000000000) as t(i)"  # a minute of work
OPEN_FOR_WRITING = "import sys, duckdb; duckdb.connect(sys.argv[1]).close(); print('opened')"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(PROJECT)
    shutil.copy(DBT_PROJECT_DIR / "profiles.yml", root / "profiles.yml")
    (root / "models" / "numbers.sql").write_text("select unnest([1, 2, 3]) as n")
    (root / "models" / "odd_numbers.sql").write_text("select n from {{ ref('numbers') }} where n % 2 = 1")
    (root / "models" / "models.yml").write_text(MODELS)
    return root


def summary(event: dict) -> tuple[str, str, str]:
    node = event["data"]["node_info"]
    return event["info"]["name"], node["node_name"], node["node_status"]


@pytest.fixture(scope="module")
def worker():
    worker = dbt_runner.DbtWorker()
    yield worker
    worker.close()


def test_results_stream_as_dbt_events_and_the_database_is_let_go_of(worker, project, tmp_path):
    database = tmp_path / "tiny.duckdb"
    frozen = worker.submit(gc.get_freeze_count).result()
    # The parse stays in the worker (nothing comes back to unpickle), frozen out of later sweeps.
    assert worker.prepare(project, project / "target", database).result() is None
    assert worker.submit(gc.get_freeze_count).result() > frozen
    results = [summary(e) for e in worker.run(["build"], project, project / "target", database)]
    assert ("LogModelResult", "numbers", "success") in results
    assert ("LogModelResult", "odd_numbers", "success") in results
    assert ("LogTestResult", "unique_numbers_n", "pass") in results
    assert len(results) == 5  # two models, three tests: only result events
    # No connection outlives the command: another process can open the file for writing.
    opened = subprocess.run([sys.executable, "-c", OPEN_FOR_WRITING, str(database)], capture_output=True, text=True)
    assert opened.stdout.strip() == "opened", opened.stderr


def test_a_failing_test_is_streamed_then_raised_with_dbts_error(worker, project, tmp_path):
    (project / "models" / "odd_numbers.sql").write_text("select n from {{ ref('numbers') }}")  # 2 is not odd
    results = []
    with pytest.raises(dbt_runner.DbtFailed, match="accepted_values_odd_numbers_n"):
        for event in worker.run(["build"], project, project / "target", tmp_path / "tiny.duckdb"):
            results.append(summary(event))
    assert ("LogTestResult", "accepted_values_odd_numbers_n__1__3__5__7", "fail") in results


def test_a_worker_killed_mid_command_fails_the_command_instead_of_hanging(project, tmp_path):
    (project / "models" / "slow.sql").write_text(SLOW_MODEL)
    worker = dbt_runner.DbtWorker()
    try:
        pid = worker.pid
        events = worker.run(["build"], project, project / "target", tmp_path / "tiny.duckdb")
        next(events)  # a first model is built; the slow one is running
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(BrokenProcessPool):
            list(events)
    finally:
        worker.close()


def test_a_command_stopped_early_takes_its_worker_down_and_the_next_command_gets_a_new_one(
        project, tmp_path, monkeypatch):
    """What happens when a run is interrupted in dbt: dbt cannot be cancelled from outside."""
    (project / "models" / "slow.sql").write_text(SLOW_MODEL)
    monkeypatch.setattr(dbt_runner, "_worker", None)
    worker = dbt_runner.dbt_worker()
    pid = worker.pid
    events = worker.run(["build"], project, project / "target", tmp_path / "tiny.duckdb")
    next(events)
    events.close()  # as when Dagster interrupts the step
    assert worker.broken
    assert _gone(pid)
    replacement = dbt_runner.dbt_worker()
    assert replacement is not worker and replacement.pid != pid
    replacement.close()
    worker.close()


def _gone(pid: int, wait: float = 10.0) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def test_the_project_is_parsed_once_per_database_name_until_a_file_changes(project, tmp_path, monkeypatch):
    parses = []
    real_parse = dbt_runner.parse
    monkeypatch.setattr(dbt_runner, "parse", lambda *args: parses.append(args) or real_parse(*args))
    dbt_runner._parsed.cache_clear()
    database = tmp_path / "tiny.duckdb"

    def build(database: Path) -> list[tuple[str, str, str]]:
        results = []
        dbt_runner.run_here(["build"], project, project / "target", database, lambda e: results.append(summary(e)))
        return results

    build(database)
    build(database)
    assert len(parses) == 1
    # A warehouse of the same file name in another folder: the same parse, its own database file.
    elsewhere = tmp_path / "elsewhere" / "tiny.duckdb"
    elsewhere.parent.mkdir()
    assert ("LogModelResult", "numbers", "success") in build(elsewhere)
    assert len(parses) == 1 and elsewhere.exists()
    build(tmp_path / "other.duckdb")  # another name: dbt names the database after it, so its own parse
    assert len(parses) == 2
    model = project / "models" / "numbers.sql"
    model.write_text("select unnest([1, 2, 3, 5]) as n")
    os.utime(model, (model.stat().st_mtime + 5,) * 2)
    assert ("LogModelResult", "numbers", "success") in build(database)
    assert len(parses) == 3


def test_a_command_writes_its_results_to_events_and_its_log_file_not_the_console(project, tmp_path, capfd):
    # The worker's console goes nowhere: formatting dbt's lines for it cost a seeds build 0.3 s.
    results = []
    dbt_runner.run_here(["build"], project, project / "target", tmp_path / "quiet.duckdb",
                        lambda e: results.append(summary(e)))
    assert ("LogModelResult", "numbers", "success") in results
    assert capfd.readouterr().out == ""
    assert "OK created sql table model" in (project / "target" / "dbt.log").read_text()


def _files_parsed(target: Path) -> int:
    return json.loads((target / "perf_info.json").read_text())["parsed_path_count"]


def test_a_new_target_folder_starts_from_the_projects_parse_when_the_database_name_matches(project, tmp_path):
    dbt_runner.parse(project, project / "target", "tiny.duckdb")
    assert _files_parsed(project / "target") > 0  # the first parse reads every file

    dbt_runner.parse(project, tmp_path / "build_a", "tiny.duckdb")
    assert _files_parsed(tmp_path / "build_a") == 0  # dbt's partial parse found nothing changed

    dbt_runner.parse(project, tmp_path / "build_b", "other.duckdb")  # another database: parsed again
    assert _files_parsed(tmp_path / "build_b") > 0


def test_the_worker_loads_dbt_without_dagster():
    # The worker starts beside the run's own imports on a 2-core machine: Dagster and dagster-dbt
    # would cost it seconds of CPU for nothing (it only runs dbt).
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, orchestration.dbt_runner as r; r._start_worker(None);"
         " print(sorted({m.split('.')[0] for m in sys.modules} & {'dagster', 'dagster_dbt', 'dbt'}))"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert loaded.strip() == "['dbt']"
