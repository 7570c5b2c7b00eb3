"""Client roots, used only to narrow what the operator configured — never to widen it.

Roots exist on handshake-era connections whose client declared the capability. They are
fetched on first use, refetched on `notifications/roots/list_changed`, and cached per
connection. Modern (2026-07-28) connections, stateless HTTP and clients without roots use the
configured value as it is: roots are deprecated in 2026-07-28, so configuration stays the source
of truth (the spec's own migration advice).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import unquote, urlparse

import anyio
from mcp.server import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.types import ClientCapabilities, ListRootsRequest, NotificationParams, Root, RootsCapability
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcp_batteries._protocol import sdk
from mcp_batteries._protocol.sdk import Connection

logger = logging.getLogger(__name__)

T = TypeVar("T")

_STATE_KEY = "mcp_batteries._live.roots"
ROOTS_TIMEOUT_S = 5.0


def root_paths(roots: list[Root]) -> list[Path]:
    """The local directories named by `file://` roots; other schemes cannot name a directory."""
    paths = []
    for root in roots:
        parsed = urlparse(str(root.uri))
        if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            paths.append(Path(unquote(parsed.path)))
    return paths


class RootsTracker(Generic[T]):
    """The configured value narrowed by each connection's roots (`narrow(configured, paths)`)."""

    def __init__(
        self,
        configured: T,
        narrow: Callable[[T, list[Path]], T],
        on_change: Callable[[Connection], Awaitable[None]] | None = None,
    ) -> None:
        self.configured = configured
        self._narrow = narrow
        self._on_change = on_change

    def install(self, server: Any) -> None:
        """Listen for `notifications/roots/list_changed` on a `BatteriesServer`'s SDK server."""
        sdk.add_notification_handler(
            server.mcp, "notifications/roots/list_changed", NotificationParams, self._on_roots_changed
        )

    async def effective(self, session: ServerSession | None) -> T:
        if session is None:
            return self.configured
        connection = sdk.connection_of(session)
        if not self._uses_roots(connection):
            return self.configured
        cached = connection.state.get(_STATE_KEY)
        if cached is None:
            cached = await self._fetch(connection)
            connection.state[_STATE_KEY] = cached
        return cached  # type: ignore[no-any-return]

    @staticmethod
    def _uses_roots(connection: Connection) -> bool:
        return (
            connection.protocol_version not in MODERN_PROTOCOL_VERSIONS
            and connection.has_standalone_channel
            and connection.check_capability(ClientCapabilities(roots=RootsCapability()))
        )

    async def _fetch(self, connection: Connection) -> T:
        try:
            with anyio.fail_after(ROOTS_TIMEOUT_S):
                result = await connection.send_request(ListRootsRequest())
        except Exception as exc:  # a client that declares roots but cannot answer still gets served
            logger.warning("roots/list failed (%r); using the configured directories", exc)
            return self.configured
        return self._narrow(self.configured, root_paths(result.roots))

    async def _on_roots_changed(self, ctx: ServerRequestContext[Any], params: NotificationParams) -> None:
        connection = sdk.connection_of(ctx.session)
        if not self._uses_roots(connection):
            return
        before = connection.state.get(_STATE_KEY, self.configured)
        after = await self._fetch(connection)
        connection.state[_STATE_KEY] = after
        if after != before and self._on_change is not None:
            await self._on_change(connection)
