"""The `engine` resource: where the Python stages compute and which dbt target builds the models.

``duckdb`` (the default) computes with Polars and NumPy in the run's process and builds the models
with dbt-duckdb; ``spark`` runs the same stages as Spark jobs (``paperhouse.spark``) and the same
models with dbt-spark. The assets call the resource's stage methods and never ask which engine
it is. ``PAPERHOUSE_ENGINE`` (or ``paperhouse run --engine``, or the launchpad's resource config)
chooses.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from paperhouse import engines


class EngineResource(ConfigurableResource):
    """The engine of the Python stages, the dbt target and the Great Expectations suites."""

    name: str = Field(
        default="", description=f"duckdb or spark (empty: ${engines.ENGINE_ENV}, then {engines.DEFAULT_ENGINE})."
    )
    spark_master: str = Field(
        default="",
        description="Spark master for the spark engine: local[2], local-cluster[2,1,1024], spark://host:7077, "
        "yarn, k8s://... (empty: $PAPERHOUSE_SPARK_MASTER, then local[2]).",
    )
    spark_warehouse: str = Field(
        default="",
        description="Folder of the spark engine's Parquet tables, raw inputs and dbt's marts (empty: "
        "$PAPERHOUSE_SPARK_WAREHOUSE, then spark-warehouse beside the warehouse file).",
    )
    _compute: engines.Compute | None = PrivateAttr(default=None)
    _engine_before: str | None = PrivateAttr(default=None)

    @property
    def selected(self) -> str:
        return engines.selected_engine(self.name or None)

    def compute(self, warehouse_file: Path) -> engines.Compute:
        if self._compute is None:
            self._compute = engines.compute_for(
                self.selected,
                warehouse_file,
                spark_master=self.spark_master or None,
                spark_warehouse=Path(self.spark_warehouse) if self.spark_warehouse else None,
            )
        return self._compute

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # The dbt step's process reads the engine from the environment (its profile's target and
        # the Spark warehouse), so a launchpad setting reaches it too; only for the execution: a
        # run executed in a process that goes on (tests, a code server) must not leave it set.
        if self.name:
            self._engine_before = os.environ.get(engines.ENGINE_ENV)
            os.environ[engines.ENGINE_ENV] = self.selected

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._compute is not None:
            self._compute.close()
            self._compute = None
        if self.name:
            if self._engine_before is None:
                os.environ.pop(engines.ENGINE_ENV, None)
            else:
                os.environ[engines.ENGINE_ENV] = self._engine_before
