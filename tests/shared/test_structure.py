"""The runtime's floor plan holds: rooms import only what their docstring allows, nothing imports in
a circle, and servers use only the public surface.

Imports are read from the source (every `import`, at module level, inside functions and under
`TYPE_CHECKING` alike: a cycle that only type checking sees is still a seam in the wrong place).
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNTIME = REPO / "shared" / "src" / "mcp_batteries"
SERVERS = sorted((REPO / "servers").glob("*/src/mcp_*"))
TEMPLATES = RUNTIME / "_bundle" / "templates"

#: What a server package (and the scaffold's templates) may import from the runtime.
PUBLIC = {"definition", "server", "errors", "live", "safety", "work", "platform"}
#: What tests of a server may import besides: the test kit.
PUBLIC_FOR_TESTS = PUBLIC | {"testing"}
#: Public modules that are real code, not re-exports of rooms; rooms may import them.
SHARED_LEAVES = {"errors"}


def module_name(path: Path, top: Path) -> str:
    parts = list(path.relative_to(top.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, name: str, is_package: bool) -> Iterator[str]:
    """Every module `path` imports, as a dotted name (relative imports resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            yield module
            # `from pkg import module` imports the module itself
            yield from (f"{module}.{alias.name}" for alias in node.names)


def graph(top: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same top-level package it imports."""
    files = {module_name(p, top): p for p in top.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in files.items():
        targets = set()
        for imported in imported_modules(path, name, path.name == "__init__.py"):
            while imported and imported not in files:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and imported != top.name:
                targets.add(imported)
        edges[name] = targets
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def rooms() -> dict[str, set[str]]:
    """Room -> the rooms (and shared leaves) its docstring says it may import."""
    allowed: dict[str, set[str]] = {}
    for init in sorted(RUNTIME.glob("_*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        match = re.search(r"May import: (.*?)\.(?:\s|$)", doc, re.S)
        assert match, f"{init.parent.name}'s docstring says what it may import ('May import: ...')"
        allowed[init.parent.name] = set(re.findall(r"`([a-z_]+)`", match.group(1)))
    return allowed


def room_of(module: str) -> str:
    """`mcp_batteries._core.app` -> `_core`; a public module -> its own name."""
    return module.split(".")[1] if "." in module else ""


@pytest.mark.parametrize("top", [RUNTIME, *SERVERS], ids=lambda p: p.name)
def test_no_module_imports_in_a_circle(top: Path) -> None:
    assert cycles(graph(top)) == []


def test_every_room_imports_only_what_its_docstring_allows() -> None:
    allowed = rooms()
    assert set(allowed) >= {"_protocol", "_safety", "_core", "_live", "_signin", "_transport", "_entry"}
    wrong = []
    for module, targets in graph(RUNTIME).items():
        room = room_of(module)
        if room not in allowed:
            continue
        for target in targets:
            other = room_of(target)
            if other != room and other not in allowed[room]:
                wrong.append(f"{module} -> {target}")
    assert wrong == [], "arrows the rooms' docstrings do not allow (add the arrow there, or move the code)"


def test_rooms_never_import_the_public_modules_built_on_them() -> None:
    public_facades = {f"mcp_batteries.{name}" for name in PUBLIC_FOR_TESTS - SHARED_LEAVES}
    wrong = [
        f"{module} -> {target}"
        for module, targets in graph(RUNTIME).items()
        if room_of(module).startswith("_")
        for target in targets & public_facades
    ]
    assert wrong == []


TEMPLATE_IMPORT = re.compile(r"^\s*(?:from|import) (mcp_batteries[\w.]*)", re.M)


def runtime_imports(path: Path) -> set[str]:
    if path.suffix == ".tmpl":
        # templates are Python with @@placeholders@@ that do not parse; their import lines are plain
        return set(TEMPLATE_IMPORT.findall(path.read_text()))
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        found |= {name for name in names if name == "mcp_batteries" or name.startswith("mcp_batteries.")}
    return found


def server_sources() -> Iterator[tuple[Path, set[str]]]:
    for top in SERVERS:
        for path in top.rglob("*.py"):
            yield path, PUBLIC
    for path in (TEMPLATES / "server").rglob("*.py.tmpl"):
        yield path, PUBLIC
    for path in (TEMPLATES / "tests").rglob("*.py.tmpl"):
        yield path, PUBLIC_FOR_TESTS
    for folder in ("filesystem", "sql", "fetch", "git", "tasks"):
        for path in (REPO / "tests" / folder).rglob("*.py"):
            yield path, PUBLIC_FOR_TESTS


def test_servers_and_templates_import_only_the_public_surface() -> None:
    wrong = []
    for path, allowed in server_sources():
        for module in runtime_imports(path):
            if module.partition(".")[2] not in allowed:
                wrong.append(f"{path.relative_to(REPO)}: {module}")
    assert wrong == [], (
        f"private runtime modules used outside the runtime; public: {sorted(PUBLIC_FOR_TESTS)}"
    )


@pytest.mark.parametrize("name", sorted(PUBLIC_FOR_TESTS))
def test_public_modules_declare_and_export_every_name(name: str) -> None:
    module = importlib.import_module(f"mcp_batteries.{name}")
    exported = module.__all__
    assert exported, f"mcp_batteries.{name} has an empty __all__"
    missing = [item for item in exported if not hasattr(module, item)]
    assert missing == []


def test_a_room_that_is_not_in_the_architecture_map_fails() -> None:
    architecture = (REPO / "docs" / "architecture.md").read_text()
    unmapped = [room for room in rooms() if f"`{room}/`" not in architecture]
    assert unmapped == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
