"""Configuration mistakes: one line on stderr and exit status 2, checked at start by the console script."""

from __future__ import annotations

import importlib.util
import os
import subprocess

import pytest
from mcp_batteries.testing import parse_settings, script_path
from mcp_fetch.config import FetchServerSettings, fetch_settings

SCRIPT = "mcp-batteries-fetch"
HAS_SOCKSIO = importlib.util.find_spec("socksio") is not None


def run_script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MCP_FETCH_")}
    return subprocess.run(
        [script_path(SCRIPT), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **(env or {})},
    )


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["--proxy", "proxy.corp:3128"], {}, "--proxy: 'proxy.corp:3128' has no scheme; write the proxy as "
         "a URL, e.g. http://proxy.corp:3128"),
        ([], {"MCP_FETCH_PROXY": "proxy.corp:3128"}, "e.g. http://proxy.corp:3128"),
        (["--proxy", "ftp://proxy.corp"], {}, "a proxy URL starts with http://, https://, socks5://"),
        (["--allowed-hosts", "127.0.0.1"], {}, "--allowed-hosts 127.0.0.1: that flag only applies with "
         "--transport http"),
        (["--transport", "http", "--allowed-hosts", "10.0.0.0/8"], {}, "use --allow-private-host 10.0.0.0/8"),
        (["--allow-host", "10.0.0.0/33"], {}, "--allow-host: '10.0.0.0/33' is not a CIDR network: the prefix "
         "length must be a number from 0 to 32"),
        (["--allow-host", "not a host"], {}, "--allow-host: 'not a host' is not a host name, an IP address "
         "or a CIDR network"),
        (["--allow-private-host", "intranet:8080"], {}, "has a port; give the host name alone (intranet)"),
        ([], {"MCP_FETCH_ALLOW_PRIVATE_HOST": "a..b"}, "empty label"),
    ],
)  # fmt: skip
def test_configuration_mistakes_are_one_line_and_exit_2(
    args: list[str], env: dict[str, str], says: str
) -> None:
    finished = run_script(*args, env=env)
    assert finished.returncode == 2, finished.stderr
    assert finished.stdout == ""
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1, finished.stderr
    assert lines[0].startswith(f"{SCRIPT}: error: ")
    assert says in lines[0]


@pytest.mark.skipif(HAS_SOCKSIO, reason="socksio is installed, so a SOCKS proxy is usable")
def test_socks_proxy_without_socksio_is_one_line_saying_what_to_install() -> None:
    finished = run_script("--proxy", "socks5://127.0.0.1:1080")
    assert finished.returncode == 2
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1, finished.stderr
    assert "needs the optional socksio package" in lines[0]
    assert "uvx --with socksio mcp-batteries-fetch" in lines[0]


def parse(*argv: str) -> FetchServerSettings:
    return parse_settings(FetchServerSettings, list(argv), prog="mcp-fetch", description="")


def test_old_allow_host_flag_still_works_beside_the_new_name(monkeypatch: pytest.MonkeyPatch) -> None:
    converted = fetch_settings(
        parse("--allow-private-host", "Intranet.Example.com", "--allow-host", "10.0.0.0/8,192.168.1.5")
    )
    assert converted.allow_hosts == ("intranet.example.com", "10.0.0.0/8", "192.168.1.5")
    monkeypatch.setenv("MCP_FETCH_ALLOW_HOST", "a.example")
    monkeypatch.setenv("MCP_FETCH_ALLOW_PRIVATE_HOST", "b.example")
    assert fetch_settings(FetchServerSettings()).allow_hosts == ("b.example", "a.example")


def test_allowed_hosts_with_the_http_transport_is_accepted() -> None:
    settings = parse("--transport", "http", "--allowed-hosts", "mcp.example.com:*")
    assert settings.allowed_hosts == ["mcp.example.com:*"]


def test_valid_proxy_urls_are_accepted() -> None:
    assert parse("--proxy", " http://proxy.corp:3128 ").proxy == "http://proxy.corp:3128"
    assert fetch_settings(parse("--proxy", "")).proxy is None


def test_help_names_both_host_flags_distinctly() -> None:
    finished = run_script("--help")
    assert finished.returncode == 0
    help_text = " ".join(finished.stdout.split())
    assert "--allow-private-host" in help_text and "Old name of --allow-private-host" in help_text
