"""What an engine is (``Compute``) and which one a run uses.

``duckdb``: Polars and NumPy in the run's process, dbt-duckdb for the models (the default).
``spark``: the same stages as Spark jobs (``paperhouse.engines.spark``), dbt-spark for the models. Both
read the seeds folder and leave the same tables in the build database, which is published as
the one DuckDB file readers open (docs/contract.md), so everything after the models is shared.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, get_args

from paperhouse.settings import Engine, settings

if TYPE_CHECKING:
    from datetime import datetime

    import polars as pl

    from paperhouse.dedup.registry import Resolution
    from paperhouse.ingest.parse_cache import Intake
    from paperhouse.nlp.analysis import CorpusAnalysis
    from paperhouse.quality.gx import SuiteResult
    from paperhouse.quality.suites import Suite

DEFAULT_ENGINE = "duckdb"
ENGINES = get_args(Engine)
# The dbt profile's output of each engine (dbt_project/profiles.yml).
DBT_TARGETS = {"duckdb": "warehouse", "spark": "spark"}


def selected_engine(name: str | None = None) -> str:
    """``name``, else ``$PAPERHOUSE_ENGINE``, else ``duckdb``."""
    engine = (name or settings().engine).strip().lower()
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    return engine


def spark_warehouse_dir(warehouse_file: Path, folder: Path | None = None) -> Path:
    """The Spark engine's Parquet folder: ``folder``, else ``$PAPERHOUSE_SPARK_WAREHOUSE``, else
    ``spark-warehouse`` beside the published warehouse file."""
    chosen = folder or settings().spark_warehouse
    return Path(chosen).expanduser().resolve() if chosen else warehouse_file.parent / "spark-warehouse"


class Compute(Protocol):
    """What an engine computes for the assets; every frame in and out is a Polars frame of the
    schema the single-machine functions use, so the assets' tables and checks are the same."""

    name: str
    dbt_target: str
    dbt_vars: dict[str, str]  # the target's own dbt variables

    def ingest(self, seeds_dir: Path, build_database: Path, run_id: str | None, full_refresh: bool) -> Intake:
        """``raw.source_records`` and ``raw.seed_files`` in the build database
        (``paperhouse.ingest.parse_cache.ingest``)."""
        ...

    def assign_papers(
        self, records: pl.DataFrame, registry: pl.DataFrame, run_id: str | None, now: datetime
    ) -> Resolution:
        """``paperhouse.dedup.papers.assign_papers``, its papers named from the paper-id ``registry``
        (``paperhouse.dedup.registry.resolve``)."""
        ...

    def analyse(self, papers: pl.DataFrame, previous_topics: int | None) -> CorpusAnalysis:
        """``paperhouse.nlp.analysis.analyse``."""
        ...

    def before_models(self, build_database: Path) -> None:
        """Hand the raw tables to the engine's dbt target, before `dbt build`."""
        ...

    def validate(self, build_database: Path, suites: list[Suite]) -> list[SuiteResult]:
        """The Great Expectations suites against the engine's tables (``paperhouse.quality.suites``)."""
        ...

    def after_models(self, build_database: Path) -> None:
        """Bring the marts dbt built into the build database, after `dbt build`."""
        ...

    def close(self) -> None: ...
