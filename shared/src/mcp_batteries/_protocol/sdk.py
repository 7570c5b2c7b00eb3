"""Every private attribute of the `mcp` SDK that MCP Batteries touches, in one place.

`mcp` 2.3 has no public API for legacy `resources/subscribe`, for advertising `listChanged` on
the handshake, or for reaching a request's connection. The workarounds below are the ones the
SDK's migration guide recommends; the HTTP session manager hooks give each session its own
resumable-SSE event store. `tests/shared/protocol/test_sdk.py` pins each behaviour, so an SDK
upgrade that breaks one fails there first, and the fix is a change to this file alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server import MCPServer, NotificationOptions, Server, ServerRequestContext
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    AuthorizationContext,
    authorization_context,
)
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.server.streamable_http import EventMessage, EventStore, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCResponse, jsonrpc_message_adapter
from pydantic import BaseModel
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = [
    "AuthenticatedUser",
    "Connection",
    "Owner",
    "add_notification_handler",
    "add_request_handler",
    "advertise_legacy_list_changed",
    "auth_context_var",
    "connection_of",
    "harden_http_writes",
    "has_tool",
    "lowlevel_server",
    "open_sessions",
    "request_owner",
    "serve_connection",
    "set_tool_argument_model",
    "set_tool_input_schema",
    "tool_argument_model",
    "use_session_event_stores",
]


#: Who opened a session, as the SDK identifies a credential (client id, issuer, subject), or
#: None when nothing authenticated the request (loopback, or an authenticating proxy in front).
Owner = Mapping[str, object] | None

#: `AuthenticatedUser` in `scope["user"]` is what binds a stateful HTTP session to its credential
#: (the session manager compares `authorization_context(user)` on every request), and
#: `auth_context_var` is what the SDK snapshots with each message and restores around the
#: handler, so `get_access_token()` answers inside tools. Both are public names in modules the
#: SDK documents only by example; `tests/shared/signin/test_auth_http.py` pins the behaviour.


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


async def serve_connection(
    server: MCPServer[Any],
    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception],
    write_stream: MemoryObjectSendStream[SessionMessage],
) -> None:
    """Serve one connection (both protocol eras) over a stream pair, as `run_stdio_async` does.

    Our stdio transport frames the bytes itself and hands the SDK only valid messages; the
    low-level `Server.run` is public, reaching it is not (private: `_lowlevel_server`).
    """
    low = lowlevel_server(server)
    await low.run(read_stream, write_stream, low.create_initialization_options())


def harden_http_writes() -> None:
    """Make every Streamable HTTP write path survive a message that cannot be encoded as JSON.

    The SDK encodes outgoing messages in four places: the handshake era's SSE events
    (`StreamableHTTPServerTransport._create_event_data`: request streams, the GET stream and
    replays) and JSON bodies (`_create_json_response`), and the 2026-07-28 entry's `_write`
    and `_sse_event`. An encoding failure in the first killed the request's stream (the client
    waited forever) and, repeated, the session; the 2026 entry wrote lone surrogates as `\\ud800`
    escapes that clients cannot parse. Each is wrapped to encode through
    `frames.encode_message`: the normal path encodes once, as before; a message that cannot be
    encoded becomes an error response for its request id, or (a notification) is left out.
    Process-wide and idempotent.
    """
    from mcp.server import _streamable_http_modern as modern

    from mcp_batteries._protocol.frames import encode_message

    if getattr(StreamableHTTPServerTransport, "_mcp_batteries_hardened", False):
        return
    create_event_data = StreamableHTTPServerTransport._create_event_data
    create_json_response = StreamableHTTPServerTransport._create_json_response

    def safe_event_data(self: StreamableHTTPServerTransport, event_message: EventMessage) -> dict[str, Any]:
        try:
            return create_event_data(self, event_message)  # type: ignore[return-value]
        except (ValueError, RecursionError):
            encoded = encode_message(event_message.message)
            if not isinstance(encoded, bytes):
                return {"comment": "a message that could not be encoded as JSON was left out"}
            event: dict[str, Any] = {"event": "message", "data": encoded.decode()}
            if event_message.event_id:
                event["id"] = event_message.event_id
            return event

    def safe_json_response(
        self: StreamableHTTPServerTransport, response_message: Any, *args: Any, **kwargs: Any
    ) -> Response:
        try:
            return create_json_response(self, response_message, *args, **kwargs)
        except (ValueError, RecursionError):
            encoded = encode_message(response_message)
            replacement = (
                jsonrpc_message_adapter.validate_json(encoded) if isinstance(encoded, bytes) else None
            )
            return create_json_response(self, replacement, *args, **kwargs)

    async def safe_write(
        msg: JSONRPCResponse | JSONRPCError, scope: Scope, receive: Receive, send: Send
    ) -> None:
        status = 200
        if isinstance(msg, JSONRPCError):
            status = ERROR_CODE_HTTP_STATUS.get(msg.error.code, 200)
        encoded = encode_message(msg)
        body = encoded if isinstance(encoded, bytes) else b""
        await Response(body, status_code=status, media_type="application/json")(scope, receive, send)

    def safe_sse_event(msg: JSONRPCResponse | JSONRPCError | JSONRPCNotification) -> bytes:
        encoded = encode_message(msg)
        if not isinstance(encoded, bytes):
            return b": a message that could not be encoded as JSON was left out\r\n\r\n"
        return b"event: message\r\ndata: " + encoded + b"\r\n\r\n"

    StreamableHTTPServerTransport._create_event_data = safe_event_data  # type: ignore[assignment,method-assign]
    StreamableHTTPServerTransport._create_json_response = safe_json_response  # type: ignore[method-assign]
    modern._write = safe_write
    modern._sse_event = safe_sse_event
    StreamableHTTPServerTransport._mcp_batteries_hardened = True  # type: ignore[attr-defined]


def has_tool(server: MCPServer[Any], name: str) -> bool:
    """Whether a tool of that name is registered (private: `_tool_manager`)."""
    return server._tool_manager.get_tool(name) is not None


def tool_argument_model(server: MCPServer[Any], name: str) -> type[BaseModel]:
    """The pydantic model a registered tool's arguments are validated with (private: `_tool_manager`)."""
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise KeyError(f"no tool named {name!r}")
    return tool.fn_metadata.arg_model


