"""The same operations on a single server over HTTP (`mcp-batteries-filesystem --transport http`),
and the audit file's own life: reopened on SIGHUP, rotated by size."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import httpx2
import pytest
from mcp_batteries._ops.audit import AuditLog, arguments_digest, shown_arguments
from mcp_batteries.testing import connect_http, http_server, legacy_subscribe, write_private
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.anyio

WRITER = "writer-token-0123456789"
READER = "reader-token-0123456789"


async def test_a_single_server_has_metrics_audit_limits_and_permissions(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    audit = tmp_path / "audit.jsonl"
    tokens = write_private(
        tmp_path / "tokens.toml",
        f'[[tokens]]\nuser = "writer"\ntoken = "{WRITER}"\ndeny = ["filesystem:delete_path"]\n\n'
        f'[[tokens]]\nuser = "reader"\ntoken = "{READER}"\nread_only = ["filesystem"]\nrate_limit = 1.0\n',
    )
    args = (str(tree), "--tokens-file", str(tokens), "--audit-log", str(audit))
    async with http_server("mcp-batteries-filesystem", *args) as running:
        async with connect_http(running.url, "legacy", token=WRITER) as writer:
            names = {tool.name for tool in (await writer.list_tools()).tools}
            await writer.call_tool("write_file", {"path": str(tree / "w.txt"), "content": "w"})
        async with httpx2.AsyncClient() as http:
            base = running.url.rsplit("/", 1)[0]
            # The reader may make 1 call per second (burst 1): the second POST in a row is refused.
            answers = [
                await http.post(
                    running.url,
                    json={"jsonrpc": "2.0", "id": n, "method": "ping"},
                    headers={"authorization": f"Bearer {READER}", "content-type": "application/json"},
                )
                for n in range(2)
            ]
            scraped = await http.get(f"{base}/metrics", headers={"authorization": f"Bearer {READER}"})
            anonymous = await http.get(f"{base}/metrics")
    assert "write_file" in names and "delete_path" not in names
    assert answers[1].status_code == 429 and answers[1].headers["retry-after"] == "1"
    assert answers[1].json()["error"]["data"]["limit"] == "rate"
    assert anonymous.status_code == 401
    calls = {
        (sample.labels["tool"], sample.labels["outcome"]): sample.value
        for family in text_string_to_metric_families(scraped.text)
        for sample in family.samples
        if sample.name == "mcp_tool_calls_total"
    }
    assert calls == {("write_file", "ok"): 1.0}
    (line,) = [json.loads(text) for text in audit.read_text().splitlines()]
    assert line["caller"] == "user:writer" and line["tool"] == "write_file" and line["server"] == "filesystem"


def test_sighup_makes_the_audit_log_reopen_its_path_after_a_rotation_moved_it(tmp_path: Path) -> None:
    from mcp_batteries._platform.signals import on_reopen_signal

    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    previous = signal.getsignal(signal.SIGHUP)
    try:
        assert on_reopen_signal(log.request_reopen)
        log.write({"n": 1})
        os.replace(path, tmp_path / "audit.jsonl.1")  # what logrotate does
        os.kill(os.getpid(), signal.SIGHUP)
        log.write({"n": 2})
    finally:
        signal.signal(signal.SIGHUP, previous)
        log.close()
    assert (tmp_path / "audit.jsonl.1").read_text() == '{"n":1}\n'
    assert path.read_text() == '{"n":2}\n'


def test_the_audit_log_rotates_by_size_and_keeps_five_files(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, max_bytes=100)
    try:
        for n in range(20):
            log.write({"n": n, "pad": "x" * 40})
    finally:
        log.close()
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == ["audit.jsonl", *(f"audit.jsonl.{n}" for n in range(1, 6))]
    assert all(p.stat().st_size <= 100 for p in tmp_path.iterdir())
    assert json.loads(path.read_text().splitlines()[-1])["n"] == 19


def test_arguments_are_digested_as_sent_and_shown_redacted_and_bounded() -> None:
    arguments = {"url": "https://user:s3cretpass@example.com/x", "api_key": "abc", "n": 1}
    assert arguments_digest(arguments) == arguments_digest(dict(reversed(arguments.items())))
    shown = shown_arguments(arguments)
    assert shown == {"url": "https://***@example.com/x", "api_key": "***", "n": 1}
    huge = shown_arguments({"content": ["y" * 1000] * 20})
    assert huge["cut"] is True and len(huge["text"]) <= 1024


async def test_an_oauth_permissions_claim_narrows_the_tools_and_a_malformed_one_is_refused(
    tmp_path: Path,
) -> None:
    from mcp_batteries.testing import AUDIENCE, TestIssuer

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("a")
    with TestIssuer() as issuer:
        narrowed = issuer.mint(
            scope="mcp:read mcp:write",
            extra={
                "mcp_permissions": {"allow": ["filesystem:read_*"], "deny": ["filesystem:read_media_file"]}
            },
        )
        malformed = issuer.mint(
            scope="mcp:read mcp:write", extra={"mcp_permissions": {"allow": "everything"}}
        )
        args = ("--oauth-issuer", issuer.issuer, "--oauth-audience", AUDIENCE)
        args += ("--oauth-permissions-claim", "mcp_permissions")
        async with http_server("mcp-batteries-filesystem", str(tree), *args) as running:
            async with connect_http(running.url, "modern", token=narrowed) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert not (await client.call_tool("read_text_file", {"path": "a.txt"})).is_error
            async with httpx2.AsyncClient() as http:
                refused = await http.post(
                    running.url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={"authorization": f"Bearer {malformed}", "content-type": "application/json"},
                )
    assert names == {"read_text_file", "read_file", "read_multiple_files"}
    assert refused.status_code == 401 and "mcp_permissions" in refused.headers["www-authenticate"]


async def test_metrics_show_the_paths_watched_for_subscriptions_and_the_os_watches(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("a.txt", "b.txt"):
        (tree / name).write_text(name)

    def watched(text: str) -> dict[str, float]:
        return {
            sample.name: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name in ("mcp_watched_paths", "mcp_os_watches")
            and sample.labels == {"server": "filesystem"}
        }

    async with http_server("mcp-batteries-filesystem", str(tree)) as running:
        metrics = running.url.rsplit("/", 1)[0] + "/metrics"
        async with httpx2.AsyncClient() as http, connect_http(running.url, "legacy") as client:
            idle = watched((await http.get(metrics)).text)
            await legacy_subscribe(client, (tree / "a.txt").as_uri())
            await legacy_subscribe(client, (tree / "b.txt").as_uri())
            busy = watched((await http.get(metrics)).text)
    # A legacy session wants resources/list_changed: the tree is watched from the start.
    assert idle == {"mcp_watched_paths": 1.0, "mcp_os_watches": 1.0}
    # Two files more, covered by the tree's one OS watch.
    assert busy == {"mcp_watched_paths": 3.0, "mcp_os_watches": 1.0}


async def test_a_single_server_serves_metrics_without_sign_in_on_its_metrics_port(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    tokens = write_private(tmp_path / "tokens.toml", f'[[tokens]]\nuser = "writer"\ntoken = "{WRITER}"\n')
    args = (str(tree), "--tokens-file", str(tokens), "--metrics-port", "0")
    async with http_server("mcp-batteries-filesystem", *args) as running:
        # Announced before the banner the kit waits for.
        (metrics,) = re.findall(r"\(--metrics-port\): (http://\S+/metrics)", "\n".join(running.stderr_lines))
        async with connect_http(running.url, "legacy", token=WRITER) as writer:
            await writer.call_tool("write_file", {"path": str(tree / "w.txt"), "content": "w"})
        async with httpx2.AsyncClient() as http:
            private = await http.get(metrics)
            signed_out = await http.get(running.url.rsplit("/", 1)[0] + "/metrics")
    assert metrics.startswith("http://127.0.0.1:")
    assert signed_out.status_code == 401 and private.status_code == 200
    calls = [
        sample
        for family in text_string_to_metric_families(private.text)
        for sample in family.samples
        if sample.name == "mcp_tool_calls_total"
    ]
    assert [(s.labels["tool"], s.value) for s in calls] == [("write_file", 1.0)]


def test_metrics_port_with_metrics_turned_off_is_a_configuration_mistake() -> None:
    from mcp_batteries._core.settings import ServerSettings
    from mcp_batteries._ops.observe import Ops
    from mcp_batteries.errors import ConfigError

    with pytest.raises(ConfigError, match="--no-metrics"):
        Ops(ServerSettings(metrics=False, metrics_port=9100))
