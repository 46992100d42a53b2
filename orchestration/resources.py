from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import duckdb
from dagster import ConfigurableResource

from paperhouse.settings import Paths, resolve_paths
from paperhouse.warehouse import connect


class WarehouseResource(ConfigurableResource):
    """Where the seeds are read and the warehouse is built and published.

    Empty fields fall back to ``PAPERHOUSE_SEEDS_DIR`` / ``PAPERHOUSE_WAREHOUSE`` and then to
    the defaults, resolved when a step runs, so the UI and the CLI build the same files.
    Every write goes to the build database, one connection at a time, closed before dbt runs.
    """

    seeds_dir: str = ""
    warehouse: str = ""

    @property
    def paths(self) -> Paths:
        return resolve_paths(self.seeds_dir or None, self.warehouse or None)

    @contextmanager
    def build_connection(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        with connect(self.paths.build_database, read_only=read_only) as con:
            yield con
