"""A warm dbt process: it imports dbt and parses the project before its command arrives, runs that
one command as `dbt <args>` would, and ends as a `dbt` process ends.

Started as ``python -m orchestration.warm_dbt.server SOCKET RUN_PID [PARSE]``, by the run
(``orchestration.warm_dbt.worker``) or by the warm process before it. It listens on the Unix
socket ``SOCKET`` and answers, one connection at a time, each a line of JSON:

- ``{"command": "prepare", ...}`` (the fields of ``ParseRequest``): parse the project for that
  build database now (no reply); ``PARSE`` on the command line is the first such request;
- ``{"command": "status"}``: replies ``{"pid", "parses"}``;
- ``{"command": "stop"}``: ends the process;
- ``{"command": "last"}``: the next command is the run's last (no reply): no warm process is
  started for a command after it;
- ``{"command": "run", "args", "env", "cwd"}``, sent with the client's stdout and stderr: hands the
  socket over to a new warm process for the next command (none after the last: a later client
  finds no socket and runs dbt itself), replies ``{"pid"}``, runs the command
  with that environment and working folder and its output on the client's, replies
  ``{"exit_code"}`` (the code `dbt` would exit with), and ends. The client waits for the end: dbt's
  database connection is closed by dbt-duckdb's exit hook, as in a `dbt` process, so once this
  process is gone the next step can open the file.

It also ends when the run's process (``RUN_PID``) is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, TypedDict

from orchestration.warm_dbt.project import (
    DbtParseFailed,
    command_variables,
    database_name_in,
    flag_value,
    parse,
    project_stamp,
)
from paperhouse.common.processes import running
from paperhouse.common.workers import loading_for_good

MAX_REQUEST_BYTES = 1 << 20
# How much lower the next command's warm process runs than the command in progress.
SUCCESSOR_NICENESS = 10
# The connection of the command this process ran: its client waits for it to close, which it does
# when this process is gone.
_finished_command: list[socket.socket] = []


class ParseRequest(TypedDict):
    project_dir: str
    profiles_dir: str
    target: str | None
    database_name: str
    variables: str  # the command's other --vars, as JSON (``project.command_variables``)
    target_path: str


class Manifests:
    """The parses a command can use, one per project, profile target and database name, made again
    when a project file changed."""

    def __init__(self) -> None:
        self._kept: dict[tuple, tuple[float, Any]] = {}
        self.parses = 0

    def get(self, request: ParseRequest):
        project_dir = Path(request["project_dir"])
        key = (project_dir, request["profiles_dir"], request["target"], request["database_name"], request["variables"])
        stamp = project_stamp(project_dir)
        kept = self._kept.get(key)
        if kept is None or kept[0] != stamp:
            # The parse lives as long as the process: kept out of the garbage collector's sweeps,
            # which would walk it again and again for nothing (docs/performance.md).
            with loading_for_good():
                manifest = parse(
                    project_dir,
                    parse_folder(Path(request["target_path"])),
                    request["database_name"],
                    Path(request["profiles_dir"]),
                    request["target"],
                    request["variables"],
                )
            self.parses += 1
            self._kept[key] = kept = (stamp, manifest)
        return kept[1]

    def get_or_none(self, request: ParseRequest):
        """The parse, or None when it fails: dbt then parses itself and says why."""
        try:
            return self.get(request)
        except DbtParseFailed:
            return None


def parse_request(args: list[str], env: dict[str, str], cwd: str) -> ParseRequest:
    """The parse a command's flags and environment ask for, as dbt resolves them (a flag, then its
    DBT_ variable, then the default)."""
    project_dir = Path(cwd, flag_value(args, "--project-dir") or env.get("DBT_PROJECT_DIR") or ".")
    target_path = project_dir / (flag_value(args, "--target-path") or env.get("DBT_TARGET_PATH") or "target")
    profiles_dir = Path(cwd, flag_value(args, "--profiles-dir") or env.get("DBT_PROFILES_DIR") or project_dir)
    return {
        "project_dir": str(project_dir),
        "profiles_dir": str(profiles_dir),
        "target": flag_value(args, "--target") or env.get("DBT_TARGET"),
        "database_name": database_name_in(args),
        "variables": command_variables(args),
        "target_path": str(target_path),
    }


def parse_folder(target_path: Path) -> Path:
    """Where a warm process parses for commands whose target folder is ``target_path``: a folder of
    its own, so that the parse for the next command never writes beside a command running there."""
    return target_path / "warm_parse"


def run_command(args: list[str], env: dict[str, str], cwd: str, output: list[int], manifest) -> int:
    """``dbt <args>`` in this process, as a `dbt` process with ``env``, ``cwd`` and its output on
    the ``output`` descriptors (stdout, stderr) would run it; its exit code."""
    from dbt.cli.main import dbtRunner

    try:
        os.environ.clear()
        os.environ.update(env)  # dbt reads its DBT_ variables when the command starts
        os.chdir(cwd)
        os.dup2(output[0], 1)
        os.dup2(output[1], 2)
        result = dbtRunner(manifest=manifest).invoke(args)
        # As the `dbt` command exits: 0 done, 1 a model or test failed, 2 dbt itself failed.
        return 0 if result.success else 2 if result.exception is not None else 1
    except BaseException:
        traceback.print_exc()
        return 2
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def receive(connection: socket.socket) -> tuple[dict, list[int]]:
    data, descriptors, _flags, _address = socket.recv_fds(connection, MAX_REQUEST_BYTES, 2)
    while data and not data.endswith(b"\n"):
        more = connection.recv(MAX_REQUEST_BYTES)
        if not more:
            break
        data += more
    return json.loads(data), descriptors


def reply(connection: socket.socket, message: dict) -> None:
    with contextlib.suppress(OSError):  # the client is gone (interrupted): nothing to tell
        connection.sendall(json.dumps(message).encode() + b"\n")


def listen(address: str) -> socket.socket:
    """Listen on ``address``. The socket appears under its name only once it listens, so that
    its existence means a warm process is there; a client that comes before dbt is imported
    waits for it, connected."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(f"{address}.{os.getpid()}")
    listener.listen(8)
    os.rename(f"{address}.{os.getpid()}", address)
    return listener


