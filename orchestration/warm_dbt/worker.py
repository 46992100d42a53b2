"""The run's side of warm dbt: a socket, with a warm dbt process behind it for the next command.

Each warm process runs one command and hands the socket to its successor first (see
``orchestration.warm_dbt.server``), so the run only starts the first one, and starts another when
none is listening (the first run of the process, or after a warm process was killed).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

from orchestration.warm_dbt import ADDRESS_FILE
from orchestration.warm_dbt.project import NO_VARIABLES
from orchestration.warm_dbt.server import ParseRequest, start
from paperhouse.common.processes import running

# How long a new warm process may take to listen on its socket (a Python start and a few imports).
START_TIMEOUT_SECONDS = 60.0
# How long closing waits for the stopped warm process to exit.
STOP_TIMEOUT_SECONDS = 30.0


class WarmDbt:
    """The socket of this process's warm dbt processes, in a private temporary folder (only this
    user can connect to it)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="paperhouse-dbt-"))
        self.address = str(self.folder / "socket")
        self._named_in: set[Path] = set()

    def prepare(
        self,
        project_dir: Path,
        target_path: Path,
        database_name: str,
        profiles_dir: Path | None = None,
        target: str | None = None,
    ) -> None:
        """Have a warm process parse the project for a build database named ``database_name`` now
        (starting one when none is listening), so that the next command finds it parsed. Does not
        wait for the parse. The target folder names the socket (``ADDRESS_FILE``): the client
        started for a command on that folder finds it there."""
        named = Path(target_path, ADDRESS_FILE)
        named.parent.mkdir(parents=True, exist_ok=True)
        named.write_text(self.address, encoding="utf-8")
        self._named_in.add(named)
        request: ParseRequest = {
            "project_dir": str(project_dir),
            "profiles_dir": str(profiles_dir or project_dir),
            "target": target,
            "database_name": database_name,
            "variables": NO_VARIABLES,
            "target_path": str(target_path),
        }
        try:
            self._send({"command": "prepare", **request})
        except OSError:
            self._start(request)

    def expect_last_command(self) -> None:
        """Tell the listening warm process that the command it runs next is the run's last, so that
        it starts no successor (nothing, when none is listening: the command then starts none)."""
        with contextlib.suppress(OSError):
            self._send({"command": "last"})

    def status(self) -> dict:
        """The listening warm process's id and how many parses it made (once it answers)."""
        with self._connect() as connection:
            connection.sendall(json.dumps({"command": "status"}).encode() + b"\n")
            return json.loads(connection.makefile("rb").readline())

    @property
    def listening(self) -> bool:
        try:
            self._connect().close()
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Stop the listening warm process (one running a command ends with it), once it is between
        parses, and wait for it to end; then remove the socket's folder. A warm process still parsing
        when the run ends would otherwise write its manifest into the build folder after the run
        (a caller removing that folder then found it refilled). A later ``prepare`` starts a new one."""
        with contextlib.suppress(OSError, ValueError):  # none is listening, or it went away meanwhile
            pid = self.status()["pid"]  # answered between parses: the parse under way is finished
            self._send({"command": "stop"})
            deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
            while running(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
        shutil.rmtree(self.folder, ignore_errors=True)
        for named in self._named_in:
            with contextlib.suppress(OSError):
                if named.read_text(encoding="utf-8") == self.address:
                    named.unlink()

    def _start(self, first_parse: ParseRequest) -> None:
        self.folder.mkdir(mode=0o700, exist_ok=True)  # removed by a `close` before this run
        process = start(self.address, os.getpid(), first_parse=first_parse)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not os.path.exists(self.address):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the warm dbt process did not start (exit code {process.poll()})")
            time.sleep(0.01)

    def _send(self, request: dict) -> None:
        with self._connect() as connection:
            connection.sendall(json.dumps(request).encode() + b"\n")

    def _connect(self) -> socket.socket:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(START_TIMEOUT_SECONDS)  # a parse under way delays an answer, never forever
        try:
            connection.connect(self.address)
        except OSError:
            connection.close()
            raise
        return connection


_warm_dbt: WarmDbt | None = None


def warm_dbt() -> WarmDbt:
    """This process's warm dbt, named in the target folders it prepares; its warm processes are
    stopped when this process exits (and end by themselves when it is killed)."""
    global _warm_dbt
    if _warm_dbt is None:
        _warm_dbt = WarmDbt()
        atexit.register(_warm_dbt.close)
    return _warm_dbt


def close_warm_dbt() -> None:
    """Stop this process's warm dbt processes, if it started any: what a run does when it ends, so
    that no warm process waits for a command that never comes, or writes into the run's build
    folder after it (a process that goes on, a test's, starts new ones for its next run)."""
    if _warm_dbt is not None:
        _warm_dbt.close()
