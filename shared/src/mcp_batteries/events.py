"""A bounded in-memory event store: SSE streams a client can resume after a dropped connection.

With it, Streamable HTTP sends each stream a priming event and event ids; a client that loses its
connection reconnects with `Last-Event-ID` and gets what it missed (a tool result, a
`resources/updated` on the GET stream) instead of losing it. Memory is bounded: the oldest
events are forgotten first, and a client asking for an event that is gone gets nothing replayed.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage

DEFAULT_MAX_EVENTS = 10_000


class BoundedEventStore(EventStore):
    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        self._max_events = max_events
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()
        self._counter = itertools.count(1)

    @property
    def size(self) -> int:
        # Deliberately not __len__: the SDK tests `if not event_store`, and an empty store must
        # still count as configured.
        return len(self._events)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._counter))
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self._max_events:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        after = False
        for event_id, (stream, message) in list(self._events.items()):
            if event_id == last_event_id:
                after = True
                continue
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id
