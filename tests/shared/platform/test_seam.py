"""Nothing outside the platform seam (`mcp_batteries._platform`) depends on what only some
platforms have: it is all in one room, with one implementation per family (issue 26).

Read from the source (AST) of the runtime and every server: no import of `fcntl`, `termios` or the
Windows-only modules; no `O_NOFOLLOW`, `O_PATH`, `O_DIRECTORY`; no `dir_fd` arguments; no path
under `/proc`; no `os.killpg`/`os.getuid`-style POSIX process calls; no signal Windows lacks; and
POSIX-only modules (`resource`, `pwd`, `grp`) only where an ImportError is handled.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SEAM = REPO / "shared" / "src" / "mcp_batteries" / "_platform"

NEVER_IMPORTED = {"fcntl", "termios", "msvcrt", "winreg", "_winapi", "posix", "nt"}
GUARDED_IMPORTS = {"resource", "pwd", "grp"}
POSIX_ONLY_NAMES = {
    "O_NOFOLLOW",
    "O_PATH",
    "O_DIRECTORY",
    "killpg",
    "getuid",
    "getgid",
    "geteuid",
    "setsid",
    "fchown",
    "F_GETPATH",
    "F_DUPFD_CLOEXEC",
}
DESCRIPTOR_RELATIVE = {"dir_fd", "src_dir_fd", "dst_dir_fd"}
#: Signals Windows has (Python defines these there); any other `signal.SIG*` is POSIX-only.
PORTABLE_SIGNALS = {"SIGINT", "SIGTERM", "SIGBREAK", "SIGABRT", "SIG_DFL", "SIG_IGN"}


def sources() -> Iterator[Path]:
    for top in [REPO / "shared" / "src", *sorted((REPO / "servers").glob("*/src"))]:
        for path in sorted(top.rglob("*.py")):
            if SEAM not in path.parents:
                yield path


def guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                names = handler.type
                listed = names.elts if isinstance(names, ast.Tuple) else [names]
                if any(
                    isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in listed
                ):
                    return True
    return False


def findings(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), str(path))
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    for node in ast.walk(tree):
        where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}"
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module.split(".")[0]]
        for module in modules:
            if module in NEVER_IMPORTED:
                yield f"{where}: imports {module}"
            elif module in GUARDED_IMPORTS and not guarded(node, parents):
                yield f"{where}: imports {module} without handling ImportError"
        if isinstance(node, ast.Attribute):
            if node.attr in POSIX_ONLY_NAMES:
                yield f"{where}: uses {node.attr}"
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "signal"
                and node.attr.startswith("SIG")
                and node.attr not in PORTABLE_SIGNALS
            ):
                yield f"{where}: uses signal.{node.attr}, which Windows lacks"
        if isinstance(node, ast.keyword) and node.arg in DESCRIPTOR_RELATIVE:
            yield f"{where}: passes {node.arg}="
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc"):
            yield f"{where}: names {node.value}"


def test_nothing_outside_the_seam_depends_on_what_only_some_platforms_have() -> None:
    found = [finding for path in sources() for finding in findings(path)]
    assert found == [], "platform-specific code outside mcp_batteries._platform (move it behind the seam)"


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = REPO / "tests" / "shared" / "platform" / "_sample_for_the_seam_test.py"
    sample.write_text(
        "import fcntl\nimport os, signal\nos.open('x', os.O_NOFOLLOW, dir_fd=3)\n"
        "open('/proc/self/statm')\nos.killpg(1, signal.SIGKILL)\nimport resource\n"
        "try:\n    import pwd\nexcept ImportError:\n    pwd = None\n"
    )
    try:
        found = [line.split(": ", 1)[1] for line in findings(sample)]
    finally:
        sample.unlink()
    assert sorted(found) == sorted(
        [
            "imports fcntl",
            "uses O_NOFOLLOW",
            "passes dir_fd=",
            "names /proc/self/statm",
            "uses killpg",
            "uses signal.SIGKILL, which Windows lacks",
            "imports resource without handling ImportError",
        ]
    )
