"""Pins every private SDK behaviour that mcp_batteries._protocol.sdk relies on, so an upgrade fails here."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.server import MCPServer, ServerRequestContext
from mcp.server import _streamable_http_modern as modern
from mcp.server.connection import Connection
from mcp.server.streamable_http import EventMessage, StreamableHTTPServerTransport
from mcp.shared.message import SessionMessage
from mcp.types import (
    EmptyResult,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    SubscribeRequestParams,
)
from mcp_batteries._protocol import sdk
from mcp_batteries.testing import connect
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


def test_lowlevel_server_is_reachable_and_takes_request_handlers() -> None:
    server: MCPServer[Any] = MCPServer("pin")
    low = sdk.lowlevel_server(server)
    assert low.get_request_handler("tools/list") is not None
    assert low.get_request_handler("resources/subscribe") is None


async def test_registering_resources_subscribe_advertises_subscribe_to_legacy_clients() -> None:
    server: MCPServer[Any] = MCPServer("pin")

    @server.resource("pin://x")
    def x() -> str:
        return "x"

    async with connect(server, "legacy") as client:
        assert not client.server_capabilities.resources.subscribe

    async def on_subscribe(ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
        return EmptyResult()

    sdk.add_request_handler(server, "resources/subscribe", SubscribeRequestParams, on_subscribe)
    async with connect(server, "legacy") as client:
        assert client.server_capabilities.resources.subscribe


async def test_advertise_legacy_list_changed_reaches_the_initialize_result() -> None:
    server: MCPServer[Any] = MCPServer("pin")

    @server.tool()
    def t() -> str:
        return "t"

    async with connect(server, "legacy") as client:
        assert not client.server_capabilities.tools.list_changed
    sdk.advertise_legacy_list_changed(server, tools=True, resources=True)
    async with connect(server, "legacy") as client:
        assert client.server_capabilities.tools.list_changed


async def test_connection_of_a_session_has_what_the_notifier_uses() -> None:
    server: MCPServer[Any] = MCPServer("pin")
    seen: list[Connection] = []

    async def capture(ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        seen.append(sdk.connection_of(ctx.session))
        return await call_next(ctx)

    server.middleware.append(capture)
    async with connect(server, "legacy") as client:
        await client.list_tools()
    connection = seen[-1]
    assert isinstance(connection, Connection)
    assert connection.has_standalone_channel
    assert hasattr(connection, "exit_stack") and isinstance(connection.state, dict)
    for method in ("send_resource_updated", "send_resource_list_changed", "send_tool_list_changed"):
        assert callable(getattr(connection, method))


def test_tool_input_schema_can_be_replaced() -> None:
    server: MCPServer[Any] = MCPServer("pin")

    @server.tool()
    def t(x: int) -> str:
        return str(x)

    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": False}
    sdk.set_tool_input_schema(server, "t", schema)
    assert sdk.lowlevel_server(server) is not None
    with pytest.raises(KeyError):
        sdk.set_tool_input_schema(server, "missing", schema)


async def test_serve_connection_serves_a_stream_pair_in_either_era() -> None:
    server: MCPServer[Any] = MCPServer("pin")
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](1)
    init = JSONRPCRequest(
        jsonrpc="2.0",
        id=1,
        method="initialize",
        params={
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(sdk.serve_connection, server, read_receive, write_send)
        await read_send.send(SessionMessage(init))
        with anyio.fail_after(10):
            answer = (await write_receive.receive()).message
        await read_send.aclose()
    assert isinstance(answer, JSONRPCResponse) and answer.result["serverInfo"]["name"] == "pin"


def test_http_write_paths_are_wrapped_once_and_encode_as_before() -> None:
    sdk.harden_http_writes()
    wrapped = StreamableHTTPServerTransport._create_event_data
    sdk.harden_http_writes()
    assert StreamableHTTPServerTransport._create_event_data is wrapped  # idempotent
    assert (
        modern._sse_event.__module__ == "mcp_batteries._protocol.sdk"
        and modern._write.__module__ == "mcp_batteries._protocol.sdk"
    )
    transport = StreamableHTTPServerTransport(mcp_session_id=None)
    fine = JSONRPCResponse(jsonrpc="2.0", id=1, result={"text": "caf\u00e9"})
    event = transport._create_event_data(EventMessage(fine, "7"))
    assert event == {
        "event": "message",
        "data": fine.model_dump_json(by_alias=True, exclude_unset=True),
        "id": "7",
    }
    bad = JSONRPCResponse(jsonrpc="2.0", id=1, result={"text": "bad\udcff"})
    replaced = transport._create_event_data(EventMessage(bad, "8"))
    assert '"error"' in replaced["data"] and replaced["id"] == "8"
    note = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"data": "\udcff"})
    assert "comment" in transport._create_event_data(EventMessage(note, "9"))
    assert modern._sse_event(fine).startswith(b"event: message\r\ndata: {")
    assert modern._sse_event(note).startswith(b":")


def test_a_tools_argument_model_can_be_replaced_by_a_stricter_subclass() -> None:
    server: MCPServer[Any] = MCPServer("pin")

    @server.tool()
    def t(x: int) -> str:
        return str(x)

    assert sdk.has_tool(server, "t") and not sdk.has_tool(server, "missing")
    model = sdk.tool_argument_model(server, "t")
    assert set(model.model_fields) == {"x"}
    with pytest.raises(TypeError):
        sdk.set_tool_argument_model(server, "t", BaseModel)
    stricter = type("Stricter", (model,), {})
    sdk.set_tool_argument_model(server, "t", stricter)
    assert sdk.tool_argument_model(server, "t") is stricter
    with pytest.raises(KeyError):
        sdk.tool_argument_model(server, "missing")


class _RecordingStores:
    def __init__(self) -> None:
        self.opened: dict[str, Any] = {}
        self.closed: list[str] = []
        self.served: list[Any] = []

    def open(self, session_id: str, owner: Any) -> Any:
        from mcp_batteries._transport.events import EventStores

        store = EventStores().open(session_id, owner)
        self.opened[session_id] = store
        return store

    def close(self, session_id: str) -> None:
        self.closed.append(session_id)

    def serving(self, requester: Any) -> Any:
        from contextlib import nullcontext

        self.served.append(requester)
        return nullcontext()


async def test_session_admission_and_discard_can_carry_a_store_per_session() -> None:
    server: MCPServer[Any] = MCPServer("pin")
    server.streamable_http_app(event_store=None)
    manager = server.session_manager
    stores = _RecordingStores()
    sdk.use_session_event_stores(manager, stores)
    owner = {"client_id": "c", "issuer": None, "subject": "s"}
    async with manager.run():
        first = manager._admit_session(owner)  # type: ignore[arg-type]
        second = manager._admit_session(None)
        assert first is not None and second is not None
        assert sdk.holds_session(manager, first.mcp_session_id) and sdk.open_sessions(manager) == 2
        assert not sdk.holds_session(manager, "no-such-session")
        assert first._event_store is stores.opened[first.mcp_session_id]
        assert second._event_store is stores.opened[second.mcp_session_id]
        assert first._event_store is not second._event_store
        assert stores.opened[first.mcp_session_id].owner == owner
        await manager._discard_session(first.mcp_session_id, first)
        assert stores.closed == [first.mcp_session_id] and sdk.open_sessions(manager) == 1


def test_request_owner_is_the_credential_the_session_manager_compares() -> None:
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
    from mcp_batteries._core.identity import Caller, access_token_for

    user = AuthenticatedUser(access_token_for(Caller(subject="u:1", name="one", source="tokens-file"), "t"))
    assert sdk.request_owner({"type": "http", "user": user}) == authorization_context(user)
    assert sdk.request_owner({"type": "http"}) is None


async def test_the_reply_form_is_chosen_per_request_before_the_manager_reads_it() -> None:
    import inspect

    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    # `json_response` is read before the request's first suspension: when a stateless request's
    # transport is built, and when a 2026-07-28 request is handed to `handle_modern_request`.
    for name, reader in (
        ("_handle_stateless_request", "StreamableHTTPServerTransport("),
        ("_handle_request", "await handle_modern_request("),
    ):
        source = inspect.getsource(getattr(StreamableHTTPSessionManager, name))
        before = source.split(reader)[0]
        assert "await " not in before.split('"""')[-1], f"{name} may suspend before it reads json_response"
        assert "self.json_response" in source.split(reader)[1][:400]
    server: MCPServer[Any] = MCPServer("pin")
    server.streamable_http_app(event_store=None)
    manager = server.session_manager
    assert manager.asgi_app.app == manager._handle_request  # the entry behind the body limit
    sdk.answer_single_replies_with_json(manager, lambda scope: bool(scope.get("want_json")))
    assert manager.asgi_app.app != manager._handle_request
    manager.json_response = True  # left by a 2026-07-28 request: a new session still streams
    async with manager.run():
        admitted = manager._admit_session(None)
        assert admitted is not None and admitted.is_json_response_enabled is False
