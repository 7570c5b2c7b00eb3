"""The signals that ask a server to stop, as the platform delivers them.

POSIX: SIGINT and SIGTERM through the event loop's own signal handling (`anyio.open_signal_receiver`).
Windows' event loop has no signal handling (`add_signal_handler` is not implemented there), and of
the signals Windows knows only SIGINT (Ctrl-C) and SIGBREAK (Ctrl-Break, which is also how one
process asks another console process to stop) ever arrive from outside; SIGTERM exists in Python
there but only the process itself can raise it. The portable family installs plain `signal.signal`
handlers for those that exist and hands each one to the event loop thread-safely. It never names a
signal Windows lacks (SIGHUP, SIGKILL, SIGQUIT...).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import anyio

from mcp_batteries._platform import family

__all__ = ["PORTABLE_STOP_SIGNALS", "on_reopen_signal", "stop_signals"]

#: What the portable family listens to: those of these that exist on the platform.
PORTABLE_STOP_SIGNALS: Final = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGBREAK") if hasattr(signal, name)
)


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # another anyio backend (trio)
        return None


@asynccontextmanager
async def stop_signals() -> AsyncIterator[AsyncIterator[int]]:
    """An async iterator of the stop signals received while the block runs (signal numbers)."""
    loop = _asyncio_loop()
    if family.active() == "posix" or loop is None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            yield received
        return
    send, receive = anyio.create_memory_object_stream[int](16)
    if threading.current_thread() is not threading.main_thread():
        # Only the main thread may set handlers: an embedded server hears no signals, like any
        # other library code; end of input still stops it.
        async with send, receive:
            yield receive
        return

    def deliver(signum: int) -> None:
        with suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            send.send_nowait(signum)

    def handler(signum: int, frame: Any) -> None:
        # Runs in the main thread between two bytecodes, perhaps inside the loop's own code: hand
        # it over the way another thread would (this also wakes a loop waiting for I/O).
        loop.call_soon_threadsafe(deliver, signum)

    previous = {signum: signal.signal(signum, handler) for signum in PORTABLE_STOP_SIGNALS}
    try:
        async with send, receive:
            yield receive
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def on_reopen_signal(callback: Callable[[], None]) -> bool:
    """Call `callback` (from a signal handler: it must only set a flag) on SIGHUP, the usual
    "reopen your log files" signal of `logrotate` and friends. False where the platform has no
    SIGHUP (Windows) or this is not the main thread (only it may set handlers)."""
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is None or threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(hangup, lambda signum, frame: callback())
    return True
