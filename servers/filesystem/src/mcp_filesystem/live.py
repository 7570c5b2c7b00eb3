"""Live files: what clients subscribed to decides what is watched; changes become notifications.

Subscriptions of both eras arrive here as interest keys: `file://` URIs for single files and
`RESOURCE_LIST` for "tell me when files appear or vanish". Subscribed files are watched through
their directories (atomic saves, delete and re-create); the allowed directories are watched as
trees only while someone wants list changes. Nothing is watched while nobody listens.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp_batteries.errors import BatteriesError
from mcp_batteries.notify import RESOURCE_LIST
from mcp_batteries.paths import AllowedDirectories, file_uri_to_path
from mcp_batteries.watch import ChangeBatch, WatchService
from watchfiles import Change

logger = logging.getLogger(__name__)


DEFAULT_MAX_TREE_DIRS = 20_000


def count_dirs(root: Path, cap: int) -> int:
    """Directories under `root` (symlinks not followed), counting stops at `cap`."""
    count, stack = 0, [str(root)]
    while stack and count < cap:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        count += 1
                        stack.append(entry.path)
        except OSError:
            continue
    return count


def path_to_uri(path: str | os.PathLike[str]) -> str:
    return Path(path).as_uri()


class LiveFiles:
    """Maps interest to watch targets, and filesystem changes to resource notifications."""

    def __init__(
        self,
        allowed: AllowedDirectories,
        *,
        resource_updated: Callable[[str], Awaitable[None]],
        list_changed: Callable[[], Awaitable[None]],
        enabled: bool = True,
        max_tree_dirs: int = DEFAULT_MAX_TREE_DIRS,
    ) -> None:
        self._allowed = allowed
        self._resource_updated = resource_updated
        self._list_changed = list_changed
        self._enabled = enabled
        self._uris_by_path: dict[Path, set[str]] = {}
        self._want_list = False
        self._max_tree_dirs = max_tree_dirs
        self._tree_plan: tuple[tuple[Path, ...], tuple[Path, ...]] | None = None
        self.watch = WatchService(self._on_changes)

    async def on_interest(self, keys: frozenset[str]) -> None:
        by_path: dict[Path, set[str]] = {}
        for key in keys:
            if key == RESOURCE_LIST:
                continue
            try:
                real = Path(os.path.realpath(file_uri_to_path(key)))  # noqa: ASYNC240 - one per new URI
            except BatteriesError:
                continue
            by_path.setdefault(real, set()).add(key)
        self._uris_by_path = by_path
        self._want_list = RESOURCE_LIST in keys
        if not self._enabled:
            return
        trees: tuple[Path, ...] = ()
        dirs: tuple[Path, ...] = ()
        if self._want_list:
            trees, dirs = await self._plan_tree_watch()
        await self.watch.set_targets(files=by_path.keys(), trees=trees, dirs=dirs)

    async def _plan_tree_watch(self) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        """Watch small roots recursively and huge ones (a home directory) at their top level only.

        Recursive watching costs one OS watch per directory, and the OS caps them (inotify's
        max_user_watches); a tree past `max_tree_dirs` would exhaust the cap for everyone.
        """
        if self._tree_plan is None:
            trees, dirs = [], []
            for root in self._allowed.roots:
                count = await anyio.to_thread.run_sync(count_dirs, root, self._max_tree_dirs + 1)
                if count > self._max_tree_dirs:
                    logger.warning(
                        "%s has more than %d directories: resources/list_changed covers its top level only "
                        "(raise --watch-max-dirs to watch deeper)",
                        root,
                        self._max_tree_dirs,
                    )
                    dirs.append(root)
                else:
                    trees.append(root)
            self._tree_plan = (tuple(trees), tuple(dirs))
        return self._tree_plan

    async def _on_changes(self, batch: ChangeBatch) -> None:
        updated: set[str] = set()
        structure_changed = False
        for change, raw_path in batch:
            path = Path(raw_path)
            updated |= self._uris_by_path.get(path, set())
            if change in (Change.added, Change.deleted):
                structure_changed = True
        for uri in sorted(updated):
            await self._resource_updated(uri)
        if structure_changed and self._want_list:
            await self._list_changed()
