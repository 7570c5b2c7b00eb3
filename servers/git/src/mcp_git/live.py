"""Live repositories: what to watch for each `git://` resource, and whether it really changed.

`mcp_batteries.live.LiveResources` owns interest, watching and notifying; this module says
what to watch and decides what changed:

- `status` watches the working tree (recursively) and the git directory, but only while someone
  subscribes to it; a working tree with more than `max_dirs` directories is not watched (a
  100k-file repository must not exhaust the OS's watches): its status is polled instead;
- `log`, `branches`, `tags`, `commit/REV` and `blob/REV/PATH` watch the git directory precisely:
  `HEAD`, `packed-refs` and `refs/` (loose refs; in the common directory for linked worktrees),
  never the index, lock files or objects that git rewrites all the time. A `git gc` that packs
  refs is seen as the loose ref files vanishing and packed-refs changing;
- the resource list watches each repository's `packed-refs`, `refs/heads` and `refs/tags`
  (branches and tags appear and vanish) and each allowed directory's top level (a repository
  created there).

Raw file events are only hints: a change is notified when the resource's fingerprint (what
it shows: the porcelain status, the refs, the object a revision names) differs from the last
one, so git's own bookkeeping (index refreshes, lock files, objects) never causes a
notification, and a change made by a plain `git` in another terminal always does.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence

import anyio
from mcp_batteries.errors import BatteriesError
from mcp_batteries.live import Changes, Hits, WatchTarget, has_more_directories

from mcp_git.resources import GitUri, fingerprint
from mcp_git.runner import off_loop
from mcp_git.service import GitService

__all__ = ["LiveRepositories"]

logger = logging.getLogger(__name__)

#: How often resources that are not watched are recomputed (seconds).
POLL_INTERVAL = 0.5


def _ref_targets(target: GitUri) -> list[WatchTarget]:
    """HEAD, packed-refs and the loose refs: what moves when HEAD or a ref does (not the index,
    lock files or objects, which git rewrites all the time)."""
    repository = target.repository
    return [
        WatchTarget.file(repository.git_dir / "HEAD"),
        WatchTarget.file(repository.common_dir / "packed-refs"),
        WatchTarget.tree(repository.common_dir / "refs"),
    ]


class LiveRepositories:
    """mcp-git's `LiveSource` (see the module docstring)."""

    poll_interval: float | None = POLL_INTERVAL

    def __init__(self, service: GitService, *, max_dirs: int) -> None:
        self._service = service
        self._max_dirs = max_dirs
        self._prints: dict[str, bytes] = {}
        self._listing_print: bytes | None = None
        #: Status URIs of working trees too big to watch.
        self._polled: set[str] = set()
        self._lock = anyio.Lock()

    # -- what to watch ---------------------------------------------------------------------------
    async def targets(self, uri: str) -> Sequence[WatchTarget]:
        target = await off_loop(self._service.target, self._service.scope, uri)
        self._prints[uri] = await off_loop(self._fingerprint, target)
        repository = target.repository
        if target.kind != "status":
            return _ref_targets(target)
        if await off_loop(has_more_directories, repository.worktree, self._max_dirs):
            logger.info(
                "%s has more than %d directories: its status is polled", repository.worktree, self._max_dirs
            )
            self._polled.add(uri)
            return []
        # The whole working tree, .git included; and, for linked worktrees whose git directory
        # is elsewhere, the index, HEAD and refs (they change the status too).
        return [
            WatchTarget.tree(repository.worktree),
            WatchTarget.file(repository.git_dir / "index"),
            *_ref_targets(target),
        ]

    async def list_targets(self) -> Sequence[WatchTarget]:
        scope = self._service.scope
        repositories = await off_loop(scope.discover)
        watched = [WatchTarget.dir(area.root) for area in scope.areas if not area.repository]
        for repository in repositories:
            common = repository.common_dir
            watched += [
                WatchTarget.file(common / "packed-refs"),
                WatchTarget.tree(common / "refs" / "heads"),
                WatchTarget.tree(common / "refs" / "tags"),
            ]
        self._listing_print = await off_loop(self._service.listing_fingerprint, scope)
        return watched

    # -- what changed ----------------------------------------------------------------------------
    def _fingerprint(self, target: GitUri) -> bytes:
        try:
            return fingerprint(self._service.git(target.repository), target)
        except BatteriesError as exc:
            return f"error: {exc}".encode()

    def _current(self, uri: str) -> bytes:
        try:
            target = self._service.target(self._service.scope, uri)
        except BatteriesError as exc:
            return f"error: {exc}".encode()
        return self._fingerprint(target)

    def _digests(self, uris: Iterable[str], listing: bool) -> tuple[dict[str, str], str | None]:
        """What was seen, for the change bus: the same on every replica that looks at the same
        repository after the same change, so that change is delivered once."""
        digests = {
            uri: hashlib.sha256(self._prints[uri]).hexdigest()[:32] for uri in uris if uri in self._prints
        }
        listed = self._listing_print if listing else None
        return digests, hashlib.sha256(listed).hexdigest()[:32] if listed is not None else None

    async def _changed(self, uris: Iterable[str]) -> set[str]:
        changed: set[str] = set()
        for uri in uris:
            now = await off_loop(self._current, uri)
            if self._prints.get(uri) != now:
                self._prints[uri] = now
                changed.add(uri)
        return changed

    async def _listing_changed(self) -> bool:
        now = await off_loop(self._service.listing_fingerprint, self._service.scope)
        if now == self._listing_print:
            return False
        self._listing_print = now
        return True

    async def resolve(self, hits: Hits) -> Changes:
        async with self._lock:
            updated = await self._changed(hits.uris)
            listing = hits.listing and await self._listing_changed()
            digests, list_digest = self._digests(updated, listing)
        return Changes(frozenset(updated), listing, digests, list_digest)

    async def poll(self, uris: frozenset[str]) -> Changes:
        self._polled &= uris
        if not self._polled:
            return Changes()
        async with self._lock:
            updated = await self._changed(sorted(self._polled))
            return Changes(frozenset(updated), False, self._digests(updated, False)[0])

    async def recheck(self, uris: frozenset[str], listing: bool) -> Changes:
        """After the server changed a repository itself: what its subscribers should hear now
        (the watcher's later report of the same change then finds nothing new)."""
        async with self._lock:
            updated = await self._changed(uris)
            list_changed = listing and await self._listing_changed()
            digests, list_digest = self._digests(updated, list_changed)
        return Changes(frozenset(updated), list_changed, digests, list_digest)
