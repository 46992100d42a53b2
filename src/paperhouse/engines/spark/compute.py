"""The Spark engine's ``Compute`` (``paperhouse.engines``): the stages as Spark jobs.

Frames cross between the driver's Polars and Spark as Arrow. The session starts on the first
stage that needs it and stops with the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from paperhouse.engines.base import DBT_TARGETS
from paperhouse.engines.spark.frames import to_polars
from paperhouse.engines.spark.handover import (
    export_raw_tables,
    import_marts,
    keep_parquet_views,
    raw_table_folder,
    view_parquet_tables,
)
from paperhouse.engines.spark.session import spark_master, spark_session
from paperhouse.ingest.parse_cache import Intake
from paperhouse.nlp.analysis import CorpusAnalysis
from paperhouse.nlp.similar import SIMILAR_SCHEMA
from paperhouse.quality import check_history
from paperhouse.quality.expected_schemas import mart_schemas
from paperhouse.quality.gx import SuiteResult
from paperhouse.quality.suites import Suite
from paperhouse.warehouse.database import connect

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import DataFrame, SparkSession

    from paperhouse.dedup.registry import Resolution


class SparkCompute:
    name = "spark"
    dbt_target = DBT_TARGETS["spark"]

    def __init__(self, warehouse_dir: Path, master: str | None = None) -> None:
        self.warehouse_dir = warehouse_dir
        self.master = master
        # The spark target's warehouse folder (parsed into the marts' locations) and master: variables
        # of the dbt command, not the environment of whichever process runs it.
        self.dbt_vars = {"spark_warehouse": str(warehouse_dir), "spark_master": spark_master(master)}
        self._session: SparkSession | None = None

    @property
    def session(self) -> SparkSession:
        if self._session is None:
            self.warehouse_dir.mkdir(parents=True, exist_ok=True)
            self._session = spark_session(self.master, warehouse_dir=self.warehouse_dir)
        return self._session

    def frame(self, frame: pl.DataFrame) -> DataFrame:
        return self.session.createDataFrame(frame.to_arrow())

    def ingest(self, seeds_dir: Path, build_database: Path, run_id: str | None, full_refresh: bool) -> Intake:
        """Spark reads and parses the folder (``paperhouse.engines.spark.ingest``); its executors write
        ``raw.source_records`` and ``raw.seed_files`` as Parquet, which the build database views.
        The parse cache is Parquet too, one folder per parser version."""
        from paperhouse.engines.spark.ingest import (
            parse_cache_folder,
            read_folder_on_spark,
            read_parse_cache,
            write_parse_cache,
            write_raw_table,
        )

        cache = parse_cache_folder(self.warehouse_dir)
        previous = None if full_refresh else read_parse_cache(self.session, cache)
        cached = set() if previous is None else {row[0] for row in previous.select("content_key").distinct().collect()}
        intake = read_folder_on_spark(self.session, seeds_dir, parse_cache=None if full_refresh else cache)
        for table, frame in {"source_records": intake.records, "seed_files": intake.seed_files}.items():
            write_raw_table(frame, self.warehouse_dir, table)
        write_parse_cache(intake, cache)
        with connect(build_database) as con:
            view_parquet_tables(con, self.warehouse_dir, ["source_records", "seed_files"])
        in_folder = set(intake.folder.files["content_key"].drop_nulls())
        return Intake(folder=intake.folder, forgotten=len(cached - in_folder))

    def assign_papers(
        self, records: pl.DataFrame, registry: pl.DataFrame, run_id: str | None, now: datetime
    ) -> Resolution:
        """Dedup (``paperhouse.engines.spark.dedup``) and the registry's naming (``paperhouse.engines.spark.registry``)
        as Spark jobs; the resolved assignments collected for the build database."""
        from paperhouse.engines.spark.dedup import assign_papers_on_spark
        from paperhouse.engines.spark.registry import resolve_on_spark

        return resolve_on_spark(assign_papers_on_spark(self.frame(records)), registry, run_id, now)

    def analyse(self, papers: pl.DataFrame, previous_topics: int | None) -> CorpusAnalysis:
        """The terms, topics, similar papers (``paperhouse.engines.spark.analysis``) and method names
        (``paperhouse.engines.spark.names``) as Spark jobs, collected as the tables the DuckDB engine
        writes. ``index.weights`` stays in Spark (None here): nothing after the step reads it."""
        from paperhouse.engines.spark.analysis import analyse_on_spark
        from paperhouse.engines.spark.names import method_names_on_spark
        from paperhouse.engines.spark.topics import to_topic_model
        from paperhouse.nlp.names import NAME_SCHEMA
        from paperhouse.nlp.terms.extraction import ALIAS_SCHEMA, PAPER_TERM_SCHEMA, TERM_SCHEMA, TermIndex

        texts = self.frame(papers).cache()
        analysis = analyse_on_spark(self.session, texts, previous_topics=previous_topics)
        spark_index = analysis.index
        index = TermIndex(
            to_polars(spark_index.terms, TERM_SCHEMA).sort("term"),
            to_polars(spark_index.paper_terms, PAPER_TERM_SCHEMA).sort("paper_id", "rank"),
            to_polars(spark_index.aliases, ALIAS_SCHEMA).sort("alias", "term"),
            None,
        )
        similar = to_polars(analysis.similar, SIMILAR_SCHEMA).sort("paper_id", "rank")
        model = to_topic_model(analysis.model)
        names = to_polars(method_names_on_spark(texts), NAME_SCHEMA).sort("paper_id")
        spark_index.unpersist()
        texts.unpersist()
        return CorpusAnalysis(index, model, similar, names)

    def before_models(self, build_database: Path) -> None:
        """The raw tables as Parquet where the spark target reads them."""
        export_raw_tables(build_database, self.warehouse_dir)
        # The check history is first written after the first dbt step; the models read it as empty.
        if not raw_table_folder(self.warehouse_dir, check_history.TABLE).is_dir():
            empty = raw_table_folder(self.warehouse_dir, check_history.TABLE)
            empty.mkdir(parents=True)
            pl.DataFrame(schema=check_history.CHECK_EVALUATION_SCHEMA).write_parquet(empty / "part-0.parquet")

    def after_models(self, build_database: Path) -> None:
        import_marts(build_database, self.warehouse_dir, mart_schemas())
        with connect(build_database) as con:
            keep_parquet_views(con)

    def validate(self, build_database: Path, suites: list[Suite]) -> list[SuiteResult]:
        """Each suite as Spark jobs over its table's Parquet (``paperhouse.engines.spark.validation``); the
        tables the driver wrote into the build database go out to Parquet first."""
        from paperhouse.engines.spark.validation import validate_suite_on_spark

        export_raw_tables(build_database, self.warehouse_dir)
        return [validate_suite_on_spark(self.session, suite, self.warehouse_dir) for suite in suites]

    def close(self) -> None:
        if self._session is not None:
            self._session.stop()
            self._session = None
