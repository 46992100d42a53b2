"""The package's modules import one another without cycles (function-level imports included): a
cycle means two modules are one concern split in two, or a helper living in the wrong one."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "paperhouse"


def _imports() -> dict[str, set[str]]:
    modules = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__"}
    graph = {}
    for module in modules:
        found = set()
        for node in ast.walk(ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("paperhouse"):
                names = [node.module.split(".")[1]] if "." in node.module else [a.name for a in node.names]
                found |= set(names) & modules
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("paperhouse.")} & modules
        graph[module] = found - {module}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target] if target in path else [module, target]
            if target not in state and (found := visit(target, [*path, target])):
                return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module, [module])):
            return found
    return None


def test_the_package_has_no_import_cycle():
    assert _cycle(_imports()) is None, f"import cycle: {' -> '.join(_cycle(_imports()))}"


def test_a_cycle_would_be_found():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
