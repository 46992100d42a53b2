"""The two engines of the pipeline's compute and how to choose one.

``duckdb``: Polars and NumPy in the run's process, dbt-duckdb for the models (the default).
``spark``: the same stages as Spark jobs (``paperhouse.spark``), dbt-spark for the models. Both
read the seeds folder and leave the same tables in the build database, which is published as
the one DuckDB file readers open (docs/contract.md), so everything after the models is shared.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    import polars as pl

    from paperhouse.analysis import CorpusAnalysis
    from paperhouse.gx_validation import SuiteResult
    from paperhouse.parse_cache import Intake
    from paperhouse.registry import Resolution
    from paperhouse.suites import Suite

ENGINE_ENV = "PAPERHOUSE_ENGINE"
DEFAULT_ENGINE = "duckdb"
ENGINES = ("duckdb", "spark")
SPARK_WAREHOUSE_ENV = "PAPERHOUSE_SPARK_WAREHOUSE"
# The dbt profile's output of each engine (dbt_project/profiles.yml).
DBT_TARGETS = {"duckdb": "warehouse", "spark": "spark"}


def selected_engine(name: str | None = None) -> str:
    """``name``, else ``$PAPERHOUSE_ENGINE``, else ``duckdb``."""
    engine = (name or os.environ.get(ENGINE_ENV) or DEFAULT_ENGINE).strip().lower()
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    return engine


def spark_warehouse_dir(warehouse_file: Path, folder: Path | None = None) -> Path:
    """The Spark engine's Parquet folder: ``folder``, else ``$PAPERHOUSE_SPARK_WAREHOUSE``, else
    ``spark-warehouse`` beside the published warehouse file."""
    chosen = folder or os.environ.get(SPARK_WAREHOUSE_ENV)
    return Path(chosen).expanduser().resolve() if chosen else warehouse_file.parent / "spark-warehouse"


class Compute(Protocol):
    """What an engine computes for the assets; every frame in and out is a Polars frame of the
    schema the single-machine functions use, so the assets' tables and checks are the same."""

    name: str
    dbt_target: str
    dbt_vars: dict[str, str]  # the target's own dbt variables

    def ingest(self, seeds_dir: Path, build_database: Path, run_id: str | None, full_refresh: bool) -> Intake:
        """``raw.source_records`` and ``raw.seed_files`` in the build database
        (``paperhouse.parse_cache.ingest``)."""
        ...

    def assign_papers(
        self, records: pl.DataFrame, registry: pl.DataFrame, run_id: str | None, now: datetime
    ) -> Resolution:
        """``paperhouse.dedup.assign_papers``, its papers named from the paper-id ``registry``
        (``paperhouse.registry.resolve``)."""
        ...

    def analyse(self, papers: pl.DataFrame, previous_topics: int | None) -> CorpusAnalysis:
        """``paperhouse.analysis.analyse``."""
        ...

    def before_models(self, build_database: Path) -> None:
        """Hand the raw tables to the engine's dbt target, before `dbt build`."""
        ...

    def validate(self, build_database: Path, suites: list[Suite]) -> list[SuiteResult]:
        """The Great Expectations suites against the engine's tables (``paperhouse.suites``)."""
        ...

    def after_models(self, build_database: Path) -> None:
        """Bring the marts dbt built into the build database, after `dbt build`."""
        ...

    def close(self) -> None: ...


class LocalCompute:
    """The single-machine engine: the functions themselves."""

    name = "duckdb"
    dbt_target = DBT_TARGETS["duckdb"]
    dbt_vars: dict[str, str] = {}  # noqa: RUF012 (read only)

    def ingest(self, seeds_dir: Path, build_database: Path, run_id: str | None, full_refresh: bool) -> Intake:
        from paperhouse import parse_cache
        from paperhouse.spark.handover import drop_parquet_views
        from paperhouse.warehouse import connect

        with connect(build_database) as con:
            drop_parquet_views(con)  # a Spark run's, on this warehouse before
            return parse_cache.ingest(con, seeds_dir, run_id, full_refresh)

    def assign_papers(
        self, records: pl.DataFrame, registry: pl.DataFrame, run_id: str | None, now: datetime
    ) -> Resolution:
        from paperhouse import dedup
        from paperhouse.registry import resolve

        return resolve(dedup.assign_papers(records), registry, run_id, now)

    def analyse(self, papers: pl.DataFrame, previous_topics: int | None) -> CorpusAnalysis:
        from paperhouse.analysis import analyse

        return analyse(papers, previous_topics=previous_topics)

    def before_models(self, build_database: Path) -> None:
        pass  # dbt-duckdb reads and writes the build database itself

    def validate(self, build_database: Path, suites: list[Suite]) -> list[SuiteResult]:
        from paperhouse.quality import suite_worker

        return suite_worker().validate(build_database, suites)

    def after_models(self, build_database: Path) -> None:
        pass

    def close(self) -> None:
        pass


def compute_for(
    engine: str, warehouse_file: Path, spark_master: str | None = None, spark_warehouse: Path | None = None
) -> Compute:
    if engine == "spark":
        from paperhouse.spark.compute import SparkCompute

        return SparkCompute(spark_warehouse_dir(warehouse_file, spark_warehouse), master=spark_master)
    return LocalCompute()
