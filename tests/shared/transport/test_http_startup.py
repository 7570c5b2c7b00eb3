"""Starting over HTTP: a URL a person can open, and one line (exit 2) for an address that cannot work."""

from __future__ import annotations

import re
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp_batteries.testing import http_server, script_path

pytestmark = pytest.mark.anyio

SERVERS = ["mcp-batteries-filesystem", "mcp-batteries-sql", "mcp-batteries-fetch"]


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def server_args(script: str, tmp_path: Path) -> list[str]:
    if script.endswith("filesystem"):
        return [str(tmp_path)]
    if script.endswith("sql"):
        database = tmp_path / "t.db"
        sqlite3.connect(database).close()
        return [str(database)]
    return []


def start(script: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script_path(script), *server_args(script, tmp_path), "--transport", "http", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MCP_AUTH_TOKEN": "t"},
    )


@pytest.mark.parametrize("script", SERVERS)
@pytest.mark.parametrize(
    ("mistake", "expected"),
    [
        ("port in use", r"--port \d+: 127\.0\.0\.1:\d+ is already in use.*--port 0"),
        ("host not local", r"--host 10\.99\.99\.99: not an address of this machine.*127\.0\.0\.1"),
        ("host unknown", r"--host no-such-host\.invalid: cannot resolve this name.*0\.0\.0\.0"),
    ],
)
def test_an_address_that_cannot_work_is_one_line_and_exit_2(
    script: str, mistake: str, expected: str, busy_port: int, tmp_path: Path
) -> None:
    args = {
        "port in use": ["--port", str(busy_port)],
        "host not local": ["--host", "10.99.99.99"],
        "host unknown": ["--host", "no-such-host.invalid"],
    }[mistake]
    done = start(script, tmp_path, *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{script}: error: ") and re.search(expected, lines[0]), lines[0]


def test_a_service_that_cannot_start_over_http_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            script_path("mcp-batteries-sql"),
            str(tmp_path / "missing.db"),
            "--transport",
            "http",
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "missing.db" in done.stderr, done.stderr


async def test_the_banner_names_a_url_a_person_can_open_when_bound_to_every_interface(tree: Path) -> None:
    args = (str(tree), "--host", "0.0.0.0")
    async with http_server("mcp-batteries-filesystem", *args, env={"MCP_AUTH_TOKEN": "t"}) as running:
        assert running.url.startswith("http://127.0.0.1:") and running.url.endswith("/mcp")
        with anyio.fail_after(10):  # the banner's second line, read from the server's stderr
            while not any("other machines" in line for line in running.stderr_lines):  # noqa: ASYNC110
                await anyio.sleep(0.05)
        banner = "\n".join(running.stderr_lines)
        name = socket.gethostname().lower()
        assert "0.0.0.0" not in banner
        assert f"other machines use http://{name}:" in banner
        assert f"--allowed-hosts '{name}:*'" in banner
