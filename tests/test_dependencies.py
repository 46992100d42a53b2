"""Every package the code imports directly is declared in pyproject.toml: one that arrives only as
another package's dependency can vanish with that package's next release."""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The packages, and the tests' own modules (helpers such as corpus, and tests that share a fixture).
FIRST_PARTY = {"paperhouse", "orchestration"} | {path.stem for path in (ROOT / "tests").glob("*.py")}


def _imported_modules(folder: Path) -> set[str]:
    modules = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - FIRST_PARTY - set(sys.stdlib_module_names)


def _declared(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", requirement)[0].lower().replace("_", "-") for requirement in requirements}


def _distributions(modules: set[str]) -> dict[str, set[str]]:
    providers = packages_distributions()
    return {module: {name.lower().replace("_", "-") for name in providers.get(module, [module])} for module in modules}


def test_every_directly_imported_package_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = _declared(project["dependencies"])
    extras = project["optional-dependencies"]
    everything = runtime | _declared(extras["dev"]) | _declared(extras["spark"]) | _declared(extras["embeddings"])
    # The package and its orchestration import only runtime dependencies; the tests may use dev ones.
    # src/paperhouse's evaluation and benchmark modules import their baselines lazily, from dev, and
    # paperhouse.engines.spark imports pyspark only when the Spark engine runs (the spark extra), and
    # paperhouse.nlp.keyphrases.embeddings its model only when the option is on (the embeddings extra).
    missing = {
        module: names
        for folder, allowed in (
            (ROOT / "orchestration", runtime),
            (ROOT / "src", everything),
            (ROOT / "tests", everything),
        )
        for module, names in _distributions(_imported_modules(folder)).items()
        if not names & allowed
    }
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
