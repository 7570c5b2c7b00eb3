"""Live `git://` resources: changes made by a plain `git` in another process are heard, in both
protocol eras, in process, over stdio and over HTTP; and names that are not text survive every
reply over both transports (one server per transport and era does both, to keep the suite fast).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp_batteries.testing import (
    ERAS,
    Era,
    connect,
    connect_http,
    http_server,
    legacy_subscribe,
    stdio_params,
)
from mcp_git.config import GitSettings
from mcp_git.server import build_server

pytestmark = pytest.mark.anyio

UPDATED = "updated"
LIST_CHANGED = "list_changed"
#: Generous on a loaded shared machine; the watcher's own delay is the 150 ms debounce.
WAIT_S = 10.0


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


class Heard:
    """What a client heard, in either era: ("updated", uri) and ("list_changed", None) events."""

    def __init__(self, era: Era) -> None:
        self.era = era
        self.events: list[tuple[str, str | None]] = []
        self._changed = anyio.Event()

    def add(self, kind: str, uri: str | None = None) -> None:
        self.events.append((kind, uri))
        self._changed.set()
        self._changed = anyio.Event()

    async def legacy_handler(self, message: Any) -> None:
        if self.era != "legacy":
            return  # a modern client also hands listen events to its message handler
        note = getattr(message, "root", message)
        method = getattr(note, "method", "")
        if method == "notifications/resources/updated":
            self.add(UPDATED, str(note.params.uri))
        elif method == "notifications/resources/list_changed":
            self.add(LIST_CHANGED)

    def mark(self) -> int:
        return len(self.events)

    def count(self, kind: str, uri: str | None = None) -> int:
        return sum(1 for event in self.events if event == (kind, uri))

    async def wait(self, kind: str, uri: str | None = None, *, after: int = 0) -> None:
        with anyio.fail_after(WAIT_S):
            while (kind, uri) not in self.events[after:]:
                await self._changed.wait()


@asynccontextmanager
async def listening(client: Client, era: Era, heard: Heard, uris: list[str]) -> AsyncIterator[None]:
    if era == "legacy":
        for uri in uris:
            await legacy_subscribe(client, uri)
        yield
        return
    async with (
        client.listen(resource_subscriptions=uris, resources_list_changed=True) as events,
        anyio.create_task_group() as tg,
    ):

        async def pump() -> None:
            async for event in events:
                if isinstance(event, ResourceUpdated):
                    heard.add(UPDATED, event.uri)
                elif isinstance(event, ResourcesListChanged):
                    heard.add(LIST_CHANGED)

        tg.start_soon(pump)
        yield
        tg.cancel_scope.cancel()


async def outside_changes_are_heard(
    client: Client, era: Era, heard: Heard, repo: Path, key: str, git: Any
) -> None:
    """Plain git in another process changes the working tree, the index, HEAD and refs."""
    status, log, branches, tags = (f"git://{key}/{kind}" for kind in ("status", "log", "branches", "tags"))
    async with listening(client, era, heard, [status, log, branches, tags]):
        mark = heard.mark()
        (repo / "live.txt").write_text("made outside the server\n")
        await heard.wait(UPDATED, status, after=mark)
        mark = heard.mark()
        git(repo, "add", "live.txt")
        await heard.wait(UPDATED, status, after=mark)
        mark = heard.mark()
        git(repo, "commit", "-qm", "committed outside the server")
        await heard.wait(UPDATED, log, after=mark)
        await heard.wait(UPDATED, status, after=mark)
        mark = heard.mark()
        git(repo, "branch", "appeared")
        await heard.wait(UPDATED, branches, after=mark)
        await heard.wait(LIST_CHANGED, after=mark)
        mark = heard.mark()
        git(repo, "tag", "v-live")
        await heard.wait(UPDATED, tags, after=mark)
        await heard.wait(LIST_CHANGED, after=mark)
        # After a gc the refs live in packed-refs: changes there are seen too.
        git(repo, "gc", "--quiet")
        mark = heard.mark()
        git(repo, "branch", "-D", "appeared")
        await heard.wait(UPDATED, branches, after=mark)
        await heard.wait(LIST_CHANGED, after=mark)
        mark = heard.mark()
        git(repo, "tag", "-d", "v-live")
        await heard.wait(UPDATED, tags, after=mark)
        assert (UPDATED, log) not in heard.events[mark:]  # HEAD did not move: no word about the log


@pytest.mark.parametrize("era", ERAS)
async def test_changes_made_by_plain_git_elsewhere_are_heard_in_process(
    project: Path, era: Era, git_cli: Any
) -> None:
    heard = Heard(era)
    server = build_server(GitSettings(repository=[str(project)])).mcp
    async with connect(server, era, message_handler=heard.legacy_handler) as client:
        await client.list_tools()
        await outside_changes_are_heard(client, era, heard, project, "project", git_cli)


@pytest.mark.parametrize("era", ERAS)
async def test_the_servers_own_changes_are_heard_once(project: Path, era: Era, git_cli: Any) -> None:
    heard = Heard(era)
    server = build_server(GitSettings(repository=[str(project)])).mcp
    log = "git://project/log"
    async with (
        connect(server, era, message_handler=heard.legacy_handler) as client,
        listening(client, era, heard, [log]),
    ):
        result = await client.call_tool("git_commit", {"message": "through the server"})
        assert not result.is_error, text(result)
        await heard.wait(UPDATED, log)
        mark = heard.mark()
        git_cli(project, "commit", "-q", "--allow-empty", "-m", "outside")
        await heard.wait(UPDATED, log, after=mark)
        assert heard.count(UPDATED, log) == 2, heard.events  # the watcher did not repeat the first one


@pytest.mark.parametrize("era", ERAS)
async def test_a_working_tree_too_big_to_watch_is_polled(project: Path, era: Era) -> None:
    heard = Heard(era)
    server = build_server(GitSettings(repository=[str(project)], watch_max_dirs=0)).mcp
    status = "git://project/status"
    async with (
        connect(server, era, message_handler=heard.legacy_handler) as client,
        listening(client, era, heard, [status]),
    ):
        mark = heard.mark()
        (project / "src" / "deep.txt").write_text("not watched, polled\n")
        await heard.wait(UPDATED, status, after=mark)


async def test_subscribing_outside_the_allowed_repositories_is_refused(project: Path, tmp_path: Path) -> None:
    from mcp import MCPError

    server = build_server(GitSettings(repository=[str(project)])).mcp
    async with connect(server, "legacy") as client:
        for uri in ("git://elsewhere/status", "git://%2Fetc/status", "git://project/nothing"):
            with pytest.raises(MCPError):
                await legacy_subscribe(client, uri)


# -- over stdio and HTTP ---------------------------------------------------------------------------


class InRepository:
    """A client whose tool calls all name one repository (the server has two)."""

    def __init__(self, client: Client, repo: str) -> None:
        self._client = client
        self._repo = repo

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self._client.call_tool(name, {"repo_path": self._repo, **arguments})

    async def read_resource(self, uri: str) -> Any:
        return await self._client.read_resource(uri)


@pytest.fixture(scope="session")
def server_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Servers started as subprocesses keep compiled bytecode in a cache of this test session
    (the sandbox disables bytecode writing, which makes every start compile ~400 modules)."""
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(tmp_path_factory.mktemp("pycache"))}


