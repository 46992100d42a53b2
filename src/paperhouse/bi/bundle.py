"""The dashboards as code: Superset's YAML bundle in ``superset_assets/dashboards``, imported with the
warehouse it reads, and exported back after a change made in Superset.

The bundle's database has no path of its own (``WAREHOUSE_URI`` stands in): the import fills in
the warehouse's, opened read-only, so that a run can swap a new file in while charts read. Every
mart gets a dataset, whether a chart reads it yet or not, its columns read from the warehouse.
"""

from __future__ import annotations

import io
import re
import shutil
import zipfile
from pathlib import Path

import yaml

from paperhouse.bi.api import SupersetClient
from paperhouse.bi.environment import assets
from paperhouse.warehouse.database import connect_reader

DATABASE_NAME = "paperhouse"
SCHEMA = "marts"
WAREHOUSE_URI = "duckdb:///WAREHOUSE?access_mode=READ_ONLY"
DASHBOARD_PREFIX = "paperhouse: "


def bundle_folder() -> Path:
    return assets() / "dashboards"


def warehouse_uri(warehouse: Path) -> str:
    """Read-only, and nothing else: DuckDB refuses a second configuration of one file in one process."""
    return WAREHOUSE_URI.replace("WAREHOUSE", str(warehouse.resolve()))


def bundle_zip(warehouse: Path, folder: Path | None = None) -> bytes:
    """The bundle as the ZIP Superset's asset import takes, its database pointing at ``warehouse``."""
    folder = folder or bundle_folder()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*.yaml")):
            text = path.read_text(encoding="utf-8")
            if path.parent.name == "databases":
                text = text.replace(WAREHOUSE_URI, warehouse_uri(warehouse))
            archive.writestr(f"paperhouse/{path.relative_to(folder)}", text)
    return buffer.getvalue()


def import_dashboards(client: SupersetClient, warehouse: Path) -> None:
    client.import_assets(bundle_zip(warehouse))


def mart_tables(warehouse: Path) -> list[str]:
    with connect_reader(warehouse) as con:
        return [
            name
            for (name,) in con.execute(
                "select table_name from information_schema.tables where table_schema = ? order by 1", [SCHEMA]
            ).fetchall()
        ]


def register_marts(client: SupersetClient, warehouse: Path) -> dict[str, int]:
    """A dataset for every mart (made when missing), each with the columns the warehouse has now;
    the dataset ids by table."""
    database = next(d["id"] for d in client.listed("database") if d["database_name"] == DATABASE_NAME)
    datasets = {d["table_name"]: d["id"] for d in client.listed("dataset") if d.get("schema") == SCHEMA}
    for table in mart_tables(warehouse):
        if table not in datasets:
            made = client.request(
                "POST", "/api/v1/dataset/", {"database": database, "schema": SCHEMA, "table_name": table}
            )
            datasets[table] = made["id"]
        client.request("PUT", f"/api/v1/dataset/{datasets[table]}/refresh")
    return datasets


def export_dashboards(client: SupersetClient, folder: Path | None = None) -> list[Path]:
    """Write paperhouse's dashboards (titled ``paperhouse: ...``) as they are in Superset back to the
    bundle: one YAML file each, named without Superset's ids, the warehouse's path taken out."""
    folder = folder or bundle_folder()
    ids = [d["id"] for d in client.listed("dashboard") if d["dashboard_title"].startswith(DASHBOARD_PREFIX)]
    exported = zipfile.ZipFile(io.BytesIO(client.export_dashboards(ids)))
    shutil.rmtree(folder, ignore_errors=True)
    written = []
    for name in sorted(exported.namelist()):
        relative = Path(*Path(name).parts[1:])  # below the export's dated root folder
        text = exported.read(name).decode("utf-8")
        if relative.parent.name == "databases":
            database = yaml.safe_load(text)
            text = text.replace(database["sqlalchemy_uri"], WAREHOUSE_URI)
        elif relative.name == "metadata.yaml":
            text = re.sub(r"(?m)^timestamp: .*\n", "", text).replace("type: Dashboard", "type: assets")
        target = folder / relative.parent / re.sub(r"_\d+\.yaml$", ".yaml", relative.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written
