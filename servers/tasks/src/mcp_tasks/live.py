"""Live resources: every committed change reaches subscribers, whoever made it.

Three ways a change can happen, one path to the clients (`mcp_batteries.live.LiveResources`):

- this process: the store hands each committed `ChangeSet` to `live.changed` at once;
- another mcp-tasks process on the same SQLite file: the file and its -wal are watched while
  anyone listens; after a change, `resolve` reads `task_changes` rows newer than the last one
  seen (SQLite writers are serialised, so sequence order is commit order) and notifies their
  URIs, skipping this process's own rows (already notified);
- another replica on the same PostgreSQL database: each writing transaction sends NOTIFY with
  its `task_changes` sequence number, delivered at commit; a dedicated LISTEN connection hears
  it, reads that row and notifies its URIs. If the LISTEN connection drops it is re-opened, and
  every subscribed resource is reported changed (changes in the gap cannot be known).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp_batteries.live import Changes, Hits, LiveResources, WatchTarget

from mcp_tasks.changes import ChangeSet
from mcp_tasks.service import TasksService
from mcp_tasks.store import TaskStore

if TYPE_CHECKING:
    from mcp_tasks.postgres_backend import PostgresBackend

logger = logging.getLogger(__name__)

#: More unseen changes than this at once: report everything subscribed as changed.
BACKLOG = 1000
#: NOTIFY payloads waiting to be read; beyond this, report everything subscribed as changed.
QUEUE = 10_000
RECONNECT_S = (0.2, 1.0, 5.0)


class TasksLive:
    """The tasks server's `LiveSource`, plus its own-write hook and the PostgreSQL listener."""

    def __init__(self, server: Any, service: TasksService) -> None:
        self._service = service
        settings = service.settings
        self._files: list[WatchTarget] = []
        if not settings.database_url:
            base = settings.sqlite_path
            self._files = [WatchTarget.file(base), WatchTarget.file(Path(f"{base}-wal"))]
        self._seen = 0
        self._lock = anyio.Lock()
        self._overflowed = False
        service.on_open.append(self._opened)
        # Every replica hears of every change through the database itself (NOTIFY at commit, or
        # the shared SQLite file): the change bus would only repeat it.
        self.live = LiveResources(server, self, watch=bool(self._files), share=False)
        if settings.database_url:
            server.service(self._listening)

    async def _opened(self, store: TaskStore) -> None:
        self._seen = await store.latest_change()
        store.on_commit = self._own_change

    async def _own_change(self, changes: ChangeSet) -> None:
        await self._report(frozenset(changes.uris), changes.listing)

    async def _report(self, uris: frozenset[str], listing: bool) -> None:
        wanted = uris & self.live.subscribed
        if wanted or listing:
            await self.live.changed(wanted, list_changed=listing)

    # -- LiveSource: SQLite files ------------------------------------------------------------------
    async def targets(self, uri: str) -> Sequence[WatchTarget]:
        await self._baseline()
        return self._files

    async def list_targets(self) -> Sequence[WatchTarget]:
        await self._baseline()
        return self._files

    async def _baseline(self) -> None:
        """When the first client starts listening, changes made before are not news to it."""
        if self._files and not self.live.subscribed and not self.live.listing_wanted:
            async with self._lock:
                self._seen = await self._service.store.latest_change()

    async def resolve(self, hits: Hits) -> Changes:
        store = self._service.store
        async with self._lock:
            found = await store.changes_after(self._seen, limit=BACKLOG + 1)
            if not found:
                return Changes()
            if len(found) > BACKLOG:
                self._seen = await store.latest_change()
                return Changes(updated=self.live.subscribed, list_changed=True)
            self._seen = found[-1].seq
        foreign = [c for c in found if c.origin != store.origin]
        uris = frozenset().union(*(c.uris for c in foreign)) if foreign else frozenset()
        return Changes(updated=uris & self.live.subscribed, list_changed=any(c.listing for c in foreign))

    # -- PostgreSQL: LISTEN ------------------------------------------------------------------------
    @asynccontextmanager
    async def _listening(self) -> AsyncIterator[None]:
        send, receive = anyio.create_memory_object_stream[str](QUEUE)
        async with anyio.create_task_group() as tg:
            from mcp_tasks.postgres_backend import PostgresBackend  # asyncpg: PostgreSQL only

            backend = self._service.store.backend
            assert isinstance(backend, PostgresBackend)
            ready = anyio.Event()
            tg.start_soon(self._listen_forever, backend, send, ready)
            await ready.wait()  # LISTEN is in place before the first request is served
            tg.start_soon(self._consume, receive)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _listen_forever(self, backend: PostgresBackend, send: Any, ready: anyio.Event) -> None:
        attempt = 0
        while True:
            lost = anyio.Event()

            def deliver(payload: str) -> None:
                try:
                    send.send_nowait(payload)
                except anyio.WouldBlock:  # the reader fell far behind: see _consume
                    self._overflowed = True

            try:
                async with backend.listening(deliver, on_lost=lost.set):
                    if attempt:
                        # Changes made while we were not listening cannot be known: say all changed.
                        await self._report(self.live.subscribed, True)
                    attempt = 0
                    ready.set()
                    await lost.wait()
                logger.warning("the PostgreSQL LISTEN connection was lost; re-opening it")
            except Exception as exc:
                logger.warning("cannot LISTEN on PostgreSQL (%s); retrying", exc)
                ready.set()
            await anyio.sleep(RECONNECT_S[min(attempt, len(RECONNECT_S) - 1)])  # back-off between attempts
            attempt += 1

    async def _consume(self, receive: Any) -> None:
        async for payload in receive:
            if self._overflowed:
                self._overflowed = False
                await self._report(self.live.subscribed, True)
                continue
            try:
                message = json.loads(payload)
                origin, seq = str(message["origin"]), int(message["seq"])
            except (ValueError, KeyError, TypeError):
                logger.warning("ignoring a malformed change announcement: %r", payload[:200])
                continue
            store = self._service.store
            if origin == store.origin:
                continue  # our own change: notified at commit
            try:
                change = await store.change(seq)
            except Exception:
                logger.exception("reading announced change %d failed", seq)
                continue
            if change is not None:
                await self._report(change.uris, change.listing)
