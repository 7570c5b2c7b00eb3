"""Running blocking work off the event loop, with progress reported from the worker thread."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.from_thread
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
