"""A request answered by its result alone gets one `application/json` body; the others keep SSE.

`mcp_batteries._transport.http.single_reply` decides per request: outside a handshake-era
session, a request that asks for no progress is answered with JSON (cheaper: no stream, no
priming event, no task group); a handshake-era session's calls, and any call with a
`progressToken`, stream as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp_batteries.testing import MCP_POST_HEADERS, http_server

pytestmark = pytest.mark.anyio

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"


def call(request_id: int, *, modern: bool, progress: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if modern:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "json-replies", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    if progress:
        meta["progressToken"] = f"p{request_id}"
    params: dict[str, Any] = {"name": "list_allowed_directories", "arguments": {}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def headers(*, modern: bool, session: str | None = None) -> dict[str, str]:
    found = {**MCP_POST_HEADERS, "Mcp-Protocol-Version": MODERN if modern else HANDSHAKE}
    if modern:
        found.update({"Mcp-Method": "tools/call", "Mcp-Name": "list_allowed_directories"})
    if session is not None:
        found["Mcp-Session-Id"] = session
    return found


def answer(response: httpx.Response, request_id: int) -> dict[str, Any]:
    """The JSON-RPC answer to `request_id`, from a JSON body or an SSE stream."""
    if response.headers["content-type"].startswith("application/json"):
        found: dict[str, Any] = response.json()
        return found
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            if message.get("id") == request_id:
                return dict(message)
    raise AssertionError(f"no answer to {request_id} in {response.text!r}")


def media_type(response: httpx.Response) -> str:
    return response.headers["content-type"].split(";")[0].strip()


async def test_stateless_http_answers_a_call_without_progress_with_json(tree: Path) -> None:
    async with (
        http_server("mcp-batteries-filesystem", str(tree), "--stateless") as running,
        httpx.AsyncClient(timeout=30) as http,
    ):
        plain = await http.post(
            running.url, json=call(1, modern=False, progress=False), headers=headers(modern=False)
        )
        with_progress = await http.post(
            running.url, json=call(2, modern=False, progress=True), headers=headers(modern=False)
        )
    assert plain.status_code == 200 and media_type(plain) == "application/json"
    assert str(tree) in answer(plain, 1)["result"]["content"][0]["text"]
    assert media_type(with_progress) == "text/event-stream"
    assert str(tree) in answer(with_progress, 2)["result"]["content"][0]["text"]


async def test_a_handshake_session_streams_and_a_2026_request_beside_it_gets_json(tree: Path) -> None:
    async with (
        http_server("mcp-batteries-filesystem", str(tree)) as running,
        httpx.AsyncClient(timeout=30) as http,
    ):
        initialize = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE,
                "capabilities": {},
                "clientInfo": {"name": "json-replies", "version": "1"},
            },
        }
        opened = await http.post(running.url, json=initialize, headers=headers(modern=False))
        session = opened.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(running.url, json=note, headers=headers(modern=False, session=session))
        in_session = await http.post(
            running.url,
            json=call(1, modern=False, progress=False),
            headers=headers(modern=False, session=session),
        )
        modern = await http.post(
            running.url, json=call(2, modern=True, progress=False), headers=headers(modern=True)
        )
        modern_progress = await http.post(
            running.url, json=call(3, modern=True, progress=True), headers=headers(modern=True)
        )
        # The session admitted after a 2026-07-28 request still streams.
        second = await http.post(running.url, json=initialize, headers=headers(modern=False))
    assert media_type(in_session) == "text/event-stream"
    assert str(tree) in answer(in_session, 1)["result"]["content"][0]["text"]
    assert media_type(modern) == "application/json"
    assert str(tree) in answer(modern, 2)["result"]["content"][0]["text"]
    # With a progress token the SDK's 2026-07-28 path may stream; it answers with JSON anyway when
    # nothing came before the result (this tool reports no progress).
    assert str(tree) in answer(modern_progress, 3)["result"]["content"][0]["text"]
    assert media_type(second) == "text/event-stream" and "mcp-session-id" in second.headers


async def test_concurrent_calls_each_get_the_form_they_asked_for(tree: Path) -> None:
    async with http_server("mcp-batteries-filesystem", str(tree), "--stateless") as running:
        found: dict[int, tuple[str, dict[str, Any]]] = {}
        async with httpx.AsyncClient(timeout=30) as http:

            async def one(request_id: int) -> None:
                progress = request_id % 2 == 1
                response = await http.post(
                    running.url,
                    json=call(request_id, modern=False, progress=progress),
                    headers=headers(modern=False),
                )
                found[request_id] = (media_type(response), answer(response, request_id))

            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    for request_id in range(40):
                        tg.start_soon(one, request_id)
    for request_id, (media, reply) in found.items():
        assert media == ("text/event-stream" if request_id % 2 else "application/json"), request_id
        assert str(tree) in reply["result"]["content"][0]["text"]
    assert len(found) == 40