async def names_survive(client: Client, repo: Path) -> None:
    c = InRepository(client, "names")
    (repo / "café.txt").write_text("changed\n")
    Path(os.fsdecode(os.fsencode(repo) + b"/bad\xff\xfename.txt")).write_bytes(
        b"caf\xe9 latin-1 content\nmore\n"
    )
    status = await c.call_tool("git_status", {})
    assert '"bad\\377\\376name.txt"' in text(status) and "café.txt" in text(status)
    log = text(await c.call_tool("git_log", {}))
    assert 'Author: "Bj\\366rn \\033[31mRed"' in log and "caf\\xe9" in log
    quoted = [row[0] for row in status.structured_content["rows"]]
    assert '"bad\\377\\376name.txt"' in quoted
    added = await c.call_tool("git_add", {"files": quoted})  # the shown form is accepted back
    assert not added.is_error, text(added)
    staged = text(await c.call_tool("git_diff_staged", {}))
    assert 'diff --git "a/bad\\377\\376name.txt" "b/bad\\377\\376name.txt"' in staged and "+more" in staged
    shown = text(await c.call_tool("git_show", {"revision": "HEAD"}))
    assert "caf\\xe9" in shown and '"b/line\\nbreak.txt"' in shown and '"b/quo\\"te.txt"' in shown
    assert '"b/esc\\033[31m.txt"' in shown and "b/café.txt" in shown
    branches = text(await c.call_tool("git_branch", {}))
    assert '"feat-\\377"' in branches and "café" in branches
    switched = await c.call_tool("git_checkout", {"branch_name": '"feat-\\377"'})
    assert not switched.is_error and '"feat-\\377"' in text(switched), text(switched)
    blame = await c.call_tool("git_blame", {"path": '"bad\\377\\376name.txt"', "revision": "HEAD"})
    assert blame.structured_content["rows"][0][2] == '"Bj\\366rn \\033[31mRed"'
    grep = await c.call_tool("git_grep", {"pattern": "latin"})
    assert '"line\\nbreak.txt"' in [r[0] for r in grep.structured_content["rows"]]
    blob = await c.read_resource("git://names/blob/HEAD/bad%FF%FEname.txt")
    assert getattr(blob.contents[0], "blob", None) is not None  # not UTF-8: served as bytes
    committed = await c.call_tool("git_commit", {"message": "names"})
    assert not committed.is_error, text(committed)


@pytest.mark.parametrize("era", ERAS)
async def test_over_stdio_names_survive_and_outside_changes_are_heard(
    names_repository: Path, project: Path, era: Era, git_cli: Any, server_env: dict[str, str]
) -> None:
    heard = Heard(era)
    args = ["--repository", str(names_repository), "--repository", str(project)]
    params = stdio_params("mcp-batteries-git", *args, env=server_env)
    async with connect(params, era, message_handler=heard.legacy_handler) as client:
        await names_survive(client, names_repository)
        await outside_changes_are_heard(client, era, heard, project, "project", git_cli)
        await outside_changes_are_heard(client, era, heard, names_repository, "names", git_cli)


@pytest.mark.parametrize("era", ERAS)
async def test_over_http_names_survive_and_outside_changes_are_heard(
    names_repository: Path, project: Path, era: Era, git_cli: Any, server_env: dict[str, str]
) -> None:
    heard = Heard(era)
    args = ["--repository", str(names_repository), "--repository", str(project)]
    async with (
        http_server("mcp-git", *args, env=server_env) as running,
        connect_http(running.url, era, message_handler=heard.legacy_handler) as client,
    ):
        await names_survive(client, names_repository)
        await outside_changes_are_heard(client, era, heard, project, "project", git_cli)
        await outside_changes_are_heard(client, era, heard, names_repository, "names", git_cli)