def start_successor(address: str, run_pid: int, request: ParseRequest) -> None:
    """The warm process for the next command, which imports dbt and parses for the same database
    while this one runs its command, on the CPU the command leaves (at a lower priority)."""
    start(address, run_pid, niceness=SUCCESSOR_NICENESS, first_parse=request)


def start(address: str, run_pid: int, niceness: int = 0, first_parse: ParseRequest | None = None) -> subprocess.Popen:
    """A warm process listening on ``address``, which ends when ``run_pid`` does (see ``main``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "orchestration.warm_dbt.server", address, str(run_pid), str(niceness),
         json.dumps(first_parse)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def serve(listener: socket.socket, address: str, run_pid: int, manifests: Manifests) -> int:
    """Answer requests until a command has run or ``stop`` came: the process's exit code."""
    successor_wanted = True
    while True:
        connection, _ = listener.accept()
        try:
            request, descriptors = receive(connection)
        except (OSError, ValueError):
            connection.close()
            continue
        try:
            command = request.get("command")
            if command == "prepare":
                manifests.get_or_none(request)
            elif command == "status":
                reply(connection, {"pid": os.getpid(), "parses": manifests.parses})
            elif command == "stop":
                return 0
            elif command == "last":
                successor_wanted = False
            elif command == "run":
                parse_for = parse_request(request["args"], request["env"], request["cwd"])
                listener.close()
                os.unlink(address)
                if successor_wanted:  # else it would import dbt and parse for a command that never comes
                    start_successor(address, run_pid, parse_for)
                _command_priority()
                reply(connection, {"pid": os.getpid()})
                manifest = manifests.get_or_none(parse_for)
                code = run_command(request["args"], request["env"], request["cwd"], descriptors, manifest)
                reply(connection, {"exit_code": code})
                _finished_command.append(connection)  # kept open until the process ends
                return code
        finally:
            for descriptor in descriptors:
                os.close(descriptor)
            if connection not in _finished_command:
                connection.close()


def _command_priority() -> None:
    """The command runs at the run's own priority: the lower one was for warming up beside the
    command before. Lowering a niceness needs the privilege to (root has it); without it the
    command keeps ``SUCCESSOR_NICENESS``, never more (``main`` sets it, it does not add to it)."""
    with contextlib.suppress(PermissionError):
        os.setpriority(os.PRIO_PROCESS, 0, 0)


def _exit_now() -> None:
    """The last exit hook: dbt-duckdb's own, registered after it, has closed the database by now.
    Tearing down the thousands of modules dbt imported would only hold up the command's end."""
    logging.shutdown()  # flush dbt's log file
    os._exit(0)


def _end_with(run_pid: int) -> None:
    """End this process once the run's process is gone: a killed run cannot stop it."""

    def watch() -> None:
        while running(run_pid):
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def main(address: str, run_pid: int, niceness: int, first_parse: ParseRequest | None) -> None:
    atexit.register(_exit_now)  # before dbt's import, so that it runs after dbt-duckdb's exit hook
    # The niceness asked for, not added to the parent's: a successor started by a warm process
    # still at SUCCESSOR_NICENESS would otherwise run at twice that, and its successor at 19.
    os.nice(max(0, niceness - os.nice(0)))
    _end_with(run_pid)
    listener = listen(address)
    with loading_for_good():
        import dbt.cli.main  # noqa: F401  # the import takes seconds: done before the command comes
    manifests = Manifests()
    if first_parse:
        manifests.get_or_none(first_parse)
    sys.exit(serve(listener, address, run_pid, manifests))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]))
