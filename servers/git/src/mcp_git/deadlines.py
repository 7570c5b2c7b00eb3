"""One thread that acts on deadlines: the `--timeout` of every git command.

`Popen.communicate(timeout=...)` waits for the process's exit by polling with sleeps (0.5 ms,
1 ms, 2 ms ...), which adds up to a millisecond or more to every short command, and a
`threading.Timer` starts a thread per command. Here one daemon thread sleeps until the earliest
deadline; arming and disarming a deadline only touch a heap under a lock, and wake the thread
only when the new deadline is the earliest.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Deadlines", "deadlines"]

#: Cancelled entries are dropped from the heap when they are this many and at least half of it.
_COMPACT_AT = 256


class Deadlines:
    """Runs an action when its deadline passes, unless it was disarmed first."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._disarmed: set[int] = set()
        self._keys = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, action: Callable[[], None]) -> int:
        """Run `action` (in the deadlines thread) `seconds` from now; returns the key to disarm."""
        entry = (time.monotonic() + seconds, next(self._keys), action)
        with self._condition:
            heapq.heappush(self._heap, entry)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="mcp-git-deadlines", daemon=True)
                self._thread.start()
            elif self._heap[0] is entry:
                self._condition.notify()
        return entry[1]

    def disarm(self, key: int) -> None:
        """The action of `key` will not run (if it has not started yet)."""
        with self._condition:
            self._disarmed.add(key)
            if len(self._disarmed) >= _COMPACT_AT and 2 * len(self._disarmed) >= len(self._heap):
                self._heap = [e for e in self._heap if e[1] not in self._disarmed]
                heapq.heapify(self._heap)
                self._disarmed.clear()

    @contextmanager
    def within(self, seconds: float, action: Callable[[], None]) -> Iterator[None]:
        """`action` runs if the block has not ended `seconds` from now."""
        key = self.arm(seconds, action)
        try:
            yield
        finally:
            self.disarm(key)

    def pending(self) -> int:
        """Armed deadlines not yet passed nor disarmed (for tests)."""
        with self._condition:
            return sum(1 for e in self._heap if e[1] not in self._disarmed)

    def _run(self) -> None:
        with self._condition:
            while True:
                while self._heap and self._heap[0][1] in self._disarmed:
                    self._disarmed.discard(heapq.heappop(self._heap)[1])
                if not self._heap:
                    self._condition.wait()
                    continue
                deadline, _, action = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._condition.wait(wait)
                    continue
                heapq.heappop(self._heap)
                self._condition.release()
                try:
                    action()
                except Exception:  # an action must not end the thread that serves all deadlines
                    pass
                finally:
                    self._condition.acquire()


#: The deadlines of every git command of this process.
deadlines = Deadlines()
