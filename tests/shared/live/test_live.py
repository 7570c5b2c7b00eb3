"""The live-resource helper: interest -> watches -> exactly one notification per change and URI."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._live.resources import Changes, Hits, LiveResources, WatchTarget
from mcp_batteries.testing import Notifications, connect, legacy_subscribe, legacy_unsubscribe

from ..conftest import DemoSettings

pytestmark = pytest.mark.anyio


class Files:
    """demo://file/NAME is the file NAME in `root`; list changes watch the whole tree."""

    def __init__(self, root: Path) -> None:
        self.root = root

    async def targets(self, uri: str) -> Sequence[WatchTarget]:
        return [WatchTarget.file(self.root / uri.removeprefix("demo://file/"))]

    async def list_targets(self) -> Sequence[WatchTarget]:
        return [WatchTarget.tree(self.root)]


def live_server(root: Path, source: object | None = None) -> tuple[BatteriesServer, LiveResources]:
    async def anything(session: object, uri: str) -> None:
        return None

    server = BatteriesServer(DemoSettings(), instructions="live demo", subscriptions=anything)
    return server, LiveResources(server, source or Files(root))  # type: ignore[arg-type]


async def test_a_write_to_a_subscribed_file_is_one_notification_even_under_a_watched_tree(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub").mkdir()
    target = tmp_path / "sub" / "a.txt"
    target.write_text("0")
    server, _ = live_server(tmp_path)
    heard = Notifications()
    async with connect(server.mcp, "legacy", message_handler=heard) as client:
        await legacy_subscribe(client, "demo://file/sub/a.txt")  # and, being legacy, list interest
        target.write_text("1")
        await heard.wait_method("notifications/resources/updated", "demo://file/sub/a.txt")
        (tmp_path / "marker.txt").write_text("")  # a later, separate change ends the window
        await heard.wait_method("notifications/resources/list_changed")
    updates = [m for m in heard.methods() if m == "notifications/resources/updated"]
    assert updates == ["notifications/resources/updated"]


async def test_modern_listeners_hear_file_changes_and_stop_costing_when_they_leave(tmp_path: Path) -> None:
    target = tmp_path / "b.txt"
    target.write_text("0")
    server, live = live_server(tmp_path)
    async with (
        connect(server.mcp, "modern") as client,
        client.listen(resource_subscriptions=["demo://file/b.txt"]) as events,
    ):
        assert live.subscribed == {"demo://file/b.txt"}
        target.write_text("1")
        with anyio.fail_after(10):
            async for event in events:
                assert event.uri == "demo://file/b.txt"
                break
    assert live.subscribed == frozenset()


async def test_changes_the_server_learns_itself_reach_subscribers(tmp_path: Path) -> None:
    server, live = live_server(tmp_path)
    heard = Notifications()
    async with connect(server.mcp, "legacy", message_handler=heard) as client:
        await legacy_subscribe(client, "demo://file/pushed")
        await live.changed({"demo://file/pushed"}, list_changed=True)
        await heard.wait_method("notifications/resources/updated", "demo://file/pushed")
        await heard.wait_method("notifications/resources/list_changed")


class Polled:
    """A source no file watch can see: polled while anything is subscribed."""

    poll_interval = 0.05

    def __init__(self) -> None:
        self.polls = 0
        self.polled = anyio.Event()

    async def targets(self, uri: str) -> Sequence[WatchTarget]:
        return []

    async def list_targets(self) -> Sequence[WatchTarget]:
        return []

    async def poll(self, uris: frozenset[str]) -> Changes:
        self.polls += 1
        self.polled.set()
        return Changes(updated=uris)


async def test_a_polled_source_is_polled_only_while_someone_is_subscribed(tmp_path: Path) -> None:
    source = Polled()
    server, _ = live_server(tmp_path, source)
    heard = Notifications()
    async with connect(server.mcp, "modern") as client:
        await client.list_tools()
        assert source.polls == 0
        async with client.listen(resource_subscriptions=["demo://x"]) as events:
            with anyio.fail_after(10):
                async for event in events:
                    assert event.uri == "demo://x"
                    break
        before = source.polls
        source.polled = anyio.Event()
        with anyio.move_on_after(0.3):
            await source.polled.wait()
        assert source.polls <= before + 1  # at most one poll already under way
    del heard


class Resolved(Files):
    """demo://file/summary stands for the whole directory; the source decides what changed."""

    async def targets(self, uri: str) -> Sequence[WatchTarget]:
        return [WatchTarget.dir(self.root)]

    async def resolve(self, hits: Hits) -> Changes:
        return Changes(updated=frozenset({"demo://file/summary"}) if hits.uris else frozenset())


async def test_a_resolving_source_decides_which_uris_really_changed(tmp_path: Path) -> None:
    server, _ = live_server(tmp_path, Resolved(tmp_path))
    heard = Notifications()
    async with connect(server.mcp, "legacy", message_handler=heard) as client:
        await legacy_subscribe(client, "demo://file/summary")
        (tmp_path / "data.txt").write_text("x")
        await heard.wait_method("notifications/resources/updated", "demo://file/summary")


async def test_thousands_of_subscriptions_share_one_watcher_and_all_go_away(tmp_path: Path) -> None:
    server, live = live_server(tmp_path)
    uris = [f"demo://file/f{i}.txt" for i in range(3000)]
    async with connect(server.mcp, "legacy") as client:
        for uri in uris:
            await legacy_subscribe(client, uri)
        assert len(live.subscribed) == 3000
        # One directory: one watcher for the files, one for the legacy client's list interest.
        assert live.watch_starts <= 2
        for uri in uris:
            await legacy_unsubscribe(client, uri)
        assert live.subscribed == frozenset()
