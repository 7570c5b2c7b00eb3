"""Connection limits: idle, slow and surplus HTTP connections cannot exhaust a server.

uvicorn alone holds a connection that sends nothing forever, waits forever for slow headers
and bodies, and accepts until the process runs out of file descriptors; asyncio then logs
`socket.accept() out of system resource` up to 2,048 times a second. Here, per connection:

- a connection with no request under way (new, or idle between keep-alive requests) is closed
  after `keep_alive_timeout` seconds;
- a request must arrive whole (request line, headers and body) within `request_timeout`
  seconds of its first byte; slow headers get `408` and the connection is closed, a slow body
  closes the connection (the application sees the client disconnect);
- at most `max_connections` connections are open. One more arrives: to make room, the
  connection that has been waiting longest is closed (for its first byte, for the rest of its
  request, or idle between requests); when every connection is busy (a request being
  answered, an open event stream), the newcomer gets `503` and is closed at once. So idle and
  slow connections can never lock out real ones.
- `max_connections` is kept below the open-file limit (`ulimit -n`), raising the soft limit
  towards the hard one if needed, so that accepting never fails for lack of descriptors;
  should it fail anyway (the server's own files), the error is logged at most once a minute.

The protocol is uvicorn's h11 protocol with timers added (it relies on uvicorn's `conn`,
`transport`, `loop`, `on_response_complete` and `data_received`, exercised by
`tests/shared/transport/test_http_limits.py` over real sockets).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import math
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "DEFAULT_KEEP_ALIVE_TIMEOUT_S",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "ConnectionLimits",
    "ConnectionTable",
    "RateLimitedLog",
    "connection_budget",
    "guarded_protocol",
    "log_accept_errors_sparingly",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_CONNECTIONS = 1000
DEFAULT_KEEP_ALIVE_TIMEOUT_S = 10.0
DEFAULT_REQUEST_TIMEOUT_S = 30.0
#: File descriptors kept for everything but client connections (listening sockets, files the
#: tools open, database and upstream connections, watchers): at least this many, or 1/8 of the
#: limit when that is more.
MIN_RESERVED_FDS = 64
SUMMARY_INTERVAL_S = 60.0

Phase = Literal["idle", "receiving", "busy"]


def _plain_response(status: str, text: str, *extra: str) -> bytes:
    """A whole HTTP/1.1 response written before h11 has seen a request (h11 cannot send one)."""
    body = (text + "\n").encode()
    head = [f"HTTP/1.1 {status}", "content-type: text/plain; charset=utf-8", "connection: close", *extra]
    head.append(f"content-length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_REFUSAL = _plain_response(
    "503 Service Unavailable", "server busy: too many open connections", "retry-after: 1"
)
_REQUEST_TIMEOUT = _plain_response("408 Request Timeout", "the request did not arrive in time")


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE_TIMEOUT_S
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S


def _reserve(limit: int) -> int:
    return max(MIN_RESERVED_FDS, limit // 8)


def connection_budget(wanted: int, *, explicit: bool) -> tuple[int, str | None]:
    """How many connections fit the open-file limit, and a warning when fewer than `wanted` do.

    Raises the soft limit (up to the hard one) when `wanted` needs more descriptors than it
    allows, as Go and many servers do at start.
    """
    try:
        import resource
    except ImportError:  # not POSIX
        return wanted, None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + _reserve(wanted)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
        if raised > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (ValueError, OSError):
                pass
    if soft == resource.RLIM_INFINITY:
        return wanted, None
    fits = max(1, soft - _reserve(soft))
    if wanted <= fits:
        return wanted, None
    warning = (
        f"--max-connections {wanted} needs about {needed} open files but the limit (ulimit -n) is "
        f"{soft}; serving at most {fits} connections (raise the limit with ulimit -n to allow more)"
        if explicit
        else None
    )
    return fits, warning


class RateLimitedLog:
    """Logs the first of a kind of event at once, then at most one line per interval with a count."""

    def __init__(self, log: logging.Logger, interval: float = SUMMARY_INTERVAL_S) -> None:
        self._log = log
        self._interval = interval
        self._last: dict[str, float] = {}
        self._since: dict[str, int] = {}

    def note(self, kind: str, level: int, message: str) -> None:
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self._interval:
            self._since[kind] = self._since.get(kind, 0) + 1
            return
        more = self._since.pop(kind, 0)
        self._last[kind] = now
        suffix = (
            f" ({more} more like this in the last {now - last:.0f} s)" if more and last is not None else ""
        )
        self._log.log(level, "%s%s", message, suffix)


@dataclass
class ConnectionTable:
    """The open connections of one server, by what they are doing; shared by its protocols."""

    limits: ConnectionLimits
    open: set[GuardedH11Protocol] = field(default_factory=set)
    #: Connections not busy with a request: waiting for their first byte, for the rest of a
    #: request, or idle between keep-alive requests; longest waiting first.
    waiting: OrderedDict[GuardedH11Protocol, None] = field(default_factory=OrderedDict)
    served: int = 0
    refused: int = 0
    evicted: int = 0
    timed_out: int = 0
    log: RateLimitedLog = field(default_factory=lambda: RateLimitedLog(logger))

    @property
    def held(self) -> int:
        return len(self.open)

    def make_room(self, newcomer: GuardedH11Protocol) -> bool:
        """Close the connection that has waited longest, for `newcomer`; False when all are busy."""
        for candidate in self.waiting:
            if candidate is not newcomer:
                candidate.close_connection()
                self.evicted += 1
                return True
        return False


def guarded_protocol(table: ConnectionTable) -> type[GuardedH11Protocol]:
    """The uvicorn `http=` protocol class for a server whose connections `table` tracks."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"table": table})


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with idle and request deadlines and a connection cap."""

    table: ConnectionTable

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: Phase | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._gone = False

    # -- uvicorn's Protocol interface ------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        table = self.table
        table.open.add(self)
        self._track()
        if table.held > table.limits.max_connections and not table.make_room(self):
            table.refused += 1
            table.log.note(
                "refused",
                logging.WARNING,
                f"refusing new HTTP connections with 503: all {table.limits.max_connections} allowed "
                "connections are busy (--max-connections)",
            )
            if not transport.is_closing():
                transport.write(_REFUSAL)
            self.close_connection()

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._track()

    def on_response_complete(self) -> None:
        self.table.served += 1
        super().on_response_complete()
        self._track()

    # -- the guard -------------------------------------------------------------------------
    def close_connection(self) -> None:
        """Close now, whatever the connection is doing (an application sees a disconnect)."""
        self._forget()
        if self.conn.our_state not in (h11.ERROR, h11.CLOSED, h11.MUST_CLOSE):
            with contextlib.suppress(h11.LocalProtocolError):
                self.conn.send(h11.ConnectionClosed())
        if not self.transport.is_closing():
            self.transport.close()

    def _forget(self) -> None:
        if self._gone:
            return
        self._gone = True
        self._cancel_deadline()
        self.table.open.discard(self)
        self._unlist()

    def _unlist(self) -> None:
        self.table.waiting.pop(self, None)

    def _current_phase(self) -> Phase:
        their = self.conn.their_state
        if their is h11.IDLE:
            buffered, _ = self.conn.trailing_data
            return "receiving" if buffered else "idle"
        if their is h11.SEND_BODY:
            return "receiving"
        return "busy"

    def _track(self) -> None:
        if self._gone:
            return
        if self.transport.is_closing():
            self._forget()
            return
        phase = self._current_phase()
        if phase == self._phase:
            return  # the deadline of a phase runs from when it began
        limits = self.table.limits
        self._unlist()
        self._cancel_deadline()
        self._phase = phase
        if phase != "busy":
            self.table.waiting[self] = None  # at the end: the connection that waited least
            timeout = limits.keep_alive_timeout if phase == "idle" else limits.request_timeout
            self._deadline = self.loop.call_later(timeout, self._expired)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self._gone:
            return
        phase = self._phase
        if phase == "receiving":
            self.table.timed_out += 1
            self.table.log.note(
                "slow",
                logging.INFO,
                "closed an HTTP connection that did not send its request within "
                f"{self.table.limits.request_timeout:g} s (--request-timeout)",
            )
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.write(_REQUEST_TIMEOUT)
        self.close_connection()


def log_accept_errors_sparingly(loop: asyncio.AbstractEventLoop) -> None:
    """Route asyncio's 'socket.accept() out of system resource' through a rate-limited log.

    asyncio retries `accept()` up to the listen backlog (2,048) times per attempt, logging a
    traceback each time; one line a minute says the same.
    """
    log = RateLimitedLog(logger)
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if str(context.get("message", "")).startswith("socket.accept() out of system resource"):
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            advice = (
                "raise the open-file limit (ulimit -n) or lower --max-connections"
                if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE)
                else "the system is short of memory or buffers"
            )
            log.note("accept", logging.ERROR, f"cannot accept HTTP connections: {reason}; {advice}")
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


def keep_alive_for_uvicorn(limits: ConnectionLimits) -> int:
    """uvicorn's own keep-alive timer (whole seconds); the guard's own timer is the exact one."""
    return max(1, math.ceil(limits.keep_alive_timeout))
