"""paperhouse as a package: `pip install .` (not editable) into a fresh virtualenv, then a run from
another folder. The dbt project, the seeds, the dashboard templates and the gold sets must ship
inside the package (found through importlib.resources), not be read from this checkout."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from corpus import REPO, SEEDS

pytestmark = pytest.mark.slow

# What a wheel is built from: the package's code, the files it ships and its metadata.
SOURCES = ("pyproject.toml", "README.md", "src", "orchestration", "dbt_project", "seeds", "dagster.yaml")

# Where the installed package says its files are, printed by the installed interpreter.
WHERE = """
import json, paperhouse, orchestration
from paperhouse import settings
from paperhouse.evaluation.real_data import GOLD
print(json.dumps({
    "paperhouse": paperhouse.__file__, "orchestration": orchestration.__file__,
    "dbt_project": str(settings.DBT_PROJECT_DIR), "seeds": str(settings.BUNDLED_SEEDS),
    "templates": str(settings.DASHBOARD_TEMPLATES), "gold": str(GOLD),
}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtualenv with paperhouse installed from a wheel of this checkout, its
    dependencies at the versions requirements.lock pins."""
    root = tmp_path_factory.mktemp("install")
    # pip builds in the source folder (build/, *.egg-info): a copy of what is committed, not this checkout.
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy
        kept = {"symlinks": True, "ignore": shutil.ignore_patterns("__pycache__", "target", "logs")}
        copy(REPO / name, source / name, **(kept if copy is shutil.copytree else {}))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--quiet", "--disable-pip-version-check", "install"]
    result = subprocess.run(
        [*pip, "--constraint", str(REPO / "requirements.lock"), str(source)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return venv


def clean_environment(home: Path) -> dict[str, str]:
    """No PYTHONPATH, no activated venv, no PAPERHOUSE_* or DAGSTER_HOME of the test run."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}


def test_the_installed_package_reads_its_files_from_itself(installed, tmp_path):
    where = subprocess.run(
        [str(installed / "bin" / "python"), "-c", WHERE],
        cwd=tmp_path,
        env=clean_environment(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )
    paths = {name: Path(path) for name, path in json.loads(where.stdout).items()}
    site = next((installed / "lib").glob("python3.*/site-packages"))
    for name, path in paths.items():
        assert path.is_relative_to(site), f"{name} is read from {path}, not from the installed package"
        assert not path.is_relative_to(REPO), name
    assert (paths["dbt_project"] / "dbt_project.yml").is_file()
    assert (paths["dbt_project"] / "models" / "marts" / "_marts__models.yml").is_file()
    assert not (paths["dbt_project"] / "target").exists(), "a build's leftovers were packaged"
    assert sorted(p.name for p in paths["seeds"].glob("*.txt")) == sorted(p.name for p in SEEDS.glob("*.txt"))
    assert (paths["templates"] / "index.html.j2").is_file()
    assert (paths["gold"] / "keyphrase_gold.jsonl").is_file()


def test_the_installed_package_builds_a_warehouse_from_another_folder(installed, tmp_path):
    lists = tmp_path / "my lists"
    lists.mkdir()
    for path in sorted(SEEDS.glob("*.txt"))[:2]:
        shutil.copy(path, lists / path.name)
    expected = sum(len([p for p in f.read_text().split("\n\n")[1:] if p.strip()]) for f in lists.glob("*.txt"))
    result = subprocess.run(
        [str(installed / "bin" / "paperhouse"), "run", "--seeds", "my lists", "--warehouse", "out/paperhouse.duckdb"],
        cwd=tmp_path,
        env=clean_environment(tmp_path),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with duckdb.connect(str(tmp_path / "out" / "paperhouse.duckdb"), read_only=True) as con:
        assert con.sql("select count(*) from marts.papers").fetchone()[0] == expected
        assert con.sql("select count(*) from marts.topics").fetchone()[0] > 0
    assert (tmp_path / "out" / "dashboard" / "index.html").is_file()
