"""Client roots narrow the configured directories and never widen them, per connection."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

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