def set_tool_argument_model(server: MCPServer[Any], name: str, model: type[BaseModel]) -> None:
    """Validate a registered tool's arguments with `model` (a subclass of its own argument model).

    `FuncMetadata` reads `arg_model` on every call, and builds the keyword arguments from the
    validated model's fields, so a subclass with stricter field types takes effect at once.
    """
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise KeyError(f"no tool named {name!r}")
    original = tool.fn_metadata.arg_model
    if not issubclass(model, original):
        raise TypeError(f"{model.__name__} must subclass the tool's argument model {original.__name__}")
    tool.fn_metadata.arg_model = model


class SessionEventStores(Protocol):
    """What `use_session_event_stores` needs: see `mcp_batteries._transport.events.EventStores`."""

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


def answer_single_replies_with_json(
    manager: StreamableHTTPSessionManager, single_reply: Callable[[Scope], bool]
) -> None:
    """Answer the requests `single_reply` picks with one `application/json` body, the rest with SSE.

    The manager has one `json_response` flag for every request (public). It is read when a
    stateless request's transport is built and when a 2026-07-28 request is dispatched, in both
    cases before the request's first suspension once `_handle_request` is entered; so setting it
    just before, per request, holds for that request alone. That entry is `asgi_app.app` (private:
    `_handle_request` behind `RequestBodyLimitMiddleware`, which reads the body first and so may
    suspend). A stateful session's transport outlives its opening request and carries server
    requests and notifications for every call: it always answers with SSE (private:
    `_admit_session`, the transport's `is_json_response_enabled`).
    """
    limit = manager.asgi_app
    handle = limit.app

    async def choose_then_handle(scope: Scope, receive: Receive, send: Send) -> None:
        manager.json_response = single_reply(scope)
        await handle(scope, receive, send)

    limit.app = choose_then_handle
    admit = manager._admit_session

    def admit_streaming(requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        transport = admit(requestor)
        if transport is not None:
            transport.is_json_response_enabled = False
        return transport

    manager._admit_session = admit_streaming  # type: ignore[method-assign]


def open_sessions(manager: StreamableHTTPSessionManager) -> int:
    """How many stateful sessions the manager tracks (private: `_server_instances`)."""
    return len(manager._server_instances)


def holds_session(manager: StreamableHTTPSessionManager, session_id: str) -> bool:
    """Whether the manager holds the stateful session `session_id` (private: `_server_instances`)."""
    return session_id in manager._server_instances
