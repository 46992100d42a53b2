"""The instance's event log (orchestration/event_log.py, named in dagster.yaml): Dagster's files in
Dagster's place, each opened once, and a live run's events still seen by the UI's watcher."""

import os
import queue
import sqlite3
from pathlib import Path

import pytest
from dagster import (
    AssetCheckResult,
    DagsterEventType,
    DagsterInstance,
    asset,
    asset_check,
    materialize,
)
from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME
from sqlalchemy import event
from sqlalchemy.engine import Engine

from orchestration.event_log import ENGINES_KEPT, CachedEngineSqliteEventLogStorage
from paperhouse.settings import PROJECT_ROOT

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
    (home / "dagster.yaml").symlink_to(PROJECT_ROOT / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


def _storage(instance: DagsterInstance) -> CachedEngineSqliteEventLogStorage:
    storage = instance.event_log_storage
    assert isinstance(storage, CachedEngineSqliteEventLogStorage)
    return storage


def test_runs_are_stored_where_and_as_dagsters_default_storage_reads_them(home):
    with DagsterInstance.get() as instance:
        result = materialize(ASSETS, instance=instance)
        assert result.success
        stored = instance.get_records_for_run(result.run_id).records
    default = SqliteEventLogStorage(str(home / "history" / "runs"))  # what Dagster uses without the setting
    read = default.get_records_for_run(result.run_id).records
    assert [r.storage_id for r in read] == [r.storage_id for r in stored]
    checks = [r for r in read if r.event_log_entry.dagster_event_type == DagsterEventType.ASSET_CHECK_EVALUATION]
    assert len(checks) == CHECKS
    assert default.get_latest_materialization_events([numbers.key])[numbers.key].run_id == result.run_id


def test_a_second_run_opens_no_file_again(home):
    opened: list[str] = []

    def count(dbapi_connection, _record) -> None:
        opened.append(dbapi_connection.execute("pragma database_list").fetchone()[2])

    with DagsterInstance.get() as instance:
        assert materialize(ASSETS, instance=instance).success  # the index is created and opened
        event.listen(Engine, "connect", count)
        try:
            result = materialize(ASSETS, instance=instance)
        finally:
            event.remove(Engine, "connect", count)
        assert len(instance.fetch_materializations(numbers.key, limit=10).records) == 2
    event_files = [path for path in opened if Path(path).parent == home / "history" / "runs"]
    # Only the new run's file: created, then opened for all of its ~60 events.
    assert set(event_files) == {str(home / "history" / "runs" / f"{result.run_id}.db")}
    assert len(event_files) <= 2


def test_the_ui_sees_each_event_of_a_live_run_as_it_is_stored(home):
    """The webserver sees each new event as it is committed to the run's write-ahead log, before any
    checkpoint changes the run's file (Dagster's own watcher waits for the file to change)."""
    with DagsterInstance.get() as writer, DagsterInstance.get() as webserver:
        run = materialize(ASSETS, instance=writer).dagster_run
        run_file = home / "history" / "runs" / f"{run.run_id}.db"
        seen: queue.Queue = queue.Queue()
        stored_so_far = webserver.get_records_for_run(run.run_id).cursor
        webserver.event_log_storage.watch(run.run_id, stored_so_far, lambda entry, _cursor: seen.put(entry.message))
        try:
            for n in range(3):
                file_before = run_file.stat().st_mtime_ns
                writer.report_engine_event(f"event {n}", run)
                assert seen.get(timeout=10) == f"event {n}"
                assert run_file.stat().st_mtime_ns == file_before  # no checkpoint per event
        finally:
            webserver.event_log_storage.end_watch(run.run_id, seen.put)
        with sqlite3.connect(run_file) as con:  # Dagster's own journal mode, which the watcher relies on
            assert con.execute("pragma journal_mode").fetchone()[0] == "wal"


def test_commits_do_not_wait_for_the_disk(home):
    with DagsterInstance.get() as instance:
        run_id = materialize(ASSETS, instance=instance).run_id
        storage = _storage(instance)
        for shard in (run_id, INDEX_SHARD_NAME):
            with storage._connect(shard) as conn:
                assert conn.exec_driver_sql("pragma synchronous").scalar() == 1  # NORMAL; FULL (2) syncs every commit


def test_a_wiped_history_takes_new_runs(home):
    """`instance.wipe()` deletes the run files under engines this storage keeps."""
    with DagsterInstance.get() as instance:
        assert materialize(ASSETS, instance=instance).success
        instance.wipe()
        result = materialize(ASSETS, instance=instance)
        assert result.success
        assert len(instance.get_records_for_run(result.run_id).records) > CHECKS
        assert (home / "history" / "runs" / f"{result.run_id}.db").exists()


def test_engines_are_kept_for_the_latest_files_only(home):
    with DagsterInstance.get() as instance:
        storage = _storage(instance)
        for _ in range(ENGINES_KEPT + 2):
            assert materialize(ASSETS, instance=instance).success
        assert len(storage._engines) == ENGINES_KEPT
        assert INDEX_SHARD_NAME in storage._engines
        assert len(instance.get_runs()) == ENGINES_KEPT + 2


def test_a_forked_process_opens_the_index_again_and_stores_beside_its_parent(home):
    with DagsterInstance.get() as instance:
        storage = _storage(instance)
        assert materialize(ASSETS, instance=instance).success
        parents_index = storage._engines[INDEX_SHARD_NAME]
        pid = os.fork()
        if pid == 0:  # the child: exit 0 only when it stored its run through an index of its own
            try:
                ok = materialize(ASSETS, instance=instance).success
                os._exit(0 if ok and storage._engines[INDEX_SHARD_NAME] is not parents_index else 1)
            except BaseException:
                os._exit(2)
        assert os.waitpid(pid, 0)[1] == 0
        assert materialize(ASSETS, instance=instance).success
        assert storage._engines[INDEX_SHARD_NAME] is parents_index
        assert len(instance.get_runs()) == 3
        materializations = instance.fetch_materializations(numbers.key, limit=10).records
        assert len(materializations) == 3


def test_without_dagster_home_the_files_go_to_the_working_folders_dagster_home(tmp_path, monkeypatch):
    """As `paperhouse ui` and `make` place the instance; every process a `dagster` command starts
    computes the same folder from the same configuration."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    storage = CachedEngineSqliteEventLogStorage.from_config_value(None, {})
    try:
        assert (tmp_path / ".dagster" / "history" / "runs" / f"{INDEX_SHARD_NAME}.db").exists()
    finally:
        storage.dispose()
