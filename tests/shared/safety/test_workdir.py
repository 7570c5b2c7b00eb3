"""A server given no directory serves the current one, except where a client or service manager
chose a wide one (/, HOME or above it): then it refuses to start and says what to pass."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from mcp_batteries._safety.workdir import too_wide_to_default
from mcp_batteries.testing import connect, script_path

pytestmark = pytest.mark.anyio


def test_the_root_home_and_its_parents_are_too_wide_and_a_project_is_not(tmp_path: Path) -> None:
    home = tmp_path / "home" / "me"
    home.mkdir(parents=True)
    assert too_wide_to_default(Path("/"), home=home, environ={}) == "the root of the file system"
    assert too_wide_to_default(home, home=home, environ={}) == "your home directory"
    assert too_wide_to_default(home.parent, home=home, environ={}) == "a parent of your home directory"
    assert too_wide_to_default(home / "project", home=home, environ={}) is None
    windows = {"SystemRoot": str(tmp_path / "Windows")}
    assert too_wide_to_default(tmp_path / "Windows" / "System32", home=home, environ=windows)


@pytest.mark.parametrize("server", ["filesystem", "git"])
@pytest.mark.parametrize("where", ["home", "root"])
def test_a_server_given_no_directory_refuses_to_serve_home_or_the_root(
    server: str, where: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cwd = home if where == "home" else Path("/")
    done = subprocess.run(
        [script_path(f"mcp-batteries-{server}")],
        cwd=cwd,
        env={**os.environ, "HOME": str(home)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "no directory given, and the current directory" in done.stderr
    assert f"Name the directory: `mcp-batteries-{server} DIR`" in done.stderr


async def test_a_server_given_no_directory_elsewhere_serves_it_and_says_so(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    params = StdioServerParameters(
        command=script_path("mcp-batteries-filesystem"), args=[], env=env, cwd=str(project)
    )
    async with connect(params, "legacy") as client:
        listed = await client.call_tool("list_allowed_directories", {})
    assert str(project.resolve()) in str(listed.content)
