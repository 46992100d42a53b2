from functools import cache
from pathlib import Path
from typing import Any, Mapping

from dagster import AssetExecutionContext, AssetKey
from dagster_dbt import DagsterDbtTranslator, DbtProject, dbt_assets

from orchestration import dbt_runner
from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.resources import WarehouseResource
from paperhouse.settings import DBT_PROJECT_DIR

_GROUPS = {"staging": "staging", "intermediate": "staging", "marts": "marts"}


@cache
def dbt_project() -> DbtProject:
    """The dbt project, with a manifest that is never older than the project's files.

    This replaces ``prepare_if_dev``: it re-parses under `dagster dev`, the CLI and tests
    alike, and only when a model, test or YAML file changed since the last parse.
    """
    project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)
    if _manifest_is_stale(project.manifest_path):
        dbt_runner.parse(DBT_PROJECT_DIR, Path(project.project_dir, project.target_path))
    return project


def _manifest_is_stale(manifest: Path) -> bool:
    return not manifest.exists() or dbt_runner.project_stamp(DBT_PROJECT_DIR) > manifest.stat().st_mtime


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
    def _models(context: AssetExecutionContext, warehouse: WarehouseResource):
        paths = warehouse.paths
        yield from dbt_runner.stream_build(context, paths.build_database, paths.dbt_target)

    return _models


# The history of checks is built apart: it reads what the quality asset records after every other
# mart and its checks, and one dbt step cannot run both before and after that asset.
QUALITY_HISTORY_MODEL = "quality_runs"
dbt_models = _dbt_build("dbt_models", exclude=QUALITY_HISTORY_MODEL)
dbt_quality_history = _dbt_build("dbt_quality_history", select=QUALITY_HISTORY_MODEL)
