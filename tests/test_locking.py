"""One run at a time per warehouse: the run lock, as `paperhouse run` and Dagster runs take it."""

import contextlib
import fcntl
import os
import subprocess
import sys
import threading
import time

import pytest
from corpus import SEEDS

from paperhouse.settings import resolve_paths
from paperhouse.warehouse import locking

HOLD = """
import sys, time
from pathlib import Path
from paperhouse.warehouse import locking
lease = locking.acquire(Path(sys.argv[1]), command="test holder")
print("held", flush=True)
if sys.argv[2] == "die":
    import os, signal
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.readline()  # until the test says so
locking.release(lease)
"""


def hold_in_child(lock, how: str = "until told") -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock), how], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    if how != "die":
        assert child.stdout.readline().strip() == "held"
    return child


def let_go(child: subprocess.Popen) -> None:
    with contextlib.suppress(BrokenPipeError):  # gone already
        child.stdin.write("\n")
        child.stdin.flush()


def watch_the_waiting(monkeypatch) -> tuple[threading.Event, list[float]]:
    """Set once this process finds the lock taken (an acquire waiting for it); the times it did."""
    found_taken, attempts = threading.Event(), []

    class Watched:
        def __getattr__(self, name):
            return getattr(fcntl, name)

        @staticmethod
        def flock(fd, operation):
            try:
                return fcntl.flock(fd, operation)
            except BlockingIOError:
                attempts.append(time.monotonic())
                found_taken.set()
                raise

    monkeypatch.setattr(locking, "fcntl", Watched())
    return found_taken, attempts


def let_go_once_waited_for(child: subprocess.Popen, found_taken: threading.Event, gone: list, attempts: list) -> None:
    """Let go once an acquire here waits for the lock (5 min at most, a safety net); then ``gone``
    gets the number of its failed attempts counted once the holder has exited."""
    if found_taken.wait(timeout=300):
        let_go(child)
        child.wait(timeout=300)
        gone.append(len(attempts))


def test_a_second_paperhouse_run_is_refused_at_once_and_says_who_holds_the_lock(tmp_path):
    paths = resolve_paths(SEEDS, tmp_path / "paperhouse.duckdb")
    with locking.run_lock(paths.run_lock, command="paperhouse run (the first one)"):
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "paperhouse.cli", "run", "--seeds", str(SEEDS), "--warehouse", str(paths.warehouse)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        elapsed = time.monotonic() - started
    assert result.returncode == 75
    assert "another run is already building this warehouse" in result.stderr
    assert f"pid {os.getpid()}" in result.stderr
    assert elapsed < 15  # before loading Dagster, let alone waiting
    assert not paths.warehouse.exists() and not (paths.build_dir / "run.log").exists()  # it touched nothing


def test_the_lock_dies_with_its_process_and_tells_the_next_holder(tmp_path):
    lock = tmp_path / "run.lock"
    child = hold_in_child(lock, "die")
    child.wait(timeout=300)
    assert child.returncode == -9
    lease = locking.acquire(lock, timeout=0)  # no stale lock to clean up by hand
    try:
        assert lease.previous["pid"] == child.pid and lease.previous["command"] == "test holder"
    finally:
        locking.release(lease)
    again = locking.acquire(lock, timeout=0)
    try:
        assert again.previous is None  # a clean release leaves no record of a dead run
    finally:
        locking.release(again)


def test_the_lock_is_reentrant_within_a_process_and_exclusive_across_processes(tmp_path):
    lock = tmp_path / "run.lock"
    probe = [
        sys.executable,
        "-c",
        "import sys; from pathlib import Path; from paperhouse.warehouse import locking;"
        "locking.acquire(Path(sys.argv[1]), timeout=0)",
        str(lock),
    ]
    outer = locking.acquire(lock)
    inner = locking.acquire(lock, run_id="abc")
    assert inner is outer and outer.record["run_id"] == "abc"
    locking.release(inner)
    assert subprocess.run(probe, capture_output=True, text=True).returncode != 0  # still held
    locking.release(outer)
    assert subprocess.run(probe, capture_output=True, text=True).returncode == 0


