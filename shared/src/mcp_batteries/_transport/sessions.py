"""Handshake-era sessions served by any replica: a registry of owners, and forwarding to them.

A handshake-era session (`Mcp-Session-Id`) lives in the memory of the replica that opened it.
With a change bus configured (`bus = "postgresql://..."` or `"redis://..."`), each replica
records the sessions it opens in the bus's engine (`SessionRegistry`): session id -> the
replica's internal address (`advertise_url`, by default its own bound host:port) and the caller
it is bound to, with a lifetime renewed while the session is used. A replica that receives a
request for a session it does not hold (`SessionForwarder`) looks the session up and, when
another replica owns it and the caller is the one it is bound to, forwards the request there
(POST, the GET event stream with its `Last-Event-ID`, DELETE): headers kept, hop-by-hop headers
dropped, the reply streamed back (SSE included), bounded timeouts. A forwarded request carries
`FORWARDED_HEADER` and is never forwarded again. Sign-in happens on the receiving replica; the
bearer token travels with the request, so the owner checks the session's binding as usual.

When the owner cannot be reached (it is gone), or the engine cannot be asked (the bus is down),
the request is answered here as before: 404 `Session not found`, and the client initializes a new
session. Sticky routing at the balancer saves the extra hop; it is no longer required.

Engines: Redis keys `<bus_channel>:session:<id>` with a TTL; PostgreSQL one table,
`mcp_batteries_sessions` (created idempotently), with a row per (channel, session) and an expiry.

A record says where a caller's requests, bearer token included, are sent: whoever can write to
the engine could otherwise point a session at an address of their own and collect the tokens of
everyone whose requests land elsewhere. Records are therefore sealed with an HMAC under the
deployment's request-state keys (`_core/request_state`, the same on every replica), and a record
that does not verify is no record. Without configured keys there is nothing every replica shares,
so sessions are not forwarded at all (`mcp_endpoint` says so once in the log).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_batteries._protocol import sdk
from mcp_batteries._safety.redact import redact_text, redact_url
from mcp_batteries.errors import ConfigError

if TYPE_CHECKING:
    import httpx2
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = [
    "FORWARDED_HEADER",
    "Owner",
    "SessionForwarder",
    "SessionRegistry",
    "default_advertise_url",
    "registry_for",
]

logger = logging.getLogger(__name__)

#: Marks a request one replica forwarded to another: the owner answers it or says 404, never
#: forwards it again.
FORWARDED_HEADER = b"x-mcp-batteries-forwarded"
SESSION_HEADER = b"mcp-session-id"
#: A session's record outlives its last use by this long when sessions never expire by idleness.
DEFAULT_TTL_S = 1800.0
#: A session's record is renewed at most this often (and at least four times per lifetime).
RENEW_EVERY_S = 60.0
#: Asking the engine never holds a request longer than this; past it, the request is served as if
#: there were no registry.
ENGINE_TIMEOUT_S = 2.0
#: After the engine failed, it is left alone this long: while it is down, requests are not held
#: up by attempts bound to fail (and the log gets one line per pause, not one per request).
ENGINE_PAUSE_S = 5.0
CONNECT_TIMEOUT_S = 5.0
#: A forwarded call's answer (or a silence within its event stream) may take this long.
READ_TIMEOUT_S = 300.0
#: A forwarded request body above this is refused (413), as any request body is (`http_limits`).
MAX_BODY = 4 * 1024 * 1024
#: RFC 9110 7.6.1, plus what a proxy must not pass on.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"content-length",
    }
)
TABLE = "mcp_batteries_sessions"


@dataclass(frozen=True)
class Owner:
    """Who holds a session: the replica's internal base URL and the caller it is bound to."""

    url: str
    identity: str


