"""Long tool calls followed as tasks by the official TypeScript SDK client and its tasks package.

`tests/clients/typescript/tasks_client.mjs` connects with `@modelcontextprotocol/client` and calls
a tool through `@modelcontextprotocol/ext-tasks` (versions pinned by the package-lock.json beside
it, installed with `npm ci` into `.tools/typescript-client` by the same installer as the
conformance suite). At 2026-07-28 the call must come back as a task the package polls to its
result; over the initialize handshake (where the extension does not exist) as an immediate result.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_batteries.testing import http_server

from ..node import ROOT, ensure_pinned, node_env

PIN = ROOT / "tests" / "clients" / "typescript"
INSTALLED = ROOT / ".tools" / "typescript-client"

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(600)]


def run_client(
    url: str, era: str, tool: str, arguments: dict[str, Any], env: dict[str, str]
) -> dict[str, Any]:
    shutil.copyfile(PIN / "tasks_client.mjs", INSTALLED / "tasks_client.mjs")
    done = subprocess.run(
        ["node", "tasks_client.mjs", url, era, tool, json.dumps(arguments)],
        cwd=INSTALLED,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


async def test_the_typescript_client_follows_a_long_query_as_a_task_and_gets_it_directly_over_the_handshake(
    tmp_path: Path,
) -> None:
    env = node_env()
    await anyio.to_thread.run_sync(ensure_pinned, PIN, INSTALLED, env)
    shop = tmp_path / "shop.db"
    with sqlite3.connect(shop) as db:
        db.execute("CREATE TABLE orders (total INTEGER)")
        db.executemany("INSERT INTO orders VALUES (?)", [(n,) for n in range(100)])
    query = {"sql": "SELECT sum(total) AS revenue FROM orders"}
    args = (f"sqlite:///{shop}", "--task-after", "0")
    async with http_server("mcp-sql", *args, env={"HOME": str(tmp_path)}) as running:
        modern = await anyio.to_thread.run_sync(run_client, running.url, "modern", "query", query, env)
        legacy = await anyio.to_thread.run_sync(run_client, running.url, "legacy", "query", query, env)
    assert (modern["era"], modern["execution"], modern["outcome"]) == ("modern", "task", "completed")
    assert (legacy["era"], legacy["execution"], legacy["outcome"]) == ("legacy", "immediate", "completed")
    for answer in (modern, legacy):
        assert "4950" in text(answer["result"]) and answer["result"]["isError"] is False
