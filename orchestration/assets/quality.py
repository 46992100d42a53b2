"""Data quality over time: every check evaluation, appended to ``raw.check_evaluations``."""

from dagster import (
    AssetCheckEvaluation,
    AssetExecutionContext,
    DagsterEventType,
    MarkdownMetadataValue,
    MaterializeResult,
    asset,
)

from orchestration.assets import OWNERS, WRITER_POOL
from orchestration.assets.dbt import dbt_models
from orchestration.metadata import frame_metadata
from orchestration.resources import WarehouseResource
from paperhouse.quality import check_history

# Every mart but the history itself: this asset runs after them and after their blocking checks.
CHECKED_MARTS = sorted((key for key in dbt_models.keys if key.path[0] == "marts"), key=lambda k: k.path)
# Evaluations per check read back from the instance: this run's, and those of earlier runs that
# were not recorded (a run a blocking check stopped, checks that evaluate after this asset).
HISTORY_PER_CHECK = 25


def _observed(evaluation: AssetCheckEvaluation) -> dict:
    """The check's metadata that is a value, not prose (markdown tables are left to the UI)."""
    return {
        key: value.value for key, value in evaluation.metadata.items() if not isinstance(value, MarkdownMetadataValue)
    }


@asset(
    key=["raw", check_history.TABLE],
    deps=CHECKED_MARTS,
    group_name="quality",
    kinds={"great_expectations", "duckdb"},
    owners=OWNERS,
    pool=WRITER_POOL,
    description=(
        "Every asset check evaluation (Great Expectations suites, dbt tests, the rejected-records warning) with "
        "pass or fail, severity and observed values, read from the Dagster instance's event log and appended "
        "(never replaced): the source of marts.quality_runs. Runs after every mart and its blocking checks; a run "
        "stopped by a failing check, and checks that evaluate later, are recorded by the next run."
    ),
)
def check_evaluations(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    storage = context.instance.event_log_storage
    rows = []
    for check_key in sorted(context.job_def.asset_layer.asset_graph.asset_check_keys, key=str):
        for record in storage.get_asset_check_execution_history(check_key, limit=HISTORY_PER_CHECK):
            event = record.event.dagster_event if record.event else None
            if event is None or event.event_type != DagsterEventType.ASSET_CHECK_EVALUATION:
                continue  # planned, never evaluated (its run stopped first)
            evaluation = event.event_specific_data
            rows.append(
                check_history.evaluation_row(
                    run_id=record.run_id,
                    timestamp=record.event.timestamp,
                    asset=check_key.asset_key.to_user_string(),
                    check_name=check_key.name,
                    passed=evaluation.passed,
                    severity=evaluation.severity.value,
                    observed=_observed(evaluation),
                    description=evaluation.description,
                )
            )
    evaluations = check_history.frame(rows)
    with warehouse.build_connection() as con:
        added, total = check_history.append(con, evaluations)
    this_run = evaluations.filter(run_id=context.run.run_id)
    context.log.info(f"{this_run.height} check evaluations in this run; {added} rows added, {total} in all")
    return MaterializeResult(
        metadata={
            **frame_metadata(
                this_run.sort("passed", "asset", "check_name"),
                rows_added=added,
                checks_this_run=this_run.height,
                failed_this_run=this_run.filter(passed=False).height,
            ),
            "dagster/row_count": total,
        }
    )
