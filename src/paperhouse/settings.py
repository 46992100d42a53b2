"""Every setting paperhouse reads, in one place: flags first, then ``PAPERHOUSE_*`` variables, then defaults.

``Settings`` is the one typed model of the environment (pydantic-settings, prefix ``PAPERHOUSE_``);
``settings()`` reads it afresh, so a test that sets a variable sees it. Nothing else in the
package reads a ``PAPERHOUSE_*`` variable, and nothing writes one: a Dagster resource passes its
configured values down as arguments.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Literal

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# What ships inside the package (paperhouse.project_files): in a checkout, links to its folders.
DBT_PROJECT_DIR = Path(files("paperhouse.project_files").joinpath("dbt_project")).resolve()
BUNDLED_SEEDS = Path(files("paperhouse.project_files").joinpath("seeds")).resolve()
DAGSTER_YAML = Path(files("paperhouse.project_files").joinpath("dagster.yaml")).resolve()
DASHBOARD_TEMPLATES = Path(files("paperhouse.dashboard").joinpath("templates"))
# The definitions `paperhouse ui` serves (pyproject.toml's [tool.dagster] names the same module).
DEFINITIONS_MODULE = "orchestration.definitions"
# The runner a `paperhouse run` starts, an entry point (pyproject.toml), so this package never imports it.
RUNNER_GROUP = "paperhouse.runner"
RUNNER_NAME = "dagster"

PREFIX = "PAPERHOUSE_"
DEFAULT_SEEDS_DIR = "seeds"
DEFAULT_WAREHOUSE = "data/paperhouse.duckdb"
Engine = Literal["duckdb", "spark"]


class Settings(BaseSettings):
    """What a user may set in the environment; each field is ``PAPERHOUSE_<FIELD>`` (upper case).
    An empty variable counts as unset."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, env_ignore_empty=True, extra="ignore", frozen=True)

    seeds_dir: Path = Path(DEFAULT_SEEDS_DIR)
    """The folder of lists and exports a run reads."""
    warehouse: Path = Path(DEFAULT_WAREHOUSE)
    """The published warehouse file; the build database, marts and dashboard sit beside it."""
    engine: Engine = "duckdb"
    """Where the Python stages compute: ``duckdb`` (this process) or ``spark`` (docs/spark.md)."""
    spark_master: str = "local[2]"
    """The Spark engine's master: ``local[2]``, ``spark://host:7077``, ``yarn``, ``k8s://...``."""
    spark_warehouse: Path | None = None
    """The Spark engine's Parquet folder (unset: ``spark-warehouse`` beside the warehouse file)."""
    keyphrase_embeddings: bool = False
    """Rank keyphrases with sentence embeddings when a run does not say (``--keyphrase-embeddings``)."""
    dbt_runner: Literal["worker", "stock"] = "worker"
    """How dbt runs (orchestration/dbt_resource.py): in warm dbt processes, or a new `dbt` process per command."""
    failpoints: str = ""
    """``name[@n],...``: die at these places, to prove a run crash safe (``paperhouse.common.faults``)."""
    superset_port: int = 8088
    """Where `paperhouse superset` serves Apache Superset (on 127.0.0.1)."""
    superset_venv: Path = Path(".superset-venv")
    """Superset's own virtualenv, made from its lock when missing (``paperhouse.bi.environment``)."""
    superset_user: str = ""
    """Superset's admin account (empty: ``admin``, with a generated password unless one is set)."""
    superset_password: str = ""
    """Its password (empty: generated once, kept in ``data/superset/credentials.json`` and printed)."""
    realdata: Path = Path("../shared/realdata")
    """The real lists `make eval` and the tests read in place (``paperhouse.evaluation.real_data``)."""

    @field_validator("engine", mode="before")
    @classmethod
    def _lower_case(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


def settings() -> Settings:
    """The settings as the environment has them now."""
    return Settings()


def variable(field: str) -> str:
    """The environment variable of a ``Settings`` field, for messages and child processes."""
    if field not in Settings.model_fields:
        raise KeyError(field)
    return PREFIX + field.upper()


@dataclass(frozen=True)
class Paths:
    """The seeds folder and the warehouse files derived from the published warehouse path.

    A run builds into ``build_database`` and publishes by swapping a copy of it onto
    ``warehouse``, so readers of the published file never see a half-built table (and never
    hold a lock the run needs: nothing ever opens the published file for writing). The
    build file keeps the warehouse's file name (in a hidden sibling folder) because DuckDB
    names a database after its file stem and dbt's views refer to it by that name.
    """

    seeds_dir: Path
    warehouse: Path

    @property
    def build_dir(self) -> Path:
        return self.warehouse.parent / f".{self.warehouse.name}.build"

    @property
    def build_database(self) -> Path:
        return self.build_dir / self.warehouse.name

    @property
    def dbt_target(self) -> Path:
        """dbt's target folder for this warehouse: dbt parses the whole project again when the
        database path in its profile changes, so each warehouse keeps its own parse."""
        return self.build_dir / "dbt_target"

    @property
    def marts_export(self) -> Path:
        """The Parquet copy of every mart (``data/marts/<table>.parquet``), for tools that prefer files."""
        return self.warehouse.parent / "marts"

    @property
    def dashboard(self) -> Path:
        """The static dashboard site (``data/dashboard/index.html``)."""
        return self.warehouse.parent / "dashboard"

    @property
    def run_lock(self) -> Path:
        """Held by the one run that may write the build database and publish (``paperhouse.warehouse.locking``)."""
        return self.build_dir / "run.lock"


def dagster_home() -> Path:
    """The Dagster instance's folder: ``$DAGSTER_HOME``, else ``.dagster`` in the working folder,
    where `make` and `paperhouse ui` keep it."""
    return Path(os.environ.get("DAGSTER_HOME") or ".dagster").resolve()


def venv_executable(name: str) -> str:
    """A command installed beside the running Python (dbt, dagster), so no activated venv is needed."""
    return str(Path(sys.executable).parent / name)


def resolve_paths(seeds_dir: str | os.PathLike | None = None, warehouse: str | os.PathLike | None = None) -> Paths:
    configured = settings()
    seeds = seeds_dir or configured.seeds_dir
    target = warehouse or configured.warehouse
    return Paths(seeds_dir=Path(seeds).expanduser().resolve(), warehouse=Path(target).expanduser().resolve())
