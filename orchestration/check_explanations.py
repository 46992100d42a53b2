"""Failed dbt tests that explain themselves: the invariant in words and up to five offending rows,
in the check's description (the run's summary prints it) and metadata (the UI shows it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from dagster import AssetCheckResult, AssetExecutionContext, MetadataValue
from dagster_dbt import DbtCliInvocation

from orchestration.dbt_resource import dbt_project
from orchestration.metadata import counts_table
from paperhouse.quality.check_failures import explanation, invariant_in_words, offending_rows


@cache
def _manifest_nodes(manifest_path: str) -> dict:
    return json.loads(Path(manifest_path).read_text())["nodes"]


def _value(metadata_value):
    return getattr(metadata_value, "value", metadata_value)


def explained_failures(
    failed: list[AssetCheckResult], invocation: DbtCliInvocation, database: Path, context: AssetExecutionContext
) -> Iterator[AssetCheckResult]:
    """Each failed test's result again, with what it asserts and the rows that break it. Reading
    the rows is best effort: a failure to read them never hides the failure itself."""
    if not failed:
        return
    nodes = _manifest_nodes(str(dbt_project().manifest_path))
    try:
        compiled = {
            result["unique_id"]: result.get("compiled_code")
            for result in invocation.get_artifact("run_results.json").get("results", [])
        }
    except (OSError, ValueError) as error:
        context.log.warning(f"dbt's run results could not be read ({error}): failures shown without rows")
        compiled = {}
    for result in failed:
        metadata = dict(result.metadata or {})
        unique_id = _value(metadata.get("unique_id"))
        failures = _value(metadata.get("dagster_dbt/failed_row_count"))
        invariant = invariant_in_words(nodes.get(unique_id, {"name": result.check_name}))
        rows = None
        if compiled.get(unique_id):
            try:
                rows = offending_rows(database, compiled[unique_id])
            except Exception as error:  # the explanation must never replace the failure
                context.log.warning(f"the rows breaking {result.check_name} could not be read: {error}")
        text = explanation(invariant, rows, failures)
        context.log.error(f"{result.asset_key.to_user_string()}:{result.check_name}: {text}")
        extra = {"invariant": MetadataValue.text(invariant)}
        if rows is not None:
            extra["offending_rows"] = counts_table(rows)
        yield AssetCheckResult(
            asset_key=result.asset_key,
            check_name=result.check_name,
            passed=False,
            severity=result.severity,
            metadata={**metadata, **extra},
            description=text,
        )
