"""The `engine` resource: where the Python stages compute and which dbt target builds the models.

``duckdb`` (the default) computes with Polars and NumPy in the run's process and builds the models
with dbt-duckdb; ``spark`` runs the same stages as Spark jobs (``paperhouse.engines.spark``) and the same
models with dbt-spark. The assets call the resource's stage methods and never ask which engine
it is. ``paperhouse run --engine``, the launchpad's resource config, or ``PAPERHOUSE_ENGINE``
(``paperhouse.settings``) chooses; the dbt step gets the choice as its command's ``--target`` and
``--vars``, never through the environment.
"""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from paperhouse import engines
from paperhouse.settings import variable


class EngineResource(ConfigurableResource):
    """The engine of the Python stages, the dbt target and the Great Expectations suites."""

    name: str = Field(
        default="", description=f"duckdb or spark (empty: ${variable('engine')}, then {engines.DEFAULT_ENGINE})."
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

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._compute is not None:
            self._compute.close()
            self._compute = None
