"""Worker processes that go with the run that started them."""

from __future__ import annotations

import atexit
import gc
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

# Spawned, not forked: the parent runs Polars' and Dagster's threads.
SPAWN = multiprocessing.get_context("spawn")


class WorkerProcess:
    """One worker process, started at once: it runs ``initializer(*initargs)`` (an import that
    takes seconds, say) while the parent goes on, then the tasks submitted to it, one at a time."""

    def __init__(self, initializer: Callable[..., None], *initargs: Any) -> None:
        self._pool = ProcessPoolExecutor(
            max_workers=1, mp_context=SPAWN, initializer=_start, initargs=(os.getpid(), initializer, initargs)
        )
        self._pool.submit(os.getpid)  # the pool starts its process on the first task: start it now

    @property
    def pid(self) -> int:
        """The worker process's id (once the tasks before this question are done)."""
        return self._pool.submit(os.getpid).result()

    def submit(self, task: Callable[..., Any], *args: Any) -> Future:
        return self._pool.submit(task, *args)

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


def _start(parent: int, initializer: Callable[..., None], initargs: tuple) -> None:
    detach_from_parent(parent)
    # Stopped by its pool, a worker has nothing left to save; tearing down the thousands of
    # modules that GX or dbt import would hold up the run's exit by about a second.
    atexit.register(_exit_now)
    with loading_for_good():
        initializer(*initargs)


@contextmanager
def loading_for_good() -> Iterator[None]:
    """Load what lives as long as the process (Dagster, dbt, GX, a parsed dbt project) with the
    garbage collector off, then freeze it out of the collector's later sweeps. Its sweeps over
    objects being loaded find nothing to free: 0.55-0.7 s of a seeds run's 0.85-1.1 s of
    collection went to them in the run's process, and 0.55 s in the GX worker's import."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _exit_now() -> None:
    logging.shutdown()  # flush the log files the worker wrote (dbt.log)
    os._exit(0)


def detach_from_parent(parent: int) -> None:
    """In a worker: let go of the output the parent shares with whoever reads it (a killed run's
    reader must see the end of its output), and leave when the parent is gone (a killed run
    cannot stop its worker)."""
    quiet = os.open(os.devnull, os.O_WRONLY)
    for stream in (1, 2):
        os.dup2(quiet, stream)
    threading.Thread(target=_exit_without, args=(parent,), daemon=True).start()


def _exit_without(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)
