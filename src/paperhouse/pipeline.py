"""The pipeline's runner, found by name: the `paperhouse run` command and the bench's measured runs
both start here, and neither imports the orchestration package.

The runner is an entry point (``pyproject.toml``: group ``paperhouse.runner``, name ``dagster``),
``orchestration.runner.run_all``: the plain-Python package stays free of Dagster and never imports
the layer above it, yet its command line can start a run.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from paperhouse.common.workers import loading_for_good
from paperhouse.settings import RUNNER_GROUP, RUNNER_NAME


def load_runner():
    """The runner (``run_all``), with Great Expectations imported in the suite worker on the other
    core while Dagster loads here, and the garbage collector off while it does."""
    with loading_for_good():
        from paperhouse.quality.validation import suite_worker

        suite_worker()
        (runner,) = entry_points(group=RUNNER_GROUP, name=RUNNER_NAME)
        run_all = runner.load()
    return run_all
