"""No import cycles among the project's packages, lazy (function-level) imports included: a cycle is a layer
that knows its caller, which is what a newcomer cannot take apart."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hgpo", "ros_nodes", "policies", "sim")


def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _imported(path: Path) -> set[Path]:
    """The project files `path` imports: a `from a.b import c` names a.b, and a.b.c where c is a module."""
    package = list(path.relative_to(ROOT).with_suffix("").parts)
    if package[-1] == "__init__":
        package.pop()
    else:
        package = package[:-1]
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names += [module] + [f"{module}.{alias.name}" for alias in node.names]
    files = {_module_file(name) for name in names if name.split(".")[0] in PACKAGES}
    return {f for f in files if f is not None and f != path}


def test_the_packages_import_each_other_without_cycles() -> None:
    graph = nx.DiGraph()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            graph.add_node(path)
            graph.add_edges_from((path, target) for target in _imported(path))
    assert graph.number_of_nodes() > 100, "the walk found the packages"
    cycles = [
        sorted(str(p.relative_to(ROOT)) for p in component)
        for component in nx.strongly_connected_components(graph)
        if len(component) > 1
    ]
    assert not cycles, f"import cycles: {cycles}"
