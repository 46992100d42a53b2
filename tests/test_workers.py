"""paperhouse.common.workers: the worker process behind the Great Expectations and dbt workers."""

import gc
import logging
import logging.handlers
import os
from pathlib import Path

from paperhouse.common.workers import WorkerProcess


def _buffered_log(path: str) -> None:
    """In the worker: a log that reaches its file only when flushed (as logging.shutdown does)."""
    target = logging.FileHandler(path)
    logging.getLogger("paperhouse.test_workers").addHandler(logging.handlers.MemoryHandler(1000, target=target))


def _log(message: str) -> int:
    logging.getLogger("paperhouse.test_workers").warning(message)
    return os.getpid()


def test_a_stopped_worker_leaves_promptly_with_its_logs_flushed(tmp_path: Path):
    log = tmp_path / "worker.log"
    worker = WorkerProcess(_buffered_log, str(log))
    pid = worker.submit(_log, "the last line").result()
    assert pid != os.getpid()
    worker.close()
    assert log.read_text() == "the last line\n"
    assert not Path(f"/proc/{pid}").exists()  # close() waited for the worker to end


_initializer_sweeps: list[int] = []


def _load_with_garbage() -> None:
    """In the worker: an initializer that makes what an import makes, lasting objects and cycles."""
    gc.callbacks.append(lambda phase, info: phase == "start" and _initializer_sweeps.append(info["generation"]))
    global _loaded
    _loaded = [[n] for n in range(100_000)]


def _collector_state() -> tuple[int, bool, int]:
    return len(_initializer_sweeps), gc.isenabled(), gc.get_freeze_count()


def test_a_worker_loads_without_collection_then_freezes_what_it_loaded():
    """The initializer's imports are swept for nothing; what they made is frozen out of later
    sweeps, and the collector is on again for the tasks' garbage."""
    worker = WorkerProcess(_load_with_garbage)
    try:
        sweeps, enabled, frozen = worker.submit(_collector_state).result()
    finally:
        worker.close()
    assert sweeps == 0 and enabled
    assert frozen > 100_000  # the initializer's lists, among the rest
