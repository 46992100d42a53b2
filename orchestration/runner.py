"""Run every asset and check of the code location in-process: what `paperhouse run` does."""

from __future__ import annotations

import os
from contextlib import redirect_stdout
from dataclasses import dataclass, field

from dagster import AssetCheckSeverity, DagsterEventType, DagsterInstance

from orchestration.definitions import build_definitions
from orchestration.warm_dbt.worker import close_warm_dbt
from paperhouse.settings import Paths
from paperhouse.warehouse import locking

INGEST_STEP = "raw__source_records"
ANALYSIS_STEP = "corpus_analysis"


@dataclass
class RunOutcome:
    success: bool
    run_id: str
    log_file: str
    checks_passed: int = 0
    checks_failed: list[str] = field(default_factory=list)  # ERROR severity: "asset:check (what failed)"
    checks_warned: list[str] = field(default_factory=list)  # WARN severity: worth a look, the run goes on
    failed_steps: list[str] = field(default_factory=list)
    ingest: dict = field(default_factory=dict)  # the ingest asset's counts (files parsed, reused, ...)
    step_seconds: dict[str, float] = field(default_factory=dict)  # wall time of each Dagster step

    @property
    def reason(self) -> str:
        if self.checks_failed:  # one line a check: what it asserts and the first rows that break it
            return "check failed: " + "".join(f"\n  {check}" for check in self.checks_failed)
        if self.failed_steps:
            return "step failed: " + "; ".join(self.failed_steps)
        return f"the run did not succeed (see {self.log_file})"


def _instance() -> DagsterInstance:
    # With DAGSTER_HOME set (as `make` does), CLI runs are recorded where the UI shows them.
    return DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else DagsterInstance.ephemeral()


def run_config(
    log_level: str = "WARNING", full_refresh: bool = False, keyphrase_embeddings: bool | None = None
) -> dict:
    """``keyphrase_embeddings`` None leaves the corpus step's default (``$PAPERHOUSE_KEYPHRASE_EMBEDDINGS``)."""
    ops = {INGEST_STEP: {"config": {"full_refresh": full_refresh}}}
    if keyphrase_embeddings is not None:
        ops[ANALYSIS_STEP] = {"config": {"keyphrase_embeddings": keyphrase_embeddings}}
    return {"loggers": {"console": {"config": {"log_level": log_level.upper()}}}, "ops": ops}


def run_all(
    paths: Paths,
    log_level: str = "WARNING",
    full_refresh: bool = False,
    engine: str = "",
    keyphrase_embeddings: bool | None = None,
) -> RunOutcome:
    """Build and publish the warehouse; ``locking.RunLockBusy`` at once when another run holds it.

    The lock is taken here, before Dagster starts (so a refused run does no work and leaves no
    trace), and again, re-entrantly, by the run's ``warehouse`` resource. The warm dbt processes
    the run started are stopped before the lock is let go.
    """
    with locking.run_lock(paths.run_lock, timeout=0):
        defs = build_definitions(seeds_dir=str(paths.seeds_dir), warehouse=str(paths.warehouse), engine=engine)
        job = defs.resolve_job_def("build_warehouse")
        # dbt's own log lines go to stdout; keep them in a file beside the build, not in the summary.
        log_file = paths.build_dir / "run.log"
        try:
            with _instance() as instance, open(log_file, "w") as log, redirect_stdout(log):
                result = job.execute_in_process(
                    run_config=run_config(log_level, full_refresh, keyphrase_embeddings),
                    instance=instance,
                    raise_on_error=False,
                )
                return _outcome(result, str(log_file), instance)
        finally:
            close_warm_dbt()  # the run's last dbt command has run: nothing may write into its build folder


def _outcome(result, log_file: str, instance: DagsterInstance) -> RunOutcome:
    outcome = RunOutcome(success=result.success, run_id=result.run_id, log_file=log_file)
    outcome.step_seconds = {
        stats.step_key: stats.end_time - stats.start_time
        for stats in instance.get_run_step_stats(result.run_id)
        if stats.start_time and stats.end_time
    }
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.passed:
            outcome.checks_passed += 1
            continue
        details = evaluation.description or ""
        failed = outcome.checks_warned if evaluation.severity == AssetCheckSeverity.WARN else outcome.checks_failed
        failed.append(
            f"{evaluation.asset_key.to_user_string()}:{evaluation.check_name}" + (f" ({details})" if details else "")
        )
    for event in result.all_events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            error = event.step_failure_data.error
            message = error.message.strip().splitlines()[0] if error else "unknown error"
            outcome.failed_steps.append(f"{event.step_key}: {message}")
        elif event.event_type == DagsterEventType.ASSET_MATERIALIZATION and event.step_key == INGEST_STEP:
            metadata = event.event_specific_data.materialization.metadata
            outcome.ingest = {
                key: value.value for key, value in metadata.items() if isinstance(value.value, (int, bool))
            }
    return outcome
