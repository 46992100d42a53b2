"""`paperhouse run` on what it built last: up to date, nothing built, Dagster never loaded. The digest
of a run's inputs (``paperhouse.warehouse.up_to_date``) changes with any change to the folder, the
options, the settings or the code, and the stamp holds only while the published files are the ones
the run published."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from corpus import SEEDS
from hypothesis import given
from hypothesis import strategies as st
from warehouses import imported_modules, paperhouse

from paperhouse import cli
from paperhouse.evaluation import bench as benchmark
from paperhouse.settings import Paths, resolve_paths, variable
from paperhouse.warehouse import up_to_date

OPTIONS = {"engine": "duckdb", "keyphrase_embeddings": None}


def folder_with_lists(root: Path) -> Path:
    folder = root / "lists"
    folder.mkdir(parents=True)
    for name in ("a.txt", "b.txt", "export.csv"):
        (folder / name).write_text(f"ICLR 2026 Papers\n\nAn abstract of {name}.\n")
    (folder / "link.txt").symlink_to("a.txt")
    return folder


def _append(folder: Path, name: str) -> None:
    with open(folder / name, "a") as handle:
        handle.write(" more")


def _rewrite_as_it_was(folder: Path, name: str) -> None:
    # The same bytes and the same modification time written back: only the change time tells.
    path, status = folder / name, (folder / name).stat()
    path.write_bytes(path.read_bytes())
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


MUTATIONS = {
    "append": _append,
    "rewrite as it was": _rewrite_as_it_was,
    "rename": lambda folder, name: (folder / name).rename(folder / f"renamed {name}"),
    "delete": lambda folder, name: (folder / name).unlink(),
    "add a file": lambda folder, name: (folder / f"new {name}").write_text("NeurIPS 2025 Papers\n\nNew.\n"),
    "point the link elsewhere": lambda folder, name: (
        (folder / "link.txt").unlink(),
        (folder / "link.txt").symlink_to(name),
    ),
    "make it unreadable": lambda folder, name: (folder / name).chmod(0),
}


@given(mutation=st.sampled_from(sorted(MUTATIONS)), name=st.sampled_from(["b.txt", "export.csv"]))
def test_any_change_to_the_folder_changes_the_inputs(tmp_path_factory, mutation, name):
    folder = folder_with_lists(tmp_path_factory.mktemp("folder"))
    paths = resolve_paths(folder, folder.parent / "paperhouse.duckdb")
    before = up_to_date.run_inputs(paths, OPTIONS)
    assert up_to_date.run_inputs(paths, OPTIONS) == before  # nothing changed: the same digest
    MUTATIONS[mutation](folder, name)
    assert up_to_date.run_inputs(paths, OPTIONS) != before, mutation


def test_options_settings_and_code_change_the_inputs(tmp_path, monkeypatch):
    folder = folder_with_lists(tmp_path)
    paths = resolve_paths(folder, tmp_path / "paperhouse.duckdb")
    code = tmp_path / "code"
    (code / "__pycache__").mkdir(parents=True)
    (code / "stage.py").write_text("WEIGHT = 1\n")
    monkeypatch.setattr(up_to_date, "code_roots", lambda: [code])
    before = up_to_date.run_inputs(paths, OPTIONS)
    assert up_to_date.run_inputs(paths, OPTIONS | {"keyphrase_embeddings": True}) != before
    assert up_to_date.run_inputs(paths, OPTIONS | {"engine": "spark"}) != before
    (code / "__pycache__" / "stage.cpython-311.pyc").write_bytes(b"compiled")  # caches are not code
    assert up_to_date.run_inputs(paths, OPTIONS) == before
    (code / "stage.py").write_text("WEIGHT = 2\n")
    changed_code = up_to_date.run_inputs(paths, OPTIONS)
    assert changed_code != before
    monkeypatch.setenv(variable("spark_master"), "local[4]")
    assert up_to_date.run_inputs(paths, OPTIONS) != changed_code


def test_the_code_is_the_package_the_runner_and_the_dbt_project():
    names = {root.name for root in up_to_date.code_roots()}
    assert names == {"paperhouse", "orchestration", "dbt_project"}


@dataclass
class Published:
    paths: Paths
    inputs: str


@pytest.fixture
def published(tmp_path) -> Published:
    """A warehouse, its Parquet folder and dashboard, recorded as built from the folder's inputs."""
    paths = resolve_paths(folder_with_lists(tmp_path), tmp_path / "out" / "paperhouse.duckdb")
    paths.build_dir.mkdir(parents=True)
    paths.marts_export.mkdir()
    paths.dashboard.mkdir()
    with duckdb.connect(str(paths.warehouse)) as con:
        con.execute("create schema marts; create table marts.papers as select 1 as paper_id")
    (paths.marts_export / "papers.parquet").write_bytes(b"PAR1")
    (paths.dashboard / "index.html").write_text("<html></html>")
    inputs = up_to_date.run_inputs(paths, OPTIONS)
    up_to_date.record(paths, inputs, "run-1")
    return Published(paths, inputs)


