"""Stage 5, engines: where the stages' compute runs, behind one interface (``base.Compute``).

``local`` runs them in the run's process (Polars, NumPy, dbt-duckdb: the default); ``spark``
runs them as Spark jobs with dbt-spark (``docs/spark.md``). Either leaves the same tables in the
build database. Hands on: a ``Compute`` the Dagster assets call, whichever engine was chosen.
"""

from __future__ import annotations

from pathlib import Path

from paperhouse.engines.base import (
    DBT_TARGETS,
    DEFAULT_ENGINE,
    ENGINES,
    Compute,
    selected_engine,
    spark_warehouse_dir,
)

__all__ = [
    "DBT_TARGETS",
    "DEFAULT_ENGINE",
    "ENGINES",
    "Compute",
    "compute_for",
    "selected_engine",
    "spark_warehouse_dir",
]


def compute_for(
    engine: str, warehouse_file: Path, spark_master: str | None = None, spark_warehouse: Path | None = None
) -> Compute:
    if engine == "spark":
        from paperhouse.engines.spark.compute import SparkCompute

        return SparkCompute(spark_warehouse_dir(warehouse_file, spark_warehouse), master=spark_master)
    from paperhouse.engines.local import LocalCompute

    return LocalCompute()
