"""dbt in a worker process that lives as long as the run, with the project parsed once.

A `dbt` subprocess per command (what dagster-dbt's ``DbtCliResource`` starts) spends about
4 s importing dbt and 1.5 s (nothing changed) to 4.5 s (a new warehouse: dbt parses everything
again when its profile changes) before its first model, and a run calls dbt twice. The worker
is started when a run starts: it imports dbt and parses the project on the second core while
the Python steps run, keeps the manifest, and runs each command with it. dbt still runs beside
the run's process, which turns its results into Dagster events as they come (in the same
process, dbt and Dagster's event log would share one interpreter lock: a build took 40% longer).

The manifest depends on the build database's file name (dbt-duckdb names the database after
it), not on its folder. So the project is parsed for that name alone, and a new warehouse's
first parse starts from the project's own (``dbt_project/target``, made when Dagster loads the
definitions): dbt's partial parsing then reads it back instead of parsing every file again.

Results reach Dagster as dagster-dbt's own ``DbtCliEventMessage``s, so models become
materialisations and dbt tests asset checks exactly as with the subprocess.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import signal
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from paperhouse.faults import failpoint
from paperhouse.settings import DEFAULT_WAREHOUSE
from paperhouse.workers import SPAWN, WorkerProcess, loading_for_good

if TYPE_CHECKING:
    from dagster import AssetExecutionContext

# The events dagster-dbt turns into materialisations and check results; the rest only go to dbt's log.
RESULT_EVENTS = frozenset({"LogSeedResult", "LogModelResult", "LogSnapshotResult", "LogTestResult"})
# The file name of the database the project is parsed for when no warehouse is named: the default's.
DEFAULT_DATABASE_NAME = Path(DEFAULT_WAREHOUSE).name
PARTIAL_PARSE_FILE = "partial_parse.msgpack"


class DbtFailed(Exception):
    """A dbt command did not succeed; the message has dbt's errors."""


def project_stamp(project_dir: Path) -> float:
    """The newest modification time of the project's models, tests, macros and YAML."""
    sources = (p for p in project_dir.rglob("*") if p.suffix in {".sql", ".yml"} and "target" not in p.parts)
    return max((p.stat().st_mtime for p in sources), default=0.0)


def common_args(project_dir: Path, target_path: Path, database: str | Path) -> list[str]:
    """Flags of every dbt call: the project, where its artifacts and log go, and the database it
    builds (to parse, its file name is enough). dbt's log file stops at info: formatting its debug
    lines cost a build of the seeds half a second. Nothing goes to the console, which in the
    worker is nowhere: results and errors come as events, and formatting them for it cost a build
    of the seeds 0.3 s."""
    return ["--project-dir", str(project_dir), "--profiles-dir", str(project_dir), "--target-path", str(target_path),
            "--log-path", str(target_path), "--log-level-file", "info", "--log-level", "none",
            "--no-send-anonymous-usage-stats",
            "--vars", json.dumps({"database_path": str(database)})]


def parse(project_dir: Path, target_path: Path, database_name: str = DEFAULT_DATABASE_NAME):
    """`dbt parse` in this process for a build database named ``database_name``: the manifest (also
    written to ``target_path``). A target folder without a parse of its own starts from the
    project's, which dbt reuses when it was made for the same file name."""
    from dbt.cli.main import dbtRunner

    project_parse = project_dir / "target" / PARTIAL_PARSE_FILE
    if not (target_path / PARTIAL_PARSE_FILE).exists() and project_parse.exists() and target_path != project_parse.parent:
        target_path.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(project_parse, target_path / PARTIAL_PARSE_FILE)
    result = dbtRunner().invoke(["parse", *common_args(project_dir, target_path, database_name)])
    if not result.success:
        raise DbtFailed(f"dbt parse of {project_dir} failed: {result.exception}")
    return result.result


@lru_cache(maxsize=4)
def _parsed(project_dir: Path, target_path: Path, database_name: str, stamp: float):
    return parse(project_dir, target_path, database_name)


def parsed(project_dir: Path, target_path: Path, database: Path):
    """The manifest for ``database``, parsed again only when a project file changed."""
    return _parsed(project_dir, target_path, database.name, project_stamp(project_dir))


def run_here(args: list[str], project_dir: Path, target_path: Path, database: Path,
             on_result: Callable[[dict[str, Any]], None]) -> None:
    """``dbt <args>`` on ``database`` in this process; each result event goes to ``on_result`` as
    the dict of a line of dbt's JSON log. Raises ``DbtFailed`` with dbt's errors.

    The profile sets ``keep_open: true`` (opening the file for each model and test cost a build of
    the seeds a second), so the database is closed here when the command ends: no connection
    stays open across a dbt call.
    """
    from dbt.cli.main import dbtRunner
    from dbt_common.events.functions import msg_to_dict

    errors: list[str] = []

    def on_event(message) -> None:
        if message.info.level == "error":
            errors.append(message.info.msg)
        if message.info.name in RESULT_EVENTS:
            on_result(msg_to_dict(message))

    manifest = parsed(project_dir, target_path, database)
    try:
        result = dbtRunner(manifest=manifest, callbacks=[on_event]).invoke(
            [*args, *common_args(project_dir, target_path, database)]
        )
    finally:
        _close_database()
    if not result.success:
        details = "\n".join(errors) or str(result.exception or "see dbt.log")
        raise DbtFailed(f"`dbt {' '.join(args)}` failed:\n{details}")


