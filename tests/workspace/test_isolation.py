"""No test reaches the real HOME: the session's home (tests/conftest.py) is what every server sees.

Servers started with their defaults keep their data in the user's data directory; started by a
test, with nothing set, that directory must be the session's temporary one. (A before/after
comparison of the real data directory cannot tell: other processes on the machine use it too.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp_batteries.testing import connect, stdio_params

pytestmark = pytest.mark.anyio


def test_home_and_the_xdg_directories_point_into_the_session_home(session_home: Path) -> None:
    assert Path.home() == session_home
    assert Path(os.path.expanduser("~")) == session_home
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "GNUPGHOME"):
        assert Path(os.environ[name]).is_relative_to(session_home), name


async def test_servers_started_with_their_defaults_write_under_the_session_home(session_home: Path) -> None:
    data = session_home / ".local" / "share" / "mcp-batteries"
    async with connect(stdio_params("mcp-batteries-tasks"), "legacy") as client:
        added = await client.call_tool("add_task", {"title": "isolated"})
        assert not added.is_error, added
    async with connect(stdio_params("mcp-batteries-sql"), "legacy") as client:
        tables = await client.call_tool("list_tables", {})
        assert not tables.is_error, tables
    assert (data / "tasks" / "tasks.db").is_file()
    assert (data / "sql" / "default.db").is_file()
