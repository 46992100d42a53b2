"""The dbt project's manifest is prepared once, under a lock (orchestration.dbt_resource.prepared_project).

Two processes loading the definitions at once (two pytest-xdist workers on a clean clone, the UI
and a `paperhouse run`) once read a manifest the other was still writing. These tests replace
dbt's parse with one that records its calls, so they run in milliseconds.
"""

import fcntl
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

import orchestration.dbt_resource as dbt_resource
from orchestration.dbt_resource import PARSE_LOCK, prepared_project
from paperhouse.settings import DBT_PROJECT_DIR


@pytest.fixture
def project(tmp_path) -> Path:
    copy = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT_DIR, copy, ignore=shutil.ignore_patterns("target", "logs"))
    return copy


@pytest.fixture
def parses(monkeypatch) -> list[Path]:
    """dbt's parse, replaced by one that checks it holds the lock and writes a small manifest."""
    calls: list[Path] = []

    def parse(project_dir: Path, target_path: Path) -> None:
        assert _lock_is_held(target_path / PARSE_LOCK), "parsed without holding the parse lock"
        calls.append(project_dir)
        (target_path / "manifest.json").write_text(json.dumps({"nodes": {}}))

    monkeypatch.setattr(dbt_resource, "parse", parse)
    return calls


def _lock_is_held(lock_path: Path) -> bool:
    if not lock_path.exists():
        return False
    fd = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _waiters_on(lock_path: Path) -> int:
    """How many lock requests wait on ``lock_path`` (Linux's /proc/locks marks them with ``->``)."""
    inode = lock_path.stat().st_ino
    lines = Path("/proc/locks").read_text().splitlines()
    return sum(1 for line in lines if "->" in line and line.split()[-3].endswith(f":{inode}"))


def test_the_manifest_is_parsed_when_missing_or_older_than_the_project_and_only_then(project, parses):
    manifest = prepared_project(project).manifest_path
    assert parses == [project] and json.loads(manifest.read_text()) == {"nodes": {}}

    prepared_project(project)
    assert len(parses) == 1, "an up-to-date manifest was parsed again"

    model = next((project / "models").rglob("*.sql"))
    later = manifest.stat().st_mtime + 10
    os.utime(model, (later, later))
    prepared_project(project)
    assert len(parses) == 2, "a model newer than the manifest did not re-parse the project"


def test_a_process_that_waited_for_the_lock_uses_the_manifest_parsed_meanwhile(project, parses):
    target = project / "target"
    target.mkdir()
    lock_path = target / PARSE_LOCK
    holder = os.open(lock_path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)  # another process is parsing
    waiting = threading.Thread(target=prepared_project, args=(project,))
    try:
        waiting.start()
        while waiting.is_alive() and not _waiters_on(lock_path):
            waiting.join(0.01)
        assert waiting.is_alive(), "prepared the project while another process held the parse lock"
        (target / "manifest.json").write_text(json.dumps({"nodes": {"parsed": "meanwhile"}}))
    finally:
        os.close(holder)  # the other process finishes its parse
        waiting.join()
    assert parses == [], "parsed again a manifest another process had just written"
