"""The dbt project and the `dbt` resource: dagster-dbt's ``DbtCliResource``, with dbt run one of two ways.

- ``worker`` (the default): ``WarmDbtCliResource``, a ``DbtCliResource`` whose dbt executable is
  ``paperhouse-dbt``, which hands each command to a warm dbt process (``orchestration.warm_dbt``).
- ``stock``: dagster-dbt's own ``DbtCliResource``, a new `dbt` process per command.

``PAPERHOUSE_DBT_RUNNER=stock|worker`` chooses, when the definitions load. Assets only call
``dbt.cli(args, context=context).stream()``, so either is a drop-in for the other.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from dagster import InitResourceContext
from dagster_dbt import DbtCliInvocation, DbtCliResource, DbtProject
from pydantic import Field, ValidationError

from orchestration.warm_dbt.project import parse, project_stamp
from orchestration.warm_dbt.worker import warm_dbt
from paperhouse.settings import DBT_PROJECT_DIR, resolve_paths, settings, variable, venv_executable

RUNNER_ENV = variable("dbt_runner")
RUNNERS = ("worker", "stock")


PARSE_LOCK = ".paperhouse-parse.lock"
# The dbt step that runs after every other dbt step it shares a run with (the history of checks,
# orchestration.assets.dbt): no dbt command follows its own.
LAST_DBT_STEP = "dbt_quality_history"


@cache
def dbt_project() -> DbtProject:
    """The bundled dbt project, prepared (``prepared_project``) once per process."""
    return prepared_project(DBT_PROJECT_DIR)


def prepared_project(project_dir: Path) -> DbtProject:
    """The dbt project, with a manifest that is never older than the project's files.

    This replaces ``prepare_if_dev``: it re-parses under `dagster dev`, the CLI and tests
    alike, and only when a model, test or YAML file changed since the last parse. Processes
    that load the definitions at the same moment (two pytest-xdist workers, the UI and a
    `paperhouse run`) take turns: the check and the parse hold one lock, so none of them reads
    a manifest that another is still writing, and the project is parsed once, not once each.
    """
    project = DbtProject(project_dir=project_dir, profiles_dir=project_dir)
    manifest = Path(project.manifest_path)
    with _exclusive(manifest.parent / PARSE_LOCK):
        if _manifest_is_stale(project_dir, manifest):
            parse(project_dir, manifest.parent)
    return project


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """A blocking ``flock(2)``: released when the block ends or the process dies, however."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _manifest_is_stale(project_dir: Path, manifest: Path) -> bool:
    return not manifest.exists() or project_stamp(project_dir) > manifest.stat().st_mtime


class WarmDbtCliResource(DbtCliResource):
    """``DbtCliResource`` whose dbt commands run in warm dbt processes (``dbt_executable`` is
    ``paperhouse-dbt``). When a run starts, a warm process parses the project for the run's build
    database (starting one if none is waiting), while the Python steps run."""

    warehouse: str = Field(
        default="",
        description="Published warehouse file whose build database dbt is parsed for ahead of the run's dbt "
        "steps (empty: $PAPERHOUSE_WAREHOUSE, then data/paperhouse.duckdb). Another warehouse only "
        "moves the parse into the first dbt step.",
    )

    last_steps: list[str] = Field(
        default=[LAST_DBT_STEP],
        description="Steps whose dbt command is the last of any run they are in: no warm process is "
        "started for a command after theirs (it would import dbt and parse for nothing).",
    )

    def cli(self, args: Sequence[str], *, context=None, **kwargs) -> DbtCliInvocation:
        if context is not None and context.op_def.name in self.last_steps:
            warm_dbt().expect_last_command()
        return super().cli(args, context=context, **kwargs)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        super().setup_for_execution(context)
        if context.run is None:  # a sensor or schedule evaluation: no dbt command follows
            return
        paths = resolve_paths(None, self.warehouse or None)
        warm_dbt().prepare(
            Path(self.project_dir),
            paths.dbt_target,
            paths.build_database.name,
            profiles_dir=Path(self.profiles_dir or self.project_dir),
            target=self.target,
        )


def selected_runner() -> str:
    """The dbt runner ``$PAPERHOUSE_DBT_RUNNER`` names (``paperhouse.settings``), else ``worker``."""
    try:
        return settings().dbt_runner
    except ValidationError as error:
        raise ValueError(f"{RUNNER_ENV}: expected one of {', '.join(RUNNERS)} ({error.errors()[0]['msg']})") from error


def dbt_resource(warehouse: str = "") -> DbtCliResource:
    """The `dbt` resource of the selected runner (``selected_runner``)."""
    if selected_runner() == "stock":
        return DbtCliResource(project_dir=dbt_project(), dbt_executable=venv_executable("dbt"))
    return WarmDbtCliResource(
        project_dir=dbt_project(), dbt_executable=venv_executable("paperhouse-dbt"), warehouse=warehouse
    )
