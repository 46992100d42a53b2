"""paperhouse.workers: the worker process behind the Great Expectations and dbt workers."""

import logging
import logging.handlers
import os
from pathlib import Path

from paperhouse.workers import WorkerProcess


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
