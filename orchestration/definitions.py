"""The one code location: what `dagster dev`, the UI and `paperhouse run` all load."""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from orchestration.assets.dbt import dbt_models, dbt_quality_history
from orchestration.assets.dedup import paper_assignments
from orchestration.assets.ingest import source_records
from orchestration.assets.nlp import corpus_analysis
from orchestration.assets.publish import dashboard, marts_parquet, published_warehouse
from orchestration.assets.quality import check_evaluations
from orchestration.automation import build_warehouse, daily_rebuild, seeds_folder_sensor
from orchestration.checks import great_expectations_checks, no_rejected_records
from orchestration.dbt_resource import dbt_resource
from orchestration.engine import EngineResource
from orchestration.resources import GreatExpectationsResource, WarehouseResource

ASSETS = [
    source_records,
    paper_assignments,
    corpus_analysis,
    dbt_models,
    check_evaluations,
    dbt_quality_history,
    published_warehouse,
    marts_parquet,
    dashboard,
]
CHECKS = [*great_expectations_checks(ASSETS), no_rejected_records]


def build_definitions(seeds_dir: str = "", warehouse: str = "", engine: str = "") -> Definitions:
    """Definitions for a seeds folder, warehouse and engine; empty means environment, then defaults."""
    return Definitions(
        assets=ASSETS,
        asset_checks=CHECKS,
        jobs=[build_warehouse],
        sensors=[seeds_folder_sensor],
        schedules=[daily_rebuild],
        resources={
            "warehouse": WarehouseResource(seeds_dir=seeds_dir, warehouse=warehouse),
            "engine": EngineResource(name=engine),
            "great_expectations": GreatExpectationsResource(),
            "dbt": dbt_resource(warehouse=warehouse),
        },
        # Steps share one DuckDB file that allows a single writer: run them one after another, in one
        # process (Great Expectations validates in a worker process, see GreatExpectationsResource).
        executor=in_process_executor,
    )


defs = build_definitions()
