"""One watch service per server: OS file watches for a changing set of targets, at O(1) per change.

A server (through `mcp_batteries._live.resources.LiveResources`) adds and removes `WatchTarget`s — single
files, directories (their direct entries) and trees — and gets debounced batches of changed
paths back. The service runs while its owner's lifespan runs (`async with WatchService(...)`),
in a task group of its own.

How targets become OS watches:

- A file is watched through its directory, because editors save atomically (write a temporary
  file, rename it over the original): a watch on the original inode would go blind after the
  first save, while the directory sees every rename, delete and re-creation.
- A target whose directory is missing is watched through its nearest existing ancestor; when the
  missing directory appears, or a watched directory vanishes, those targets are re-planned.
- Watched directories are reference-counted. Adding a target in a directory that is already
  watched costs a dictionary update; removing one never restarts anything (an unused watch is
  dropped at the next rebuild). A new directory joins a small new watcher; watchers of similar
  size are merged (like a log-structured merge), so adding n directories costs O(n log n) OS
  work in all and at most a few watchers (each one an inotify instance and a thread) exist.
- A change is reported once: a directory watch that a tree watch also covers stays silent.

The watchers are `watchfiles`' Rust backend (`RustNotify`), driven directly rather than through
`awatch`: its constructor returns once the OS watches exist, which is what lets `add` return
only when a change made right after it cannot be missed (`awatch` gives no such signal).

By platform (the backend picks the OS facility: inotify on Linux, FSEvents on macOS,
ReadDirectoryChangesW on Windows):

- FSEvents reports paths as the volume spells them: `/private/var/...` for a root watched as
  `/var/...`, the stored case on a case-insensitive volume. Each watcher maps its roots' canonical
  spelling (`_platform.files.canonical_directory`: realpath, then `F_GETPATH` on macOS) back to the
  root as it was given (`_Watcher.aliases`), so targets match whatever the server registered.
  Targets *below* a root are matched as registered: register them in the spelling the file system
  uses (paths from listings or `resolve_path` are).
- FSEvents coalesces: several changes to one path within its latency arrive as one event carrying
  several kinds (created and removed, in an order that need not be the real one). Nothing here
  trusts the kind for more than a hint: a root reported deleted is re-planned from what exists
  now (`nearest_existing`), a directory reported added is looked at again, and every path that
  matches a target is reported whatever its kind. A coalesced event can therefore cost a re-plan
  or an extra notification, never a missed one.
- A tree watch costs one inotify watch per directory on Linux only (`has_more_directories` guards
  that budget everywhere; FSEvents and ReadDirectoryChangesW watch a tree with one handle).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc
import anyio.to_thread
from watchfiles import Change
from watchfiles._rust_notify import RustNotify

from mcp_batteries._platform import files

logger = logging.getLogger(__name__)

__all__ = ["ChangeBatch", "ChangeHandler", "WatchService", "WatchTarget", "has_more_directories"]

ChangeBatch = set[tuple[Change, str]]
ChangeHandler = Callable[[ChangeBatch], Awaitable[None]]

DEFAULT_DEBOUNCE_MS = 150
#: How long one blocking wait in a watcher thread lasts before it looks at its stop flag again.
STEP_MS = 30
WAIT_MS = 1000
#: Merging stops at this many watchers of one kind: beyond it, all of them become one.
MAX_WATCHERS_PER_KIND = 6
MIN_BACKOFF_S = 0.05
MAX_BACKOFF_S = 30.0

TargetKind = Literal["file", "dir", "tree"]


@dataclass(frozen=True)
class WatchTarget:
    """What to watch: a file, a directory's direct entries, or a whole tree."""

    path: Path
    kind: TargetKind

    @classmethod
    def file(cls, path: str | Path) -> WatchTarget:
        return cls(Path(path), "file")

    @classmethod
    def dir(cls, path: str | Path) -> WatchTarget:
        return cls(Path(path), "dir")

    @classmethod
    def tree(cls, path: str | Path) -> WatchTarget:
        return cls(Path(path), "tree")

    @property
    def recursive(self) -> bool:
        return self.kind == "tree"

    @property
    def wanted_dir(self) -> Path:
        """The directory whose OS watch sees this target's changes."""
        return self.path.parent if self.kind == "file" else self.path


