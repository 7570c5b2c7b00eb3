"""The package's shape: no import cycles (TYPE_CHECKING imports included), domain modules free of `mcp`,
and a server.py that only registers on BatteriesServer's API."""

from __future__ import annotations

import ast
from pathlib import Path

import mcp_sql

PACKAGE = Path(mcp_sql.__file__).parent
MODULES = {path.stem: ast.parse(path.read_text(encoding="utf-8")) for path in PACKAGE.glob("*.py")}


def _imports(tree: ast.Module) -> set[str]:
    """Top-level modules this module imports, by name ('mcp_sql.x' and '.x' both give 'x' for ours)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                found.add(node.module or "")
            elif node.module:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name.removeprefix("mcp_sql.") for name in found}


GRAPH = {name: {other for other in _imports(tree) if other in MODULES} for name, tree in MODULES.items()}


def test_no_module_of_the_package_imports_itself_back() -> None:
    def cycle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            name, path = stack.pop()
            for other in GRAPH[name]:
                if other == start:
                    return [*path, start]
                if other not in path:
                    stack.append((other, [*path, other]))
        return None

    cycles = [cycle for name in sorted(GRAPH) if (cycle := cycle_from(name))]
    assert cycles == []


def test_the_postgresql_writer_reaches_the_engine_only_through_the_pool() -> None:
    """The writer and the reader share postgres_pool.py (issue 9: no writer reaching into the engine)."""
    assert "postgres_engine" not in GRAPH["postgres_write"]
    assert "postgres_pool" in GRAPH["postgres_write"]


def test_only_server_py_imports_the_sdk() -> None:
    with_sdk = sorted(
        name
        for name, tree in MODULES.items()
        if any(i == "mcp" or i.startswith("mcp.") for i in _imports(tree))
    )
    assert with_sdk == ["server"]


def test_server_py_uses_only_the_batteries_server_api() -> None:
    tree = MODULES["server"]
    reaches_past = [
        ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "mcp"
    ]
    assert reaches_past == []
    classes = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    assert classes == []
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert functions == ["build_server"]
