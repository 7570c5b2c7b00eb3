"""Host and Origin checks: parsed as host plus numeric port (and scheme), compared exactly."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp_batteries._transport.hosts import HostGuard, parse_host, parse_origin
from mcp_batteries.errors import ConfigError
from mcp_batteries.testing import MCP_POST_HEADERS, RAW_INITIALIZE, http_server
from starlette.types import Receive, Scope, Send

pytestmark = pytest.mark.anyio

#: Each passed the SDK's prefix matching with the default loopback allow-list (issue 15 item 5).
LOOSE_HOSTS = [
    "localhost:evil.example",
    "127.0.0.1:x.evil.example",
    "localhost:1@evil.example",
    "[::1]:evil",
    "localhost:",
    "localhost:99999",
    "localhost:80/x",
    "localhost.evil.example",
    "127.0.0.1.evil.example:80",
    " localhost",
    "",
]
LOOSE_ORIGINS = [
    "http://localhost:evil.example",
    "http://127.0.0.1:1@evil.example",
    "http://localhost.evil.example",
    "http://localhost:80/path",
    "https://localhost:8000x",
    "null",
    "localhost:8000",
]


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _guard(**kwargs: list[str]) -> HostGuard:
    return HostGuard(_ok, **kwargs)


@pytest.mark.parametrize("host", LOOSE_HOSTS)
def test_loose_host_headers_are_refused(host: str) -> None:
    assert not _guard().host_allowed(host)


@pytest.mark.parametrize("origin", LOOSE_ORIGINS)
def test_loose_origins_are_refused(origin: str) -> None:
    assert not _guard().origin_allowed(origin)


@pytest.mark.parametrize(
    "host",
    ["localhost", "localhost:8000", "LOCALHOST:1", "127.0.0.1:65535", "[::1]:8000", "[0:0::1]", "[::1]"],
)
def test_loopback_names_on_any_port_are_accepted(host: str) -> None:
    assert _guard().host_allowed(host)


def test_name_star_admits_the_name_with_any_port_and_without_one_in_any_case() -> None:
    guard = _guard(allowed_hosts=["files.example.com:*"])
    for host in ("files.example.com", "files.example.com:443", "FILES.Example.COM", "files.example.com."):
        assert guard.host_allowed(host), host
    for host in ("files.example.com.evil", "evil.files.example.com", "files.example.com:x"):
        assert not guard.host_allowed(host), host


def test_name_and_name_port_admit_exactly_that() -> None:
    guard = _guard(allowed_hosts=["a.example", "b.example:8443"])
    assert guard.host_allowed("a.example") and guard.host_allowed("A.EXAMPLE")
    assert not guard.host_allowed("a.example:80")
    assert guard.host_allowed("b.example:8443")
    assert not guard.host_allowed("b.example") and not guard.host_allowed("b.example:8444")


def test_origins_compare_scheme_host_and_port_with_default_ports() -> None:
    guard = _guard(allowed_origins=["https://app.example.com", "http://dev.example:*"])
    assert guard.origin_allowed("https://app.example.com")
    assert guard.origin_allowed("https://APP.example.com:443")
    assert not guard.origin_allowed("http://app.example.com")
    assert not guard.origin_allowed("https://app.example.com:8443")
    assert guard.origin_allowed("http://dev.example:3000") and guard.origin_allowed("http://dev.example")
    assert guard.origin_allowed("http://localhost:5173")  # loopback origins always
    assert guard.origin_allowed(None)  # not a browser


def test_one_parser_for_host_and_origin() -> None:
    parsed = parse_host("[::1]:8000")
    assert parsed is not None and (parsed.host, parsed.port) == ("[::1]", 8000)
    origin = parse_origin("HTTPS://Example.COM")
    assert origin is not None and origin[0] == "https" and str(origin[1]) == "example.com:443"
    assert parse_host("a@b") is None and parse_origin("http://a@b") is None


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("allowed_hosts", "https://files.example.com"),
        ("allowed_hosts", "files.example.com:port"),
        ("allowed_hosts", "*"),
        ("allowed_origins", "app.example.com"),
        ("allowed_origins", "https://app.example.com/path"),
    ],
)
def test_malformed_allow_list_entries_are_configuration_errors(flag: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _guard(**{flag: [value]})
    assert f"--{flag.replace('_', '-')}" in str(caught.value) and value in str(caught.value)


async def test_the_loose_values_are_refused_over_http_and_logged_once_with_the_flag(tree: Path) -> None:
    async with http_server("mcp-batteries-filesystem", str(tree)) as running, httpx.AsyncClient() as http:
        for host in [
            "localhost:evil.example",
            "127.0.0.1:x.evil.example",
            "localhost:1@evil.example",
            "[::1]:evil",
        ]:
            response = await http.post(
                running.url, json=RAW_INITIALIZE, headers={**MCP_POST_HEADERS, "Host": host}
            )
            assert response.status_code == 421, host
        for origin in ["http://localhost:evil.example", "http://127.0.0.1:1@evil.example"]:
            response = await http.post(
                running.url, json=RAW_INITIALIZE, headers={**MCP_POST_HEADERS, "Origin": origin}
            )
            assert response.status_code == 403, origin
        for _ in range(3):
            response = await http.post(
                running.url, json=RAW_INITIALIZE, headers={**MCP_POST_HEADERS, "Host": "mcp.example.com"}
            )
            assert response.status_code == 421
        origin = "https://app.example.com"
        response = await http.post(
            running.url, json=RAW_INITIALIZE, headers={**MCP_POST_HEADERS, "Origin": origin}
        )
        assert response.status_code == 403
        fine = await http.post(
            running.url, json=RAW_INITIALIZE, headers={**MCP_POST_HEADERS, "Origin": "http://localhost:1234"}
        )
        assert fine.status_code == 200
        health = await http.get(running.base_url + "/healthz", headers={"Host": "10.1.2.3:8000"})
        assert health.status_code == 200  # a liveness probe addresses the pod by IP
    host_lines = [line for line in running.stderr_lines if "'mcp.example.com'" in line]
    assert len(host_lines) == 1
    assert "--allowed-hosts 'mcp.example.com:*'" in host_lines[0]
    origin_lines = [line for line in running.stderr_lines if "'https://app.example.com'" in line]
    assert len(origin_lines) == 1 and "--allowed-origins https://app.example.com" in origin_lines[0]


async def test_behind_a_tls_proxy_a_port_less_upper_case_host_is_accepted(tree: Path) -> None:
    args = (
        str(tree),
        "--allowed-hosts",
        "files.example.com:*",
        "--allowed-origins",
        "https://app.example.com",
    )
    async with http_server("mcp-batteries-filesystem", *args) as running, httpx.AsyncClient() as http:
        for host in ("files.example.com", "Files.Example.Com", "files.example.com:443"):
            response = await http.post(
                running.url,
                json=RAW_INITIALIZE,
                headers={**MCP_POST_HEADERS, "Host": host, "Origin": "https://app.example.com"},
            )
            assert response.status_code == 200, host


def test_a_malformed_allowed_host_stops_the_server_with_one_line(tree: Path) -> None:
    import subprocess

    from mcp_batteries.testing import script_path

    done = subprocess.run(
        [
            script_path("mcp-batteries-filesystem"),
            str(tree),
            "--transport",
            "http",
            "--port",
            "0",
            "--allowed-hosts",
            "https://files.example.com",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--allowed-hosts" in done.stderr
