"""The change bus: what one replica observes reaches the subscribers of every replica.

Several replicas of a server behind one address each hold their own clients' subscriptions
(handshake-era `resources/subscribe`, 2026-07-28 `subscriptions/listen` streams). A change one
replica observes (a watcher's batch, a poll, a write it made) must reach them all. With
`bus = "postgresql://..."` or `"redis://..."` (`--bus URL`), `LiveResources` hands every change
it notifies locally to a `ChangeRelay`, which publishes it once on the operator's engine:

- PostgreSQL `LISTEN`/`NOTIFY` (one dedicated connection per server and replica; `pg_notify`
  on it), or Redis pub/sub (one subscriber connection and the client's pool for `PUBLISH`).
  The channel is `<bus_channel>.<server>`: replicas of one server share it, and nothing else.
- Messages are small JSON objects (`{"o": replica, "n": event, "k": "u"|"l"|"a", "u": uri,
  "d": digest}`), far below NOTIFY's 8,000 bytes; a URI too long to fit is sent as "all"
  (every subscribed URI changed) rather than cut.

Exactly once per subscriber: a replica delivers to its own subscribers what it observes, then
publishes it; it drops its own echo (the message's replica id `o`). Replicas watching the same
shared volume each observe the same change; so that they do not multiply it, every event carries
a digest of what was observed (a file's identity, size and modification time; a table's
fingerprint; a structural change's paths), and a replica drops an event whose digest is the one
it last delivered for that URI within `DEDUPE_WINDOW_S`, whether it observed the change itself or
heard it on the bus; the replica that observes second neither delivers nor publishes it again.
An event without a digest (a source that cannot describe what it saw) is always delivered: a
duplicate is preferred to a loss.

Losing the bus: the relay says so (`status()`, shown by the bundle's `/status`), reconnects with
back-off, and then reports every locally subscribed URI (and the resource list) changed, since
what was published in the gap cannot be known; if its own publishes failed in the gap, it also
publishes "all", so the other replicas do the same.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio

from mcp_batteries._safety.redact import redact_text, redact_url
from mcp_batteries.errors import ConfigError

__all__ = [
    "DEDUPE_WINDOW_S",
    "BusEvent",
    "ChangeRelay",
    "Engine",
    "Link",
    "PostgresEngine",
    "RedisEngine",
    "engine_for",
    "stat_digest",
]

logger = logging.getLogger(__name__)

#: How long a replica remembers what it delivered, to drop the same change seen by another one.
DEDUPE_WINDOW_S = 10.0
#: At most this many remembered deliveries (the oldest go first).
DEDUPE_MEMORY = 10_000
#: Messages received and not yet delivered; beyond this, everything subscribed is reported changed.
QUEUE = 10_000
#: PostgreSQL refuses NOTIFY payloads of 8,000 bytes or more; stay well below.
MAX_PAYLOAD = 7_000
RECONNECT_S = (0.2, 1.0, 5.0)
CONNECT_TIMEOUT_S = 10.0
#: A quiet connection is checked this often; one that does not answer within the timeout is
#: treated as lost (a cut network closes nothing: without this, a replica would look connected).
HEARTBEAT_S = 5.0
HEARTBEAT_TIMEOUT_S = 5.0
#: A publish that takes longer is given up (the change has reached this replica's own clients;
#: the others hear "everything changed" when the bus is back).
PUBLISH_TIMEOUT_S = 2.0

Kind = Literal["u", "l", "a"]  # a resource updated, the resource list changed, everything changed


@dataclass(frozen=True)
class BusEvent:
    """One change as the bus carries it."""

    kind: Kind
    uri: str | None = None
    digest: str | None = None


# -- engines ----------------------------------------------------------------------------------------


class Link(Protocol):
    """One live connection to the engine."""

    async def publish(self, payload: str) -> None: ...

    async def wait_lost(self) -> str:
        """Return (with the reason) when the connection is gone."""
        ...


class Engine(Protocol):
    """A pub/sub engine: `connect(channel, deliver)` opens a `Link` that calls `deliver` for each
    message on the channel (on the event loop; it must not block)."""

    name: str
    url: str

    def connect(self, channel: str, deliver: Callable[[str], None]) -> AbstractAsyncContextManager[Link]: ...


class _PostgresLink:
    def __init__(self, conn: Any, channel: str) -> None:
        self._conn = conn
        self._channel = channel
        self._lock = anyio.Lock()  # one connection: one statement at a time
        self.lost = anyio.Event()
        self.reason = "connection closed"

    async def publish(self, payload: str) -> None:
        async with self._lock:
            await self._conn.execute("SELECT pg_notify($1, $2)", self._channel, payload)

    async def wait_lost(self) -> str:
        while True:
            with anyio.move_on_after(HEARTBEAT_S):
                await self.lost.wait()
                return self.reason
            try:
                with anyio.fail_after(HEARTBEAT_TIMEOUT_S):
                    async with self._lock:
                        await self._conn.execute("SELECT 1")
            except Exception as exc:
                return f"the PostgreSQL connection stopped answering: {type(exc).__name__}: {exc}"


class PostgresEngine:
    """PostgreSQL `LISTEN`/`NOTIFY`: one connection listens and publishes."""

    name = "postgresql"

    def __init__(self, url: str) -> None:
        self.url = url

    @asynccontextmanager
    async def connect(self, channel: str, deliver: Callable[[str], None]) -> AsyncIterator[Link]:
        import asyncpg  # only when the bus is PostgreSQL

        conn = await asyncpg.connect(
            self.url,
            timeout=CONNECT_TIMEOUT_S,
            # Named so an operator (or a test) can find this connection in pg_stat_activity.
            server_settings={"application_name": f"mcp-batteries-bus {channel}"[:63]},
        )
        link = _PostgresLink(conn, channel)

        def on_notify(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            deliver(payload)

        def on_terminated(_conn: Any) -> None:
            link.reason = "the PostgreSQL connection was closed"
            link.lost.set()

        conn.add_termination_listener(on_terminated)
        try:
            await conn.add_listener(channel, on_notify)
            yield link
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await conn.close(timeout=2)
                except Exception:
                    conn.terminate()


class _RedisLink:
    def __init__(self, client: Any, pubsub: Any, channel: str, deliver: Callable[[str], None]) -> None:
        self._client = client
        self._pubsub = pubsub
        self._channel = channel
        self._deliver = deliver

    async def publish(self, payload: str) -> None:
        await self._client.publish(self._channel, payload)

    async def wait_lost(self) -> str:
        """Reads the subscription until the connection breaks (redis-py's own retries are off:
        the relay reconnects, and so knows that it missed messages)."""
        from redis.exceptions import RedisError

        heard = time.monotonic()  # anything at all from the server, a pong included
        pinged: float | None = None
        try:
            while True:
                message = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                now = time.monotonic()
                if message is not None:
                    heard, pinged = now, None
                    if message.get("type") == "message":
                        data = message["data"]
                        self._deliver(
                            data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
                        )
                    continue
                if pinged is not None and now - pinged > HEARTBEAT_TIMEOUT_S:
                    return "the Redis connection stopped answering"
                if pinged is None and now - heard > HEARTBEAT_S:
                    await self._pubsub.ping()
                    pinged = now
        except (RedisError, OSError) as exc:
            return f"the Redis connection was lost: {exc}"


class RedisEngine:
    """Redis pub/sub: one subscriber connection; `PUBLISH` through the client's pool."""

    name = "redis"

    def __init__(self, url: str) -> None:
        self.url = url

    @asynccontextmanager
    async def connect(self, channel: str, deliver: Callable[[str], None]) -> AsyncIterator[Link]:
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        client = Redis.from_url(
            self.url,
            # Named so an operator (or a test) can find it in CLIENT LIST.
            client_name=f"mcp-batteries-bus:{channel}",
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            retry=Retry(NoBackoff(), 0),
        )
        try:
            pubsub = client.pubsub()
            try:
                await pubsub.subscribe(channel)
                yield _RedisLink(client, pubsub, channel, deliver)
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await pubsub.aclose()  # type: ignore[no-untyped-call]
                    except Exception:
                        logger.debug("closing the Redis subscription failed", exc_info=True)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await client.aclose()
                except Exception:
                    logger.debug("closing the Redis client failed", exc_info=True)


