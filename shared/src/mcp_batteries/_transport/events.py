"""Resumable SSE: each HTTP session keeps the events it was sent, for itself alone.

With an event store, Streamable HTTP sends each stream a priming event and event ids; a client
that loses its connection reconnects with `Last-Event-ID` and gets what it missed (a tool
result, a `resources/updated` on the GET stream) instead of losing it.

What was sent to one session is that session's business only, so:

- every session has its own store (`SessionEvents`), opened when the session is admitted and
  dropped, with everything in it, when the session ends (DELETE, idle expiry, shutdown);
- a store belongs to the caller that opened the session (`scope["user"]`, whatever
  authenticated it) and replays nothing to anyone else;
- event ids are random (`secrets`), so one cannot be guessed from another;
- retention is bounded per session, in events and in bytes, and across all sessions in bytes;
  the oldest events go first. Asking for an event that is gone replays nothing (the client
  then sees the stream end, rather than a stream with a hole in it).

`EventStores` is the registry a server owns; `mcp_batteries._protocol.sdk.use_session_event_stores`
plugs it into the SDK's session manager.
"""

from __future__ import annotations

import secrets
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage, jsonrpc_message_adapter

from mcp_batteries._protocol.frames import encode_message
from mcp_batteries._protocol.sdk import Owner

__all__ = [
    "DEFAULT_MAX_EVENTS_PER_SESSION",
    "DEFAULT_MAX_SESSION_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "EventStores",
    "Owner",
    "SessionEvents",
]

DEFAULT_MAX_EVENTS_PER_SESSION = 1_000
DEFAULT_MAX_SESSION_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 64 * 1024 * 1024
#: What an event costs besides its JSON: its id, its entry in two indexes, the record itself.
EVENT_OVERHEAD_BYTES = 300

#: The caller of the HTTP request being served, set around each request a session handles.
_requester: ContextVar[tuple[bool, Owner]] = ContextVar(
    "mcp_batteries_event_requester", default=(False, None)
)


@dataclass(slots=True)
class _Event:
    seq: int
    event_id: str
    stream_id: StreamId
    #: The message as sent (JSON), or None for a priming event or one too large to keep.
    payload: str | None
    size: int


class SessionEvents(EventStore):
    """The events of one session: what its streams were sent, for replay to that session only."""

    def __init__(self, stores: EventStores, session_id: str, owner: Owner) -> None:
        self._stores = stores
        self.session_id = session_id
        self.owner = owner
        self._events: OrderedDict[int, _Event] = OrderedDict()
        self._by_id: dict[str, int] = {}
        self._next_seq = 0
        self.bytes = 0
        self.closed = False

    @property
    def size(self) -> int:
        # Deliberately not __len__: the SDK tests `if not event_store`, and an empty store must
        # still count as configured.
        return len(self._events)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = secrets.token_urlsafe(16)
        if self.closed:
            return event_id  # the session is over: nothing will ever replay it
        # As the stream will send it: a message that cannot be encoded as JSON is stored as the
        # error that replaces it, or not at all (a notification), never raised from here, where
        # it would end the session's message router.
        encoded = None if message is None else encode_message(message)
        payload = encoded.decode() if isinstance(encoded, bytes) else None
        size = EVENT_OVERHEAD_BYTES + (0 if payload is None else sys.getsizeof(payload))
        limits = self._stores
        if size > limits.max_session_bytes:
            # Too large to keep. Keep its id, so a client that received it can resume after it,
            # but nothing before it: a replay from earlier would have a hole where it was.
            self._forget_all()
            payload, size = None, EVENT_OVERHEAD_BYTES
        seq = self._next_seq
        self._next_seq += 1
        event = _Event(seq, event_id, stream_id, payload, size)
        self._events[seq] = event
        self._by_id[event_id] = seq
        self.bytes += size
        self._stores._added(self, event)
        while len(self._events) > limits.max_events_per_session or self.bytes > limits.max_session_bytes:
            self._forget_oldest()
        self._stores._trim()
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        if not self._may_replay():
            return None
        seq = self._by_id.get(last_event_id)
        if seq is None:
            return None
        stream_id = self._events[seq].stream_id
        later = [e for s, e in self._events.items() if s > seq and e.stream_id == stream_id]
        for event in later:
            if event.payload is not None:
                message = jsonrpc_message_adapter.validate_json(event.payload)
                await send_callback(EventMessage(message, event.event_id))
        return stream_id

    def _may_replay(self) -> bool:
        if self.closed:
            return False
        known, requester = _requester.get()
        # Outside a request the session manager routed (a direct call) there is no requester to
        # compare; inside one, only the session's owner gets its events.
        return not known or requester == self.owner

    def _forget_oldest(self) -> None:
        _seq, event = self._events.popitem(last=False)
        self._drop(event)

    def _forget_all(self) -> None:
        while self._events:
            self._forget_oldest()

    def _drop(self, event: _Event) -> None:
        self._by_id.pop(event.event_id, None)
        self.bytes -= event.size
        self._stores._removed(self, event)

    def _forget_seq(self, seq: int) -> None:
        event = self._events.pop(seq, None)
        if event is not None:
            self._drop(event)


class EventStores:
    """Every session's event store, and the limits they share."""

    def __init__(
        self,
        *,
        max_events_per_session: int = DEFAULT_MAX_EVENTS_PER_SESSION,
        max_session_bytes: int = DEFAULT_MAX_SESSION_BYTES,
        max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    ) -> None:
        self.max_events_per_session = max_events_per_session
        self.max_session_bytes = max_session_bytes
        self.max_total_bytes = max_total_bytes
        self._sessions: dict[str, SessionEvents] = {}
        #: Every retained event of every session, oldest first: what goes when the total is full.
        self._order: OrderedDict[tuple[int, int], SessionEvents] = OrderedDict()
        self.total_bytes = 0
        #: Called with the session id after a session's events are dropped.
        self.on_close: list[Callable[[str], None]] = []

    @property
    def sessions(self) -> int:
        return len(self._sessions)

    @property
    def events(self) -> int:
        return len(self._order)

    def open(self, session_id: str, owner: Owner) -> SessionEvents:
        store = SessionEvents(self, session_id, owner)
        self._sessions[session_id] = store
        return store

    def close(self, session_id: str) -> None:
        """Drop a session's events (its DELETE, its expiry, shutdown). Calling it twice is fine."""
        store = self._sessions.pop(session_id, None)
        if store is not None:
            store._forget_all()
            store.closed = True
            for callback in self.on_close:
                callback(session_id)

    def get(self, session_id: str) -> SessionEvents | None:
        return self._sessions.get(session_id)

    @contextmanager
    def serving(self, requester: Owner) -> Iterator[None]:
        """Mark the request being served as `requester`'s, for the replay check."""
        token = _requester.set((True, requester))
        try:
            yield
        finally:
            _requester.reset(token)

    def _added(self, store: SessionEvents, event: _Event) -> None:
        self._order[(id(store), event.seq)] = store
        self.total_bytes += event.size

    def _removed(self, store: SessionEvents, event: _Event) -> None:
        self._order.pop((id(store), event.seq), None)
        self.total_bytes -= event.size

    def _trim(self) -> None:
        while self.total_bytes > self.max_total_bytes and self._order:
            (_, seq), store = next(iter(self._order.items()))
            store._forget_seq(seq)