def has_more_directories(top: Path, limit: int) -> bool:
    """Whether the tree under `top` holds more than `limit` directories (links not followed).

    A tree watch costs one OS watch per directory (inotify), from a per-user budget: servers ask
    this (in a thread: it walks the tree, stopping past `limit`) before watching a whole tree.
    """
    count = 0
    pending = [os.fsencode(top)]
    while pending and count <= limit:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        count += 1
                        pending.append(entry.path)
        except OSError:
            continue
    return count > limit


def canonical_aliases(roots: frozenset[Path]) -> dict[str, str]:
    """Each root's canonical spelling -> the root as given, for the roots where the two differ."""
    aliases: dict[str, str] = {}
    for root in roots:
        given = str(root)
        try:
            canonical = files.current().canonical_directory(os.path.realpath(given))
        except OSError:
            continue
        if canonical != given:
            aliases[canonical] = given
    return aliases


def as_given(path: str, aliases: dict[str, str]) -> str:
    """A reported path re-spelled under the root as it was given (`canonical_aliases`)."""
    for canonical, given in aliases.items():
        if path == canonical:
            return given
        if path.startswith(canonical) and path[len(canonical) : len(canonical) + 1] == os.sep:
            return given + path[len(canonical) :]
    return path


def nearest_existing(path: Path) -> Path:
    while not path.is_dir() and path != path.parent:
        path = path.parent
    return path


@dataclass(eq=False)
class _Watcher:
    """One `RustNotify` over some roots, all recursive or all not, with the thread that waits on it."""

    roots: frozenset[Path]
    recursive: bool
    notify: RustNotify | None = None
    #: A root's canonical spelling (as FSEvents reports it) -> the root as given, where they differ.
    aliases: dict[str, str] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    #: Held by the thread while it waits on `notify`: whoever else holds it may close `notify`.
    busy: threading.Lock = field(default_factory=threading.Lock)

    def close(self) -> None:
        """Give the OS watch back now (an inotify instance is a scarce per-user resource)."""
        if self.notify is not None:
            self.notify.close()
            self.notify = None

    def wait_for_changes(self, debounce_ms: int, step_ms: int, timeout_ms: int) -> object:
        """In a worker thread: one blocking wait, or "stop" once retired (its OS watch closed)."""
        with self.busy:
            if self.stop.is_set() or self.notify is None:
                return "stop"
            return self.notify.watch(debounce_ms, step_ms, timeout_ms, self.stop)


