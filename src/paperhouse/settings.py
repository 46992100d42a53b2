"""Where paperhouse reads and writes, resolved from flags, then environment, then defaults."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

# The checkout paperhouse is installed from (editable, as `make` installs it).
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DBT_PROJECT_DIR = PROJECT_ROOT / "dbt_project"
WORKSPACE_FILE = PROJECT_ROOT / "workspace.yaml"
BUNDLED_SEEDS = PROJECT_ROOT / "seeds"
DASHBOARD_TEMPLATES = PROJECT_ROOT / "dashboard"

SEEDS_ENV = "PAPERHOUSE_SEEDS_DIR"
WAREHOUSE_ENV = "PAPERHOUSE_WAREHOUSE"
DEFAULT_SEEDS_DIR = "seeds"
DEFAULT_WAREHOUSE = "data/paperhouse.duckdb"
# `1`: runs rank keyphrases with embeddings unless told otherwise (paperhouse.keyphrase_embeddings).
KEYPHRASE_EMBEDDINGS_ENV = "PAPERHOUSE_KEYPHRASE_EMBEDDINGS"


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
        """Held by the one run that may write the build database and publish (``paperhouse.locking``)."""
        return self.build_dir / "run.lock"


def keyphrase_embeddings_default() -> bool:
    """Whether a run ranks keyphrases with embeddings when it does not say: ``$PAPERHOUSE_KEYPHRASE_EMBEDDINGS``."""
    return os.environ.get(KEYPHRASE_EMBEDDINGS_ENV, "").lower() in ("1", "true", "yes")


def dagster_home() -> Path:
    """The Dagster instance's folder: ``$DAGSTER_HOME``, else ``.dagster`` in the working folder,
    where `make` and `paperhouse ui` keep it."""
    return Path(os.environ.get("DAGSTER_HOME") or ".dagster").resolve()


def venv_executable(name: str) -> str:
    """A command installed beside the running Python (dbt, dagster), so no activated venv is needed."""
    return str(Path(sys.executable).parent / name)


def resolve_paths(seeds_dir: str | os.PathLike | None = None, warehouse: str | os.PathLike | None = None) -> Paths:
    seeds = seeds_dir or os.environ.get(SEEDS_ENV) or DEFAULT_SEEDS_DIR
    target = warehouse or os.environ.get(WAREHOUSE_ENV) or DEFAULT_WAREHOUSE
    return Paths(seeds_dir=Path(seeds).expanduser().resolve(), warehouse=Path(target).expanduser().resolve())
