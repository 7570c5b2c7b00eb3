"""Limits per caller: calls per second (a token bucket) and calls in flight, per identity.

Wraps one server's MCP endpoint inside the sign-in (so it knows who calls). A call is a POST
that carries a JSON-RPC request (or a batch with one): a client's notifications and its answers
to the server's own requests (roots, sampling) pass freely, since refusing them would break what
the server asked for, and a listen stream is not counted (it stays open by design). The body is
looked at only when a limit applies to the caller, and only its bytes (no JSON parsing). Over a
limit, the request is answered at once with HTTP 429, `Retry-After` (whole seconds, rounded up)
and a JSON-RPC error whose message says which limit and when to retry, and whose data carries
`limit`, `retryAfterSeconds` and the limit's value: nothing is queued, so one noisy caller costs
the others only the few microseconds its refusals take.

Each identity (`Caller.subject`) has its own bucket and counter per server. Which limits apply,
first found: the caller's own (its tokens-file entry), the operator's for that identity (the
bundle's `[identities."<subject>"]`), the server's (`--rate-limit`, `--max-calls-in-flight`, or
the server's table in the bundle), 0 meaning none. The table of buckets is bounded: when it is full,
buckets that are full again (their caller idle) are dropped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_batteries._core.identity import Caller, CallerUser, current_caller
from mcp_batteries._protocol.frames import error_reply, send_reply

__all__ = ["LIMITED_CODE", "CallerLimits"]

#: JSON-RPC code of a request refused by a limit (implementation-defined server error range).
LIMITED_CODE = -32029
MAX_TRACKED_CALLERS = 10_000
_LISTEN_METHOD = b"subscriptions/listen"


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class CallerLimits:
    """ASGI middleware enforcing `rate` calls/s and `in_flight` concurrent calls per identity."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        server: str,
        rate: float,
        in_flight: int,
        on_refusal: Callable[[str], None] | None = None,
        overrides: Mapping[str, tuple[float | None, int | None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        #: subject -> (rate, in flight) the operator set for that identity (None: the default).
        self.overrides = overrides or {}
        self.server = server
        self.rate = rate
        self.in_flight = in_flight
        self.on_refusal = on_refusal
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._busy: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _is_call(scope):
            await self.app(scope, receive, send)
            return
        user = scope.get("user")
        caller = user.caller if isinstance(user, CallerUser) else current_caller()
        key = caller.subject
        rate_override, in_flight_override = self.overrides.get(key, (None, None))
        in_flight = caller.max_calls_in_flight or in_flight_override or self.in_flight
        rate = caller.rate_limit or rate_override or self.rate
        if not (in_flight or rate):
            await self.app(scope, receive, send)
            return
        body, receive = await _peek(receive)
        if not _carries_a_request(body):
            await self.app(scope, receive, send)
            return
        if in_flight and self._busy.get(key, 0) >= in_flight:
            await self._refuse(send, caller, "in_flight", 1.0, f"{in_flight} call(s) in flight at once")
            return
        if rate:
            wait = self._take(key, rate)
            if wait > 0:
                await self._refuse(send, caller, "rate", wait, f"{rate:g} call(s) per second")
                return
        self._busy[key] = self._busy.get(key, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self._busy[key] - 1
            if left:
                self._busy[key] = left
            else:
                del self._busy[key]

    def _take(self, key: str, rate: float) -> float:
        """Take a token from `key`'s bucket: 0, or the seconds until one is there."""
        now = self._clock()
        burst = max(1.0, rate)
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_TRACKED_CALLERS:
                self._forget_idle(now)
            bucket = self._buckets[key] = _Bucket(burst, now)
        else:
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.stamp) * rate)
            bucket.stamp = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / rate

    def _forget_idle(self, now: float) -> None:
        rate = self.rate or 1.0
        for key, bucket in list(self._buckets.items()):
            if bucket.tokens + (now - bucket.stamp) * rate >= max(1.0, rate):
                del self._buckets[key]
        if len(self._buckets) >= MAX_TRACKED_CALLERS:  # every caller busy: forget the oldest
            del self._buckets[next(iter(self._buckets))]

    async def _refuse(self, send: Send, caller: Caller, limit: str, wait: float, allowed: str) -> None:
        if self.on_refusal is not None:
            self.on_refusal(limit)
        retry_after = max(1, math.ceil(wait))
        message = (
            f"Too many requests: {caller.name} may make {allowed} to {self.server}; retry in {wait:.2f} s"
        )
        data = {"limit": limit, "retryAfterSeconds": round(wait, 3), "server": self.server}
        reply = error_reply(None, LIMITED_CODE, message, data, status=429)
        await send_reply(send, reply, [(b"retry-after", str(retry_after).encode())])


def _is_call(scope: Scope) -> bool:
    if scope.get("type") != "http" or scope.get("method") != "POST":
        return False
    return all(not (key == b"mcp-method" and value == _LISTEN_METHOD) for key, value in scope["headers"])


#: How much of a body is looked at to tell a request from a notification or an answer.
PEEK_BYTES = 64 * 1024


async def _peek(receive: Receive) -> tuple[bytes, Receive]:
    """The body's first bytes (up to `PEEK_BYTES`, whole messages), and a receive channel that
    hands everything on unchanged."""
    messages: list[Message] = []
    seen = 0
    while seen < PEEK_BYTES:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        seen += len(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")

    async def replay() -> Message:
        if messages:
            return messages.pop(0)
        return await receive()

    return body, replay


def _carries_a_request(body: bytes) -> bool:
    """Whether a JSON-RPC body may hold a request: a method and an id. A notification has no id
    and an answer no method. On the safe side, a body counts when it merely mentions both in its
    values, spells anything with a `\\u` escape (a key could hide that way), or is longer than
    what was looked at."""
    return len(body) >= PEEK_BYTES or b"\\u" in body or (b'"method"' in body and b'"id"' in body)
