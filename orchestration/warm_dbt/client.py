"""`paperhouse-dbt`: the dbt executable the `worker` runner gives dagster-dbt's ``DbtCliResource``.

It takes the same arguments and environment as `dbt`, and its output and exit code are dbt's:
the warm dbt process listening on the socket named in the command's target folder
(``DBT_TARGET_PATH``'s ``.paperhouse-dbt-worker``) runs the command and writes dbt's
output straight to this process's stdout, the pipe dagster-dbt reads, and this process ends when
that one has. Without a warm process to take the command, this process becomes the real `dbt`.
Interrupted (dagster-dbt sends SIGINT when a step is stopped), it kills the process running the
command: a dbt command in progress cannot be cancelled from outside.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from importlib.metadata import version
from pathlib import Path
from typing import BinaryIO

from orchestration.warm_dbt import ADDRESS_FILE

# What a dbt process exits with when it ends in an error of its own rather than a failed model or test.
DBT_ERROR_EXIT = 2


def main() -> int:
    args = sys.argv[1:]
    if args == ["--version"]:  # what dagster-dbt asks first: the installed dbt-core, which the server runs
        print(f"Core:\n  - installed: {version('dbt-core')}")
        return 0
    server: list[int] = []  # the server's process id, once it took the command

    def stop(signum, _frame) -> None:
        if server:
            os.kill(server[0], signal.SIGKILL)
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    connection = _connect(_address())
    replies = connection.makefile("rb") if connection else None
    started = replies and _hand_over(connection, replies, args)
    if not started:
        _become_dbt(args)  # which handles its own interruption: exec resets the handlers
    server.append(json.loads(started)["pid"])
    ended = replies.readline()
    if not ended:
        print("paperhouse-dbt: the warm dbt process ended before the command did", file=sys.stderr)
        return DBT_ERROR_EXIT
    # The process ends after the command, closing the database as a `dbt` process does; the socket
    # closes with it. Only then is the command over for whoever opens the database next.
    replies.read()
    return json.loads(ended)["exit_code"]


def _address() -> str | None:
    """The socket the run prepared a warm dbt on for this command's target folder, if it did."""
    named = Path(os.environ.get("DBT_TARGET_PATH") or "target", ADDRESS_FILE)
    try:
        return named.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _connect(address: str | None) -> socket.socket | None:
    if not address:
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(address)
    except OSError:
        connection.close()
        return None
    return connection


def _hand_over(connection: socket.socket, replies: BinaryIO, args: list[str]) -> bytes | None:
    """Send the command with this process's stdout and stderr; the server's first reply once it
    took it, None when it went away first (nothing ran: the real dbt can run it)."""
    request = {"command": "run", "args": args, "env": dict(os.environ), "cwd": os.getcwd()}
    try:
        socket.send_fds(connection, [json.dumps(request).encode() + b"\n"], [1, 2])
        first = replies.readline()
    except OSError:
        return None
    return first or None


def _become_dbt(args: list[str]) -> None:
    dbt = str(Path(sys.executable).parent / "dbt")  # installed beside this Python, as this command is
    os.execv(dbt, [dbt, *args])


def console() -> None:
    sys.exit(main())
