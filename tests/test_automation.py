"""The seeds-folder sensor starts a run when lists are added, changed or removed, and only then."""

import os

from dagster import RunRequest, SkipReason, build_sensor_context

from orchestration.automation import seeds_folder_sensor
from orchestration.definitions import defs
from orchestration.resources import WarehouseResource


def _tick(folder, cursor):
    resources = {"warehouse": WarehouseResource(seeds_dir=str(folder))}
    with build_sensor_context(cursor=cursor, resources=resources) as context:
        result = seeds_folder_sensor(context)
        return result, context.cursor


def test_sensor_fires_on_content_changes_only(seeds_copy):
    first, cursor = _tick(seeds_copy, None)
    assert isinstance(first, RunRequest)

    unchanged, cursor = _tick(seeds_copy, cursor)
    assert isinstance(unchanged, SkipReason)

    some_file = sorted(seeds_copy.glob("*.txt"))[0]
    os.utime(some_file, (1, 1))  # touched, not changed
    touched, cursor = _tick(seeds_copy, cursor)
    assert isinstance(touched, SkipReason)

    original = some_file.read_bytes()
    some_file.write_text(some_file.read_text() + "\nA new abstract appended to the list, long enough to count.\n")
    changed, cursor = _tick(seeds_copy, cursor)
    assert isinstance(changed, RunRequest)

    (seeds_copy / "new list.txt").write_text("ICML 2025 Papers\n\nSomething new.\n")
    added, cursor = _tick(seeds_copy, cursor)
    assert isinstance(added, RunRequest)

    (seeds_copy / "new list.txt").unlink()
    removed, cursor = _tick(seeds_copy, cursor)
    assert isinstance(removed, RunRequest)

    # Back to the very first state: a change like any other, with a run key never used before
    # (Dagster skips a run request whose key it has seen).
    some_file.write_bytes(original)
    reverted, cursor = _tick(seeds_copy, cursor)
    assert isinstance(reverted, RunRequest)
    keys = [r.run_key for r in (first, changed, added, removed, reverted)]
    assert len(set(keys)) == len(keys)


def test_sensor_fires_for_entries_that_are_not_files(seeds_copy):
    _, cursor = _tick(seeds_copy, None)
    (seeds_copy / "loop.txt").symlink_to("loop.txt")
    looped, cursor = _tick(seeds_copy, cursor)
    assert isinstance(looped, RunRequest)  # it will be listed as rejected: the warehouse must show it
    unchanged, cursor = _tick(seeds_copy, cursor)
    assert isinstance(unchanged, SkipReason)


def test_sensor_reads_a_cursor_from_before_the_change_counter(seeds_copy):
    from paperhouse.ingest.reading import folder_fingerprint

    skipped, _ = _tick(seeds_copy, folder_fingerprint(seeds_copy))
    assert isinstance(skipped, SkipReason)


def test_schedule_and_sensor_target_the_whole_graph():
    job = defs.resolve_job_def("build_warehouse")
    assert defs.resolve_schedule_def("daily_rebuild").job_name == job.name
    assert defs.resolve_sensor_def("seeds_folder_sensor").job_name == job.name
    keys = {key.to_user_string() for key in job.asset_layer.selected_asset_keys}
    assert {"raw/source_records", "marts/papers", "published_warehouse"} <= keys
