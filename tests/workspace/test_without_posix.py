"""Issue 26, done means: every server starts, serves and holds its walls on a platform without
descriptor-relative opens.

Each server runs as a real stdio subprocess whose Python hides what Windows lacks
(`mcp_batteries.testing.without_posix_facilities`): `fcntl` and `termios` cannot be imported by the
project's own modules, `O_NOFOLLOW`/`O_PATH`/`O_DIRECTORY` are gone, every `dir_fd` call raises
`NotImplementedError`, `os.scandir` refuses a descriptor and `/proc` cannot be read. Nothing forces
the portable family: it must be chosen because the facilities are missing (the filesystem server's
instructions then state the weaker guarantee). Libraries such as the SDK choose their own branches
by `sys.platform`, which stays `linux`: this is the project's code on a platform without POSIX's
path facilities, not Windows itself (docs/platforms.md says what was run where).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.testing import HIDDEN_MARKER, connect, stdio_params, without_posix_facilities

pytestmark = pytest.mark.anyio

ERA = "legacy"


@pytest.fixture
def hidden(tmp_path: Path) -> dict[str, str]:
    environment = without_posix_facilities(tmp_path / "site")
    # Every server writes its data under tmp_path, never in the user's directories.
    environment.update(HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "data"))
    return environment


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def run_python(code: str, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **environment}, capture_output=True, text=True
    )


def test_the_subprocess_really_lacks_the_facilities(hidden: dict[str, str]) -> None:
    probe = run_python(
        textwrap.dedent(
            """
            import os, types
            assert not any(hasattr(os, n) for n in ("O_NOFOLLOW", "O_PATH", "O_DIRECTORY"))
            try:
                os.stat("x", dir_fd=3)
            except NotImplementedError:
                pass
            else:
                raise SystemExit("dir_fd")
            try:
                open("/proc/self/statm")
            except FileNotFoundError:
                pass
            else:
                raise SystemExit("proc")
            ours = types.ModuleType("mcp_probe")
            try:
                exec("import fcntl", ours.__dict__)
            except ImportError:
                pass
            else:
                raise SystemExit("fcntl")
            import fcntl  # a library (here: __main__) still may
            from mcp_batteries.platform import family, address_space_bytes
            print(family(), address_space_bytes())
            """
        ),
        hidden,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["portable", "None"]
    assert HIDDEN_MARKER in probe.stderr


# -- mcp-filesystem: the escape corpus over stdio ----------------------------------------------------

ESCAPES = [
    "../allowed_evil/secret.txt",
    "sub/../../allowed_evil/secret.txt",
    "/etc/passwd",
    "file:///etc/passwd",
    "..",
    "door/secret.txt",  # a symlinked directory pointing outside
    "door/new.txt",
    "chain/secret.txt",  # a chain of links leading out
    "slash/etc/passwd",  # a link to /
    "dangling",  # a dangling link whose target would be outside
]


def filesystem_calls(p: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read_text_file", {"path": p}),
        ("read_text_file", {"path": p, "tail": 1}),
        ("read_media_file", {"path": p}),
        ("read_multiple_files", {"paths": [p]}),
        ("get_file_info", {"path": p}),
        ("write_file", {"path": p, "content": "PWNED"}),
        ("edit_file", {"path": p, "edits": [{"oldText": "SECRET", "newText": "PWNED"}]}),
        ("create_directory", {"path": p + "/newdir"}),
        ("copy_file", {"source": p, "destination": "copied.txt", "recursive": True}),
        ("copy_file", {"source": "ok.txt", "destination": p, "overwrite": True}),
        ("move_file", {"source": "ok.txt", "destination": p}),
        ("list_directory", {"path": p}),
        ("list_directory_with_sizes", {"path": p}),
        ("directory_tree", {"path": p}),
        ("search_files", {"path": p, "pattern": "**/*"}),
        ("grep", {"path": p, "pattern": "SECRET"}),
        ("delete_path", {"path": p, "recursive": True}),
    ]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(q): q.read_bytes() for q in sorted(directory.rglob("*")) if q.is_file()}


async def test_mcp_filesystem_serves_and_holds_its_walls(tmp_path: Path, hidden: dict[str, str]) -> None:
    root = tmp_path / "x" / "allowed"
    (root / "sub").mkdir(parents=True)
    (root / "ok.txt").write_text("public\n")
    outside = tmp_path / "x" / "allowed_evil"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET\n")
    (root / "door").symlink_to(outside)
    (root / "l2").symlink_to(outside)
    (root / "chain").symlink_to("l2")
    (root / "slash").symlink_to("/")
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    before = snapshot(outside)
    async with connect(stdio_params("mcp-batteries-filesystem", str(root), env=hidden), ERA) as client:
        assert "docs/platforms.md" in (client.instructions or "")  # the portable family was chosen
        # It serves: every kind of operation inside works.
        for tool, arguments, expected in [
            ("write_file", {"path": "sub/new.txt", "content": "hello\nworld\n"}, "Successfully wrote"),
            ("read_text_file", {"path": "sub/new.txt"}, "hello\nworld"),
            (
                "edit_file",
                {"path": "sub/new.txt", "edits": [{"oldText": "world", "newText": "there"}]},
                "there",
            ),
            ("create_directory", {"path": "made/deeper"}, "Successfully created"),
            ("copy_file", {"source": "sub", "destination": "copy", "recursive": True}, "1 file(s)"),
            ("move_file", {"source": "copy/new.txt", "destination": "made/moved.txt"}, "Successfully moved"),
            ("list_directory", {"path": "made"}, "moved.txt"),
            ("directory_tree", {"path": "sub"}, "new.txt"),
            ("search_files", {"path": ".", "pattern": "**/moved.txt"}, "moved.txt"),
            ("grep", {"path": ".", "pattern": "there"}, "new.txt"),
            ("get_file_info", {"path": "ok.txt"}, "size"),
            ("delete_path", {"path": "copy", "recursive": True}, "Deleted directory"),
        ]:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error and expected in text(result), (tool, text(result))
        # It holds its walls: every escape, against every tool.
        for escape in ESCAPES:
            for tool, arguments in filesystem_calls(escape):
                result = await client.call_tool(tool, arguments)
                shown = text(result)
                assert "SECRET" not in shown and "root:" not in shown, (tool, escape, shown)
                if tool == "read_multiple_files":
                    assert "Access denied" in shown or "Error" in shown, (escape, shown)
                elif not (escape == "dangling" and tool in ("get_file_info", "delete_path")):
                    # (a link inside may be described or removed itself; never what it points at)
                    assert result.is_error, (tool, escape, shown)
            (root / "ok.txt").write_text("public\n")
    assert snapshot(outside) == before
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


# -- mcp-git --------------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


async def test_mcp_git_serves_and_holds_its_walls(tmp_path: Path, hidden: dict[str, str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "--quiet")
    (project / "notes.txt").write_text("notes\n")
    git(project, "add", "notes.txt")
    git(project, "commit", "--quiet", "-m", "first")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    (project / "linked").symlink_to(outside)
    async with connect(
        stdio_params("mcp-batteries-git", "--repository", str(project), env=hidden), ERA
    ) as client:
        log = await client.call_tool("git_log", {"repo_path": str(project)})
        assert not log.is_error and "first" in text(log)
        (project / "notes.txt").write_text("changed\n")
        status = await client.call_tool("git_status", {"repo_path": str(project)})
        assert not status.is_error and "notes.txt" in text(status)
        for path in [
            "../outside/secret.txt",
            str(outside / "secret.txt"),
            "linked/secret.txt",
            "src/../../x",
        ]:
            for tool, arguments in [
                ("git_add", {"repo_path": str(project), "files": [path]}),
                ("git_restore", {"repo_path": str(project), "paths": [path]}),
                ("git_blame", {"repo_path": str(project), "path": path}),
            ]:
                result = await client.call_tool(tool, arguments)
                assert result.is_error and "outside the repository" in text(result), (
                    tool,
                    path,
                    text(result),
                )
                assert "TOP SECRET" not in text(result)
        for repo_path in [str(outside), str(project / "linked"), str(project) + "-evil", "/"]:
            result = await client.call_tool("git_log", {"repo_path": repo_path})
            assert result.is_error, (repo_path, text(result))


# -- mcp-sql, mcp-tasks, mcp-fetch ----------------------------------------------------------------


async def test_mcp_sql_serves_and_holds_its_walls(tmp_path: Path, hidden: dict[str, str]) -> None:
    database = tmp_path / "data.db"
    sqlite3.connect(database).close()
    async with connect(stdio_params("mcp-batteries-sql", f"sqlite:///{database}", env=hidden), ERA) as client:
        answer = await client.call_tool("query", {"sql": "SELECT 41 + 1 AS answer"})
        assert not answer.is_error and "42" in text(answer)
        write = await client.call_tool("query", {"sql": "CREATE TABLE pwned (x)"})
        assert write.is_error  # query is read-only, and no write tool is offered without --allow-write
        assert "execute" not in {tool.name for tool in (await client.list_tools()).tools}


async def test_mcp_tasks_serves(tmp_path: Path, hidden: dict[str, str]) -> None:
    params = stdio_params("mcp-batteries-tasks", "--db", str(tmp_path / "tasks.db"), env=hidden)
    async with connect(params, ERA) as client:
        added = await client.call_tool("add_task", {"title": "portable"})
        assert not added.is_error, text(added)
        listed = await client.call_tool("list_tasks", {})
        assert not listed.is_error and "portable" in text(listed)
        bad = await client.call_tool("get_task", {"task_id": "no-such-task"})
        assert bad.is_error


async def test_mcp_fetch_serves_and_holds_its_walls(tmp_path: Path, hidden: dict[str, str]) -> None:
    async with connect(stdio_params("mcp-batteries-fetch", env=hidden), ERA) as client:
        assert "fetch" in {tool.name for tool in (await client.list_tools()).tools}
        for url in ["http://127.0.0.1:9/", "http://169.254.169.254/latest/meta-data/", "file:///etc/passwd"]:
            result = await client.call_tool("fetch", {"url": url})
            assert result.is_error and "root:" not in text(result), (url, text(result))