class WatchService:
    """Watches a changing set of targets; no OS watch at all while the set is empty."""

    def __init__(self, on_changes: ChangeHandler, *, debounce_ms: int = DEFAULT_DEBOUNCE_MS) -> None:
        self._on_changes = on_changes
        self._debounce_ms = debounce_ms
        self._targets: Counter[WatchTarget] = Counter()
        # Targets by what they match: exact files, directories (direct entries), tree roots.
        self._files: Counter[Path] = Counter()
        self._dirs: Counter[Path] = Counter()
        self._trees: Counter[Path] = Counter()
        self._files_by_dir: dict[Path, set[Path]] = {}
        # Wanted directories (recursive flag, directory) -> how many distinct targets need them,
        # and the existing directory (root) whose OS watch covers each.
        self._dir_users: Counter[tuple[bool, Path]] = Counter()
        self._planned: dict[tuple[bool, Path], Path] = {}
        # OS roots -> how many wanted directories they cover.
        self._root_users: Counter[tuple[bool, Path]] = Counter()
        # Directories between a stand-in root and the missing wanted directory: when one of them
        # appears, the wanted directory can be watched deeper.
        self._on_the_way: Counter[Path] = Counter()
        self._watchers: list[_Watcher] = []
        self._root_watcher: dict[tuple[bool, Path], _Watcher] = {}
        self._lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None
        self._limiter = anyio.CapacityLimiter(2 * MAX_WATCHERS_PER_KIND + 4)
        self._backoff = MIN_BACKOFF_S
        #: How many times watchers were (re)started; for tests and diagnostics.
        self.starts = 0

    # -- lifetime ------------------------------------------------------------------------------
    async def __aenter__(self) -> WatchService:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        for watcher in list(self._watchers):
            self._retire(watcher)
        tg, self._tg = self._tg, None
        await tg.__aexit__(None, None, None)

    @property
    def running(self) -> bool:
        """Whether any OS watch exists."""
        return bool(self._watchers)

    @property
    def counts(self) -> tuple[int, int]:
        """(targets watched, OS watch roots): what `/metrics` shows as watched paths."""
        return len(self._targets), len(self._root_watcher)

    @property
    def watched_roots(self) -> frozenset[Path]:
        return frozenset(root for _, root in self._root_watcher)

    # -- targets -------------------------------------------------------------------------------
    async def add(self, target: WatchTarget) -> None:
        """Watch `target` (reference-counted); returns once its changes cannot be missed."""
        async with self._lock:
            self._targets[target] += 1
            if self._targets[target] == 1:
                self._index(target, +1)
                await self._want_dir((target.recursive, target.wanted_dir))

    async def remove(self, target: WatchTarget) -> None:
        """Stop watching `target` (one reference); OS watches are released at the next rebuild."""
        async with self._lock:
            if self._targets[target] <= 0:
                return
            self._targets[target] -= 1
            if self._targets[target] == 0:
                del self._targets[target]
                self._index(target, -1)
                self._unwant_dir((target.recursive, target.wanted_dir))
            if not self._targets:
                for watcher in list(self._watchers):
                    self._retire(watcher)

    def _index(self, target: WatchTarget, delta: int) -> None:
        index = {"file": self._files, "dir": self._dirs, "tree": self._trees}[target.kind]
        index[target.path] += delta
        if index[target.path] <= 0:
            del index[target.path]
        if target.kind == "file":
            siblings = self._files_by_dir.setdefault(target.path.parent, set())
            if delta > 0:
                siblings.add(target.path)
            else:
                siblings.discard(target.path)
                if not siblings:
                    del self._files_by_dir[target.path.parent]

    # -- planning: wanted directories -> OS roots ------------------------------------------------
    async def _want_dir(self, key: tuple[bool, Path]) -> None:
        self._dir_users[key] += 1
        if self._dir_users[key] > 1:
            return
        root = await anyio.to_thread.run_sync(nearest_existing, key[1])
        self._plan(key, root)
        await self._ensure_root(key[0], root)

    def _unwant_dir(self, key: tuple[bool, Path]) -> None:
        self._dir_users[key] -= 1
        if self._dir_users[key] > 0:
            return
        del self._dir_users[key]
        self._unplan(key)

    def _plan(self, key: tuple[bool, Path], root: Path) -> None:
        self._planned[key] = root
        self._root_users[(key[0], root)] += 1
        for step in self._steps(key[1], root):
            self._on_the_way[step] += 1

    def _unplan(self, key: tuple[bool, Path]) -> Path | None:
        root = self._planned.pop(key, None)
        if root is None:
            return None
        self._root_users[(key[0], root)] -= 1
        if self._root_users[(key[0], root)] <= 0:
            del self._root_users[(key[0], root)]
        for step in self._steps(key[1], root):
            self._on_the_way[step] -= 1
            if self._on_the_way[step] <= 0:
                del self._on_the_way[step]
        return root

    @staticmethod
    def _steps(wanted: Path, root: Path) -> list[Path]:
        """The missing directories from just below `root` down to `wanted`."""
        if wanted == root:
            return []
        steps = [wanted]
        steps.extend(p for p in wanted.parents if p != root and root in p.parents)
        return steps

    def _covered_by_tree(self, path: Path) -> bool:
        """Whether a recursive OS root at or above `path` already reports its changes."""
        watched = self._root_watcher
        return (True, path) in watched or any((True, p) in watched for p in path.parents)

    def _is_watched(self, recursive: bool, root: Path) -> bool:
        return (recursive, root) in self._root_watcher or (not recursive and self._covered_by_tree(root))

    async def _ensure_root(self, recursive: bool, root: Path) -> None:
        if (recursive, root) in self._root_watcher:
            return
        if not recursive and self._covered_by_tree(root):
            return
        # A new watcher for the new root, merged with watchers of similar size (a log-structured
        # merge): each root is re-added to the OS O(log n) times in all, and few watchers exist.
        group = {root}
        same_kind = [w for w in self._watchers if w.recursive == recursive]
        while same_kind:
            peer = min(same_kind, key=lambda w: len(w.roots))
            if len(peer.roots) > 2 * len(group) and len(same_kind) < MAX_WATCHERS_PER_KIND:
                break
            same_kind.remove(peer)
            group |= {r for r in peer.roots if (recursive, r) in self._root_users}
            self._retire(peer)
        await self._start(recursive, frozenset(group))
        if recursive:
            await self._recover_uncovered()

    async def _recover_uncovered(self) -> None:
        """Directory roots left unwatched because a tree watch above them was retired."""
        for recursive, root in list(self._root_users):
            if not recursive and (False, root) not in self._root_watcher and not self._covered_by_tree(root):
                await self._ensure_root(False, root)

    async def _start(self, recursive: bool, roots: frozenset[Path]) -> None:
        assert self._tg is not None, "WatchService used outside `async with`"
        watcher = _Watcher(roots, recursive)
        paths = sorted(str(r) for r in roots)
        try:
            watcher.notify = await anyio.to_thread.run_sync(self._new_notify, watcher)
            self._backoff = MIN_BACKOFF_S
        except (OSError, RuntimeError) as exc:
            # A root vanished between planning and watching, or the OS refused more watches
            # (inotify limits): the watcher's task re-plans after a growing delay.
            logger.warning("cannot watch %s: %s", ", ".join(paths[:3]), exc)
        self.starts += 1
        self._watchers.append(watcher)
        for root in roots:
            self._root_watcher[(recursive, root)] = watcher
        self._tg.start_soon(self._run, watcher)

    def _retire(self, watcher: _Watcher) -> None:
        watcher.stop.set()
        # A retired watcher may still queue for a thread behind the live ones: close its OS watch
        # here unless its thread is inside a wait (which then ends within STEP_MS and closes it).
        # Otherwise a burst of merges holds one inotify instance per retired watcher, and the
        # per-user limit (128 by default) is soon hit.
        if watcher.busy.acquire(blocking=False):
            try:
                watcher.close()
            finally:
                watcher.busy.release()
        if watcher in self._watchers:
            self._watchers.remove(watcher)
        for root in watcher.roots:
            if self._root_watcher.get((watcher.recursive, root)) is watcher:
                del self._root_watcher[(watcher.recursive, root)]

    # -- running ---------------------------------------------------------------------------------
    async def _run(self, watcher: _Watcher) -> None:
        try:
            if watcher.stop.is_set():
                return
            if watcher.notify is None:
                await self._retry_later(watcher)
                return
            while not watcher.stop.is_set():
                try:
                    raw = await anyio.to_thread.run_sync(
                        watcher.wait_for_changes, self._debounce_ms, STEP_MS, WAIT_MS, limiter=self._limiter
                    )
                except RuntimeError as exc:
                    # watchfiles cannot hand over a path that is not UTF-8 ("Unable to decode
                    # path"), and it keeps failing on the same pending event: start afresh, and
                    # report every target under this watcher as possibly changed, since which
                    # one changed is lost (over-notifying beats missing a change, or dying).
                    logger.info("file watcher reset (%s); reporting its targets as changed", exc)
                    watcher.close()
                    if watcher.stop.is_set():
                        return
                    watcher.notify = await anyio.to_thread.run_sync(self._new_notify, watcher)
                    await self._dispatch(watcher, self._everything_under(watcher))
                    continue
                if raw == "stop":
                    return
                if isinstance(raw, set) and raw:
                    aliases = watcher.aliases
                    await self._dispatch(watcher, {(Change(c), as_given(p, aliases)) for c, p in raw})
        finally:
            with watcher.busy:  # no thread of this watcher is running any more: only waits briefly
                watcher.close()
            watcher.done.set()

    @staticmethod
    def _new_notify(watcher: _Watcher) -> RustNotify:
        watcher.aliases = canonical_aliases(watcher.roots)
        return RustNotify(sorted(str(r) for r in watcher.roots), False, False, 50, watcher.recursive, True)

    def _everything_under(self, watcher: _Watcher) -> ChangeBatch:
        """Every target a watcher's roots cover, as changed (added, so list targets notice too)."""
        roots = watcher.roots

        def covered(path: Path) -> bool:
            if watcher.recursive:
                return path in roots or any(p in roots for p in path.parents)
            return path in roots or path.parent in roots

        changes: ChangeBatch = set()
        for path in [*self._files, *self._dirs, *self._trees]:
            if covered(path):
                changes.add((Change.added, str(path)))
        return changes

    async def _retry_later(self, watcher: _Watcher) -> None:
        delay, self._backoff = self._backoff, min(self._backoff * 2, MAX_BACKOFF_S)
        if delay >= MAX_BACKOFF_S:
            logger.warning("file watching keeps failing; retrying every %.0f s", MAX_BACKOFF_S)
        await anyio.sleep(delay)  # pacing retries after an OS refusal, not waiting for readiness
        async with self._lock:
            if watcher.stop.is_set():
                return
            self._retire(watcher)
            appeared = await self._replan(set(watcher.roots), set())
        if appeared:
            await self._on_changes(appeared)

    async def _dispatch(self, watcher: _Watcher, batch: ChangeBatch) -> None:
        interesting: ChangeBatch = set()
        vanished: set[Path] = set()
        appeared: set[Path] = set()
        for change, raw in batch:
            path = Path(raw)
            if not watcher.recursive and self._covered_by_tree(path.parent):
                continue  # the tree watch above reports it
            if change == Change.deleted and self._root_watcher.get((watcher.recursive, path)) is watcher:
                vanished.add(path)  # a watched directory vanished: watch from its nearest ancestor
            elif change == Change.added and path in self._on_the_way:
                appeared.add(path)  # a missing directory appeared: watch it directly
            if self._matches(path):
                interesting.add((change, raw))
        if vanished or appeared:
            async with self._lock:
                # The OS watch of a vanished directory is dead even if the directory comes back.
                for path in vanished:
                    dead = self._root_watcher.get((watcher.recursive, path))
                    if dead is not None:
                        self._retire(dead)
                        survivors = frozenset(
                            r
                            for r in dead.roots
                            if r not in vanished and (dead.recursive, r) in self._root_users
                        )
                        if survivors:
                            await self._start(dead.recursive, survivors)
                interesting |= await self._replan(vanished, appeared)
        if interesting:
            try:
                await self._on_changes(interesting)
            except Exception:
                logger.exception("change handler failed")

    def _matches(self, path: Path) -> bool:
        if path in self._files or path in self._dirs or path.parent in self._dirs or path in self._trees:
            return True
        return bool(self._trees) and any(p in self._trees for p in path.parents)

    async def _replan(self, roots: set[Path], appeared: set[Path]) -> ChangeBatch:
        """Re-plan the wanted directories watched through `roots` or at/below `appeared`.

        Each moves to its nearest existing directory, watched. Returns the targets that came
        into existence while only an ancestor was watched (that watch could not see them), as
        `added` changes, so no creation is ever missed.
        """
        affected = [
            key
            for key, root in self._planned.items()
            if root in roots or key[1] in appeared or any(p in appeared for p in key[1].parents)
        ]
        found: ChangeBatch = set()
        for key in affected:
            # Loop: a deeper directory may have been created before the new watch existed.
            while key in self._planned:
                new_root = await anyio.to_thread.run_sync(nearest_existing, key[1])
                old_root = self._planned[key]
                if new_root == old_root and self._is_watched(key[0], new_root):
                    break
                self._unplan(key)
                self._plan(key, new_root)
                stale = self._root_watcher.get((key[0], old_root))
                if stale is not None and (key[0], old_root) not in self._root_users:
                    self._retire(stale)
                    survivors = frozenset(r for r in stale.roots if (key[0], r) in self._root_users)
                    if survivors:
                        await self._start(key[0], survivors)
                await self._ensure_root(key[0], new_root)
            if self._planned.get(key) == key[1]:
                found |= await anyio.to_thread.run_sync(self._existing_targets_in, key[1])
        return found

    def _existing_targets_in(self, directory: Path) -> ChangeBatch:
        found: ChangeBatch = set()
        if directory in self._dirs or directory in self._trees:
            found.add((Change.added, str(directory)))
        for file in self._files_by_dir.get(directory, ()):
            if file.exists():
                found.add((Change.added, str(file)))
        return found
