"""The README's commands, run as written on a copy of the checkout with only Python on PATH.

Every shell command in the README's ```sh blocks is listed here, either in RUN (with how a
person or client would see that it worked) or in SKIPPED (with why it cannot run here); a command
added to or changed in the README without updating these lists fails the first test, so the two
cannot drift. The second test runs RUN in order, in a copy of the checkout (its tracked and new
files, as a clone would have them), with no uv on PATH and a fresh HOME: the scripts install the
pinned uv from PyPI and the workspace themselves. Only uv's package cache is shared with the
running suite (`UV_CACHE_DIR`), so the workspace's wheels are not downloaded again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters
from mcp_batteries.testing import connect

from .test_scripts import python_only_path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PROJECT = "~/project"  # the person's project folder the README's config commands name

Check = Callable[["Run"], Awaitable[None]]


class Run:
    """A command of the README, run in the copy with the fresh HOME."""

    def __init__(self, command: str, checkout: Path, home: Path, env: dict[str, str]) -> None:
        self.command = command
        self.checkout = checkout
        self.home = home
        self.env = env

    def exits_0(self) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["bash", "-c", self.command],
            cwd=self.checkout,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{self.command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done

    async def answers(self, tool: str, arguments: dict[str, object]) -> str:
        """Started as a client starts a stdio server: the command's stdout is the protocol."""
        params = StdioServerParameters(
            command="bash", args=["-c", self.command], env=self.env, cwd=str(self.checkout)
        )
        with anyio.fail_after(600):  # the first command installs uv and the workspace
            async with connect(params, "legacy") as client:
                answer = await client.call_tool(tool, arguments)
        assert not answer.is_error, answer
        return str(answer.content)


async def serves_the_checkout(run: Run) -> None:
    assert str(run.checkout) in await run.answers("list_allowed_directories", {})


async def fetch_answers(run: Run) -> None:
    # 127.0.0.1:9 is refused by the server's SSRF policy: a real answer, no network needed.
    params = StdioServerParameters(
        command="bash", args=["-c", run.command], env=run.env, cwd=str(run.checkout)
    )
    with anyio.fail_after(120):
        async with connect(params, "legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
    assert "fetch" in names


async def sql_creates_and_answers(run: Run) -> None:
    assert "1" in await run.answers("query", {"sql": "SELECT 1 AS one"})
    assert (run.checkout / "app.db").is_file()


async def claude_desktop_entry_starts(run: Run) -> None:
    run.exits_0()
    written = json.loads((run.home / ".config" / "Claude" / "claude_desktop_config.json").read_text())
    entry = written["mcpServers"]["filesystem"]
    assert entry["command"] == str(run.checkout / "scripts" / "run")
    (run.home / "project" / "todo.txt").write_text("ship it\n")
    # As Claude Desktop starts it: in /, with a bare PATH.
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={"PATH": "/usr/bin:/bin", "HOME": str(run.home)},
        cwd="/",
    )
    with anyio.fail_after(120):
        async with connect(params, "legacy") as client:
            answer = await client.call_tool(
                "read_text_file", {"path": str(run.home / "project" / "todo.txt")}
            )
    assert "ship it" in str(answer.content)


async def vscode_file_written(run: Run) -> None:
    run.exits_0()
    written = json.loads((run.home / ".config" / "Code" / "User" / "mcp.json").read_text())
    assert written["servers"]["filesystem"]["args"][-1] == "${workspaceFolder}"
    assert written["servers"]["fetch"]["command"] == str(run.checkout / "scripts" / "run")


async def claude_code_file_written(run: Run) -> None:
    run.exits_0()
    written = json.loads((run.checkout / ".mcp.json").read_text())
    assert written["mcpServers"]["sql"]["headers"] == {"Authorization": "Bearer ${MCP_AUTH_TOKEN}"}


async def creates_notes(run: Run) -> None:
    assert "servers/notes/src/mcp_notes/server.py" in run.exits_0().stdout


async def exits_0(run: Run) -> None:
    run.exits_0()


#: The README's commands that run here, in the README's order, each with its check.
CONFIG = "./scripts/mcp-batteries config"
RUN: dict[str, Check] = {
    "./scripts/run": serves_the_checkout,
    "./scripts/run fetch": fetch_answers,
    "./scripts/run sql ./app.db --allow-write": sql_creates_and_answers,
    f"{CONFIG} claude-desktop filesystem --write -- ~/project": claude_desktop_entry_starts,
    f"{CONFIG} vscode filesystem fetch --write": vscode_file_written,
    f"{CONFIG} claude-code --http https://mcp.example.com --write": claude_code_file_written,
    "./scripts/mcp-batteries new notes": creates_notes,
    "./scripts/uv sync --all-packages": exits_0,
}

#: The README's commands that do not run here, and why.
SKIPPED: dict[str, str] = {
    "MCP_AUTH_TOKEN=change-me ./scripts/run filesystem ~/shared --transport http --host 0.0.0.0 --port 8000 "
    "--allowed-hosts 'files.example.com:*'": (
        "serves on every interface until stopped; tests/shared/test_auth_http.py and "
        "tests/bundle/test_serve.py serve over HTTP with tokens"
    ),
    "./scripts/test tests/notes": (
        "the generated server's tests: tests/bundle/test_scaffold.py runs them on its own copy (minutes)"
    ),
    "./scripts/test": "the whole suite, which this test is part of",
}


def readme_commands(text: str) -> list[str]:
    """The shell commands of the README's ```sh blocks, continuation lines joined, comments dropped."""
    commands: list[str] = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        for command in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"\s+#.*$", "", command).strip()
            if command and not command.startswith("#"):
                commands.append(" ".join(command.split()))
    return commands


def test_every_readme_command_is_run_or_says_why_not() -> None:
    commands = readme_commands(README.read_text())
    unlisted = [command for command in commands if command not in RUN and command not in SKIPPED]
    assert unlisted == [], "README commands this test neither runs nor skips (add each to RUN or SKIPPED)"
    stale = [command for command in [*RUN, *SKIPPED] if command not in commands]
    assert stale == [], "listed here but no longer in the README"
    assert [command for command in commands if command in RUN] == list(RUN), "RUN follows the README's order"


def copy_checkout(destination: Path) -> Path:
    """The checkout's tracked and untracked-but-not-ignored files, as a clone of the working tree
    (no .venv, no .tools: what a fresh clone has)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def uv_cache() -> str:
    return subprocess.run(["uv", "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.anyio
async def test_the_readme_commands_work_as_written_with_only_python_and_a_fresh_home(tmp_path: Path) -> None:
    checkout = copy_checkout(tmp_path / "checkout")
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)  # the project the README's config commands name
    # The machine's environment (its CA certificates and proxies for PyPI) less anything that
    # points at this checkout's tools or the person's own HOME.
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("UV_", "XDG_", "MCP_", "VIRTUAL_ENV", "PYTHON", "CODEX_", "APPDATA"))
    }
    env = {**inherited, "PATH": python_only_path(), "HOME": str(home), "UV_CACHE_DIR": uv_cache()}
    assert (Path(PROJECT.replace("~", str(home)))).is_dir()
    for command, check in RUN.items():
        await check(Run(command, checkout, home, env))
    assert (checkout / ".tools" / "uv" / "bin" / "uv").is_file()  # installed by the scripts themselves
