"""Property-based tests of whole runs over random input folders (tests/folders.py): whatever folder
a user brings, the run succeeds and publishes, every paragraph and row lands in exactly one of
``paper_sources`` and ``rejected_records``, every dbt test and Great Expectations suite passes (a
run exits 0 only then), and adding records never takes an id away.

The default test run tries a few folders, derandomised so CI is repeatable; ``make fuzz`` tries
many, at random (``HYPOTHESIS_PROFILE=fuzz``, ``PAPERHOUSE_FUZZ_EXAMPLES``), and keeps what it
found in ``.hypothesis/`` so a failing folder is tried first next time.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from conftest import FUZZING
from folders import WHOLE_FILE, Folder, Recipe, add_records, build, recipes
from hypothesis import example, given, note, settings

from paperhouse import cli

pytestmark = pytest.mark.slow  # whole runs of generated folders

# A whole run costs seconds: the default test run tries two folders; `make fuzz` as many as it is told.
WHOLE_RUNS = settings() if FUZZING else settings(max_examples=2)


def _run(folder: Path, warehouse: Path) -> int:
    return cli.main(["run", "--seeds", str(folder), "--warehouse", str(warehouse), "--log-level", "error"])


def _rows(warehouse: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(sql).fetchall()


def _assert_every_record_accounted_for(made: Folder, warehouse: Path) -> None:
    accepted = _rows(warehouse, "select source_file, record_no from marts.paper_sources")
    rejected = _rows(warehouse, "select source_file, record_no from marts.rejected_records")
    assert not set(accepted) & set(rejected), "a record both accepted and rejected"
    assert len(set(accepted)) == len(accepted) and len(set(rejected)) == len(rejected), "a record twice"
    counts: dict[str, list[int]] = {}
    for source_file, _ in accepted:
        counts.setdefault(source_file, [0, 0, 0])[0] += 1
    for source_file, record_no in rejected:
        counts.setdefault(source_file, [0, 0, 0])[1 if record_no is not None else 2] += 1
    for name, records in made.expected.items():
        n_accepted, n_rejected, whole = counts.get(name, [0, 0, 0])
        if records is WHOLE_FILE:
            assert (n_accepted, n_rejected, whole) == (0, 0, 1), f"{name}: rejected whole, once"
        else:
            assert (n_accepted + n_rejected, whole) == (records, 0), f"{name}: {records} records, each once"
    for name, clean in made.at_least.items():
        n_accepted, n_rejected, whole = counts.get(name, [0, 0, 0])
        assert n_accepted + n_rejected + whole >= 1, f"{name} is accounted for"
        assert n_accepted >= clean, f"{name}: every clean row kept ({n_accepted} of {clean})"
    assert set(counts) <= set(made.expected) | set(made.at_least) | {p.name for p in made.path.iterdir()}


@WHOLE_RUNS
@given(recipe=recipes())
# The folder issue 51 reported failing (assert_topic_hierarchy): every bundled list, revised and
# re-encoded copies, a mirror list, broken files and a small list of another venue.
@example(
    recipe=Recipe(
        seed=51,
        lists=frozenset(range(4)),
        keep=1.0,
        edits=("revise", "revise", "reencode", "reencode", "mirror", "broken", "empty", "other_venue"),
        added_later=3,
    )
)
def test_any_folder_builds_publishes_and_accounts_for_every_record(tmp_path_factory, recipe):
    note(repr(recipe))
    # A folder of pytest's, not one removed at the example's end: the warm dbt process the run
    # left (it lives as long as this process) may still be parsing into the build folder.
    scratch = tmp_path_factory.mktemp("folder")
    made = build(recipe, scratch / "seeds")
    warehouse = scratch / "warehouse.duckdb"
    assert _run(made.path, warehouse) == 0, "the run failed or a check failed (see stderr)"
    _assert_every_record_accounted_for(made, warehouse)
    before = dict(_rows(warehouse, "select paper_id, abstract from marts.papers"))

    add_records(recipe, made)
    assert _run(made.path, warehouse) == 0, "the second run (records added) failed"
    _assert_every_record_accounted_for(made, warehouse)
    after = {paper_id for (paper_id,) in _rows(warehouse, "select paper_id from marts.papers")}
    aliases = {alias for (alias,) in _rows(warehouse, "select alias_id from marts.paper_id_aliases")}
    lost = set(before) - after - aliases
    assert not lost, f"ids lost when records were added: {sorted(lost)[:5]}"
