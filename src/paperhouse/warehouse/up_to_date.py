"""Whether `paperhouse run` would publish what is published already: a run's inputs, and the stamp the
last successful run left beside its build.

A run's result depends on the seeds folder, the run's options and settings, the code (this package,
the runner's, the dbt project) and the installed packages. ``run_inputs`` digests all of them:

- the folder's entries (the top level, as ingest reads it) by name, type, size and change times:
  any write to a file, a rename, a new or removed file or link changes its digest (``ctime`` is
  set by the system on every change, whatever a tool does to ``mtime``);
- the options and every setting (``paperhouse.settings``);
- the code by content, and the installed distributions by name and version.

A successful run records that digest (``record``), with the identity of what it published: the
warehouse file (its inode changes with every publish, whoever runs it: the UI's runs too), the
Parquet folder and the dashboard. A later run whose inputs and published files are the same has
nothing to build (``last_run``). Anything else, a lost stamp or build folder included, runs.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import distributions, entry_points
from importlib.util import find_spec
from pathlib import Path

import paperhouse
from paperhouse.settings import DBT_PROJECT_DIR, RUNNER_GROUP, RUNNER_NAME, Paths, settings

STAMP = "last_run.json"
# Folders of the code that a build never reads: caches, dbt's output, logs.
SKIPPED_FOLDERS = {"__pycache__", "target", "logs", "dbt_packages", ".pytest_cache"}


@dataclass(frozen=True)
class LastRun:
    run_id: str
    finished: str


def run_inputs(paths: Paths, options: dict) -> str:
    """The digest of everything a run of ``paths`` with ``options`` builds from."""
    digest = hashlib.sha256()
    _add(digest, "options", json.dumps(options, sort_keys=True, default=str))
    _add(digest, "settings", settings().model_dump_json())
    for root in code_roots():
        _add(digest, "code", str(root))
        for path in _code_files(root):
            _add(digest, str(path.relative_to(root)), path.read_bytes())
    _add(digest, "packages", "\n".join(sorted(f"{d.metadata['Name']}=={d.version}" for d in distributions())))
    _add(digest, "seeds", str(paths.seeds_dir))
    for entry in _entries(paths.seeds_dir):
        _add(digest, "entry", entry)
    return digest.hexdigest()


def code_roots() -> list[Path]:
    """This package, the runner's package (the orchestration, found by its entry point and never
    imported here) and the dbt project."""
    roots = [Path(paperhouse.__file__).parent, DBT_PROJECT_DIR]
    for runner in entry_points(group=RUNNER_GROUP, name=RUNNER_NAME):
        spec = find_spec(runner.module.split(".")[0])
        roots += [Path(location) for location in (spec.submodule_search_locations or [])] if spec else []
    return [root.resolve() for root in roots]


def last_run(paths: Paths, inputs: str) -> LastRun | None:
    """The last successful run, if it built from ``inputs`` and what it published is still there."""
    try:
        stamp = json.loads((paths.build_dir / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if stamp.get("inputs") != inputs or stamp.get("published") != published(paths):
        return None
    return LastRun(stamp["run_id"], stamp["finished"])


def record(paths: Paths, inputs: str, run_id: str) -> None:
    """Note that run ``run_id`` built ``inputs`` and published them (called under the run lock)."""
    stamp = {
        "inputs": inputs,
        "published": published(paths),
        "run_id": run_id,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    partial = paths.build_dir / f"{STAMP}.partial"
    partial.write_text(json.dumps(stamp))
    os.replace(partial, paths.build_dir / STAMP)


def published(paths: Paths) -> list:
    """The identity of the published files: the warehouse, the Parquet folder's files, the dashboard."""
    files = [paths.warehouse, paths.dashboard / "index.html"]
    if paths.marts_export.is_dir():
        files += sorted(paths.marts_export.iterdir())
    return [[path.name, _identity(path)] for path in files]


def _identity(path: Path) -> list | None:
    """What the file a path leads to is: its inode, size and times (None when there is none)."""
    try:
        status = path.stat()
    except OSError:
        return None
    return [status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]


def _entries(folder: Path) -> list[str]:
    """Each entry of the folder as ingest lists it (the top level), with its type, size and times;
    a link also by its target and what it points to."""
    found = []
    try:
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries)
    except OSError as error:
        return [f"unreadable folder: {error.strerror}"]
    for name in names:
        path = folder / name
        found.append(json.dumps([name, _identity(path), _link(path)]))
    return found


def _link(path: Path) -> list | None:
    if not path.is_symlink():
        return None
    status = path.lstat()
    return [os.readlink(path), status.st_mtime_ns, status.st_ctime_ns]


def _code_files(root: Path) -> list[Path]:
    files = []
    for folder, subfolders, names in os.walk(root, followlinks=True):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED_FOLDERS)
        files += [Path(folder) / name for name in sorted(names) if not name.endswith((".pyc", ".log"))]
    return files


def _add(digest, label: str, value: str | bytes) -> None:
    data = value if isinstance(value, bytes) else value.encode()
    digest.update(f"{label}\0{len(data)}\0".encode())
    digest.update(data)
