"""The Dagster instance `make` sets up ($DAGSTER_HOME with the project's dagster.yaml) keeps runs in
Dagster's own storage, configured by public settings only: SQLite files in the instance's folder.
Runs, their events and check results are recorded and read back through the public
``DagsterInstance`` API, by another process too, as the UI reads them."""

import os
import subprocess
import sys

import pytest
import yaml
from dagster import AssetCheckResult, DagsterEventType, DagsterInstance, asset, asset_check, materialize

from paperhouse.settings import DAGSTER_YAML

CHECKS = 5


@asset
def numbers() -> list[int]:
    return [1, 2, 3]


def _check(number: int):
    @asset_check(asset=numbers, name=f"holds_{number}")
    def _holds(numbers: list[int]) -> AssetCheckResult:
        return AssetCheckResult(passed=number in numbers)

    return _holds


ASSETS = [numbers, *(_check(n) for n in range(1, CHECKS + 1))]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A Dagster home configured by the project's dagster.yaml, as `make` sets one up."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(DAGSTER_YAML)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


def test_the_instance_is_configured_by_public_settings_only():
    """No storage, launcher or coordinator is named by its Python class (`module:` / `class:`), as
    one of Dagster's internal classes or a subclass of one would be."""
    config = yaml.safe_load(DAGSTER_YAML.read_text(encoding="utf-8"))
    assert not [key for key, value in config.items() if isinstance(value, dict) and "module" in value]


def test_runs_and_their_checks_are_recorded_where_dagster_keeps_them(home):
    with DagsterInstance.get() as instance:
        result = materialize(ASSETS, instance=instance)
        assert result.success
        [run] = instance.get_runs()
        assert run.run_id == result.run_id and run.is_success
        assert instance.fetch_materializations(numbers.key, limit=10).records[0].run_id == result.run_id
        records = instance.get_records_for_run(result.run_id).records
        checks = [r for r in records if r.event_log_entry.dagster_event_type == DagsterEventType.ASSET_CHECK_EVALUATION]
        assert len(checks) == CHECKS
    # Dagster's default SQLite storage, in the instance's folder.
    assert (home / "history" / "runs.db").exists()
    assert (home / "history" / "runs" / f"{result.run_id}.db").exists()


def test_another_process_reads_the_runs_as_the_ui_does(home):
    with DagsterInstance.get() as instance:
        first = materialize(ASSETS, instance=instance).run_id
        second = materialize(ASSETS, instance=instance).run_id
    read = subprocess.run(
        [
            sys.executable,
            "-c",
            "from dagster import DagsterInstance\n"
            "with DagsterInstance.get() as instance:\n"
            "    for run in instance.get_runs():\n"
            "        events = instance.get_records_for_run(run.run_id).records\n"
            "        print(run.run_id, run.status.value, len(events))",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "DAGSTER_HOME": str(home)},
    ).stdout.split()
    assert read[0::3] == [second, first]  # newest first
    assert read[1::3] == ["SUCCESS", "SUCCESS"]
    assert all(int(events) > CHECKS for events in read[2::3])


def test_a_wiped_history_takes_new_runs(home):
    with DagsterInstance.get() as instance:
        assert materialize(ASSETS, instance=instance).success
        instance.wipe()
        assert instance.get_runs() == []
        result = materialize(ASSETS, instance=instance)
        assert result.success
        assert [run.run_id for run in instance.get_runs()] == [result.run_id]