class SessionRegistry:
    """Session id -> owner, in the bus's engine, with expiry. Every method is bounded in time
    and never raises for the engine's failures (they are logged): a request is then served as
    if there were no registry."""

    engine = "none"

    def __init__(self, url: str, channel: str, ttl: float, keys: Sequence[str]) -> None:
        if not keys:
            raise ValueError("a session registry needs the deployment's shared keys to seal records")
        self.url = url
        self.channel = channel
        self.ttl = ttl
        self._keys = [key.encode("utf-8") for key in keys]
        self._paused_until = 0.0

    def _seal(self, session_id: str, owner: Owner) -> str:
        """The record for the engine: the owner and its HMAC under the sealing (first) key."""
        return json.dumps(
            {"url": owner.url, "identity": owner.identity, "mac": self._mac(self._keys[0], session_id, owner)}
        )

    def _open(self, session_id: str, raw: str | bytes | None) -> Owner | None:
        """The owner a record names, if it was sealed under one of the keys for this very session."""
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            owner = Owner(url=str(data["url"]), identity=str(data["identity"]))
            mac = str(data["mac"])
        except (ValueError, KeyError, TypeError):
            return None
        if any(hmac.compare_digest(mac, self._mac(key, session_id, owner)) for key in self._keys):
            return owner
        logger.warning(
            "session registry: the record of a session does not verify under this deployment's keys "
            "(another deployment on the same channel, a key not shared, or a forged record); not forwarding"
        )
        return None

    def _mac(self, key: bytes, session_id: str, owner: Owner) -> str:
        signed = json.dumps(
            ["mcp-batteries session owner", self.channel, session_id, owner.url, owner.identity]
        )
        return hmac.new(key, signed.encode("utf-8"), hashlib.sha256).hexdigest()

    async def record(self, session_id: str, owner: Owner) -> None:
        await self._bounded("record", self._record(session_id, owner))

    async def lookup(self, session_id: str) -> Owner | None:
        found = await self._bounded("look up", self._lookup(session_id))
        return found if isinstance(found, Owner) else None

    async def forget(self, session_id: str) -> None:
        await self._bounded("forget", self._forget(session_id))

    async def close(self) -> None:
        """Release the engine's connections."""

    async def _bounded(self, what: str, work: Coroutine[Any, Any, Any]) -> Any:
        if time.monotonic() < self._paused_until:
            work.close()
            return None
        try:
            with anyio.fail_after(ENGINE_TIMEOUT_S):
                return await work
        except Exception as exc:
            self._paused_until = time.monotonic() + ENGINE_PAUSE_S
            logger.warning(
                "session registry (%s at %s): cannot %s a session (%s); not asked again for %.0f s",
                self.engine,
                redact_url(self.url),
                what,
                redact_text(str(exc) or type(exc).__name__),
                ENGINE_PAUSE_S,
            )
            return None

    async def _record(self, session_id: str, owner: Owner) -> None:
        raise NotImplementedError

    async def _lookup(self, session_id: str) -> Owner | None:
        raise NotImplementedError

    async def _forget(self, session_id: str) -> None:
        raise NotImplementedError


class RedisRegistry(SessionRegistry):
    """Keys `<channel>:session:<id>` holding the owner as JSON, with a TTL."""

    engine = "redis"

    def __init__(self, url: str, channel: str, ttl: float, keys: Sequence[str]) -> None:
        super().__init__(url, channel, ttl, keys)
        from redis.asyncio import Redis

        self._client = Redis.from_url(
            url,
            socket_connect_timeout=ENGINE_TIMEOUT_S,
            socket_timeout=ENGINE_TIMEOUT_S,
            client_name=f"mcp-batteries-sessions:{channel}",
        )

    def key(self, session_id: str) -> str:
        return f"{self.channel}:session:{session_id}"

    async def _record(self, session_id: str, owner: Owner) -> None:
        await self._client.set(self.key(session_id), self._seal(session_id, owner), px=int(self.ttl * 1000))

    async def _lookup(self, session_id: str) -> Owner | None:
        return self._open(session_id, await self._client.get(self.key(session_id)))

    async def _forget(self, session_id: str) -> None:
        await self._client.delete(self.key(session_id))

    async def close(self) -> None:
        await self._client.aclose()


class PostgresRegistry(SessionRegistry):
    """One table for every channel, `mcp_batteries_sessions` (created if absent), rows with an
    expiry; expired rows are ignored and removed by the next record."""

    engine = "postgresql"

    def __init__(self, url: str, channel: str, ttl: float, keys: Sequence[str]) -> None:
        super().__init__(url, channel, ttl, keys)
        self._pool: Any = None
        self._opening = anyio.Lock()

    async def _connection_pool(self) -> Any:
        async with self._opening:
            if self._pool is None:
                import asyncpg

                pool = await asyncpg.create_pool(
                    self.url,
                    min_size=0,
                    max_size=2,
                    timeout=ENGINE_TIMEOUT_S,
                    server_settings={"application_name": f"mcp-batteries-sessions {self.channel}"[:63]},
                )
                # Another replica may create it at the same moment: then it exists.
                with contextlib.suppress(asyncpg.UniqueViolationError):
                    await pool.execute(
                        f"CREATE TABLE IF NOT EXISTS {TABLE} (channel text NOT NULL,"
                        " session_id text NOT NULL, owner text NOT NULL, expires timestamptz NOT NULL,"
                        " PRIMARY KEY (channel, session_id))"
                    )
                self._pool = pool
            return self._pool

    async def _record(self, session_id: str, owner: Owner) -> None:
        pool = await self._connection_pool()
        await pool.execute(
            f"INSERT INTO {TABLE} (channel, session_id, owner, expires)"
            " VALUES ($1, $2, $3, now() + make_interval(secs => $4))"
            " ON CONFLICT (channel, session_id) DO UPDATE SET owner = $3, expires = EXCLUDED.expires",
            self.channel,
            session_id,
            self._seal(session_id, owner),
            self.ttl,
        )
        await pool.execute(f"DELETE FROM {TABLE} WHERE channel = $1 AND expires < now()", self.channel)

    async def _lookup(self, session_id: str) -> Owner | None:
        pool = await self._connection_pool()
        raw = await pool.fetchval(
            f"SELECT owner FROM {TABLE} WHERE channel = $1 AND session_id = $2 AND expires >= now()",
            self.channel,
            session_id,
        )
        return self._open(session_id, raw)

    async def _forget(self, session_id: str) -> None:
        pool = await self._connection_pool()
        await pool.execute(
            f"DELETE FROM {TABLE} WHERE channel = $1 AND session_id = $2", self.channel, session_id
        )

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()


