"""The single-machine engine (``duckdb``): the stages' own functions, in the run's process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paperhouse.engines.base import DBT_TARGETS

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    import polars as pl

    from paperhouse.dedup.registry import Resolution
    from paperhouse.ingest.parse_cache import Intake
    from paperhouse.nlp.analysis import CorpusAnalysis
    from paperhouse.quality.gx import SuiteResult
    from paperhouse.quality.suites import Suite


class LocalCompute:
    """The single-machine engine: the functions themselves."""

    name = "duckdb"
    dbt_target = DBT_TARGETS["duckdb"]
    dbt_vars: dict[str, str] = {}  # noqa: RUF012 (read only)

    def ingest(self, seeds_dir: Path, build_database: Path, run_id: str | None, full_refresh: bool) -> Intake:
        from paperhouse.engines.spark.handover import drop_parquet_views
        from paperhouse.ingest import parse_cache
        from paperhouse.warehouse.database import connect

        with connect(build_database) as con:
            drop_parquet_views(con)  # a Spark run's, on this warehouse before
            return parse_cache.ingest(con, seeds_dir, run_id, full_refresh)

    def assign_papers(
        self, records: pl.DataFrame, registry: pl.DataFrame, run_id: str | None, now: datetime
    ) -> Resolution:
        from paperhouse.dedup import papers as dedup
        from paperhouse.dedup.registry import resolve

        return resolve(dedup.assign_papers(records), registry, run_id, now)

    def analyse(self, papers: pl.DataFrame, previous_topics: int | None) -> CorpusAnalysis:
        from paperhouse.nlp.analysis import analyse

        return analyse(papers, previous_topics=previous_topics)

    def before_models(self, build_database: Path) -> None:
        pass  # dbt-duckdb reads and writes the build database itself

    def validate(self, build_database: Path, suites: list[Suite]) -> list[SuiteResult]:
        from paperhouse.quality.validation import suite_worker

        return suite_worker().validate(build_database, suites)

    def after_models(self, build_database: Path) -> None:
        pass

    def close(self) -> None:
        pass
