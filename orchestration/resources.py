from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import polars as pl
from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from orchestration.run_guard import RunGuard
from paperhouse.engines import Compute
from paperhouse.quality import validation as quality
from paperhouse.quality.gx import SuiteResult
from paperhouse.quality.suites import Suite
from paperhouse.settings import Paths, resolve_paths
from paperhouse.warehouse.database import connect, read_frame


class WarehouseResource(ConfigurableResource):
    """Where the seeds are read and the warehouse is built and published.

    Empty fields fall back to ``PAPERHOUSE_SEEDS_DIR`` / ``PAPERHOUSE_WAREHOUSE`` and then to
    the defaults, resolved when a step runs, so the UI and the CLI build the same files.
    Every write goes to the build database, one connection at a time, closed before dbt runs.

    In a run (not in a sensor or schedule), the resource holds the warehouse's ``RunGuard`` from
    the first step to the last (``orchestration.run_guard``: the run lock, the runs that died
    holding it, the build database's recovery).
    """

    seeds_dir: str = Field(default="", description="Folder of *.txt lists (empty: $PAPERHOUSE_SEEDS_DIR, then seeds).")
    warehouse: str = Field(
        default="", description="Published warehouse file (empty: $PAPERHOUSE_WAREHOUSE, then data/paperhouse.duckdb)."
    )
    lock_timeout_seconds: float = Field(
        default=1800.0,
        description="How long a run waits for another run on the same warehouse to finish before it fails.",
    )
    _guard: RunGuard | None = PrivateAttr(default=None)

    @property
    def paths(self) -> Paths:
        return resolve_paths(self.seeds_dir or None, self.warehouse or None)

    @contextmanager
    def build_connection(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        with connect(self.paths.build_database, read_only=read_only) as con:
            yield con

    def read_frame(self, sql: str, large: tuple[str, ...] = ()) -> pl.DataFrame:
        """A query's result (``paperhouse.warehouse.database.read_frame``), on a connection closed before it
        returns: an open connection keeps the blocks it read cached (1.1 GB for 10^6 records' texts)
        under whatever the step computes next."""
        with self.build_connection() as con:
            return read_frame(con, sql, large=large)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if context.run is None:  # a sensor or schedule evaluation: it only reads the seeds folder
            return
        self._guard = RunGuard.enter(context, self.paths, self.lock_timeout_seconds)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._guard is not None:
            self._guard.leave()
            self._guard = None


class GreatExpectationsResource(ConfigurableResource):
    """Runs the Great Expectations suites in the process's suite worker (``quality.SuiteWorker``),
    started when a run starts so that importing GX overlaps the run's first steps."""

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if context.run is not None:
            quality.suite_worker()

    def validate(self, database: Path, suites: list[Suite], compute: Compute) -> list[SuiteResult]:
        """The suites against the build database's tables on the DuckDB engine (in the suite worker),
        against Spark DataFrames of the same tables on the Spark engine (``Compute.validate``)."""
        return compute.validate(database, suites)
