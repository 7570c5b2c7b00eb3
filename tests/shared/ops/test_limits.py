"""Per-caller limits on their own: a token bucket per identity, requests only, 429 at once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_batteries._core.identity import Caller, authenticated_user_for
from mcp_batteries._ops.limits import CallerLimits

pytestmark = pytest.mark.anyio

REQUEST = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ANSWER = {"jsonrpc": "2.0", "id": "s-1", "result": {"roots": []}}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def post(
    limits: CallerLimits, caller: Caller, message: dict[str, Any]
) -> tuple[int, dict[str, str], bytes]:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"content-type", b"application/json")],
        "user": authenticated_user_for(caller, "token-" + caller.name),
    }
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await limits(scope, receive, send)
    if not sent:
        return 200, {}, b""
    headers = {key.decode(): value.decode() for key, value in sent[0]["headers"]}
    return sent[0]["status"], headers, sent[1]["body"]


def app_that_reads_its_body() -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        assert json.loads(message["body"])  # the peeked body is handed on whole

    return app


ALICE = Caller(subject="user:alice", name="alice", source="tokens-file")
BOB = Caller(subject="user:bob", name="bob", source="tokens-file")


async def test_each_identity_has_its_own_bucket_and_the_refusal_says_when_to_retry() -> None:
    clock = Clock()
    limits = CallerLimits(app_that_reads_its_body(), server="demo", rate=2.0, in_flight=0, clock=clock)
    statuses = [(await post(limits, ALICE, REQUEST))[0] for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert (await post(limits, BOB, REQUEST))[0] == 200  # bob is not alice
    status, headers, body = await post(limits, ALICE, REQUEST)
    error = json.loads(body)["error"]
    assert status == 429 and headers["retry-after"] == "1"
    assert error["data"] == {"limit": "rate", "retryAfterSeconds": 0.5, "server": "demo"}
    clock.now += 0.5
    assert (await post(limits, ALICE, REQUEST))[0] == 200


async def test_notifications_and_answers_to_the_servers_requests_are_never_refused() -> None:
    limits = CallerLimits(app_that_reads_its_body(), server="demo", rate=1.0, in_flight=0, clock=Clock())
    assert (await post(limits, ALICE, REQUEST))[0] == 200
    assert (await post(limits, ALICE, REQUEST))[0] == 429
    assert (await post(limits, ALICE, NOTIFICATION))[0] == 200
    assert (await post(limits, ALICE, ANSWER))[0] == 200
    # A key spelled with an escape is counted, not waved through.
    sneaky = json.dumps(REQUEST).replace('"id"', '"\\u0069d"').encode()
    assert b'"id"' not in sneaky and json.loads(sneaky)["id"] == 1
    assert (await post(limits, ALICE, sneaky))[0] == 429


async def test_a_callers_own_limit_and_the_operators_per_identity_limit_win_over_the_default() -> None:
    generous = Caller(subject="user:ci", name="ci", source="tokens-file", rate_limit=100.0)
    limits = CallerLimits(
        app_that_reads_its_body(),
        server="demo",
        rate=1.0,
        in_flight=0,
        clock=Clock(),
        overrides={"user:bob": (50.0, None)},
    )
    assert [(await post(limits, generous, REQUEST))[0] for _ in range(5)] == [200] * 5
    assert [(await post(limits, BOB, REQUEST))[0] for _ in range(5)] == [200] * 5
    assert [(await post(limits, ALICE, REQUEST))[0] for _ in range(2)] == [200, 429]
