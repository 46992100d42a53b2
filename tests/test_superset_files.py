"""What `paperhouse superset` writes and imports, without starting Superset: the admin account kept
between starts, the generated secret, and the dashboards' bundle pointed at the warehouse."""

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

from paperhouse.bi import bundle
from paperhouse.bi.environment import DEFAULT_USER, SupersetHome, assets, installer_command
from paperhouse.settings import venv_executable


def test_the_account_is_generated_once_kept_and_overridden_by_the_settings(tmp_path):
    home = SupersetHome(tmp_path / "superset")
    first = home.credentials()
    assert first.user == DEFAULT_USER and len(first.password) >= 12
    assert home.credentials() == first  # kept for the next start
    assert json.loads(home.credentials_file.read_text()) == first.__dict__
    assert home.credentials_file.stat().st_mode & 0o077 == 0  # only its owner reads it
    chosen = home.credentials("analyst", "s3cret-password")
    assert (chosen.user, chosen.password) == ("analyst", "s3cret-password")
    assert home.credentials() == chosen  # what was asked last is kept


def test_the_config_reads_a_secret_generated_once_and_never_written_into_it(tmp_path):
    home = SupersetHome(tmp_path / "superset")
    home.write_config()
    secret = (home.path / "secret_key").read_text()
    home.write_config()
    assert (home.path / "secret_key").read_text() == secret and len(secret) >= 48
    assert secret not in home.config.read_text()
    assert home.environment()["SUPERSET_CONFIG_PATH"] == str(home.config)
    # Superset's own virtualenv runs the config: it may import nothing but the standard library.
    program = "import runpy, sys; print(runpy.run_path(sys.argv[1])['SECRET_KEY'] == sys.argv[2])"
    isolated = [sys.executable, "-I", "-S", "-c", program, str(home.config), secret]
    assert subprocess.run(isolated, capture_output=True, text=True, check=True).stdout.strip() == "True"


def test_the_bundle_points_its_database_at_the_warehouse_read_only(tmp_path):
    warehouse = tmp_path / "data" / "paperhouse.duckdb"
    archive = zipfile.ZipFile(io.BytesIO(bundle.bundle_zip(warehouse)))
    shipped = sorted(p.relative_to(bundle.bundle_folder()) for p in bundle.bundle_folder().rglob("*.yaml"))
    assert sorted(Path(*Path(name).parts[1:]) for name in archive.namelist()) == shipped
    (database,) = [yaml.safe_load(archive.read(n)) for n in archive.namelist() if "/databases/" in n]
    assert database["sqlalchemy_uri"] == f"duckdb:///{warehouse.resolve()}?access_mode=READ_ONLY"
    assert yaml.safe_load(archive.read("paperhouse/metadata.yaml"))["type"] == "assets"
    # In the repository the bundle names no machine's path.
    assert all(str(Path.home()) not in p.read_text() for p in bundle.bundle_folder().rglob("*.yaml"))


def test_every_chart_keeps_the_query_its_data_answers_with():
    """`GET /api/v1/chart/<id>/data/` answers from the chart's saved query context."""
    charts = list((bundle.bundle_folder() / "charts").glob("*.yaml"))
    assert len(charts) >= 5
    for path in charts:
        chart = yaml.safe_load(path.read_text())
        context = json.loads(chart["query_context"])
        assert context["queries"] and context["form_data"]["viz_type"] == chart["viz_type"], path.name
    assert (assets() / "requirements.lock").read_text().count("\napache_superset==6.1.0\n") == 1


def test_an_export_is_written_back_as_the_bundle_it_was_imported_from(tmp_path):
    """`paperhouse superset --export`: Superset's export (a dated root folder, ids in the file names,
    this machine's warehouse path, a time stamp) becomes the repository's bundle again, byte for byte."""
    shipped = bundle.bundle_folder()
    warehouse = tmp_path / "data" / "paperhouse.duckdb"
    exported = io.BytesIO()
    with zipfile.ZipFile(exported, "w") as archive:
        for number, path in enumerate(sorted(shipped.rglob("*.yaml"))):
            relative = path.relative_to(shipped)
            text = path.read_text().replace(bundle.WAREHOUSE_URI, bundle.warehouse_uri(warehouse))
            if relative.name == "metadata.yaml":
                text = text.replace("type: assets", "type: Dashboard") + "timestamp: '2026-12-07T22:38:48+00:00'\n"
            else:
                relative = relative.with_name(f"{relative.stem}_{number}.yaml")
            archive.writestr(f"dashboard_export_20261207T223848/{relative}", text)

    class Superset:
        def listed(self, kind: str) -> list[dict]:
            assert kind == "dashboard"
            return [{"id": 1, "dashboard_title": "paperhouse: Overview"}, {"id": 2, "dashboard_title": "Sales"}]

        def export_dashboards(self, ids: list[int]) -> bytes:
            assert ids == [1]  # paperhouse's dashboards only
            return exported.getvalue()

    written = bundle.export_dashboards(Superset(), tmp_path / "bundle")
    assert sorted(p.relative_to(tmp_path / "bundle") for p in written) == sorted(
        p.relative_to(shipped) for p in shipped.rglob("*.yaml")
    )
    for path in shipped.rglob("*.yaml"):
        assert (tmp_path / "bundle" / path.relative_to(shipped)).read_text() == path.read_text(), path.name


def test_the_lock_is_installed_by_uv_beside_python_else_by_the_virtualenvs_pip(tmp_path):
    python = tmp_path / "venv" / "bin" / "python"
    uv = tmp_path / "bin" / "uv"
    assert installer_command(python, uv)[0] == str(python)  # no uv there: the new virtualenv's pip
    uv.parent.mkdir()
    uv.touch()
    command = installer_command(python, uv)
    assert command[:3] == [str(uv), "pip", "install"]
    assert command[command.index("--python") + 1] == str(python) and "--compile-bytecode" in command
    # `make install` puts uv beside the interpreter running the tests, so `make superset` uses it.
    assert installer_command(python)[0] == venv_executable("uv")
