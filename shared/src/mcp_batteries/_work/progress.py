"""Running blocking work off the event loop: progress reported from the worker thread, and
cancellation that reaches it.

`anyio.to_thread.run_sync` cannot stop a thread: a cancelled call either waits for the thread
(the cancellation is ignored until the work ends) or abandons it (the work goes on unseen). Long
walks and searches therefore take a `CancelToken` and call `token.check()` between units of work
(a directory, a file, a match); `run_cancellable` sets the token when the calling task is
cancelled (`notifications/cancelled`, a closed connection) and waits for the thread to notice,
which takes at most one unit of work. No thread outlives its request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

T = TypeVar("T")

#: What domain code calls from a worker thread: (items done so far, what it is doing).
Progress = Callable[[int, str], None]


def progress_reporter(report: Callable[[float, float | None, str | None], Any]) -> Progress:
    """Adapt an async `report_progress(progress, total, message)` for calls from a worker thread."""

    def report_from_thread(done: int, message: str) -> None:
        anyio.from_thread.run(report, float(done), None, message)

    return report_from_thread


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run blocking `fn` in a worker thread so the server keeps answering (pings included)."""
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))


class Cancelled(Exception):
    """Raised inside a worker thread by `CancelToken.check` once the request was cancelled."""


class CancelToken:
    """Set from the event loop, polled from the worker thread (a lock-free flag read)."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise `Cancelled` if the request was cancelled: call it between units of work."""
        if self._event.is_set():
            raise Cancelled


#: A token that is never cancelled, for direct (test and library) calls.
NEVER = CancelToken()


async def run_cancellable(work: Callable[[CancelToken], T]) -> T:
    """Run `work(token)` in a worker thread; cancelling the caller cancels the token.

    The thread is always awaited: when the caller is cancelled, the token is set and the
    cancellation is delivered once `work` returns or raises (at its next `check`).
    """
    token = CancelToken()

    async def cancel_when_cancelled() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            token.cancel()

    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(cancel_when_cancelled)
        try:
            # Shielded so the thread is always waited for; the sibling task above still sees the
            # caller's cancellation (it runs in the task group's scope, outside this shield).
            with anyio.CancelScope(shield=True):
                try:
                    result = await anyio.to_thread.run_sync(work, token)
                except Exception as exc:  # re-raised below, outside the task group (no ExceptionGroup)
                    failure = exc
        finally:
            group.cancel_scope.cancel()
    if token.cancelled:
        # The caller was cancelled: deliver that, whatever the work ended with (it may have
        # finished its last unit, or failed in it, before it saw the token).
        await anyio.lowlevel.checkpoint()
    if failure is not None:
        raise failure
    return result
