"""Superset's web server (gunicorn, on 127.0.0.1), started in the background and stopped by its pid file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from paperhouse.bi.environment import SupersetHome
from paperhouse.common.processes import running

START_TIMEOUT_SECONDS = 180.0
STOP_TIMEOUT_SECONDS = 30.0


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"{url(port)}/health", timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def running_pid(home: SupersetHome) -> int | None:
    """The server's process id from its pid file, when that process still runs."""
    try:
        pid = int(home.pid_file.read_text())
    except (FileNotFoundError, ValueError):
        return None
    return pid if running(pid) else None


def start(home: SupersetHome, bin_dir: Path, port: int) -> int:
    """Serve Superset on 127.0.0.1:``port`` in the background, in a session of its own (it outlives
    this command), and return its process id once it answers."""
    with open(home.log, "ab") as log:
        server = subprocess.Popen(
            [str(bin_dir / "gunicorn"), "--workers", "1", "--threads", "4", "--timeout", "120",
             "--bind", f"127.0.0.1:{port}", "superset.app:create_app()"],
            env=home.environment(), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip
    home.pid_file.write_text(str(server.pid))
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not answers(port):
        if server.poll() is not None or time.monotonic() > deadline:
            stop(home)
            raise RuntimeError(f"Superset did not start on port {port}: see {home.log}")
        time.sleep(0.5)
    return server.pid


def stop(home: SupersetHome) -> bool:
    """Stop the server of this home (its whole process group); whether one was running."""
    pid = running_pid(home)
    if pid is None:
        home.pid_file.unlink(missing_ok=True)
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    home.pid_file.unlink(missing_ok=True)
    return True
