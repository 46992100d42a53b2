"""The pipeline's runner, loaded as a process that runs the pipeline loads it: the `paperhouse run`
command and the bench's measured runs both start here (so neither imports the other)."""

from __future__ import annotations

from paperhouse.workers import loading_for_good


def load_runner():
    """``orchestration.runner.run_all``, with Great Expectations imported in the suite worker on the
    other core while Dagster loads here, and the garbage collector off while it does."""
    with loading_for_good():
        from paperhouse.quality import suite_worker

        suite_worker()
        from orchestration.runner import run_all
    return run_all
