from collections.abc import Mapping
from typing import Any

from dagster import AssetCheckResult, AssetExecutionContext, AssetKey, Failure
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, dbt_assets

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.check_explanations import explained_failures
from orchestration.dbt_resource import LAST_DBT_STEP, dbt_project
from orchestration.engine import EngineResource
from orchestration.resources import WarehouseResource
from orchestration.warm_dbt.project import build_args
from paperhouse.common.faults import failpoint

_GROUPS = {"staging": "staging", "intermediate": "staging", "marts": "marts"}


class PaperhouseTranslator(DagsterDbtTranslator):
    """Models are keyed by their schema (``marts/papers``) and grouped by layer."""

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> AssetKey:
        if dbt_resource_props["resource_type"] == "model":
            return AssetKey([dbt_resource_props["config"]["schema"], dbt_resource_props["name"]])
        return super().get_asset_key(dbt_resource_props)

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        return _GROUPS.get(dbt_resource_props.get("config", {}).get("schema"))

    def get_owners(self, dbt_resource_props: Mapping[str, Any]):
        return OWNERS


def _dbt_build(name: str, select: str = "fqn:*", exclude: str | None = None):
    """A `dbt build` of part of the project as one Dagster step."""

    @dbt_assets(
        manifest=dbt_project().manifest_path,
        project=dbt_project(),
        dagster_dbt_translator=PaperhouseTranslator(),
        pool=WRITER_POOL,
        name=name,
        select=select,
        exclude=exclude,
    )
    def _models(
        context: AssetExecutionContext, warehouse: WarehouseResource, engine: EngineResource, dbt: DbtCliResource
    ):
        paths = warehouse.paths
        compute = engine.compute(paths.warehouse)
        # The engine's profile target, and its inputs where it reads them (Spark: Parquet).
        args = build_args(paths.build_database, target=compute.dbt_target, variables=compute.dbt_vars)
        compute.before_models(paths.build_database)
        # Each warehouse keeps its own target folder: dbt parses the whole project again when the
        # database path in its profile changes.
        target_path = paths.dbt_target if compute.name == "duckdb" else paths.build_dir / f"dbt_target_{compute.name}"
        # A failed test's result is held back until dbt has ended (its run results name the test's
        # query), then shown with the invariant in words and the rows that break it.
        invocation = dbt.cli(args, context=context, target_path=target_path, raise_on_error=False)
        failed: list[AssetCheckResult] = []
        for event in invocation.stream():
            failpoint("dbt.event")
            if isinstance(event, AssetCheckResult) and not event.passed:
                failed.append(event)
            else:
                yield event
        yield from explained_failures(failed, invocation, paths.build_database, context)
        if not invocation.is_successful():
            raise Failure(description=f"dbt build failed: {invocation.get_error() or 'see the dbt log'}")
        compute.after_models(paths.build_database)

    return _models


# The history of checks is built apart: it reads what the quality asset records after every other
# mart and its checks, and one dbt step cannot run both before and after that asset.
QUALITY_HISTORY_MODEL = "quality_runs"
dbt_models = _dbt_build("dbt_models", exclude=QUALITY_HISTORY_MODEL)
dbt_quality_history = _dbt_build(LAST_DBT_STEP, select=QUALITY_HISTORY_MODEL)
