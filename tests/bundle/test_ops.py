"""Operating the bundle for a team, over real HTTP: metrics scraped and parsed by the Prometheus
client's parser, the audit trail checked against what each call did (and present after a
`kill -9`), and per-caller limits tried by a flooding identity next to a normal one."""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from mcp_batteries.testing import MCP_POST_HEADERS, connect_http, write_private
from prometheus_client.parser import text_string_to_metric_families

from .conftest import bundle_process, running_bundle

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789"
SCRAPER = "scraper-token-01234567"
FLOODER = "flooder-token-01234567"
NORMAL = "normal-token-012345678"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path / "tree"
    base.mkdir()
    (base / "a.txt").write_text("alpha\n")
    return base


def tokens_file(tmp_path: Path, extra: str = "") -> Path:
    return write_private(
        tmp_path / "tokens.toml",
        f'[[tokens]]\nuser = "alice"\ntoken = "{ALICE}"\n\n'
        f'[[tokens]]\nuser = "scraper"\ntoken = "{SCRAPER}"\nscopes = ["mcp:read"]\n\n' + extra,
    )


def config_file(tmp_path: Path, tree: Path, top: str) -> Path:
    path = tmp_path / "bundle.toml"
    path.write_text(f'{top}\n[filesystem]\ndirectories = ["{tree}"]\n')
    return path


