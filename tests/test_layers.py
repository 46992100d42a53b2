"""The layers of src/paperhouse, as import-linter holds them (pyproject.toml's [tool.importlinter];
`make lint` runs it): every stage is in the layer list, the contracts hold, and they would catch
a stage importing one above it, the package importing the orchestration, or an import cycle."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "paperhouse"
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
# Holds files, not code (the dbt project, the bundled seeds): nothing to layer.
DATA_ONLY = {"paperhouse.project_files"}


def lint_imports(cwd: Path, *pythonpath: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(map(str, pythonpath))},
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_stage_of_the_package_is_in_a_layer():
    (layers,) = [c["layers"] for c in CONFIG["contracts"] if c["type"] == "layers"]
    stages = {
        f"paperhouse.{p.stem if p.suffix == '.py' else p.name}"
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert stages - DATA_ONLY == set(layers)


def test_the_contracts_hold():
    result = lint_imports(ROOT, ROOT / "src", ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def copy_of_the_code(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("layers")
    shutil.copytree(PACKAGE, root / "src" / "paperhouse", ignore=shutil.ignore_patterns("__pycache__", "project_files"))
    (root / "src" / "paperhouse" / "project_files").mkdir()
    (root / "src" / "paperhouse" / "project_files" / "__init__.py").touch()
    shutil.copytree(ROOT / "orchestration", root / "orchestration", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("ingest/encoding.py", "import paperhouse.nlp.names", "each importing only those below it"),
        ("nlp/stems.py", "from orchestration import runner", "never imports the orchestration"),
        ("quality/suites.py", "import dagster", "never imports the orchestration or Dagster"),
        ("dedup/minhash.py", "import paperhouse.evaluation.synth", "never imports the evaluation"),
        ("dashboard/site.py", "import paperhouse.bi.bundle", "never imports the BI tools"),
        ("nlp/terms/words.py", "import paperhouse.nlp.terms.extraction", "No import cycles"),
    ],
)
def test_a_breach_is_caught(copy_of_the_code, module, line, broken):
    path = copy_of_the_code / "src" / "paperhouse" / module
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original + f"\n\ndef _breach():\n    {line}  # noqa\n", encoding="utf-8")
        result = lint_imports(copy_of_the_code, copy_of_the_code / "src", copy_of_the_code)
    finally:
        path.write_text(original, encoding="utf-8")
    assert result.returncode != 0
    assert [row for row in result.stdout.splitlines() if broken in row and row.endswith("BROKEN")], result.stdout