def test_another_process_waits_for_the_lock_up_to_its_timeout(tmp_path, monkeypatch):
    lock = tmp_path / "run.lock"
    child = hold_in_child(lock)
    try:
        with pytest.raises(locking.RunLockBusy, match="test holder"):
            locking.acquire(lock, timeout=0.5)
        found_taken, attempts = watch_the_waiting(monkeypatch)
        gone: list[int] = []
        holder = threading.Thread(target=let_go_once_waited_for, args=(child, found_taken, gone, attempts), daemon=True)
        holder.start()
        lease = locking.acquire(lock, timeout=600, poll=0.1)
        holder.join(timeout=300)
        assert gone, "the holder did not exit once let go"
        # It waited (found the lock taken), and took it at its first try after the holder had gone
        # (one more failure counted at most: a try just before the holder went, counted just after).
        assert attempts and len(attempts) <= gone[0] + 1, (len(attempts), gone)
        locking.release(lease)
    finally:
        if child.poll() is None:
            let_go(child)
        child.wait(timeout=300)


def _messages(error) -> str:
    """An error's message and those of its causes (Dagster wraps what a resource raised)."""
    return "" if error is None else f"{error.message} {_messages(error.cause)}"


def test_dagster_runs_take_the_same_lock(tmp_path, monkeypatch):
    """A run launched by Dagster (UI, sensor, schedule) waits for the lock, and fails with the
    holder's name when it stays taken; full_refresh in the run config re-parses every file."""
    from dagster import AssetKey, DagsterInstance

    from orchestration.definitions import build_definitions
    from orchestration.runner import run_config

    paths = resolve_paths(SEEDS, tmp_path / "paperhouse.duckdb")
    job = build_definitions(str(paths.seeds_dir), str(paths.warehouse)).resolve_job_def("build_warehouse")

    def ingest_only(timeout: float, full_refresh: bool = False):
        config = run_config(full_refresh=full_refresh)
        config["resources"] = {
            "warehouse": {
                "config": {
                    "seeds_dir": str(paths.seeds_dir),
                    "warehouse": str(paths.warehouse),
                    "lock_timeout_seconds": timeout,
                }
            }
        }
        return job.execute_in_process(
            run_config=config,
            instance=DagsterInstance.ephemeral(),
            raise_on_error=False,
            asset_selection=[AssetKey(["raw", "source_records"])],
        )

    child = hold_in_child(paths.run_lock)
    try:
        refused = ingest_only(timeout=0.5)
        assert not refused.success
        errors = " ".join(
            _messages(e.event_specific_data.error)
            for e in refused.all_events
            if e.is_failure and getattr(e.event_specific_data, "error", None)
        )
        assert "another run is already building this warehouse" in errors and "test holder" in errors
        found_taken, attempts = watch_the_waiting(monkeypatch)
        gone: list[int] = []
        holder = threading.Thread(target=let_go_once_waited_for, args=(child, found_taken, gone, attempts), daemon=True)
        holder.start()
        waited = ingest_only(timeout=600)  # waits until the holder lets go
        holder.join(timeout=300)
        assert waited.success
        assert attempts and gone, "the run did not wait for the lock"  # it found the lock taken, and waited
    finally:
        if child.poll() is None:
            let_go(child)
        child.wait(timeout=300)

    def files(result):
        (materialization,) = result.asset_materializations_for_node("raw__source_records")
        return {k: materialization.metadata[k].value for k in ("files_parsed", "files_reused", "full_refresh")}

    assert files(ingest_only(timeout=0)) == {"files_parsed": 0, "files_reused": 4, "full_refresh": False}
    assert files(ingest_only(timeout=0, full_refresh=True)) == {
        "files_parsed": 4,
        "files_reused": 0,
        "full_refresh": True,
    }
    assert locking.held_lease(paths.run_lock) is None  # every run let go of it
