"""Every private attribute of the `mcp` SDK that MCP Batteries touches, in one place.

`mcp` 2.3 has no public API for legacy `resources/subscribe`, for advertising `listChanged` on
the handshake, or for reaching a request's connection. The workarounds below are the ones the
SDK's migration guide recommends; the HTTP session manager hooks give each session its own
resumable-SSE event store. `tests/shared/test_sdk.py` pins each behaviour, so an SDK
upgrade that breaks one fails there first, and the fix is a change to this file alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from mcp.server import MCPServer, NotificationOptions, Server, ServerRequestContext
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    AuthorizationContext,
    authorization_context,
)
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.server.streamable_http import EventStore, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import BaseModel
from starlette.types import Receive, Scope, Send

from mcp_batteries.events import Owner

__all__ = [
    "AuthenticatedUser",
    "Connection",
    "add_notification_handler",
    "add_request_handler",
    "advertise_legacy_list_changed",
    "auth_context_var",
    "connection_of",
    "lowlevel_server",
    "open_sessions",
    "request_owner",
    "set_tool_input_schema",
    "use_session_event_stores",
]


#: `AuthenticatedUser` in `scope["user"]` is what binds a stateful HTTP session to its credential
#: (the session manager compares `authorization_context(user)` on every request), and
#: `auth_context_var` is what the SDK snapshots with each message and restores around the
#: handler, so `get_access_token()` answers inside tools. Both are public names in modules the
#: SDK documents only by example; `tests/shared/test_auth_http.py` pins the behaviour.


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The low-level `Server` inside an `MCPServer` (private: `_lowlevel_server`)."""
    return server._lowlevel_server


def connection_of(session: ServerSession) -> Connection:
    """The connection a request arrived on; it outlives the request (private: `_connection`).

    There is one per stdio process, one per `Mcp-Session-Id` over stateful HTTP, and a
    throw-away one per request for modern (2026-07-28) and stateless HTTP calls.
    """
    return session._connection


def add_request_handler(
    server: MCPServer[Any],
    method: str,
    params_type: type[BaseModel],
    handler: Callable[[ServerRequestContext[Any], Any], Awaitable[Any]],
) -> None:
    """Serve `method` with `handler` (e.g. legacy `resources/subscribe`, which `MCPServer` lacks)."""
    lowlevel_server(server).add_request_handler(method, params_type, handler)


def add_notification_handler(
    server: MCPServer[Any],
    method: str,
    params_type: type[BaseModel],
    handler: Callable[[ServerRequestContext[Any], Any], Awaitable[None]],
) -> None:
    """Handle an inbound notification (e.g. `notifications/roots/list_changed`)."""
    lowlevel_server(server).add_notification_handler(method, params_type, handler)


def advertise_legacy_list_changed(
    server: MCPServer[Any], *, tools: bool, resources: bool, prompts: bool = False
) -> None:
    """Make the handshake (`initialize`) result advertise `listChanged` for the given lists.

    `MCPServer` always passes no `NotificationOptions`; stdio, HTTP and the in-memory client all
    call `create_initialization_options()` without arguments, so wrapping it is the one hook.
    Modern (2026-07-28) clients derive these flags from `subscriptions/listen` instead.
    """
    low = lowlevel_server(server)
    original = low.create_initialization_options
    options = NotificationOptions(prompts_changed=prompts, resources_changed=resources, tools_changed=tools)

    def create_initialization_options(
        notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        return original(notification_options or options, *args, **kwargs)

    low.create_initialization_options = create_initialization_options  # type: ignore[method-assign]


def set_tool_input_schema(server: MCPServer[Any], name: str, schema: dict[str, Any]) -> None:
    """Replace a registered tool's generated input schema with a hand-written JSON Schema.

    `MCPServer` derives schemas from signatures only; keywords such as `$anchor`, `if/then/else`
    or `additionalProperties: false` need this (private: `_tool_manager`).
    """
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise KeyError(f"no tool named {name!r}")
    tool.parameters = schema


class SessionEventStores(Protocol):
    """What `use_session_event_stores` needs: see `mcp_batteries.events.EventStores`."""

    def open(self, session_id: str, owner: Owner) -> EventStore: ...

    def close(self, session_id: str) -> None: ...

    def serving(self, requester: Owner) -> AbstractContextManager[None]: ...


def request_owner(scope: Scope) -> Owner:
    """Who sent an HTTP request, as the session manager compares credentials (None: nobody)."""
    user = scope.get("user")
    return authorization_context(user) if isinstance(user, AuthenticatedUser) else None


def use_session_event_stores(manager: StreamableHTTPSessionManager, stores: SessionEventStores) -> None:
    """Give every stateful HTTP session an event store of its own, dropped when the session ends.

    The manager hands every session's transport the one `event_store` it was built with, where
    stream ids (JSON-RPC request ids) collide between sessions. Instead: the session's transport
    gets `stores.open(session_id, owner)` when the manager admits it (private: `_admit_session`,
    `StreamableHTTPServerTransport._event_store`), each request the transport serves runs in
    `stores.serving(caller)` (so a replay can check who asks), and `stores.close(session_id)`
    runs when the manager discards the session: DELETE, idle expiry, a failed opening request,
    a crash (private: `_discard_session`). Shutdown drops every store with the manager.
    """
    admit = manager._admit_session
    discard = manager._discard_session

    def admit_with_store(requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        transport = admit(requestor)
        if transport is None or transport.mcp_session_id is None:
            return transport
        transport._event_store = stores.open(transport.mcp_session_id, requestor)
        handle = transport.handle_request

        async def handle_request(scope: Scope, receive: Receive, send: Send) -> None:
            with stores.serving(request_owner(scope)):
                await handle(scope, receive, send)

        transport.handle_request = handle_request  # type: ignore[method-assign]
        return transport

    async def discard_and_drop_store(session_id: str, transport: StreamableHTTPServerTransport) -> None:
        try:
            await discard(session_id, transport)
        finally:
            stores.close(session_id)

    manager._admit_session = admit_with_store  # type: ignore[method-assign]
    manager._discard_session = discard_and_drop_store  # type: ignore[method-assign]


def open_sessions(manager: StreamableHTTPSessionManager) -> int:
    """How many stateful sessions the manager tracks (private: `_server_instances`)."""
    return len(manager._server_instances)
