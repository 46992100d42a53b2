"""Whole builds the tests share: each made once per test session, whichever pytest-xdist worker
asks first (``built_once``), and read, never written, by the tests that ask for it. A build is
expensive (tens of seconds of a 2-core machine; minutes on Spark): a test that only reads a
warehouse of the bundled seeds asks for ``seeds_build`` instead of building its own; a test that
changes a warehouse builds its own."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from corpus import SEEDS, seed_abstracts
from filelock import FileLock

from paperhouse.settings import Paths, resolve_paths, variable


@dataclass(frozen=True)
class Build:
    """A finished whole build: the `paperhouse run` process (or None when run in the test's own
    process), its seeds folder and its paths (the published warehouse, the build database)."""

    process: subprocess.CompletedProcess | None
    paths: Paths

    @property
    def warehouse(self) -> Path:
        return self.paths.warehouse

    @property
    def build_database(self) -> Path:
        return self.paths.build_database


WAREHOUSE_NAME = "paperhouse.duckdb"
BUILT = "built"  # the marker a builder leaves in its folder once its build succeeded


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test session's folder of shared builds, the same for every pytest-xdist worker."""
    base = tmp_path_factory.getbasetemp()
    # Under pytest-xdist each worker's base folder lies in the session's; without it, the base is the session's.
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(exist_ok=True)
    return folder


