"""One run at a time per warehouse: an advisory lock on a file in the build folder.

``flock(2)`` locks belong to an open file and vanish when the process holding them dies,
however it dies (SIGKILL included), so there is never a stale lock to remove by hand. The
file also says who holds it (pid, host, command, run id, since when). A clean release empties
it, so a record found by the next holder names a run that died while holding the lock.

The lock is re-entrant within a process: ``paperhouse run`` takes it before starting Dagster
(so a second run is refused at once, before any work), and the run's ``warehouse`` resource
takes it again, which is how runs launched from the UI, the sensor or the schedule are guarded
by the very same lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path


class RunLockBusy(RuntimeError):
    """Another process holds the run lock; ``str(e)`` says who, in words a person understands."""

    def __init__(self, lock_path: Path, holder: dict):
        self.lock_path = lock_path
        self.holder = holder
        who = []
        if holder.get("pid"):
            who.append(f"pid {holder['pid']}" + (f" on {holder['host']}" if holder.get("host") else ""))
        if holder.get("command"):
            who.append(f"`{holder['command']}`")
        if holder.get("run_id"):
            who.append(f"Dagster run {holder['run_id'][:8]}")
        if holder.get("since"):
            who.append(f"since {holder['since']}")
        details = f" ({', '.join(who)})" if who else ""
        super().__init__(
            f"another run is already building this warehouse{details}; wait for it to finish, then run again"
            f" (lock: {lock_path})"
        )


@dataclass
class Lease:
    path: Path
    fd: int
    record: dict
    previous: dict | None = None  # what a holder that died left in the file
    count: int = 1
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update(self, **fields) -> None:
        """Add facts about the holder (e.g. the Dagster run id once it is known)."""
        with self._guard:
            self.record.update({k: v for k, v in fields.items() if v is not None})
            _write_record(self.fd, self.record)


_HELD: dict[Path, Lease] = {}
_HELD_GUARD = threading.Lock()


def _read_record(fd: int) -> dict:
    try:
        data = os.pread(fd, 65536, 0)
        return json.loads(data) if data.strip() else {}
    except (OSError, ValueError):  # being rewritten this very moment, or not ours
        return {}


def _write_record(fd: int, record: dict) -> None:
    data = json.dumps(record, sort_keys=True).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def acquire(lock_path: Path, timeout: float = 0.0, poll: float = 0.5, **record) -> Lease:
    """Take the lock, waiting up to ``timeout`` seconds; ``RunLockBusy`` when it stays taken."""
    lock_path = Path(lock_path).resolve()
    with _HELD_GUARD:
        lease = _HELD.get(lock_path)
        if lease is not None:
            lease.count += 1
            lease.update(**record)
            return lease
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                holder = _read_record(fd)
                os.close(fd)
                raise RunLockBusy(lock_path, holder) from None
            time.sleep(min(poll, remaining))
    previous = _read_record(fd) or None
    lease = Lease(
        path=lock_path,
        fd=fd,
        record={
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:2]]) if sys.argv and sys.argv[0] else None,
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        previous=previous,
    )
    lease.update(**record)
    with _HELD_GUARD:
        _HELD[lock_path] = lease
    return lease


def release(lease: Lease) -> None:
    with _HELD_GUARD:
        lease.count -= 1
        if lease.count > 0:
            return
        _HELD.pop(lease.path, None)
    try:
        os.ftruncate(lease.fd, 0)  # released cleanly: the next holder finds no record of a dead run
        fcntl.flock(lease.fd, fcntl.LOCK_UN)
    finally:
        os.close(lease.fd)


@contextmanager
def run_lock(lock_path: Path, timeout: float = 0.0, **record) -> Iterator[Lease]:
    lease = acquire(lock_path, timeout=timeout, **record)
    try:
        yield lease
    finally:
        release(lease)


def held_lease(lock_path: Path) -> Lease | None:
    """The lease this process holds on ``lock_path``, if any."""
    with _HELD_GUARD:
        return _HELD.get(Path(lock_path).resolve())