def registry_for(bus: str, channel: str, *, idle_timeout: float, keys: Sequence[str]) -> SessionRegistry:
    """The registry on the engine `bus` names (the same URLs as the change bus), its records
    sealed under `keys` (the deployment's request-state keys, sealing key first)."""
    scheme = bus.split("://", 1)[0].lower() if "://" in bus else ""
    ttl = idle_timeout if idle_timeout > 0 else DEFAULT_TTL_S
    if scheme in ("postgresql", "postgres"):
        return PostgresRegistry(bus, channel, ttl, keys)
    if scheme in ("redis", "rediss", "unix"):
        return RedisRegistry(bus, channel, ttl, keys)
    raise ConfigError(f"--bus {redact_url(bus)}: use a postgresql://... or redis://... URL")


def default_advertise_url(host: str, port: int) -> str:
    """This replica's base URL for the others: its bound address, or its host name when it listens
    on every interface."""
    if host in ("0.0.0.0", "::", "", "*"):
        host = socket.gethostname()
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def caller_identity(scope: Scope) -> str:
    """Who is calling, as the session binding sees it ("" without sign-in)."""
    caller = getattr(scope.get("user"), "caller", None)
    if caller is None:
        return ""
    return f"{caller.source}:{caller.subject}"


class SessionForwarder:
    """ASGI middleware around one MCP endpoint (see the module docstring).

    `advertise_url` is set once the listening port is known (`serve_http`, `serve_bundle`).
    """

    def __init__(
        self, app: ASGIApp, manager: StreamableHTTPSessionManager, registry: SessionRegistry
    ) -> None:
        self.app = app
        self.manager = manager
        self.registry = registry
        self.advertise_url: str | None = None
        self._renewed: dict[str, float] = {}
        self._client: httpx2.AsyncClient | None = None
        self.forwarded = 0

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        await self.registry.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.advertise_url is None:
            await self.app(scope, receive, send)
            return
        session_id = _header(scope, SESSION_HEADER)
        if session_id is None:
            if scope["method"] == "POST":
                await self.app(scope, receive, self._recording(scope, send))
            else:
                await self.app(scope, receive, send)
            return
        if sdk.holds_session(self.manager, session_id):
            await self._serve_held(session_id, scope, receive, send)
            return
        if _header(scope, FORWARDED_HEADER) is not None:
            await self.app(scope, receive, send)  # forwarded once already: 404 here
            return
        owner = await self.registry.lookup(session_id)
        if owner is None or owner.url == self.advertise_url or owner.identity != caller_identity(scope):
            await self.app(scope, receive, send)  # 404, as the SDK answers any unknown session
            return
        await self._forward(owner, session_id, scope, receive, send)

    async def _serve_held(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        """A request for a session this replica holds. Its record is renewed (or forgotten, for a
        DELETE) only once the SDK accepted the request, which it does only from the caller the
        session is bound to: another caller's attempt changes nothing."""
        accepted = False

        async def noting_send(message: Message) -> None:
            nonlocal accepted
            if message["type"] == "http.response.start" and message["status"] < 400:
                accepted = True
                if scope["method"] != "DELETE":
                    await self._renew(scope, session_id)
            await send(message)

        if scope["method"] == "GET":
            # An open event stream keeps the session alive on its owner: keep its record too.
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._keep_recorded, scope, session_id)
                await self.app(scope, receive, noting_send)
                tg.cancel_scope.cancel()
            return
        await self.app(scope, receive, noting_send)
        if scope["method"] == "DELETE" and accepted:
            self._renewed.pop(session_id, None)
            await self.registry.forget(session_id)

    def _recording(self, scope: Scope, send: Send) -> Send:
        """`send`, recording the session this opening request creates before the reply leaves (so
        the client's next request, wherever it lands, finds the owner)."""

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 300:
                for key, value in message.get("headers", ()):
                    if key.lower() == SESSION_HEADER:
                        session_id = value.decode("latin-1")
                        self._renewed[session_id] = time.monotonic()
                        await self._record(scope, session_id)
            await send(message)

        return recording_send

    async def _renew(self, scope: Scope, session_id: str) -> None:
        now = time.monotonic()
        if now - self._renewed.get(session_id, 0.0) < min(RENEW_EVERY_S, self.registry.ttl / 4):
            return
        self._renewed[session_id] = now
        if len(self._renewed) > 4 * (self.manager.max_sessions or 1000):
            self._renewed.clear()  # ended sessions are not reported: bound the memory instead
        await self._record(scope, session_id)

    async def _keep_recorded(self, scope: Scope, session_id: str) -> None:
        """Renew while an accepted event stream stays open (the first renewal follows the SDK's
        acceptance in `_serve_held`; a refused stream ends before this wakes)."""
        while True:
            await anyio.sleep(min(RENEW_EVERY_S, self.registry.ttl / 4))
            self._renewed.pop(session_id, None)
            await self._renew(scope, session_id)

    async def _record(self, scope: Scope, session_id: str) -> None:
        assert self.advertise_url is not None
        await self.registry.record(session_id, Owner(self.advertise_url, caller_identity(scope)))

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            import httpx2

            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S, pool=CONNECT_TIMEOUT_S),
                follow_redirects=False,
                trust_env=False,
            )
        return self._client

    async def _forward(
        self, owner: Owner, session_id: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        import httpx2

        body, disconnected = await _read_body(receive)
        if disconnected:
            return
        if body is None:
            await PlainTextResponse("request body too large", status_code=413)(scope, receive, send)
            return
        # Host and Origin are kept: the owner checks them as the receiving replica did (replicas
        # share their configuration), whatever its internal address is.
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        headers.append((FORWARDED_HEADER, b"1"))
        url = owner.url + scope.get("root_path", "") + scope["path"]
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        method = scope["method"]
        # An event stream may be quiet for long: only the connection is bounded for a GET.
        timeout = httpx2.Timeout(
            None if method == "GET" else READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S, pool=CONNECT_TIMEOUT_S
        )
        request = self._http().build_request(method, url, headers=headers, content=body, timeout=timeout)
        try:
            response = await self._http().send(request, stream=True)
        except httpx2.TransportError as exc:
            # The owner is gone: nobody holds the session any more. Answer as before (404).
            logger.info("the replica holding session %s is unreachable (%s): 404", session_id[:16], exc)
            await self.registry.forget(session_id)
            await self._answer(scope, body, send)
            return
        self.forwarded += 1
        try:
            await _relay(response, receive, send)
        finally:
            await response.aclose()

    async def _answer(self, scope: Scope, body: bytes, send: Send) -> None:
        """Let the endpoint answer (the SDK's 404 for a session it does not hold)."""
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                await anyio.sleep_forever()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _read_body(receive: Receive) -> tuple[bytes | None, bool]:
    """The whole request body (None above `MAX_BODY`), and whether the client went away."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"", True
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= MAX_BODY:
            chunks.append(chunk)
        if not message.get("more_body", False):
            return (b"".join(chunks) if size <= MAX_BODY else None), False


async def _relay(response: httpx2.Response, receive: Receive, send: Send) -> None:
    """Stream the owner's answer back until it ends or the client goes away."""
    import httpx2

    # The body is relayed as received (raw): its length and encoding stay true.
    dropped = HOP_BY_HOP - {b"content-length"}
    headers = [(key.lower(), value) for key, value in response.headers.raw if key.lower() not in dropped]
    async with anyio.create_task_group() as tg:

        async def until_disconnected() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            tg.cancel_scope.cancel()

        tg.start_soon(until_disconnected)
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        chunks: AsyncIterator[bytes] = response.aiter_raw()
        try:
            async for chunk in chunks:
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx2.TransportError as exc:
            # The owner went away mid-answer: end the stream; the client resumes (Last-Event-ID)
            # or re-sends, and meets 404 once the owner's record is gone.
            logger.info("the replica holding a session went away mid-answer: %s", exc)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        tg.cancel_scope.cancel()
