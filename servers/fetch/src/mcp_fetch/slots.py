"""Connection slots per host, so that a slow or hanging host cannot starve fetches of other hosts.

All fetches share one connection pool. Without a per-host limit, twenty fetches of a host that
accepts connections and never answers hold every connection of the pool until their timeouts, and
a fetch of a healthy host waits for the pool meanwhile. With it, one host holds at most `per_host`
connections; further fetches of that host queue here (bounded by their own deadline) and fetches
of other hosts go straight through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio


@dataclass
class _Host:
    semaphore: anyio.Semaphore
    users: int = 0  # holders plus waiters; the entry is dropped when it reaches zero


class HostSlots:
    def __init__(self, per_host: int) -> None:
        self.per_host = per_host
        self._hosts: dict[Hashable, _Host] = {}

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """Wait for one of the `per_host` slots of `key` and hold it for the block."""
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = _Host(anyio.Semaphore(self.per_host))
        host.users += 1
        try:
            async with host.semaphore:
                yield
        finally:
            host.users -= 1
            if host.users == 0:
                del self._hosts[key]
