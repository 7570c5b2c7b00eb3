"""Client roots, used only to narrow what the operator configured — never to widen it.

Roots exist on handshake-era connections whose client declared the capability. They are
fetched on first use, refetched on `notifications/roots/list_changed`, and cached per
connection. Modern (2026-07-28) connections, stateless HTTP and clients without roots use the
configured value as it is: roots are deprecated in 2026-07-28, so configuration stays the source
of truth (the spec's own migration advice).

One rule for both eras: roots can only narrow. A roots list that names no local directory (empty,
as the MCP Inspector sends, or only URIs that are not local `file://` ones) narrows nothing, as
no roots at all; the server says so once per connection in its log. Roots that name local
directories outside everything configured do narrow, to nothing, and the refusals name them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
from mcp.server import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.types import ClientCapabilities, NotificationParams, RootsCapability
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from mcp_batteries._protocol import sdk
from mcp_batteries._protocol.sdk import Connection
from mcp_batteries._safety.paths import file_uri_to_path
from mcp_batteries.errors import InvalidInput

logger = logging.getLogger(__name__)

T = TypeVar("T")

_STATE_KEY = "mcp_batteries._live.roots"
_LOGGED_KEY = "mcp_batteries._live.roots.logged"
ROOTS_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class ClientRoots:
    """What a `roots/list` answer says about local directories."""

    #: The local paths named by `file://` roots (they may not exist).
    paths: list[Path]
    #: Roots that cannot name a local directory: other schemes, other hosts, malformed entries.
    ignored: list[str]


def read_roots(answer: Any) -> ClientRoots:
    """The local paths in a raw `roots/list` result; entries that name none are set aside.

    Read from the raw answer: the SDK's model refuses a whole answer for one root that is not a
    `file://` URI, which would throw away the `file://` roots next to it.
    """
    roots = answer.get("roots") if isinstance(answer, dict) else None
    if not isinstance(roots, list):
        raise ValueError(f"roots/list answer has no roots list: {str(answer)[:200]!r}")
    paths: list[Path] = []
    ignored: list[str] = []
    for root in roots:
        uri = root.get("uri") if isinstance(root, dict) else None
        if not isinstance(uri, str):
            ignored.append(str(root)[:200])
            continue
        try:
            paths.append(Path(file_uri_to_path(uri)))
        except InvalidInput:
            ignored.append(uri[:200])
    return ClientRoots(paths, ignored)


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
                roots = read_roots(await connection.send_raw_request("roots/list", None))
        except Exception as exc:  # a client that declares roots but cannot answer still gets served
            logger.warning("roots/list failed (%r); using the configured directories", exc)
            return self.configured
        if not roots.paths:
            # Roots can only narrow: a list that names no local directory (the MCP Inspector
            # answers `[]`) narrows nothing, exactly as a client without roots.
            self._say_once(
                connection,
                "the client's roots list "
                + (
                    f"names no local directory (ignored: {', '.join(roots.ignored[:5])})"
                    if roots.ignored
                    else "is empty"
                )
                + ": it narrows nothing, so this client may use everything configured",
            )
            return self.configured
        if roots.ignored:
            self._say_once(
                connection,
                f"ignored client roots that name no local directory: {', '.join(roots.ignored[:5])}",
            )
        return self._narrow(self.configured, roots.paths)

    @staticmethod
    def _say_once(connection: Connection, message: str) -> None:
        if not connection.state.get(_LOGGED_KEY):
            connection.state[_LOGGED_KEY] = True
            logger.info("%s", message)

    async def _on_roots_changed(self, ctx: ServerRequestContext[Any], params: NotificationParams) -> None:
        connection = sdk.connection_of(ctx.session)
        if not self._uses_roots(connection):
            return
        before = connection.state.get(_STATE_KEY, self.configured)
        after = await self._fetch(connection)
        connection.state[_STATE_KEY] = after
        if after != before and self._on_change is not None:
            await self._on_change(connection)