def test_the_stamp_holds_while_the_published_files_are_those_the_run_published(published):
    paths, inputs = published.paths, published.inputs
    assert up_to_date.last_run(paths, inputs).run_id == "run-1"
    assert up_to_date.last_run(paths, "other inputs") is None
    swapped = paths.warehouse.with_name("new.duckdb")
    shutil.copyfile(paths.warehouse, swapped)
    os.replace(swapped, paths.warehouse)  # as a publish swaps a new file in: another run published
    assert up_to_date.last_run(paths, inputs) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda paths: (paths.dashboard / "index.html").unlink(),
        lambda paths: (paths.marts_export / "papers.parquet").unlink(),
        lambda paths: (paths.marts_export / "extra.parquet").write_bytes(b"PAR1"),
        lambda paths: (paths.build_dir / up_to_date.STAMP).write_text("{half a stamp"),
        lambda paths: shutil.rmtree(paths.build_dir),
    ],
    ids=["dashboard removed", "a Parquet file removed", "a Parquet file added", "a torn stamp", "no build folder"],
)
def test_anything_else_runs_again(published, change):
    change(published.paths)
    assert up_to_date.last_run(published.paths, published.inputs) is None


def test_the_command_builds_once_then_is_up_to_date_unless_told_otherwise(published, monkeypatch, capsys):
    """The decision `paperhouse run` takes, with a runner that records when it is called."""
    paths = published.paths
    calls = []

    @dataclass
    class Outcome:
        success: bool = True
        run_id: str = "run-2"
        checks_passed: int = 0
        checks_failed: tuple = ()
        checks_warned: tuple = ()
        log_file: str = "run.log"

    def run_all(paths, **options):
        calls.append(options)
        return Outcome(run_id=f"run-{len(calls) + 1}")

    monkeypatch.setattr(cli, "load_runner", lambda: run_all)
    intake = "1 as files, 0 as parsed, 1 as unchanged, 0 as unread, 0 as companions, 1 as paragraphs, 1 as accepted"
    monkeypatch.setattr(cli, "INTAKE_SQL", f"select {intake}, 0 as rejected, 0 as repaired")
    monkeypatch.setattr(cli, "SUMMARY_SQL", "select count(*) as papers from marts.papers")
    monkeypatch.setattr(cli, "REASONS_SQL", "select 'none' as reason, 0 as n where false")
    command = ["run", "--seeds", str(paths.seeds_dir), "--warehouse", str(paths.warehouse)]

    assert cli.main(command) == 0 and calls == []  # recorded by run-1 (the fixture): up to date
    assert "up to date" in capsys.readouterr().out
    assert cli.main([*command, "--keyphrase-embeddings"]) == 0 and len(calls) == 1  # another option
    assert cli.main(command) == 0 and len(calls) == 2  # the last stamp is the option's: built again
    capsys.readouterr()
    assert cli.main(command) == 0 and len(calls) == 2
    out = capsys.readouterr().out
    assert out.startswith("paperhouse run: up to date") and "run run-3" in out, out
    assert cli.main([*command, "--full-refresh"]) == 0 and len(calls) == 3  # told to build again
    monkeypatch.setenv(variable("failpoints"), "nowhere")
    assert cli.main(command) == 0 and len(calls) == 4  # a run meant to crash always runs


def test_an_unchanged_rerun_of_the_seeds_build_is_up_to_date_without_loading_dagster(seeds_build):
    before = seeds_build.warehouse.stat()
    rerun = paperhouse(
        "run", "--seeds", str(SEEDS), "--warehouse", str(seeds_build.warehouse), python=("-X", "importtime")
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    built_by = seeds_build.process.stdout.split()[2]  # "paperhouse run <id> finished in ..."
    assert "up to date" in rerun.stdout and f"run {built_by}" in rerun.stdout, rerun.stdout
    imported = imported_modules(rerun)
    assert "duckdb" in imported and not {"dagster", "dbt", "great_expectations"} & imported
    after = seeds_build.warehouse.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # nothing published


def test_the_bench_measures_the_unchanged_rerun_as_the_command_a_user_runs(seeds_build, monkeypatch, tmp_path):
    """`make bench`'s rerun is a `paperhouse run` process: on the suite's seeds build, up to date.
    (In this file: every `paperhouse run` on the shared build takes its run lock, one at a time.)"""
    monkeypatch.setattr(benchmark, "DATA", tmp_path)
    measured = benchmark.measure_command(SEEDS, seeds_build.warehouse)
    assert measured["up_to_date"] and measured["seconds"] == 0.0 and measured["process_seconds"] > 0
