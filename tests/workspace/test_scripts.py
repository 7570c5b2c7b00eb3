"""The README's commands: ./scripts/run works with only Python on PATH (no uv), from any directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from mcp_batteries.testing import connect

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.anyio


def python_only_path() -> str:
    """A PATH with python3 and the basic tools, and no uv."""
    python = Path(shutil.which("python3") or sys.executable).resolve()
    dirs = [str(python.parent), "/usr/bin", "/bin"]
    assert not any((Path(d) / "uv").exists() for d in dirs), "this test needs a PATH without uv"
    return os.pathsep.join(dirs)


async def test_scripts_run_serves_the_current_directory_with_only_python(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hi")
    env = {"PATH": python_only_path(), "HOME": os.environ.get("HOME", str(tmp_path))}
    params = StdioServerParameters(command=str(ROOT / "scripts" / "run"), args=[], env=env, cwd=str(tmp_path))
    async with connect(params, "legacy") as client:
        result = await client.call_tool("list_allowed_directories", {})
        listing = await client.call_tool("list_directory", {"path": str(tmp_path)})
    assert str(tmp_path.resolve()) in result.content[0].text  # type: ignore[union-attr]
    assert "hello.txt" in listing.content[0].text  # type: ignore[union-attr]


async def test_scripts_run_runs_any_server_by_name(tmp_path: Path) -> None:
    env = {"PATH": python_only_path(), "HOME": os.environ.get("HOME", str(tmp_path))}
    database = tmp_path / "app.db"
    params = StdioServerParameters(
        command=str(ROOT / "scripts" / "run"),
        args=["sql", f"sqlite:///{database}", "--allow-write"],
        env=env,
        cwd=str(tmp_path),
    )
    async with connect(params, "modern") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert "query" in names


def test_scripts_run_reports_an_unknown_server_name_as_such(tmp_path: Path) -> None:
    env = {"PATH": python_only_path(), "HOME": os.environ.get("HOME", str(tmp_path))}
    done = subprocess.run(
        [str(ROOT / "scripts" / "run"), "sqll", "./app.db"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert "unknown server 'sqll'" in done.stderr and "sql" in done.stderr.split("servers are:")[1]
    assert "directory" not in done.stderr.split(";")[1], done.stderr  # not "no such directory sqll"


async def test_scripts_run_creates_the_readmes_sql_database_as_written(tmp_path: Path) -> None:
    # README: `./scripts/run sql ./app.db --allow-write` on a fresh machine (no app.db yet).
    env = {"PATH": python_only_path(), "HOME": os.environ.get("HOME", str(tmp_path))}
    params = StdioServerParameters(
        command=str(ROOT / "scripts" / "run"),
        args=["sql", "./app.db", "--allow-write"],
        env=env,
        cwd=str(tmp_path),
    )
    async with connect(params, "legacy") as client:
        done = await client.call_tool("execute", {"statements": ["CREATE TABLE t (x INTEGER)"]})
        assert not done.is_error, done
    assert (tmp_path / "app.db").is_file()
