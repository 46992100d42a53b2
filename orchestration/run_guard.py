"""The run guard: what a run holds and repairs before it writes the warehouse's build database.

Runs from the UI, the sensor, the schedule and `paperhouse run` all take the warehouse's run lock,
so only one of them writes at a time. Once a run holds it, the guard marks runs that died holding it
as failed, frees the pool slots they held, and makes sure the build database opens (recovering it
from the published warehouse when a killed run left it damaged). The warehouse resource holds a
guard for the length of a run; its connections are its own concern.
"""

from __future__ import annotations

from dataclasses import dataclass

from dagster import DagsterRunStatus, InitResourceContext

from paperhouse.settings import Paths
from paperhouse.warehouse import locking
from paperhouse.warehouse.publishing import prepare_build_database, remove_stale_files


@dataclass
class RunGuard:
    lease: locking.Lease

    @classmethod
    def enter(cls, context: InitResourceContext, paths: Paths, timeout: float) -> RunGuard:
        """Take the run lock (waiting up to ``timeout`` seconds for another run), then clean up
        after the runs that died holding it and make the build database usable."""
        run_id = context.run.run_id
        if locking.held_lease(paths.run_lock) is None:
            context.log.info(f"waiting for the run lock {paths.run_lock} (up to {timeout:.0f} s)")
        lease = locking.acquire(paths.run_lock, timeout=timeout, run_id=run_id)
        try:
            _fail_runs_that_died(context, run_id, lease.previous)
            lease.previous = None
            remove_stale_files(paths.warehouse)
            status = prepare_build_database(paths.build_database, paths.warehouse)
            (context.log.info if status in ("ok", "new") else context.log.warning)(f"build database: {status}")
        except BaseException:
            locking.release(lease)
            raise
        return cls(lease)

    def leave(self) -> None:
        locking.release(self.lease)


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
