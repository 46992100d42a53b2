"""When the warehouse rebuilds by itself: when the seeds folder changes, and once a day.

Both are off until switched on in the UI (Automation), so opening the UI never starts a run
nobody asked for.
"""

import json

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SkipReason,
    define_asset_job,
    schedule,
    sensor,
)

from orchestration.resources import WarehouseResource
from paperhouse.ingest.reading import folder_fingerprint

build_warehouse = define_asset_job(
    "build_warehouse",
    selection=AssetSelection.all(),
    description="Every asset and check: ingest, dedup, terms and topics, dbt marts, check history, "
    "publish, Parquet, dashboard.",
)


@sensor(job=build_warehouse, minimum_interval_seconds=30, default_status=DefaultSensorStatus.STOPPED)
def seeds_folder_sensor(context: SensorEvaluationContext, warehouse: WarehouseResource):
    """Rebuild when a list is added, changed or removed (by content hash, not timestamps).

    The cursor keeps the folder's fingerprint and a count of the changes seen. The run key is
    the change number with the fingerprint, never the fingerprint alone: a folder that goes
    back to an earlier state (a file removed, then restored) is a new change and gets its run,
    where a run key seen before would be skipped by Dagster.
    """
    seeds_dir = warehouse.paths.seeds_dir
    if not seeds_dir.is_dir():
        return SkipReason(f"seeds folder {seeds_dir} does not exist")
    fingerprint = folder_fingerprint(seeds_dir)
    previous, changes = _read_cursor(context.cursor)
    if fingerprint == previous:
        return SkipReason("the seeds folder has not changed")
    changes += 1
    context.update_cursor(json.dumps({"fingerprint": fingerprint, "changes": changes}))
    return RunRequest(run_key=f"{changes}-{fingerprint[:16]}", tags={"paperhouse/trigger": "seeds_folder"})


def _read_cursor(cursor: str | None) -> tuple[str | None, int]:
    if not cursor:
        return None, 0
    try:
        state = json.loads(cursor)
        return state["fingerprint"], int(state["changes"])
    except (ValueError, KeyError, TypeError):  # a cursor from before the change counter: a bare fingerprint
        return cursor, 0


@schedule(job=build_warehouse, cron_schedule="0 6 * * *", default_status=DefaultScheduleStatus.STOPPED)
def daily_rebuild():
    """A full rebuild every morning at 06:00, whatever changed."""
    return RunRequest(tags={"paperhouse/trigger": "daily"})
