"""Worker processes that go with the run that started them."""

from __future__ import annotations

import os
import threading
import time


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
