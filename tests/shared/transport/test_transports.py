"""HTTP and stdio as a real client meets them: auth, DNS-rebinding protection, health, shutdown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import anyio
import httpx
import pytest
from mcp_batteries.testing import (
    ERAS,
    MCP_POST_HEADERS,
    RAW_INITIALIZE,
    Era,
    connect,
    connect_http,
    http_server,
    script_path,
    stdio_params,
)

pytestmark = pytest.mark.anyio


async def test_healthz_answers_without_auth(tree: Path) -> None:
    async with (
        http_server("mcp-batteries-filesystem", str(tree), env={"MCP_AUTH_TOKEN": "s3cret"}) as running,
        httpx.AsyncClient() as http,
    ):
        response = await http.get(running.base_url + "/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"


async def test_a_token_is_required_when_set_and_compared_exactly(tree: Path) -> None:
    async with http_server(
        "mcp-batteries-filesystem", str(tree), env={"MCP_AUTH_TOKEN": "s3cret"}
    ) as running:
        async with httpx.AsyncClient() as http:
            missing = await http.post(running.url, json=RAW_INITIALIZE, headers=MCP_POST_HEADERS)
            wrong = await http.post(
                running.url,
                json=RAW_INITIALIZE,
                headers={**MCP_POST_HEADERS, "Authorization": "Bearer s3cre"},
            )
        assert missing.status_code == 401 and wrong.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        for era in ERAS:
            async with connect_http(running.url, era, token="s3cret") as client:
                assert (
                    (await client.call_tool("read_text_file", {"path": "a.txt"}))
                    .content[0]
                    .text.startswith("a")
                )


@pytest.mark.parametrize(
    ("headers", "status"), [({"Host": "evil.example:80"}, 421), ({"Origin": "http://evil.example"}, 403)]
)
async def test_dns_rebinding_protection_rejects_foreign_host_and_origin(
    tree: Path, headers: dict[str, str], status: int
) -> None:
    async with http_server("mcp-batteries-filesystem", str(tree)) as running, httpx.AsyncClient() as http:
        response = await http.post(running.url, json=RAW_INITIALIZE, headers={**MCP_POST_HEADERS, **headers})
    assert response.status_code == status


async def test_binding_all_interfaces_keeps_dns_rebinding_protection(tree: Path) -> None:
    args = (str(tree), "--host", "0.0.0.0", "--allowed-hosts", "mcp.example:*")
    async with http_server("mcp-batteries-filesystem", *args, env={"MCP_AUTH_TOKEN": "t"}) as running:
        url = running.url.replace("0.0.0.0", "127.0.0.1")
        auth = {**MCP_POST_HEADERS, "Authorization": "Bearer t"}
        async with httpx.AsyncClient() as http:
            foreign = await http.post(url, json=RAW_INITIALIZE, headers={**auth, "Host": "evil.example"})
            named = await http.post(url, json=RAW_INITIALIZE, headers={**auth, "Host": "mcp.example:8000"})
    assert foreign.status_code == 421
    assert named.status_code == 200


def test_non_loopback_without_auth_is_refused_with_one_line(tree: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MCP_AUTH_TOKEN"}
    done = subprocess.run(
        [script_path("mcp-batteries-filesystem"), str(tree), "--transport", "http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2
    assert "refusing to serve 0.0.0.0 without authentication" in done.stderr
    assert done.stderr.strip().count("\n") == 0


@pytest.mark.parametrize("era", ERAS)
async def test_both_eras_work_over_stateful_and_stateless_http(tree: Path, era: Era) -> None:
    for extra in ((), ("--stateless",)):
        async with (
            http_server("mcp-batteries-filesystem", str(tree), *extra) as running,
            connect_http(running.url, era) as c,
        ):
            assert {t.name for t in (await c.list_tools()).tools} >= {"read_text_file", "grep"}


async def test_sigterm_stops_the_http_server_cleanly(tree: Path) -> None:
    async with http_server("mcp-batteries-filesystem", str(tree)) as running:
        running.process.send_signal(signal.SIGTERM)
        code = await anyio.to_thread.run_sync(lambda: running.process.wait(timeout=15))
    assert code == 0


@pytest.mark.parametrize("era", ERAS)
async def test_stdio_subprocess_speaks_both_eras(tree: Path, era: Era) -> None:
    async with connect(stdio_params("mcp-batteries-filesystem", str(tree)), era) as client:
        result = await client.call_tool("list_allowed_directories", {})
    assert str(tree) in result.content[0].text


def test_stdio_stdout_carries_only_protocol_messages(tree: Path) -> None:
    request = (
        json.dumps(RAW_INITIALIZE)
        + "\n"
        + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + "\n"
    )
    done = subprocess.run(
        [script_path("mcp-batteries-filesystem"), str(tree), "--log-level", "debug"],
        input=request,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines and all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)


def test_sigterm_stops_a_stdio_server_cleanly(tree: Path) -> None:
    process = subprocess.Popen(
        [script_path("mcp-batteries-filesystem"), str(tree)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(RAW_INITIALIZE) + "\n").encode())
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 1  # up and serving
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    assert b"Traceback" not in (process.stderr.read() if process.stderr else b"")


def test_a_person_at_a_terminal_is_told_what_stdio_mode_is(tree: Path) -> None:
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [script_path("mcp-batteries-filesystem"), str(tree)],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    try:
        assert process.stderr is not None
        first = process.stderr.readline().decode()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        os.close(leader)
    assert "speaks MCP (JSON-RPC) on stdin/stdout" in first
