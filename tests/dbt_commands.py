"""dbt commands as the tests run them, in dbt processes of their own, and what their output says."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from paperhouse.settings import DBT_PROJECT_DIR


def dbt_folders(work: Path) -> list[str]:
    """The project, with a target and a log folder of the test's own."""
    return ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR),
            "--target-path", str(work / "target"), "--log-path", str(work / "logs")]  # fmt: skip


def plain(output: str) -> str:
    """dbt's output without its colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", output)


def unit_tests() -> set[str]:
    """The names of the project's dbt unit tests, from its YAML files."""
    names = set()
    for path in (DBT_PROJECT_DIR / "models").rglob("*.yml"):
        names |= {test["name"] for test in (yaml.safe_load(path.read_text()) or {}).get("unit_tests", [])}
    return names


def passed_unit_tests(output: str) -> set[str]:
    """The unit tests dbt's output reports as passed (`PASS <model>::<test>`)."""
    return set(re.findall(r"PASS \S+::(\S+)", plain(output)))
