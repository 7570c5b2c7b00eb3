"""How a request becomes a `tools.Job` run in a worker thread: the caller's scope (the allowed
directories narrowed by its roots), cancellation and progress. The glue `server.py` registers with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp_batteries.live import RootsTracker
from mcp_batteries.safety import AllowedDirectories
from mcp_batteries.work import in_thread, progress_reporter, run_cancellable

from mcp_filesystem.tools import Job

T = TypeVar("T")


class Calls:
    """Runs `tools` functions for a request (`ctx`) or a session."""

    def __init__(self, roots: RootsTracker[AllowedDirectories], *, tidy: bool) -> None:
        self._roots = roots
        self._tidy = tidy

    async def quick(self, ctx: Any, fn: Callable[..., T], /, *args: Any) -> T:
        """A bounded call (one file, one directory): a worker thread, no cancellation checks."""
        scope = await self._roots.effective(ctx.session)
        return await in_thread(fn, Job(scope, tidy=self._tidy), *args)

    async def inline(self, ctx: Any, fn: Callable[..., T], /, *args: Any) -> T:
        """A call with no I/O (it formats what the server already holds), on the event loop: a
        worker-thread hop costs more than the call itself (bench/http_calls.py)."""
        scope = await self._roots.effective(ctx.session)
        return fn(Job(scope, tidy=self._tidy), *args)

    async def long(self, ctx: Any, fn: Callable[..., T], /, *args: Any) -> T:
        """A walk or a search: reports progress, and stops when the request is cancelled."""
        scope = await self._roots.effective(ctx.session)
        report = progress_reporter(ctx.report_progress)
        return await run_cancellable(lambda token: fn(Job(scope, token, report, self._tidy), *args))

    async def inline_for_session(self, session: Any, fn: Callable[..., T], /, *args: Any) -> T:
        """A path check of a session, on the event loop: a few metadata system calls (the
        components' lstat), no file content. Measured under load, a worker-thread hop cost about
        0.5 ms where the check costs tens of microseconds, and a client subscribing to 10,000 files
        pays it 10,000 times (bench/subscriptions.py)."""
        scope = await self._roots.effective(session)
        return fn(Job(scope, tidy=self._tidy), *args)

    async def for_session(self, session: Any, fn: Callable[..., T], /, *args: Any) -> T:
        """Resource requests (list, read, subscribe, complete) of a session, cancellable."""
        scope = await self._roots.effective(session)
        return await run_cancellable(lambda token: fn(Job(scope, token, None, self._tidy), *args))