def _close_database() -> None:
    """Close the database dbt-duckdb keeps open (its one environment per process)."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    with DuckDBConnectionManager._LOCK:
        if DuckDBConnectionManager._ENV is not None:
            DuckDBConnectionManager._ENV.close()
            DuckDBConnectionManager._ENV = None


class DbtWorker(WorkerProcess):
    """Runs dbt commands in a worker process, streaming their result events back."""

    def __init__(self) -> None:
        self._results = SPAWN.Queue()
        self.broken = False  # its process was killed or died: start another
        super().__init__(_start_worker, self._results)

    def prepare(self, project_dir: Path, target_path: Path, database: Path) -> Future:
        """Parse the project for ``database`` now, so that the first command finds it parsed."""
        return self.submit(_parse_ahead, project_dir, target_path, database)

    def run(self, args: list[str], project_dir: Path, target_path: Path, database: Path) -> Iterator[dict[str, Any]]:
        """Yield the result events of ``dbt <args>`` as they come; raise what the command raised."""
        try:
            worker_pid = self.pid  # asked before the command occupies the worker
        except BrokenProcessPool:
            self.broken = True
            raise
        command = self.submit(_run_in_worker, args, project_dir, target_path, database)
        ended = False
        try:
            while True:
                try:
                    item = self._results.get(timeout=0.5)
                except queue.Empty:
                    if command.done() and command.exception() is not None:
                        break  # the worker died before it could say the command ended
                    continue
                if item is None:  # the command ended
                    ended = True
                    break
                yield item
        finally:
            if not ended and not command.done():
                # Stopped early (the run was interrupted): a dbt command cannot be cancelled from
                # outside, so its worker goes; the next run recovers the build database if need be.
                os.kill(worker_pid, signal.SIGKILL)
                self.broken = True
        try:
            command.result()
        except BrokenProcessPool:
            self.broken = True
            raise


_worker: DbtWorker | None = None


def dbt_worker() -> DbtWorker:
    """The process's dbt worker, started on first use (again after it was stopped) and stopped
    when the process exits."""
    global _worker
    if _worker is None or _worker.broken:
        _worker = DbtWorker()
        atexit.register(_worker.close)
    return _worker


_worker_results: Any = None  # in the worker: the queue its commands' results go to


def _start_worker(results) -> None:
    """In the worker: keep the results queue and import dbt (about 4 s) before the first command
    needs it. dbt's own log is ``dbt.log`` in the target folder."""
    global _worker_results
    _worker_results = results
    import dbt.cli.main  # noqa: F401


def _parse_ahead(project_dir: Path, target_path: Path, database: Path) -> None:
    """In the worker: the parse its commands will use, kept out of the collector's sweeps (with
    dbt's import loaded the same way, the worker's collection in a seeds run went from 0.85 s to
    0.42 s). Nothing is returned: sending the manifest back only had the run's process unpickle
    it (the run's own collection: 0.49 s, then 0.31-0.34 s)."""
    with loading_for_good():
        parsed(project_dir, target_path, database)


def _run_in_worker(args: list[str], project_dir: Path, target_path: Path, database: Path) -> None:
    try:
        run_here(args, project_dir, target_path, database, _worker_results.put)
    finally:
        _worker_results.put(None)


def stream_build(context: AssetExecutionContext, database: Path, target_path: Path) -> Iterator:
    """`dbt build` of the models and tests of ``context``'s selection, as Dagster events."""
    # Imported here, not at the top: the dbt worker imports this module, and needs no Dagster.
    from dagster_dbt.asset_utils import get_updated_cli_invocation_params_for_context
    from dagster_dbt.core.dbt_cli_event import DbtCoreCliEventMessage

    params = get_updated_cli_invocation_params_for_context(context=context, manifest={}, dagster_dbt_translator=None)
    project = params.dbt_project
    args = ["build", *params.selection_args]
    if params.indirect_selection:
        args += ["--indirect-selection", params.indirect_selection]
    for raw_event in dbt_worker().run(args, Path(project.project_dir), target_path, database):
        event = DbtCoreCliEventMessage(raw_event=raw_event, event_history_metadata={})
        print(event, flush=True)  # dbt's result line ("3 of 95 OK created ..."), in the step's output
        for dagster_event in event.to_default_asset_events(
            manifest=params.manifest, dagster_dbt_translator=params.dagster_dbt_translator,
            context=context, target_path=target_path, project=project,
        ):
            failpoint("dbt.event")
            yield dagster_event
