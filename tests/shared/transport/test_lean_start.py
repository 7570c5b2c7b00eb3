"""A stdio server starts with only what stdio needs: no HTTP stack, sign-in or bundle of ours.

Cold start is paid on every launch by a client (bench/cold_start.py). Each server here is started
as its console script would be, answers `initialize` and `tools/list` over stdio, and reports the
modules it had loaded when its client hung up. uvicorn, starlette and sse_starlette are not
checked: the SDK imports them itself (`mcp.server` -> `mcp.server.streamable_http`), so they are
part of the floor every server on the SDK pays, ours and a bare `MCPServer` alike.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

#: Ours, and used only over HTTP or with sign-in configured.
NEVER_OVER_STDIO = (
    "mcp_batteries._transport.http",
    "mcp_batteries._transport.http_limits",
    "mcp_batteries._transport.hosts",
    "mcp_batteries._transport.events",
    "mcp_batteries._signin",
    "mcp_batteries._bundle",
    "mcp_batteries._testing",
    "jwt",
)

REPORT = """
import json, sys
from {module}.__main__ import definition
try:
    definition.main({argv!r})
finally:
    sys.stderr.write("LOADED " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def loaded_after_a_stdio_session(module: str, argv: list[str], cwd: Path) -> set[str]:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "lean-start", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    done = subprocess.run(
        [sys.executable, "-c", REPORT.format(module=module, argv=argv)],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [a.get("id") for a in answers if "result" in a] == [1, 2], done.stdout + done.stderr
    report = next(line for line in done.stderr.splitlines() if line.startswith("LOADED "))
    return set(json.loads(report.removeprefix("LOADED ")))


def servers(tmp: Path) -> dict[str, tuple[str, list[str], tuple[str, ...]]]:
    """server -> (its package, argv, modules it must not load on this configuration)."""
    db = tmp / "lean.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    return {
        "filesystem": ("mcp_filesystem", [str(tmp)], ()),
        "sql": ("mcp_sql", [f"sqlite:///{db}"], ("asyncpg", "asyncmy")),
        "git": ("mcp_git", ["--repository", str(tmp)], ()),
        "fetch": ("mcp_fetch", [], ()),
        "tasks": ("mcp_tasks", ["--db", str(tmp / "tasks.db")], ("asyncpg",)),
    }


@pytest.mark.parametrize("server", ["filesystem", "sql", "git", "fetch", "tasks"])
def test_a_stdio_server_loads_no_http_stack_sign_in_or_unused_driver(server: str, tmp_path: Path) -> None:
    if server == "git":
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    module, argv, unused_here = servers(tmp_path)[server]
    loaded = loaded_after_a_stdio_session(module, argv, tmp_path)
    refused = NEVER_OVER_STDIO + unused_here
    found = sorted(name for name in loaded if name.split(".")[0] in refused or name.startswith(refused))
    assert not found, f"{server} over stdio loaded {found}"