def samples(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            yield sample.name, sample.labels, sample.value


def value(text: str, name: str, **labels: str) -> float:
    return sum(v for n, found, v in samples(text) if n == name and labels.items() <= found.items())


def modern_call(
    tool: str, arguments: dict[str, Any], request_id: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 `tools/call` as raw JSON and headers (no session needed)."""
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        **MCP_POST_HEADERS,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    return body, headers


# -- metrics ---------------------------------------------------------------------------------------


async def test_metrics_count_calls_by_server_tool_and_outcome_behind_the_sign_in(
    tmp_path: Path, tree: Path
) -> None:
    config = config_file(tmp_path, tree, f'tokens_file = "{tokens_file(tmp_path)}"')
    async with running_bundle("filesystem", "--config", str(config)) as bundle:
        async with connect_http(bundle.url("filesystem"), "legacy", token=ALICE) as alice:
            assert not (
                await alice.call_tool("write_file", {"path": str(tree / "b.txt"), "content": "b"})
            ).is_error
            assert (await alice.call_tool("read_text_file", {"path": str(tree / "missing.txt")})).is_error
            with pytest.raises(MCPError):
                await alice.call_tool("no-such-tool-" + "x" * 50, {})
        async with httpx2.AsyncClient() as http:
            anonymous = await http.get(f"{bundle.base}/metrics")
            wrong = await http.get(
                f"{bundle.base}/metrics", headers={"authorization": "Bearer wrong-0123456789abc"}
            )
            scraped = await http.get(f"{bundle.base}/metrics", headers={"authorization": f"Bearer {SCRAPER}"})
    assert anonymous.status_code == 401 and wrong.status_code == 401
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    text = scraped.text
    fs = {"server": "filesystem"}
    assert value(text, "mcp_tool_calls_total", **fs, tool="write_file", outcome="ok") == 1
    assert value(text, "mcp_tool_calls_total", **fs, tool="read_text_file", outcome="tool_error") == 1
    # A name the caller made up is never a label value.
    assert value(text, "mcp_tool_calls_total", **fs, tool="unknown", outcome="invalid_params") == 1
    assert not [labels for _, labels, _ in samples(text) if "no-such-tool" in labels.get("tool", "")]
    assert value(text, "mcp_tool_call_duration_seconds_count", **fs, tool="write_file") == 1
    assert value(text, "mcp_requests_total", **fs, method="tools/list") >= 0
    assert value(text, "mcp_requests_total", **fs, method="initialize") == 1
    assert value(text, "mcp_auth_failures_total", reason="missing_token") == 1
    assert value(text, "mcp_auth_failures_total", reason="invalid_token") == 1
    assert value(text, "mcp_tool_calls_in_flight", **fs) == 0
    assert any(name == "mcp_sessions" for name, _, _ in samples(text))
    assert any(name == "mcp_event_store_bytes" for name, _, _ in samples(text))
    assert value(text, "process_resident_memory_bytes") > 0


# -- audit -----------------------------------------------------------------------------------------


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def digest(arguments: dict[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


async def test_the_audit_log_has_a_line_per_change_with_redacted_arguments_and_no_line_per_read(
    tmp_path: Path, tree: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    config = config_file(tmp_path, tree, f'tokens_file = "{tokens_file(tmp_path)}"\naudit_log = "{audit}"')
    written = {
        "path": str(tree / "b.txt"),
        "content": "db: postgresql://app:hunter2secret@db/app\npassword=letmein99\n",
    }
    refused = {"path": "/etc/passwd", "content": "x"}
    async with (
        running_bundle("filesystem", "--config", str(config)) as bundle,
        connect_http(bundle.url("filesystem"), "modern", token=ALICE) as alice,
    ):
        assert not (await alice.call_tool("write_file", written)).is_error
        assert len(audit_lines(audit)) == 1  # written before the reply came back
        await alice.call_tool("read_text_file", {"path": str(tree / "a.txt")})
        assert (await alice.call_tool("write_file", refused)).is_error
    first, second = audit_lines(audit)
    assert (
        first["caller"] == "user:alice" and first["server"] == "filesystem" and first["tool"] == "write_file"
    )
    assert first["outcome"] == "ok" and first["duration_ms"] >= 0
    assert first["arguments_sha256"] == digest(written)
    assert first["arguments"]["path"] == written["path"]
    shown = first["arguments"]["content"]
    assert "hunter2secret" not in shown and "letmein99" not in shown and "***" in shown
    assert first["time"].endswith("Z")
    assert first["changes"] == [{"action": "write", "path": written["path"]}]
    assert second["outcome"] == "tool_error" and second["arguments"] == refused
    assert second["changes"] == []  # refused: nothing changed
    assert "hunter2secret" not in audit.read_text()
    assert oct(audit.stat().st_mode & 0o777) == "0o600"


def test_an_audit_line_survives_a_kill_9_right_after_the_call_returns(tmp_path: Path, tree: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    config = config_file(tmp_path, tree, f'audit_log = "{audit}"')

    async def write_then_kill(process: Any, base: str) -> None:
        async with connect_http(f"{base}/filesystem/mcp", "legacy") as client:
            result = await client.call_tool("write_file", {"path": str(tree / "kept.txt"), "content": "k"})
            process.kill()  # SIGKILL: no flush, no atexit, nothing runs after this
        assert not result.is_error

    with bundle_process("filesystem", "--config", str(config)) as running:
        anyio.run(write_then_kill, running.process, running.base)
        running.process.wait(timeout=30)
    assert running.process.returncode == -9
    (line,) = audit_lines(audit)
    assert line["tool"] == "write_file" and line["outcome"] == "ok"


# -- limits ----------------------------------------------------------------------------------------


async def test_a_flooding_identity_gets_429_while_a_normal_one_is_served_promptly(
    tmp_path: Path, tree: Path
) -> None:
    extra = (
        f'[[tokens]]\nuser = "flooder"\ntoken = "{FLOODER}"\nrate_limit = 5.0\n\n'
        f'[[tokens]]\nuser = "normal"\ntoken = "{NORMAL}"\n'
    )
    config = config_file(
        tmp_path,
        tree,
        f'tokens_file = "{tokens_file(tmp_path, extra)}"\nrate_limit = 50.0\nmax_calls_in_flight = 8',
    )
    statuses: list[int] = []
    refusals: list[httpx2.Response] = []
    latencies: list[float] = []
    async with running_bundle("filesystem", "--config", str(config)) as bundle:
        url = bundle.url("filesystem")
        flooding = anyio.Event()
        async with httpx2.AsyncClient(timeout=30) as http:

            async def flood(worker: int) -> None:
                for number in range(40):
                    body, headers = modern_call("list_allowed_directories", {}, worker * 1000 + number)
                    answer = await http.post(
                        url, json=body, headers={**headers, "authorization": f"Bearer {FLOODER}"}
                    )
                    statuses.append(answer.status_code)
                    if answer.status_code == 429:
                        refusals.append(answer)
                    flooding.set()

            async def normal() -> None:
                await flooding.wait()
                for number in range(20):
                    body, headers = modern_call("list_allowed_directories", {}, number)
                    started = time.perf_counter()
                    answer = await http.post(
                        url, json=body, headers={**headers, "authorization": f"Bearer {NORMAL}"}
                    )
                    latencies.append(time.perf_counter() - started)
                    assert answer.status_code == 200, answer.text
                    await anyio.sleep(0.05)  # a normal agent: 20 calls per second at most

            async with anyio.create_task_group() as tg:
                for worker in range(10):
                    tg.start_soon(flood, worker)
                tg.start_soon(normal)
            scraped = await http.get(f"{bundle.base}/metrics", headers={"authorization": f"Bearer {SCRAPER}"})
    assert statuses.count(200) >= 1 and statuses.count(429) > 300  # 5/s (burst 5) of 400 calls
    refusal = refusals[0]
    assert int(refusal.headers["retry-after"]) >= 1
    error = refusal.json()["error"]
    assert error["data"]["limit"] in ("rate", "in_flight") and error["data"]["retryAfterSeconds"] >= 0
    assert "flooder" in error["message"] and "retry in" in error["message"]
    assert len(latencies) == 20
    refused = value(scraped.text, "mcp_rate_limit_refusals_total", server="filesystem")
    assert refused == statuses.count(429)
    print(
        f"\nnormal client while another floods: median {statistics.median(latencies) * 1000:.1f} ms, "
        f"max {max(latencies) * 1000:.1f} ms; "
        f"flooder: {statuses.count(200)} served, {statuses.count(429)} refused"
    )


async def test_calls_in_flight_are_limited_per_identity(tmp_path: Path, tree: Path) -> None:
    extra = f'[[tokens]]\nuser = "flooder"\ntoken = "{FLOODER}"\nmax_calls_in_flight = 1\n'
    config = config_file(tmp_path, tree, f'tokens_file = "{tokens_file(tmp_path, extra)}"')
    big = tree / "big"
    big.mkdir()
    for index in range(300):
        (big / f"f{index}.txt").write_text("x" * 100)
    statuses: list[int] = []
    async with running_bundle("filesystem", "--config", str(config)) as bundle:
        url = bundle.url("filesystem")
        async with httpx2.AsyncClient(timeout=30) as http:

            async def call(number: int) -> None:
                body, headers = modern_call("directory_tree", {"path": str(big)}, number)
                answer = await http.post(
                    url, json=body, headers={**headers, "authorization": f"Bearer {FLOODER}"}
                )
                statuses.append(answer.status_code)
                if answer.status_code == 429:
                    assert answer.json()["error"]["data"]["limit"] == "in_flight"

            async with anyio.create_task_group() as tg:
                for number in range(8):
                    tg.start_soon(call, number)
    assert 200 in statuses and 429 in statuses


async def test_limits_differ_per_server_and_per_identity_as_the_bundle_file_says(
    tmp_path: Path, tree: Path
) -> None:
    extra = f'[[tokens]]\nuser = "normal"\ntoken = "{NORMAL}"\n'
    path = tmp_path / "bundle.toml"
    path.write_text(
        f'tokens_file = "{tokens_file(tmp_path, extra)}"\nrate_limit = 1.0\n'
        f'[filesystem]\ndirectories = ["{tree}"]\n'
        f'[sql]\ndatabases = ["sqlite:///{tmp_path / "app.db"}"]\nrate_limit = 1000.0\n'
        '[identities."user:normal"]\nrate_limit = 1000.0\n'
    )
    statuses: dict[tuple[str, str], list[int]] = {}
    async with (
        running_bundle("filesystem", "sql", "--config", str(path)) as bundle,
        httpx2.AsyncClient() as http,
    ):
        for who, token in (("alice", ALICE), ("normal", NORMAL)):
            for name in ("filesystem", "sql"):
                for number in range(3):
                    answer = await http.post(
                        bundle.url(name),
                        json={"jsonrpc": "2.0", "id": number, "method": "ping"},
                        headers={**MCP_POST_HEADERS, "authorization": f"Bearer {token}"},
                    )
                    statuses.setdefault((who, name), []).append(answer.status_code)
    assert 429 in statuses["alice", "filesystem"]  # the top level: 1 call per second
    assert 429 not in statuses["alice", "sql"]  # [sql] rate_limit
    assert 429 not in statuses["normal", "filesystem"]  # [identities."user:normal"]


async def test_metrics_port_serves_the_metrics_without_sign_in_on_a_listener_of_their_own(
    tmp_path: Path, tree: Path
) -> None:
    top = f'tokens_file = "{tokens_file(tmp_path)}"\nmetrics_port = 0'
    config = config_file(tmp_path, tree, top)
    async with running_bundle("filesystem", "--config", str(config)) as bundle:
        assert bundle.app.ops is not None and bundle.app.ops.metrics_address is not None
        host, port = bundle.app.ops.metrics_address
        async with connect_http(bundle.url("filesystem"), "legacy", token=ALICE) as alice:
            await alice.call_tool("write_file", {"path": str(tree / "b.txt"), "content": "b"})
        async with httpx2.AsyncClient() as http:
            signed_out = await http.get(f"{bundle.base}/metrics")
            private = await http.get(f"http://{host}:{port}/metrics")
    assert host == "127.0.0.1"
    assert signed_out.status_code == 401  # the main listener still asks for a token
    assert private.status_code == 200
    assert (
        value(private.text, "mcp_tool_calls_total", server="filesystem", tool="write_file", outcome="ok") == 1
    )
    with pytest.raises(httpx2.TransportError):  # closed with the bundle
        async with httpx2.AsyncClient() as http:
            await http.get(f"http://{host}:{port}/metrics")
