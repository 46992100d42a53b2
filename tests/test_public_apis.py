"""The code uses other packages through their public names only: no module in src/, orchestration/ or
tests/ imports a module path with an underscore-prefixed part from a third-party package (``dagster._core``),
imports an underscore name from one, or reaches an underscore attribute of one (``DuckDBConnectionManager._ENV``,
``dagster._check``) or of an object it handed back (``engine._metric_cache``). A package's private names change
in any release without notice.

Underscore attributes that the project's own code defines (``self._guard``) are its own business."""

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "orchestration", "tests")
FIRST_PARTY = {"paperhouse", "orchestration", "corpus", "browser", "conftest"} | {
    p.stem for p in (ROOT / "tests").glob("*.py")
}
THIRD_PARTY = set(packages_distributions()) - FIRST_PARTY
# A dotted name in a string, as `monkeypatch.setattr("dagster._core.x.y", ...)` or `import_module` take one.
DOTTED = re.compile(r"[A-Za-z_]\w*(\.\w+)+")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _third_party(module: str) -> bool:
    top = module.split(".")[0]
    return top in THIRD_PARTY and top not in sys.stdlib_module_names


def _names_private_path(value: object) -> bool:
    """A string naming a private module or attribute of another package (``"dagster._core.x"``)."""
    if not isinstance(value, str) or not DOTTED.fullmatch(value) or not _third_party(value):
        return False
    return any(_private(part) for part in value.split(".")[1:])


def _own_names(trees: list[ast.Module]) -> set[str]:
    """Every underscore name the project's own code defines: functions, classes, attributes it
    assigns, module-level and class-level names."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return {name for name in names if _private(name)}


def violations(source: str, own_names: set[str] = frozenset()) -> list[tuple[int, str]]:
    """(line, what) for each use of another package's private name in ``source``."""
    tree = ast.parse(source)
    found = []
    # Names bound to a module or object imported from a third-party package.
    imported = set()
    stdlib = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                if _third_party(alias.name):
                    imported.add(local)
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append((node.lineno, f"import {alias.name}"))
                elif alias.name.split(".")[0] in sys.stdlib_module_names:
                    stdlib.add(local)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = {alias.asname or alias.name for alias in node.names}
            if not _third_party(node.module):
                if node.module.split(".")[0] in sys.stdlib_module_names:
                    stdlib |= names
                continue
            imported |= names
            if any(_private(part) for part in node.module.split(".")):
                found.append((node.lineno, f"from {node.module} import ..."))
            found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names if _private(a.name)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute | ast.Call | ast.Subscript):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id in stdlib:
                continue  # Python's own (os._exit) is documented
            if (isinstance(root, ast.Name) and root.id in imported) or node.attr not in own_names:
                found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Constant) and _names_private_path(node.value):
            found.append((node.lineno, repr(node.value)))
    return sorted(set(found))


def _sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
    }


def test_no_module_uses_another_packages_private_names():
    sources = _sources()
    own = _own_names([ast.parse(source) for source in sources.values()])
    found = {f"{path}:{line}: {what}" for path, source in sources.items() for line, what in violations(source, own)}
    assert not found, "private names of other packages:\n" + "\n".join(sorted(found))


def test_private_imports_and_attributes_are_found():
    assert violations("from dagster._core.storage.event_log import SqliteEventLogStorage")
    assert violations("import dagster._check as check")
    assert violations("from dagster_dbt.core.resource import _get_dbt_executable")
    assert violations("import dagster\ndagster._core.storage")
    assert violations("from dbt.adapters.duckdb.connections import DuckDBConnectionManager as M\nM._ENV.close()")
    assert violations("def f(instance):\n    return instance._event_storage")
    assert violations("monkeypatch.setattr('dagster._core.instance.DagsterInstance.get', None)")
    # Public names, Python's own, and the project's own underscore names are fine.
    assert not violations("from dagster import DagsterInstance\nimport os\nos._exit(0)\nDagsterInstance.get()")
    assert not violations("class A:\n    def f(self):\n        return self._guard", own_names={"_guard"})
