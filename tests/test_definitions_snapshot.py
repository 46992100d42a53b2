"""The code location's whole shape, as reviewed: every asset (group, kinds, upstream assets), every
check (blocking or not), job, sensor and schedule. Adding, dropping or rewiring one changes
tests/snapshots/definitions.json, so it shows in the diff a reviewer reads.

After a deliberate change: `PAPERHOUSE_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest
tests/test_definitions_snapshot.py`, then review and commit the new snapshot."""

import json
import os
from pathlib import Path

from orchestration.definitions import defs

SNAPSHOT = Path(__file__).parent / "snapshots" / "definitions.json"


def shape() -> dict:
    graph = defs.resolve_asset_graph()
    return {
        "assets": {
            spec.key.to_user_string(): {
                "group": spec.group_name,
                "kinds": sorted(spec.kinds),
                "upstream": sorted(dep.asset_key.to_user_string() for dep in spec.deps),
            }
            for spec in sorted(defs.resolve_all_asset_specs(), key=lambda spec: spec.key.to_user_string())
        },
        "checks": {
            f"{key.asset_key.to_user_string()}:{key.name}": {"blocking": graph.get_check_spec(key).blocking}
            for key in sorted(graph.asset_check_keys, key=lambda key: (key.asset_key.to_user_string(), key.name))
        },
        "jobs": sorted(job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__")),
        "sensors": sorted(sensor.name for sensor in defs.sensors),
        "schedules": {schedule.name: schedule.cron_schedule for schedule in defs.schedules},
    }


def test_the_definitions_match_their_reviewed_snapshot():
    current = json.dumps(shape(), indent=1, sort_keys=True) + "\n"
    if os.environ.get("PAPERHOUSE_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert SNAPSHOT.read_text(encoding="utf-8") == current, (
        "the definitions changed: review the difference, then update the snapshot (see this module's docstring)"
    )