def engine_for(url: str) -> Engine:
    """The engine a `bus` URL names; ConfigError for any other scheme."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("postgresql", "postgres"):
        return PostgresEngine(url)
    if scheme in ("redis", "rediss", "unix"):
        return RedisEngine(url)
    raise ConfigError(
        f"bus: {redact_url(url)} is neither a PostgreSQL URL (postgresql://...) nor a Redis URL "
        "(redis://... or rediss://...)"
    )


# -- digests -----------------------------------------------------------------------------------------


def stat_digest(paths: Iterable[Path | str]) -> str:
    """What a set of paths looks like now (identity, size, modification time, or absence): the
    same on every replica that looks at the same shared volume after the same change. Blocking:
    call it in a worker thread."""
    parts = []
    for path in sorted(str(p) for p in paths):
        try:
            st = os.stat(path, follow_symlinks=False)
            parts.append(f"{path}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{path}\0-")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


# -- the relay ----------------------------------------------------------------------------------------

Deliver = Callable[[list[BusEvent]], Awaitable[None]]
State = Literal["connecting", "connected", "disconnected", "stopped"]


class ChangeRelay:
    """One server's side of the bus in one replica: publishes what it observed, delivers what
    the others did (through `deliver`), and remembers deliveries to drop duplicates."""

    def __init__(
        self,
        engine: Engine,
        channel: str,
        deliver: Deliver,
        *,
        window_s: float = DEDUPE_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.channel = channel
        self.origin = uuid.uuid4().hex[:16]
        self._deliver = deliver
        self._window = window_s
        self._clock = clock
        #: (kind, URI) -> the digest last delivered for it, and when.
        self._recent: OrderedDict[tuple[str, str | None], tuple[str, float]] = OrderedDict()
        self._link: Link | None = None
        self._sequence = 0
        self._publish_failed = False
        self._overflowed = False
        self.state: State = "connecting"
        self.since = time.time()
        self._state_changed = anyio.Event()
        self.last_error: str | None = None
        self.reconnects = 0
        self.published = 0
        self.received = 0
        self.duplicates = 0

    # -- what the bundle's /status shows ----------------------------------------------------------
    def status(self) -> dict[str, Any]:
        report: dict[str, Any] = {
            "engine": self.engine.name,
            "url": redact_url(self.engine.url),
            "channel": self.channel,
            "state": self.state,
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.since)),
            "reconnects": self.reconnects,
            "published": self.published,
            "received": self.received,
            "duplicates_dropped": self.duplicates,
        }
        if self.last_error is not None:
            report["last_error"] = self.last_error
        return report

    @property
    def connected(self) -> bool:
        return self.state == "connected"

    async def state_changed(self) -> None:
        """Return at the next change of `state` (for tests and the bench)."""
        await self._state_changed.wait()

    def _set_state(self, state: State) -> None:
        self.state, self.since = state, time.time()
        self._state_changed.set()
        self._state_changed = anyio.Event()

    # -- duplicates --------------------------------------------------------------------------------
    def claim(self, event: BusEvent) -> bool:
        """Whether `event` is news here (then it is remembered as delivered): False when the last
        change delivered for its URI, within the window, had the same digest (the same change,
        observed by another replica too). Comparing with the last one only, a resource that
        changes back (A, B, A) is delivered each time. Events without a digest are always news."""
        if event.digest is None or event.kind == "a":
            return True
        now = self._clock()
        while self._recent:
            oldest_key, (_, at) = next(iter(self._recent.items()))
            if now - at < self._window and len(self._recent) < DEDUPE_MEMORY:
                break
            del self._recent[oldest_key]
        key = (event.kind, event.uri)
        last = self._recent.get(key)
        if last is not None and last[0] == event.digest:
            self.duplicates += 1
            return False
        self._recent[key] = (event.digest, now)
        self._recent.move_to_end(key)
        return True

    # -- publishing --------------------------------------------------------------------------------
    def encode(self, event: BusEvent) -> str:
        self._sequence += 1
        message: dict[str, Any] = {"o": self.origin, "n": self._sequence, "k": event.kind}
        if event.uri is not None:
            message["u"] = event.uri
        if event.digest is not None:
            message["d"] = event.digest
        payload = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        if len(payload.encode("utf-8", "surrogatepass")) > MAX_PAYLOAD:
            # Too long to carry (a 7 kB URI): "everything changed" is true, if coarse.
            payload = json.dumps({"o": self.origin, "n": self._sequence, "k": "a"}, separators=(",", ":"))
        return payload

    async def publish(self, events: Iterable[BusEvent]) -> None:
        """Publish events this replica observed (already delivered to its own subscribers)."""
        for event in events:
            link = self._link
            if link is None:
                self._publish_failed = True
                continue
            try:
                with anyio.fail_after(PUBLISH_TIMEOUT_S):
                    await link.publish(self.encode(event))
                self.published += 1
            except Exception as exc:  # the bus is down: the change still reached our own clients
                self._publish_failed = True
                logger.warning("cannot publish a change on the bus: %s", redact_text(str(exc)))

    # -- receiving ---------------------------------------------------------------------------------
    def decode(self, payload: str) -> BusEvent | None:
        """The event in a message from another replica; None for our own echo and for junk."""
        try:
            message = json.loads(payload)
            origin, kind = message["o"], message["k"]
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring a malformed bus message: %r", payload[:200])
            return None
        if origin == self.origin:
            return None
        if kind not in ("u", "l", "a") or (kind == "u" and not isinstance(message.get("u"), str)):
            logger.warning("ignoring a bus message of unknown shape: %r", payload[:200])
            return None
        digest = message.get("d")
        return BusEvent(kind, message.get("u"), digest if isinstance(digest, str) else None)

    async def _consume(self, receive: anyio.abc.ObjectReceiveStream[str]) -> None:
        async for payload in receive:
            if self._overflowed:
                self._overflowed = False
                await self._deliver_safely([BusEvent("a")])
                continue
            event = self.decode(payload)
            if event is None:
                continue
            self.received += 1
            if self.claim(event):
                await self._deliver_safely([event])

    async def _deliver_safely(self, events: list[BusEvent]) -> None:
        try:
            await self._deliver(events)
        except Exception:  # one failed delivery must not end the relay
            logger.exception("delivering a change from the bus failed")

    # -- running (a service of the server) ---------------------------------------------------------
    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        send, receive = anyio.create_memory_object_stream[str](QUEUE)

        def deliver(payload: str) -> None:
            try:
                send.send_nowait(payload)
            except anyio.WouldBlock:  # far behind: report everything changed once caught up
                self._overflowed = True

        async with anyio.create_task_group() as tg:
            first = anyio.Event()
            tg.start_soon(self._connect_forever, deliver, first)
            tg.start_soon(self._consume, receive)
            # The first attempt has ended (connected or not) before the first request is served.
            await first.wait()
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                self._set_state("stopped")

    async def _connect_forever(self, deliver: Callable[[str], None], first: anyio.Event) -> None:
        attempt = 0
        while True:
            try:
                async with self.engine.connect(self.channel, deliver) as link:
                    self._link = link
                    self._set_state("connected")
                    if attempt:
                        self.reconnects += 1
                        logger.warning("the change bus is back (%s)", redact_url(self.engine.url))
                        await self._after_gap()
                    attempt = 0
                    first.set()
                    reason = await link.wait_lost()
                    self._link = None
                    self.last_error = redact_text(reason)
                    logger.warning("lost the change bus: %s; reconnecting", self.last_error)
            except Exception as exc:
                self.last_error = redact_text(f"{type(exc).__name__}: {exc}")
                if attempt == 0:
                    logger.warning(
                        "cannot reach the change bus at %s: %s; retrying",
                        redact_url(self.engine.url),
                        self.last_error,
                    )
            self._link = None
            if self.state != "disconnected":
                self._set_state("disconnected")
            first.set()
            await anyio.sleep(RECONNECT_S[min(attempt, len(RECONNECT_S) - 1)])  # back-off, not a wait
            attempt += 1

    async def _after_gap(self) -> None:
        """What was published while we were away cannot be known: tell our own subscribers that
        everything changed, and, if our own publishes failed, tell the other replicas too."""
        await self._deliver_safely([BusEvent("a")])
        if self._publish_failed:
            self._publish_failed = False
            await self.publish([BusEvent("a")])
