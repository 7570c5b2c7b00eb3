"""A small in-memory LRU bounded by entry count AND total bytes, with per-entry expiry.

Used for converted pages (so paging with `start_index` does not refetch) and for robots.txt rules.
Single event loop, no awaits inside methods, so no lock is needed.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

import httpx

V = TypeVar("V")

# Without any freshness information a page stays usable this long: long enough to page through it,
# short enough that a model re-reading a page later sees changes.
DEFAULT_TTL_SECONDS = 300.0
# Even a page that says it is fresh for a year is re-fetched after this.
MAX_TTL_SECONDS = 3600.0


@dataclass
class _Slot(Generic[V]):
    value: V
    size: int
    expires_at: float  # monotonic seconds; after this the entry is stale (may still be revalidated)
    keep_until: float  # monotonic seconds; after this the entry is gone


class LRUCache(Generic[V]):
    def __init__(self, max_entries: int, max_bytes: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._clock = clock
        self._slots: OrderedDict[Hashable, _Slot[V]] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def total_bytes(self) -> int:
        return self._bytes

    def put(self, key: Hashable, value: V, *, size: int, ttl: float, keep_for: float | None = None) -> None:
        """Store `value`; `keep_for` (>= ttl) lets a stale entry linger for revalidation or paging."""
        self.discard(key)
        if self._max_entries <= 0 or size > self._max_bytes:
            return
        now = self._clock()
        self._slots[key] = _Slot(value, size, now + ttl, now + max(ttl, keep_for or ttl))
        self._bytes += size
        while len(self._slots) > self._max_entries or self._bytes > self._max_bytes:
            _, evicted = self._slots.popitem(last=False)
            self._bytes -= evicted.size

    def get(self, key: Hashable, *, allow_stale: bool = False) -> V | None:
        """The value if present and fresh (or merely still kept, with allow_stale)."""
        found = self.get_with_freshness(key)
        if found is None:
            return None
        value, fresh = found
        return value if fresh or allow_stale else None

    def get_with_freshness(self, key: Hashable) -> tuple[V, bool] | None:
        slot = self._slots.get(key)
        if slot is None:
            return None
        now = self._clock()
        if now >= slot.keep_until:
            self.discard(key)
            return None
        self._slots.move_to_end(key)
        return slot.value, now < slot.expires_at

    def discard(self, key: Hashable) -> None:
        slot = self._slots.pop(key, None)
        if slot is not None:
            self._bytes -= slot.size

    def clear(self) -> None:
        self._slots.clear()
        self._bytes = 0


@dataclass(frozen=True)
class Freshness:
    storable: bool
    ttl: float
    must_revalidate: bool  # stored, but must be revalidated (or refetched) before reuse


def freshness_of(headers: httpx.Headers) -> Freshness:
    """How long a response may be reused, from Cache-Control (only the cheap, common directives)."""
    directives: dict[str, str | None] = {}
    for part in headers.get("cache-control", "").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            directives[name.lower()] = value.strip('" ') or None
    if "no-store" in directives:
        return Freshness(storable=False, ttl=0.0, must_revalidate=True)
    if "no-cache" in directives:
        return Freshness(storable=True, ttl=0.0, must_revalidate=True)
    max_age = directives.get("s-maxage") or directives.get("max-age")
    if max_age is not None:
        try:
            seconds = float(int(max_age))
        except ValueError:
            seconds = 0.0
        seconds = max(0.0, min(seconds, MAX_TTL_SECONDS))
        return Freshness(storable=True, ttl=seconds, must_revalidate=seconds == 0.0)
    return Freshness(storable=True, ttl=DEFAULT_TTL_SECONDS, must_revalidate=False)
