"""Change notifications that reach every interested client of both protocol eras.

Two pipes exist, one per era (see docs/architecture.md):

- handshake-era clients (`initialize`, 2024-11-05..2025-11-25) on stdio or stateful HTTP get
  `notifications/resources/updated` and `.../list_changed` on their connection's standalone
  channel; they subscribe with `resources/subscribe`;
- 2026-07-28 clients open `subscriptions/listen` streams; events reach them through the
  `SubscriptionBus`, which filters per stream.

`Notifier` sends on both. `Interest` counts who wants what across both eras, so a server can
start watching a file when the first client subscribes and stop when the last one leaves.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)

from mcp_batteries._protocol.sdk import Connection

logger = logging.getLogger(__name__)

#: The interest key for "tell me when the list of resources changes".
RESOURCE_LIST = "resources/list"


@dataclass(frozen=True)
class InterestChange:
    """Keys that gained their first subscriber, and keys that lost their last."""

    added: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()


InterestListener = Callable[[InterestChange], Awaitable[None]]


class Interest:
    """A multiset of subscribed resource URIs (plus `RESOURCE_LIST`) across all clients.

    Listeners are awaited with what changed (never the whole set: subscribing stays O(1) with
    thousands of subscriptions) whenever a key gains its first or loses its last subscriber, so a
    watcher is in place before the subscribe request is answered.
    """

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._listeners: list[InterestListener] = []

    def keys(self) -> frozenset[str]:
        return frozenset(self._counts)

    def __contains__(self, key: str) -> bool:
        return key in self._counts

    def on_change(self, listener: InterestListener) -> None:
        self._listeners.append(listener)

    async def add(self, keys: list[str] | set[str]) -> None:
        new = frozenset(k for k in keys if k not in self._counts)
        self._counts.update(keys)
        if new:
            await self._changed(InterestChange(added=new))

    async def remove(self, keys: list[str] | set[str]) -> None:
        gone = set()
        for key in keys:
            count = self._counts.get(key, 0)
            if count <= 1:
                if count:
                    gone.add(key)
                self._counts.pop(key, None)
            else:
                self._counts[key] = count - 1
        if gone:
            await self._changed(InterestChange(removed=frozenset(gone)))

    async def _changed(self, change: InterestChange) -> None:
        for listener in self._listeners:
            try:
                await listener(change)
            except Exception:  # a failing watcher must not fail the client's subscribe call
                logger.exception("interest listener failed")


@dataclass(eq=False)
class _LegacyClient:
    connection: Connection
    uris: set[str] = field(default_factory=set)


class Notifier:
    """Fans change notifications out to legacy connections and modern listen streams."""

    def __init__(self, bus: InMemorySubscriptionBus, interest: Interest) -> None:
        self.bus = bus
        self.interest = interest
        self._clients: dict[int, _LegacyClient] = {}

    # -- legacy connection tracking ------------------------------------------------------------
    async def track(self, connection: Connection) -> _LegacyClient:
        """Remember a handshake-era connection that can receive notifications (idempotent)."""
        key = id(connection)
        client = self._clients.get(key)
        if client is None:
            client = _LegacyClient(connection)
            self._clients[key] = client
            # Unwound when the connection closes (stdio EOF, HTTP DELETE, idle timeout, crash).
            connection.exit_stack.push_async_callback(self._forget, key)
            await self.interest.add([RESOURCE_LIST])
        return client

    async def _forget(self, key: int) -> None:
        client = self._clients.pop(key, None)
        if client is not None:
            with anyio.CancelScope(shield=True):  # runs while the connection is torn down
                await self.interest.remove([*client.uris, RESOURCE_LIST])

    @property
    def legacy_client_count(self) -> int:
        return len(self._clients)

    async def subscribe(self, connection: Connection, uri: str) -> None:
        client = await self.track(connection)
        if uri not in client.uris:
            client.uris.add(uri)
            await self.interest.add([uri])

    async def unsubscribe(self, connection: Connection, uri: str) -> None:
        client = self._clients.get(id(connection))
        if client is not None and uri in client.uris:
            client.uris.discard(uri)
            await self.interest.remove([uri])

    # -- sending -----------------------------------------------------------------------------
    async def resource_updated(self, uri: str) -> None:
        for client in list(self._clients.values()):
            if uri in client.uris:
                await self._send(client, lambda c: c.send_resource_updated(uri))
        await self.bus.publish(ResourceUpdated(uri=uri))

    async def resources_list_changed(self, connection: Connection | None = None) -> None:
        """Tell every client (or only `connection`, e.g. after its roots changed)."""
        for client in list(self._clients.values()):
            if connection is None or client.connection is connection:
                await self._send(client, lambda c: c.send_resource_list_changed())
        if connection is None:
            await self.bus.publish(ResourcesListChanged())

    async def tools_list_changed(self) -> None:
        for client in list(self._clients.values()):
            await self._send(client, lambda c: c.send_tool_list_changed())
        await self.bus.publish(ToolsListChanged())

    async def _send(self, client: _LegacyClient, send: Callable[[Connection], Awaitable[None]]) -> None:
        try:
            await send(client.connection)
        except Exception as exc:  # the peer went away between our check and the write
            logger.debug("dropping a legacy client after a failed notification: %r", exc)
            await self._forget(id(client.connection))
