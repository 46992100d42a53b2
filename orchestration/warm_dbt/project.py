"""Parsing the dbt project: whether its files changed, and a parse for a build database's name.

The manifest depends on the build database's file name (dbt-duckdb names the database after
it), not on its folder, so a parse is made for the file name alone. A target folder without a
parse of its own starts from the project's (``dbt_project/target``, made when Dagster loads the
definitions): dbt's partial parsing then reads it back instead of parsing every file again.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import yaml

from paperhouse.settings import DEFAULT_WAREHOUSE

PARTIAL_PARSE_FILE = "partial_parse.msgpack"
# The file name of the database the project is parsed for when no warehouse is named: the default's.
DEFAULT_DATABASE_NAME = Path(DEFAULT_WAREHOUSE).name
# The profile's own target (dbt_project/profiles.yml), the DuckDB engine's.
DEFAULT_TARGET = "warehouse"
NO_VARIABLES = "{}"
WITHOUT_UNIT_TESTS = ("--exclude-resource-type", "unit_test")


class DbtParseFailed(Exception):
    """`dbt parse` did not succeed; the message has dbt's error."""


def project_stamp(project_dir: Path) -> float:
    """The newest modification time of the project's models, tests, macros and YAML."""
    sources = (p for p in project_dir.rglob("*") if p.suffix in {".sql", ".yml"} and "target" not in p.parts)
    return max((p.stat().st_mtime for p in sources), default=0.0)


def build_args(database: str | Path, target: str = DEFAULT_TARGET, variables: dict | None = None) -> list[str]:
    """`dbt build` of ``database`` (the profile reads its path from ``database_path``) with the
    profile's ``target`` and the target's own ``variables``, whichever dbt runs it. dbt's log file
    stops at info: formatting its debug lines costs a build noticeable time (docs/performance.md).
    The default target is left to the profile, so the command asks for the parse a warm process
    made ahead of it. dbt's unit tests are left out: they test the models' SQL on fixed inputs,
    not the run's data, so they run once in `make test` (tests/test_dbt_unit_tests.py), not in
    every build (docs/performance.md)."""
    args = ["build", "--vars", _database_vars(database, variables), "--log-level-file", "info", *WITHOUT_UNIT_TESTS]
    return args if target == DEFAULT_TARGET else [*args, "--target", target]


def _database_vars(database: str | Path, variables: dict | None = None) -> str:
    return json.dumps({"database_path": str(database), **(variables or {})})


def flag_value(args: list[str], flag: str) -> str | None:
    """The value given to ``flag`` in a dbt command line (``--flag value``), else None."""
    for name, value in itertools.pairwise(args):
        if name == flag:
            return value
    return None


def database_name_in(args: list[str]) -> str:
    """The file name of the database a dbt command line builds (its ``--vars``), else the default's."""
    variables = yaml.safe_load(flag_value(args, "--vars") or "{}") or {}  # dbt reads --vars as YAML
    path = variables.get("database_path")
    return Path(path).name if path else DEFAULT_DATABASE_NAME


def command_variables(args: list[str]) -> str:
    """A command line's ``--vars`` but the database path, as JSON with sorted keys: what a parse
    renders into the project (a mart's location on Spark), so a parse serves only commands with
    the same ones."""
    variables = yaml.safe_load(flag_value(args, "--vars") or "{}") or {}
    variables.pop("database_path", None)
    return json.dumps(variables, sort_keys=True)


def parse(
    project_dir: Path,
    target_path: Path,
    database_name: str = DEFAULT_DATABASE_NAME,
    profiles_dir: Path | None = None,
    target: str | None = None,
    variables: str = NO_VARIABLES,
):
    """`dbt parse` in this process for a build database named ``database_name`` (and the
    profile's ``target``, else its default, and the command's other ``variables``,
    ``command_variables``): the manifest, also written to ``target_path``."""
    from dbt.cli.main import dbtRunner

    project_parse = project_dir / "target" / PARTIAL_PARSE_FILE
    if (
        not (target_path / PARTIAL_PARSE_FILE).exists()
        and project_parse.exists()
        and target_path != project_parse.parent
    ):
        target_path.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(project_parse, target_path / PARTIAL_PARSE_FILE)
    args = [
        "parse",
        "--project-dir",
        str(project_dir),
        "--profiles-dir",
        str(profiles_dir or project_dir),
        "--target-path",
        str(target_path),
        "--log-path",
        str(target_path),
        "--log-level",
        "none",
        "--log-level-file",
        "info",
        "--log-format-file",
        "json",  # as the commands' logs, which dagster-dbt asks for in JSON
        "--no-send-anonymous-usage-stats",
        "--vars",
        _database_vars(database_name, json.loads(variables)),
    ]
    if target:
        args += ["--target", target]
    result = dbtRunner().invoke(args)
    if not result.success:
        raise DbtParseFailed(f"dbt parse of {project_dir} failed: {result.exception}")
    return result.result
