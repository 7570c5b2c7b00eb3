"""Live resources: who wants which URI, what to watch for it, and the notifications that follow.

A server declares a `LiveSource` — how a URI maps to what to watch, and (optionally) how raw
file changes map back to the URIs that really changed — and hands it to `LiveResources`, which
owns the rest for both protocol eras:

    class Files:                                         # a LiveSource
        async def targets(self, uri):                    # while `uri` is subscribed
            return [WatchTarget.file(path_of(uri))]
        async def list_targets(self):                    # while anyone wants list changes
            return [WatchTarget.tree(root) for root in roots]

    live = LiveResources(server, Files())
    await live.changed({"tasks://tasks/T-1"})            # a change the server learned of itself

- Interest: subscriptions (`resources/subscribe`, `subscriptions/listen` filters) and list
  interest arrive from `BatteriesServer.interest` as deltas; a URI's targets are watched before
  its subscribe request is answered, and released when its last subscriber leaves.
- Watching: one `WatchService` per server (O(1) per subscription, see `watch.py`), run while the
  server's services run. With no interest, nothing is watched or polled.
- Changes: a batch of changed paths becomes `Hits` (the subscribed URIs whose targets saw a
  change, and whether a list target did); `source.resolve(hits)` may refine them (a database
  file changed: which tables really did?). Each changed URI is notified exactly once per batch;
  `resources/list_changed` is sent when the source says the list changed.
- Polling, for what cannot be watched (a PostgreSQL catalog): a source with `poll_interval`
  has `poll(uris)` called at that interval while anything is subscribed.
- Replicas: with a change bus configured (`bus = "postgresql://..."|"redis://..."`), every
  change notified here is also published, and changes other replicas publish are notified here
  (`mcp_batteries._live.bus`); `Changes.digests` says what was observed, so that replicas
  watching the same shared volume do not multiply a change (file targets get one by default).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio
from watchfiles import Change

from mcp_batteries._core.notify import RESOURCE_LIST, InterestChange
from mcp_batteries._live.bus import BusEvent, ChangeRelay, engine_for, stat_digest
from mcp_batteries._live.watch import ChangeBatch, WatchService, WatchTarget
from mcp_batteries.errors import BatteriesError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from mcp_batteries._core.app import BatteriesServer

__all__ = ["Changes", "Hits", "LiveResources", "LiveSource", "Pollable", "Resolving", "WatchTarget"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hits:
    """What a batch of file changes touched: subscribed URIs, and whether any list target."""

    uris: frozenset[str]
    listing: bool
    batch: ChangeBatch

    @property
    def structural(self) -> bool:
        """Whether anything appeared or vanished (not just changed content)."""
        return any(change in (Change.added, Change.deleted) for change, _ in self.batch)


@dataclass(frozen=True)
class Changes:
    """The URIs whose content changed, and whether the list of resources changed."""

    updated: frozenset[str] = field(default_factory=frozenset)
    list_changed: bool = False
    #: What was observed, by URI: the same on every replica that observes the same change (a
    #: fingerprint, a version), so the change bus delivers it once; `list_digest` for the list.
    digests: Mapping[str, str] = field(default_factory=dict)
    list_digest: str | None = None

    def __bool__(self) -> bool:
        return bool(self.updated) or self.list_changed


class LiveSource(Protocol):
    """What a server declares to make its resources live."""

    async def targets(self, uri: str) -> Sequence[WatchTarget]:
        """What to watch while `uri` is subscribed ([] when nothing on disk backs it)."""
        ...

    async def list_targets(self) -> Sequence[WatchTarget]:
        """What to watch while any client wants `resources/list_changed`."""
        ...


@runtime_checkable
class Resolving(Protocol):
    """A source whose raw hits need a look at what really changed."""

    async def resolve(self, hits: Hits) -> Changes: ...


@runtime_checkable
class Pollable(Protocol):
    """A source polled while anything is subscribed (for changes no file watch can see)."""

    poll_interval: float | None

    async def poll(self, uris: frozenset[str]) -> Changes: ...


def direct_changes(hits: Hits) -> Changes:
    """The default resolution: a hit URI changed; the list changed if something came or went."""
    return Changes(updated=hits.uris, list_changed=hits.listing and hits.structural)


class LiveResources:
    """Interest -> watches -> changes -> notifications, for one server and one source."""

    def __init__(
        self,
        server: BatteriesServer,
        source: LiveSource,
        *,
        watch: bool = True,
        debounce_ms: int = 150,
        share: bool = True,
    ) -> None:
        """`watch=False` keeps notifications for changes the server reports itself (`changed`),
        without any file watching (e.g. an operator's `--no-watch`). `share=False`: the source's
        changes reach every replica without the change bus (mcp-tasks: through its database)."""
        self._server = server
        self._source = source
        self._watching = watch
        self._watch = WatchService(self._on_batch, debounce_ms=debounce_ms)
        self._running = False
        self._subscribed: dict[str, tuple[WatchTarget, ...]] = {}
        self._listing: tuple[WatchTarget, ...] | None = None
        # Reverse index: which subscribed URIs a changed path concerns.
        self._by_file: dict[Path, set[str]] = {}
        self._by_dir: dict[Path, set[str]] = {}
        self._by_tree: dict[Path, set[str]] = {}
        self._list_files: set[Path] = set()
        self._list_dirs: set[Path] = set()
        self._list_trees: set[Path] = set()
        self._interest_changed = anyio.Event()
        self._lock = anyio.Lock()
        server.interest.on_change(self._on_interest)
        self.relay: ChangeRelay | None = None
        bus = getattr(server.settings, "bus", None)
        if bus and share:
            channel = f"{server.settings.bus_channel}.{server.settings.server_name}"
            self.relay = ChangeRelay(engine_for(bus), channel, self._from_bus)
            server.service(self.relay.running)
            server.reports["bus"] = self.relay.status
        server.service(self._run)
        server.watch_readings.append(lambda: self._watch.counts)

    # -- what is wanted --------------------------------------------------------------------------
    @property
    def subscribed(self) -> frozenset[str]:
        return frozenset(self._subscribed)

    @property
    def watch_starts(self) -> int:
        """How many OS watchers were started so far (diagnostics and tests)."""
        return self._watch.starts

    @property
    def listing_wanted(self) -> bool:
        return self._listing is not None

    async def changed(
        self,
        uris: Iterable[str] = (),
        *,
        list_changed: bool = False,
        digests: Mapping[str, str] | None = None,
        list_digest: str | None = None,
    ) -> None:
        """Notify changes the server learned of itself (its own writes, a NOTIFY, a poll);
        `digests` and `list_digest` as in `Changes`."""
        changes = Changes(frozenset(uris), list_changed, digests or {}, list_digest)
        await self._notify(changes)

    async def _on_interest(self, change: InterestChange) -> None:
        async with self._lock:
            for key in change.removed:
                if key == RESOURCE_LIST:
                    await self._drop_listing()
                else:
                    await self._drop(key)
            for key in change.added:
                if key == RESOURCE_LIST:
                    await self._add_listing()
                else:
                    await self._add(key)
        self._interest_changed.set()

    async def _add(self, uri: str) -> None:
        try:
            targets = tuple(await self._source.targets(uri))
        except BatteriesError as exc:
            logger.debug("nothing to watch for %s: %s", uri, exc)
            targets = ()
        self._subscribed[uri] = targets
        for target in targets:
            self._index(target).setdefault(target.path, set()).add(uri)
            if self._running and self._watching:
                await self._watch.add(target)

    async def _drop(self, uri: str) -> None:
        for target in self._subscribed.pop(uri, ()):
            index = self._index(target)
            uris = index.get(target.path)
            if uris is not None:
                uris.discard(uri)
                if not uris:
                    del index[target.path]
            if self._running and self._watching:
                await self._watch.remove(target)

    async def _add_listing(self) -> None:
        self._listing = tuple(await self._source.list_targets())
        for target in self._listing:
            {"file": self._list_files, "dir": self._list_dirs, "tree": self._list_trees}[target.kind].add(
                target.path
            )
            if self._running and self._watching:
                await self._watch.add(target)

    async def _drop_listing(self) -> None:
        listing, self._listing = self._listing or (), None
        self._list_files.clear()
        self._list_dirs.clear()
        self._list_trees.clear()
        if self._running and self._watching:
            for target in listing:
                await self._watch.remove(target)

    def _index(self, target: WatchTarget) -> dict[Path, set[str]]:
        return {"file": self._by_file, "dir": self._by_dir, "tree": self._by_tree}[target.kind]

    # -- running (a service of the server) --------------------------------------------------------
    @asynccontextmanager
    async def _run(self) -> AsyncIterator[None]:
        async with self._watch, anyio.create_task_group() as tg:
            async with self._lock:
                self._running = True
                if self._watching:
                    for targets in self._subscribed.values():
                        for target in targets:
                            await self._watch.add(target)
                    for target in self._listing or ():
                        await self._watch.add(target)
            if isinstance(self._source, Pollable) and self._source.poll_interval:
                tg.start_soon(self._poll_while_subscribed, self._source, self._source.poll_interval)
            try:
                yield
            finally:
                self._running = False
                tg.cancel_scope.cancel()

    async def _poll_while_subscribed(self, source: Pollable, interval: float) -> None:
        while True:
            if not self._subscribed and self._listing is None:
                waiting = self._interest_changed = anyio.Event()
                if not self._subscribed and self._listing is None:
                    await waiting.wait()
                continue
            await anyio.sleep(interval)  # the polling period, not a readiness wait
            try:
                changes = await source.poll(self.subscribed)
            except Exception:
                logger.exception("polling for changes failed")
                continue
            await self._notify(changes)

    # -- changes -> notifications -----------------------------------------------------------------
    async def _on_batch(self, batch: ChangeBatch) -> None:
        uris: set[str] = set()
        listing = False
        for _, raw in batch:
            path = Path(raw)
            uris |= self._by_file.get(path, set())
            uris |= self._by_dir.get(path.parent, set())
            uris |= self._by_dir.get(path, set())
            if self._by_tree:
                for ancestor in (path, *path.parents):
                    uris |= self._by_tree.get(ancestor, set())
            if not listing and self._listing is not None:
                listing = (
                    path in self._list_files
                    or path.parent in self._list_dirs
                    or path in self._list_dirs
                    or any(a in self._list_trees for a in (path, *path.parents))
                )
        hits = Hits(uris=frozenset(uris), listing=listing, batch=batch)
        if not hits.uris and not hits.listing:
            return
        if isinstance(self._source, Resolving):
            changes = await self._source.resolve(hits)
        else:
            changes = direct_changes(hits)
        await self._notify(changes, batch=batch)

    async def _notify(self, changes: Changes, *, batch: ChangeBatch | None = None) -> None:
        relay = self.relay
        if relay is None:
            for uri in sorted(changes.updated):
                await self._server.notify_resource_updated(uri)
            if changes.list_changed:
                await self._server.notify_resources_list_changed()
            return
        # Another replica may have observed the same change first (a shared volume): then it is
        # neither notified again here nor published again.
        fresh = [event for event in await self._observed(changes, batch) if relay.claim(event)]
        await self._deliver(fresh)
        await relay.publish(fresh)

    async def _observed(self, changes: Changes, batch: ChangeBatch | None) -> list[BusEvent]:
        """The changes as bus events, each with a digest of what was observed where one is known:
        the source's, else the state of a subscribed URI's file or directory targets, else (for
        the list) the paths that came or went in the batch."""
        stat_paths: dict[str, list[Path]] = {}
        for uri in changes.updated:
            targets = self._subscribed.get(uri, ())
            if uri not in changes.digests and targets and all(t.kind != "tree" for t in targets):
                stat_paths[uri] = [t.path for t in targets]
        structural = sorted(
            (change.name, raw) for change, raw in batch or () if change in (Change.added, Change.deleted)
        )
        want_list = changes.list_changed and changes.list_digest is None and structural

        def digests() -> tuple[dict[str, str], str | None]:
            found = {uri: stat_digest(paths) for uri, paths in stat_paths.items()}
            if not want_list:
                return found, None
            # With their directories: a file that comes and goes each time (a SQLite journal)
            # looks the same every time, its directory's modification time does not.
            paths = {raw for _, raw in structural} | {str(Path(raw).parent) for _, raw in structural}
            kinds = ",".join(name for name, _ in structural)
            return found, f"{kinds}:{stat_digest(paths)}"

        computed, list_digest = (
            await anyio.to_thread.run_sync(digests) if stat_paths or want_list else ({}, None)
        )
        known = {**computed, **changes.digests}
        events = [BusEvent("u", uri, known.get(uri)) for uri in sorted(changes.updated)]
        if changes.list_changed:
            events.append(BusEvent("l", None, changes.list_digest or list_digest))
        return events

    async def _from_bus(self, events: list[BusEvent]) -> None:
        await self._deliver(events)

    async def _deliver(self, events: list[BusEvent]) -> None:
        """Notify this replica's own subscribers."""
        for event in events:
            if event.kind == "u" and event.uri is not None:
                await self._server.notify_resource_updated(event.uri)
            elif event.kind == "l":
                await self._server.notify_resources_list_changed()
            elif event.kind == "a":  # what changed cannot be known: everything may have
                for uri in sorted(self._subscribed):
                    await self._server.notify_resource_updated(uri)
                await self._server.notify_resources_list_changed()
