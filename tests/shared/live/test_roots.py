"""Client roots narrow the configured directories and never widen them, per connection."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPDeprecationWarning
from mcp.server.mcpserver import Context
from mcp.types import ListRootsResult, Root
from mcp_batteries._live.roots import RootsTracker
from mcp_batteries._safety.paths import AllowedDirectories
from mcp_batteries.testing import Notifications, connect

from ..conftest import build_demo

pytestmark = pytest.mark.anyio


def make_server(configured: AllowedDirectories) -> Any:
    server = build_demo()

    async def changed(connection: Any) -> None:
        await server.notifier.resources_list_changed(connection)

    tracker = RootsTracker(configured, lambda c, paths: c.narrowed(paths), changed)
    tracker.install(server)

    @server.tool(title="Where", read_only=True)
    async def where(ctx: Context[Any, Any]) -> str:
        """The effective directories."""
        return ",".join(str(r) for r in (await tracker.effective(ctx.session)).roots)

    return server


def roots_callback(paths: list[Path]) -> Any:
    async def answer(_: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=p.as_uri()) for p in paths])

    return answer


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    made = {name: tmp_path / name for name in ("a", "b", "outside")}
    for p in made.values():
        p.mkdir()
    (made["a"] / "inner").mkdir()
    return made


async def call_where(client: Any) -> str:
    result = await client.call_tool("where", {})
    return result.content[0].text


async def test_roots_inside_configured_dirs_narrow_access(dirs: dict[str, Path]) -> None:
    server = make_server(AllowedDirectories([dirs["a"], dirs["b"]]))
    async with connect(
        server.mcp, "legacy", list_roots_callback=roots_callback([dirs["a"] / "inner"])
    ) as client:
        assert await call_where(client) == str(dirs["a"] / "inner")


async def test_a_root_of_slash_or_elsewhere_never_widens_access(dirs: dict[str, Path]) -> None:
    server = make_server(AllowedDirectories([dirs["a"]]))
    callback = roots_callback([Path("/"), dirs["outside"]])
    async with connect(server.mcp, "legacy", list_roots_callback=callback) as client:
        assert await call_where(client) == str(dirs["a"])


async def test_clients_without_roots_and_modern_clients_use_configured_dirs(dirs: dict[str, Path]) -> None:
    server = make_server(AllowedDirectories([dirs["a"], dirs["b"]]))
    expected = f"{dirs['a']},{dirs['b']}"
    async with connect(server.mcp, "legacy") as client:
        assert await call_where(client) == expected
    async with connect(server.mcp, "modern") as client:
        assert await call_where(client) == expected


async def test_roots_change_is_refetched_and_the_client_told_the_list_changed(dirs: dict[str, Path]) -> None:
    server = make_server(AllowedDirectories([dirs["a"], dirs["b"]]))
    current = [dirs["a"]]

    async def answer(_: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=p.as_uri()) for p in current])

    heard = Notifications()
    async with connect(server.mcp, "legacy", list_roots_callback=answer, message_handler=heard) as client:
        assert await call_where(client) == str(dirs["a"])
        current[:] = [dirs["b"]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.send_roots_list_changed()
        await heard.wait_method("notifications/resources/list_changed")
        assert await call_where(client) == str(dirs["b"])


class RootsAnswer:
    """Answers roots/list with `uris` as a client sends them, unvalidated (the SDK's model only
    builds file:// roots), and counts the requests."""

    def __init__(self, *uris: str) -> None:
        self.uris = uris
        self.asked = 0
        self._asked = anyio.Event()

    async def __call__(self, _: Any) -> ListRootsResult:
        self.asked += 1
        self._asked.set()
        self._asked = anyio.Event()
        return ListRootsResult(roots=[Root.model_construct(uri=uri) for uri in self.uris])

    async def wait_asked(self, times: int) -> None:
        with anyio.fail_after(10):
            while self.asked < times:
                await self._asked.wait()


#: What the client's SDK says when it sends roots its own model would not build.
unvalidated_roots = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")


async def test_an_empty_roots_list_narrows_nothing_and_says_so_once_per_connection(
    dirs: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    # The MCP Inspector declares roots and answers []: that must not lock the client out.
    server = make_server(AllowedDirectories([dirs["a"], dirs["b"]]))
    empty = RootsAnswer()
    caplog.set_level(logging.INFO, logger="mcp_batteries._live.roots")
    async with connect(server.mcp, "legacy", list_roots_callback=empty) as client:
        assert await call_where(client) == f"{dirs['a']},{dirs['b']}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.send_roots_list_changed()
        await empty.wait_asked(2)
        assert await call_where(client) == f"{dirs['a']},{dirs['b']}"
    said = [r for r in caplog.records if "narrows nothing" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO
    assert "empty" in said[0].getMessage()


@unvalidated_roots
async def test_roots_that_name_no_local_directory_narrow_nothing(dirs: dict[str, Path]) -> None:
    server = make_server(AllowedDirectories([dirs["a"]]))
    remote = RootsAnswer(
        "https://example.com/repo", "file://otherhost/srv", "file:relative", "vscode-remote://x/y"
    )
    async with connect(server.mcp, "legacy", list_roots_callback=remote) as client:
        assert await call_where(client) == str(dirs["a"])


@unvalidated_roots
async def test_a_file_root_next_to_roots_of_other_schemes_still_narrows(dirs: dict[str, Path]) -> None:
    # The SDK's result model refuses the whole answer for one root that is not file://; the
    # file:// root beside it must still narrow (never: the answer is dropped and all is allowed).
    server = make_server(AllowedDirectories([dirs["a"], dirs["b"]]))
    mixed = RootsAnswer((dirs["a"] / "inner").as_uri(), "https://example.com/repo")
    async with connect(server.mcp, "legacy", list_roots_callback=mixed) as client:
        assert await call_where(client) == str(dirs["a"] / "inner")


async def test_roots_all_outside_the_configured_directories_leave_nothing_and_say_which(
    dirs: dict[str, Path],
) -> None:
    configured = AllowedDirectories([dirs["a"]])
    narrowed = configured.narrowed([dirs["outside"], dirs["outside"] / "missing"])
    assert narrowed.roots == ()
    described = narrowed.describe()
    assert str(dirs["outside"]) in described and str(dirs["a"]) in described
    assert "none of its roots" in described
