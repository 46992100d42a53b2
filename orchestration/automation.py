"""When the warehouse rebuilds by itself: when the seeds folder changes, and once a day.

Both are off until switched on in the UI (Automation), so opening the UI never starts a run
nobody asked for.
"""

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
from paperhouse.ingest import folder_fingerprint

build_warehouse = define_asset_job(
    "build_warehouse",
    selection=AssetSelection.all(),
    description="Every asset and check: ingest, dedup, terms and topics, dbt marts, publish.",
)


@sensor(job=build_warehouse, minimum_interval_seconds=30, default_status=DefaultSensorStatus.STOPPED)
def seeds_folder_sensor(context: SensorEvaluationContext, warehouse: WarehouseResource):
    """Rebuild when a list is added, changed or removed (by content hash, not timestamps)."""
    seeds_dir = warehouse.paths.seeds_dir
    if not seeds_dir.is_dir():
        return SkipReason(f"seeds folder {seeds_dir} does not exist")
    fingerprint = folder_fingerprint(seeds_dir)
    if fingerprint == context.cursor:
        return SkipReason("the seeds folder has not changed")
    context.update_cursor(fingerprint)
    return RunRequest(run_key=fingerprint, tags={"paperhouse/trigger": "seeds_folder"})


@schedule(job=build_warehouse, cron_schedule="0 6 * * *", default_status=DefaultScheduleStatus.STOPPED)
def daily_rebuild():
    """A full rebuild every morning at 06:00, whatever changed."""
    return RunRequest(tags={"paperhouse/trigger": "daily"})
