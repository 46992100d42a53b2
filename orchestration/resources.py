from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import duckdb
import polars as pl
from dagster import ConfigurableResource, DagsterRunStatus, InitResourceContext
from pydantic import Field, PrivateAttr

from orchestration.dbt_runner import dbt_worker
from paperhouse import locking, quality
from paperhouse.settings import DBT_PROJECT_DIR, Paths, resolve_paths
from paperhouse.warehouse import connect, prepare_build_database, read_frame, remove_stale_files


class WarehouseResource(ConfigurableResource):
    """Where the seeds are read and the warehouse is built and published.

    Empty fields fall back to ``PAPERHOUSE_SEEDS_DIR`` / ``PAPERHOUSE_WAREHOUSE`` and then to
    the defaults, resolved when a step runs, so the UI and the CLI build the same files.
    Every write goes to the build database, one connection at a time, closed before dbt runs.

    In a run (not in a sensor or schedule), the resource holds the warehouse's run lock from
    the first step to the last: runs from the UI, the sensor, the schedule and `paperhouse run`
    all take the same lock, so only one of them writes at a time. Once it holds the lock, it
    marks runs that died holding it as failed, and makes sure the build database opens
    (recovering it from the published warehouse when a killed run left it damaged).
    """

    seeds_dir: str = Field(default="", description="Folder of *.txt lists (empty: $PAPERHOUSE_SEEDS_DIR, then seeds).")
    warehouse: str = Field(
        default="", description="Published warehouse file (empty: $PAPERHOUSE_WAREHOUSE, then data/paperhouse.duckdb)."
    )
    lock_timeout_seconds: float = Field(
        default=1800.0,
        description="How long a run waits for another run on the same warehouse to finish before it fails.",
    )
    _lease: Any = PrivateAttr(default=None)

    @property
    def paths(self) -> Paths:
        return resolve_paths(self.seeds_dir or None, self.warehouse or None)

    @contextmanager
    def build_connection(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        with connect(self.paths.build_database, read_only=read_only) as con:
            yield con

    def read_frame(self, sql: str, large: tuple[str, ...] = ()) -> pl.DataFrame:
        """A query's result (``paperhouse.warehouse.read_frame``), on a connection closed before it
        returns: an open connection keeps the blocks it read cached (1.1 GB for 10^6 records' texts)
        under whatever the step computes next."""
        with self.build_connection() as con:
            return read_frame(con, sql, large=large)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if context.run is None:  # a sensor or schedule evaluation: it only reads the seeds folder
            return
        run_id = context.run.run_id
        paths = self.paths
        if locking.held_lease(paths.run_lock) is None:
            context.log.info(f"waiting for the run lock {paths.run_lock} (up to {self.lock_timeout_seconds:.0f} s)")
        self._lease = locking.acquire(paths.run_lock, timeout=self.lock_timeout_seconds, run_id=run_id)
        try:
            _fail_runs_that_died(context, run_id, self._lease.previous)
            self._lease.previous = None
            remove_stale_files(paths.warehouse)
            status = prepare_build_database(paths.build_database, paths.warehouse)
            (context.log.info if status in ("ok", "new") else context.log.warning)(f"build database: {status}")
            # dbt's worker imports dbt and parses the project for this build database while the
            # Python steps run; the parse needs no database, so it takes no lock.
            dbt_worker().prepare(DBT_PROJECT_DIR, paths.dbt_target, paths.build_database)
        except BaseException:  # teardown is not called when setup fails: do not keep the lock
            locking.release(self._lease)
            self._lease = None
            raise

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._lease is not None:
            locking.release(self._lease)
            self._lease = None


def _fail_runs_that_died(context: InitResourceContext, current_run_id: str, previous: dict | None) -> None:
    """A run that held the lock and did not release it was killed. Dagster still shows it as
    started, and the `duckdb_writer` pool slot its step held stays claimed: every later run
    would wait for that slot forever. Record the run as failed and free what it held."""
    instance = context.instance
    if instance is None:
        return
    run_id = (previous or {}).get("run_id")
    if run_id and run_id != current_run_id:
        run = instance.get_run_by_id(run_id)
        if run is not None and run.status in (DagsterRunStatus.STARTED, DagsterRunStatus.STARTING):
            instance.report_run_failed(
                run,
                message=(
                    f"The process running this run (pid {previous.get('pid')}) died without finishing: run "
                    f"{current_run_id} found the warehouse lock released. The published warehouse was not changed."
                ),
            )
            context.log.warning(f"marked run {run_id} as failed: its process died while holding the warehouse lock")
    _free_pool_slots_of_finished_runs(context, current_run_id)


def _free_pool_slots_of_finished_runs(context: InitResourceContext, current_run_id: str) -> None:
    storage = context.instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return
    holders = set(storage.get_concurrency_run_ids())
    for key in storage.get_concurrency_keys():
        holders.update(slot.run_id for slot in storage.get_concurrency_info(key).claimed_slots)
    for run_id in sorted(holders - {current_run_id}):
        run = context.instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            storage.free_concurrency_slots_for_run(run_id)
            context.log.warning(f"freed the pool slots still held by run {run_id}, which is no longer running")


class GreatExpectationsResource(ConfigurableResource):
    """Runs the Great Expectations suites in the process's suite worker (``quality.SuiteWorker``),
    started when a run starts so that importing GX overlaps the run's first steps."""

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if context.run is not None:
            quality.suite_worker()

    def validate(self, database: Path, suites: list[quality.Suite]) -> list[quality.SuiteResult]:
        return quality.suite_worker().validate(database, suites)

