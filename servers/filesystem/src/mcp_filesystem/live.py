"""Live files: what clients subscribed to decides what is watched; changes become notifications.

`mcp_batteries.live.LiveResources` owns interest, watching and notifying; this module says what
a `file://` URI means on disk (its real file) and what to watch for list changes (the allowed
directories as trees, or only their top level when they are huge).
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import anyio
from mcp_batteries.live import WatchTarget, has_more_directories
from mcp_batteries.safety import AllowedDirectories, file_uri_to_path, unquote_path

logger = logging.getLogger(__name__)


DEFAULT_MAX_TREE_DIRS = 20_000
CHECKED_MEMORY = 1024


def path_to_uri(path: str | os.PathLike[str]) -> str:
    return Path(path).as_uri()


class LiveFiles:
    """The filesystem's `LiveSource`: a `file://` URI is its file; list changes are the roots' trees."""

    def __init__(self, allowed: AllowedDirectories, *, max_tree_dirs: int = DEFAULT_MAX_TREE_DIRS) -> None:
        self._allowed = allowed
        self._max_tree_dirs = max_tree_dirs
        self._tree_plan: tuple[WatchTarget, ...] | None = None
        # URI -> real path, from the subscription check that just resolved it (saves resolving it
        # twice, each time in a worker thread); bounded, the oldest entries go first.
        self._checked: OrderedDict[str, str] = OrderedDict()

    def uris_of(self, paths: Sequence[str]) -> set[str]:
        """The `file://` URIs of paths a tool was given (relative ones are in the first allowed
        directory, as the tools read them). Blocking: call it in a worker thread."""
        uris = set()
        for given in paths:
            path = Path(unquote_path(given))
            if not path.is_absolute() and self._allowed.roots:
                path = self._allowed.roots[0] / path
            uris.add(path_to_uri(os.path.realpath(path)))
        return uris

    def checked(self, uri: str, real_path: str) -> None:
        """The subscription check resolved `uri` to `real_path`."""
        self._checked[uri] = real_path
        if len(self._checked) > CHECKED_MEMORY:
            self._checked.popitem(last=False)

    async def targets(self, uri: str) -> Sequence[WatchTarget]:
        # The real path: a subscription through a symlink hears about the file it points to.
        real = self._checked.pop(uri, None)
        if real is None:
            real = await anyio.to_thread.run_sync(os.path.realpath, file_uri_to_path(uri))
        return [WatchTarget.file(real)]

    async def list_targets(self) -> Sequence[WatchTarget]:
        """Small roots recursively, huge ones (a home directory) at their top level only.

        Recursive watching costs one OS watch per directory, and the OS caps them (inotify's
        max_user_watches); a tree past `max_tree_dirs` would exhaust the cap for everyone.
        """
        if self._tree_plan is None:
            plan = []
            for root in self._allowed.roots:
                if await anyio.to_thread.run_sync(has_more_directories, root, self._max_tree_dirs):
                    logger.warning(
                        "%s has more than %d directories: resources/list_changed covers its top level only "
                        "(raise --watch-max-dirs to watch deeper)",
                        root,
                        self._max_tree_dirs,
                    )
                    plan.append(WatchTarget.dir(root))
                else:
                    plan.append(WatchTarget.tree(root))
            self._tree_plan = tuple(plan)
        return self._tree_plan