def start_shared_build(tmp_path_factory: pytest.TempPathFactory, name: str) -> None:
    """Start making the shared build ``name`` in a process of its own (this file run as a script),
    unless a worker of this session already started it: the workers go on with other tests
    meanwhile. The builder holds ``<name>.lock`` (``flock``) for as long as it lives, so a test that
    needs the build waits on the lock, not on the clock."""
    shared = shared_folder(tmp_path_factory)
    with FileLock(shared / "start.lock"):
        started = shared / f"{name}.started"
        if started.exists():
            return
        lock = os.open(shared / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the builder inherits the locked descriptor
            with open(shared / f"{name}.log", "w") as log:
                subprocess.Popen(
                    [sys.executable, __file__, name, str(shared / name)],
                    pass_fds=(lock,), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
        finally:
            os.close(lock)
        started.touch()


def shared_build(tmp_path_factory: pytest.TempPathFactory, name: str) -> Build:
    """The shared build ``name``, once its builder has ended (started now if no worker has yet)."""
    start_shared_build(tmp_path_factory, name)
    shared = shared_folder(tmp_path_factory)
    lock = os.open(shared / f"{name}.lock", os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # free once the builder has exited, however it ended
    finally:
        os.close(lock)
    if not (shared / name / BUILT).exists():
        pytest.fail(f"the shared build {name} failed:\n{(shared / f'{name}.log').read_text()[-5000:]}")
    return finished_build(shared / name / WAREHOUSE_NAME)


def paperhouse(
    *args: str, env: dict | None = None, cwd: Path | None = None, python: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """The `paperhouse` command as a user runs it, in a process of its own (``python``: options of
    the interpreter)."""
    return subprocess.run(
        [sys.executable, *python, "-m", "paperhouse.cli", *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=900,
    )  # fmt: skip


def cli_build(
    seeds: Path, warehouse: Path, *options: str, env: dict | None = None, python: tuple[str, ...] = ()
) -> Build:
    """`paperhouse run` in a process of its own; its output is kept beside the warehouse
    (``run.json``) for the workers that read this build without having run it (``finished_build``)."""
    process = paperhouse("run", "--seeds", str(seeds), "--warehouse", str(warehouse), *options, env=env, python=python)
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-3000:]
    record = {"args": process.args, "returncode": process.returncode, "stdout": process.stdout}
    (warehouse.parent / "run.json").write_text(json.dumps(record | {"stderr": process.stderr, "seeds": str(seeds)}))
    return Build(process, resolve_paths(seeds, warehouse))


def finished_build(warehouse: Path) -> Build:
    """The build ``cli_build`` or ``in_process_build`` made of ``warehouse``, as any worker sees it."""
    record = json.loads((warehouse.parent / "run.json").read_text())
    process = (
        subprocess.CompletedProcess(record["args"], record["returncode"], record["stdout"], record["stderr"])
        if "args" in record
        else None
    )
    return Build(process, resolve_paths(Path(record["seeds"]), warehouse))


def in_process_build(seeds: Path, warehouse: Path) -> Build:
    """The same run in the test's own process: no Python start, no imports of its own."""
    from orchestration.runner import run_all

    paths = resolve_paths(seeds, warehouse)
    outcome = run_all(paths)
    assert outcome.success, outcome.reason
    (warehouse.parent / "run.json").write_text(json.dumps({"seeds": str(seeds)}))
    return Build(None, paths)


def fingerprint(build: Build) -> str:
    """What the files of a shared build hold, to prove at the end of the session that no test wrote them."""
    digest = hashlib.sha256()
    for path in (build.warehouse, build.build_database):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def export_beside_the_seeds(abstracts: list[str]) -> list[dict]:
    """Rows of an ICLR 2025 export: exact copies of seed papers (one in other case), a copy without
    its last sentence, papers of their own (two seeds' halves joined), titles, author keywords
    (some a mined term spells, some no abstract gives) and a row with no abstract."""
    keywords = [["Large Language Models", "LLMs"], ["deep learning"], ["hyperbolic origami", "Deep Learning"]]
    rows = [{"abstract": abstract} for abstract in abstracts[:10]]
    rows.append({"abstract": abstracts[10].upper()})
    rows.append({"abstract": abstracts[11].rsplit(". ", 1)[0] + "."})
    for first, second in zip(abstracts[20:26], abstracts[40:46], strict=True):
        rows.append({"abstract": first[: len(first) // 2] + " " + second[len(second) // 2 :]})
    rows.append({"abstract": ""})
    for number, row in enumerate(rows):
        row.update(id=f"iclr25-{number}", venue="ICLR", year=2025, decision="Accept" if number % 3 else "Reject")
        if number % 4 != 3:
            row.update(title=f"Paper {number % 7} of the export", keywords=keywords[number % len(keywords)])
    return rows


def seeds_with_an_export(folder: Path) -> Path:
    """A copy of the bundled seeds with an ICLR 2025 JSON-lines export beside them."""
    seeds = folder / "seeds"
    shutil.copytree(SEEDS, seeds)
    rows = export_beside_the_seeds(seed_abstracts())
    (seeds / "iclr_2025.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return seeds


def _seeds(folder: Path) -> None:
    """`paperhouse run` on the bundled seeds, as a user runs it; Python lists every module the
    process imports on its standard error (``-X importtime``, read by ``imported_modules``)."""
    cli_build(SEEDS, folder / WAREHOUSE_NAME, python=("-X", "importtime"))


def imported_modules(process: subprocess.CompletedProcess) -> set[str]:
    """The modules a `paperhouse` process run with ``-X importtime`` imported (its own: a process it
    starts does not list its imports)."""
    return set(re.findall(r"^import time:[^|]*\|[^|]*\| +(\S+)$", process.stderr, re.MULTILINE))


def _seeds_and_export(folder: Path) -> None:
    """The seeds and an export, built in the builder's own process."""
    in_process_build(seeds_with_an_export(folder), folder / WAREHOUSE_NAME)


# The synthetic list of the engines' folder: enough labelled duplicates of every kind for the
# bench's dedup precision and recall to mean something, few enough to cost nothing beside the rest.
SYNTHETIC_ABSTRACTS = 300


def engines_folder(folder: Path) -> Path:
    """The folder both engines build, to be compared (tests/test_spark_engine.py) and measured as the
    bench measures an engine (tests/test_benchmark.py): the seeds with an export, a synthetic list
    whose duplicates are labelled (the bench's ``synth``), and, with the real data present, the dev
    lists, thousands of real abstracts. One Spark build of it serves every test that needs one."""
    from paperhouse.evaluation import real_data
    from paperhouse.evaluation.synth import write_corpus

    seeds = seeds_with_an_export(folder)
    write_corpus(seed_abstracts(), SYNTHETIC_ABSTRACTS, seeds)
    for path in real_data.input_lists("conferences"):
        shutil.copyfile(path, seeds / path.name)
    return seeds


def measured_build(folder: Path, engine: str) -> None:
    """``engine``'s whole run of the engines' folder, measured by the bench's own ``measure_engine``
    (a fresh process, its Dagster instance in ``folder``): the measurement is kept in ``bench.json``."""
    from paperhouse.evaluation import bench

    bench.DATA = folder  # this builder's process only: the bench's instance here, not in data/bench
    seeds = engines_folder(folder)
    os.environ |= {variable("spark_warehouse"): str(folder / "spark-warehouse"), variable("spark_master"): "local[2]"}
    measured = bench.measure_engine(seeds, folder / WAREHOUSE_NAME, engine)
    (folder / "bench.json").write_text(json.dumps(measured))
    assert measured.get("success"), measured
    (folder / "run.json").write_text(json.dumps({"seeds": str(seeds)}))


def bench_measurement(build: Build) -> dict:
    """What the bench measured of a ``measured_build``."""
    return json.loads((build.warehouse.parent / "bench.json").read_text())


# The builds tests share, by the name of the session fixture that hands each out (tests/conftest.py).
BUILDERS = {
    "seeds_build": _seeds,
    "seeds_and_export_build": _seeds_and_export,
    "engines_duckdb_build": lambda folder: measured_build(folder, "duckdb"),
    "engines_spark_build": lambda folder: measured_build(folder, "spark"),
}
SHARED_BUILDS = tuple(BUILDERS)


if __name__ == "__main__":  # the builder process of `start_shared_build`: python warehouses.py <name> <folder>
    built = Path(sys.argv[2])
    built.mkdir(parents=True)
    BUILDERS[sys.argv[1]](built)
    (built / BUILT).touch()
