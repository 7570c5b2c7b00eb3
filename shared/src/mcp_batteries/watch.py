"""One `watchfiles` watcher serving every subscription of a server.

A server says what to watch — single files and directory trees — and gets debounced batches of
changed paths back. Files are watched through their parent directory, because editors save
atomically (write a temporary file, rename it over the original): a watch on the original
inode would go blind after the first save, while the directory sees every rename, delete and
re-creation. A target whose directory is missing is watched through its nearest existing
ancestor, and the watcher restarts itself when a watched directory disappears.

Memory stays bounded under a storm of changes: watchfiles coalesces each debounce window into a
set of distinct paths in Rust, and a batch is handed on as one set.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, suppress
from pathlib import Path
from types import TracebackType

import anyio
from watchfiles import Change, awatch

logger = logging.getLogger(__name__)

ChangeBatch = set[tuple[Change, str]]
ChangeHandler = Callable[[ChangeBatch], Awaitable[None]]

DEFAULT_DEBOUNCE_MS = 150
MIN_BACKOFF_S = 0.05
MAX_BACKOFF_S = 30.0
#: How often (ms) an idle watcher checks that the directories it watches still exist.
PLAN_CHECK_MS = 500


def nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


class WatchService(AbstractAsyncContextManager["WatchService"]):
    """Watches a changing set of files and trees; idle (no watcher at all) when the set is empty."""

    def __init__(self, on_changes: ChangeHandler, *, debounce_ms: int = DEFAULT_DEBOUNCE_MS) -> None:
        self._on_changes = on_changes
        self._debounce_ms = debounce_ms
        self._files: frozenset[Path] = frozenset()
        self._trees: frozenset[Path] = frozenset()
        self._dirs: frozenset[Path] = frozenset()
        self._task: asyncio.Task[None] | None = None
        self._stop: anyio.Event | None = None
        self._lock = anyio.Lock()
        self._last_present: set[Path] = set()
        self.restarts = 0

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def __aenter__(self) -> WatchService:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.set_targets()

    async def set_targets(
        self,
        *,
        files: Iterable[str | os.PathLike[str]] = (),
        trees: Iterable[str | os.PathLike[str]] = (),
        dirs: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        """Replace what is watched; returns once the new watcher is in place.

        `files`: single files. `trees`: directories and everything below them. `dirs`:
        directories and their direct entries only (cheap for huge trees).
        """
        new = (frozenset(map(Path, files)), frozenset(map(Path, trees)), frozenset(map(Path, dirs)))
        async with self._lock:
            if new == (self._files, self._trees, self._dirs) and (self.running or not any(new)):
                return
            self._files, self._trees, self._dirs = new
            await self._stop_watcher()
            if any(new):
                await self._start_watcher()

    async def _stop_watcher(self) -> None:
        if self._task is None:
            return
        assert self._stop is not None
        self._stop.set()
        task, self._task = self._task, None
        task.cancel()
        with suppress(asyncio.CancelledError, Exception):
            await task

    async def _start_watcher(self) -> None:
        self._stop = anyio.Event()
        ready = anyio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(self._stop, ready))
        with anyio.fail_after(10):
            await ready.wait()

    def _watch_roots(self) -> tuple[list[str], list[str]]:
        """(recursive roots, flat directories) to hand to watchfiles."""
        trees = sorted({str(nearest_existing(t)) for t in self._trees})
        flat_dirs = {nearest_existing(f.parent) for f in self._files} | {
            nearest_existing(d) for d in self._dirs
        }
        return trees, sorted({str(d) for d in flat_dirs} - set(trees))

    async def _reconcile(self) -> None:
        """Once the new watches exist: report targets that came or went while none covered them."""
        now = self._present()
        before = self._last_present
        self._last_present = now
        await self._deliver(
            {(Change.deleted, str(p)) for p in before - now} | {(Change.added, str(p)) for p in now - before}
        )

    def _present(self) -> set[Path]:
        return {p for p in self._files | self._trees | self._dirs if p.exists()}

    def _interesting(self, path: str) -> bool:
        p = Path(path)
        if p in self._files or p in self._dirs or p.parent in self._dirs:
            return True
        return any(p == t or t in p.parents for t in self._trees)

    async def _run(self, stop: anyio.Event, ready: anyio.Event) -> None:
        self._last_present = self._present()
        backoff = MIN_BACKOFF_S
        while not stop.is_set():
            plan = self._watch_roots()
            trees, flat = plan
            # watchfiles applies `recursive` to a whole watcher: trees and flat directories
            # (the parents of single files) need one each.
            streams = [
                self._stream(paths, stop, recursive)
                for paths, recursive in ((trees, True), (flat, False))
                if paths
            ]
            started = anyio.current_time()
            await self._pump(streams, ready, plan)
            if not stop.is_set():
                # A watched directory vanished (or reappeared): re-plan on the nearest existing
                # directories. A watcher that keeps failing at once (e.g. the OS limit on
                # inotify watches) is retried ever more slowly, never in a busy loop.
                self.restarts += 1
                quick_failure = anyio.current_time() - started < 1.0
                backoff = min(backoff * 2, MAX_BACKOFF_S) if quick_failure else MIN_BACKOFF_S
                if backoff == MAX_BACKOFF_S:
                    logger.warning("file watching keeps failing; retrying every %.0f s", MAX_BACKOFF_S)
                with anyio.move_on_after(backoff):
                    await stop.wait()

    def _stream(self, paths: list[str], stop: anyio.Event, recursive: bool) -> AsyncIterator[ChangeBatch]:
        return awatch(
            *paths,
            stop_event=stop,
            debounce=self._debounce_ms,
            step=30,
            recursive=recursive,
            ignore_permission_denied=True,
            yield_on_timeout=True,  # idle wake-ups let the loop notice vanished directories
            rust_timeout=PLAN_CHECK_MS,
        )

    async def _pump(
        self, streams: list[AsyncIterator[ChangeBatch]], ready: anyio.Event, plan: tuple[list[str], list[str]]
    ) -> None:
        """Consume every stream until one ends or fails; then the caller re-plans and restarts."""
        async with anyio.create_task_group() as tg:
            pending = len(streams)

            async def consume(stream: AsyncIterator[ChangeBatch]) -> None:
                nonlocal pending
                iterator = stream.__aiter__()
                first = asyncio.ensure_future(iterator.__anext__())
                # One scheduling step runs awatch up to its first blocking wait: by then the OS
                # watches exist, so a change made after set_targets() returns is never missed.
                await asyncio.sleep(0)
                pending -= 1
                if pending == 0:
                    ready.set()
                    await self._reconcile()
                try:
                    batch = await first
                    while True:
                        await self._deliver({c for c in batch if self._interesting(c[1])})
                        if self._watch_roots() != plan:
                            return  # a watched directory vanished or came back: re-plan
                        batch = await iterator.__anext__()
                except (StopAsyncIteration, OSError, RuntimeError) as exc:
                    logger.debug("watch stream ended: %r", exc)
                finally:
                    first.cancel()
                    tg.cancel_scope.cancel()

            for stream in streams:
                tg.start_soon(consume, stream)
        ready.set()

    async def _deliver(self, batch: ChangeBatch) -> None:
        if not batch:
            return
        for change, raw in batch:  # keep _reconcile's notion of what exists in step with events
            path = Path(raw)
            if path in self._files or path in self._trees:
                if change == Change.deleted:
                    self._last_present.discard(path)
                else:
                    self._last_present.add(path)
        try:
            await self._on_changes(batch)
        except Exception:
            logger.exception("change handler failed")
