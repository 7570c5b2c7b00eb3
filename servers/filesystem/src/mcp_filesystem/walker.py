"""The one directory walker behind directory_tree, search_files and grep.

Safety rule: symlinks are never followed. Entry types come from ``os.scandir`` with
``follow_symlinks=False``, a symlink is reported as a symlink and never entered, and sizes come
from ``lstat``. Whatever a link points at, nothing outside the tree is listed or read through it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from mcp_filesystem.patterns import ExcludeMatcher, IgnoreLayer, gitignored, parse_gitignore

Progress = Callable[[int, str], None]
"""Called with (entries visited so far, directory being read). It may raise to abort the walk."""

PROGRESS_EVERY = 500
MAX_GITIGNORE_BYTES = 1 << 20

FILE, DIRECTORY, SYMLINK, OTHER = "file", "directory", "symlink", "other"


@dataclass(slots=True)
class WalkEntry:
    path: str  # absolute path (root joined with the relative path)
    rel: str  # relative to the walk root, "/"-separated
    name: str
    kind: str  # FILE, DIRECTORY, SYMLINK or OTHER (fifo, socket, device)
    depth: int  # 1 for the root's own children
    entry: os.DirEntry[str]


@dataclass
class Walker:
    """Reads directories under ``root`` applying excludes and (optionally) .gitignore files.

    ``max_visited`` bounds the work of one call: once that many entries have been read the walk
    stops and ``hit_visit_limit`` is set, so callers can say their answer is incomplete.
    """

    root: str
    excludes: ExcludeMatcher = field(default_factory=lambda: ExcludeMatcher.compile([]))
    respect_gitignore: bool = False
    progress: Progress | None = None
    max_visited: int = 1_000_000
    visited: int = 0
    unreadable_dirs: int = 0
    hit_visit_limit: bool = False
    _next_progress: int = PROGRESS_EVERY

    @classmethod
    def create(
        cls,
        root: os.PathLike[str] | str,
        exclude_patterns: Sequence[str] = (),
        *,
        respect_gitignore: bool = False,
        progress: Progress | None = None,
        max_visited: int = 1_000_000,
    ) -> Walker:
        return cls(
            root=os.fspath(root),
            excludes=ExcludeMatcher.compile(exclude_patterns),
            respect_gitignore=respect_gitignore,
            progress=progress,
            max_visited=max_visited,
        )

    def root_layers(self) -> tuple[IgnoreLayer, ...]:
        """The .gitignore layer of the root itself (files above the root are never consulted)."""
        if not self.respect_gitignore:
            return ()
        layer = self._load_gitignore(os.path.join(self.root, ".gitignore"), "")
        return (layer,) if layer else ()

    def scan(self, dir_path: str, rel: str, depth: int, layers: tuple[IgnoreLayer, ...]) -> list[WalkEntry]:
        """List one directory: excluded and git-ignored entries dropped, sorted by name.

        ``layers`` must already include ``dir_path``'s own .gitignore (see ``child_layers``).
        """
        if self.hit_visit_limit:
            return []
        try:
            with os.scandir(dir_path) as it:
                raw = list(it)
        except OSError:
            # Unreadable (permissions) or vanished since the parent was listed: skip, but count.
            self.unreadable_dirs += 1
            return []
        raw.sort(key=lambda e: e.name)
        entries: list[WalkEntry] = []
        prefix = f"{rel}/" if rel else ""
        for de in raw:
            self.visited += 1
            if self.visited > self.max_visited:
                self.hit_visit_limit = True
                break
            if self.progress is not None and self.visited >= self._next_progress:
                self._next_progress += PROGRESS_EVERY
                self.progress(self.visited, dir_path)
            kind = _kind(de)
            is_dir = kind == DIRECTORY
            entry_rel = prefix + de.name
            if self.excludes and self.excludes.excluded(entry_rel, is_dir):
                continue
            if self.respect_gitignore:
                if is_dir and de.name == ".git":
                    continue
                if layers and gitignored(layers, entry_rel, is_dir):
                    continue
            entries.append(WalkEntry(de.path, entry_rel, de.name, kind, depth, de))
        return entries

    def child_layers(self, entry: WalkEntry, layers: tuple[IgnoreLayer, ...]) -> tuple[IgnoreLayer, ...]:
        """Layers in force inside directory ``entry``: the parent's plus its own .gitignore."""
        if not self.respect_gitignore:
            return layers
        layer = self._load_gitignore(os.path.join(entry.path, ".gitignore"), entry.rel)
        return (*layers, layer) if layer else layers

    def _load_gitignore(self, path: str, base: str) -> IgnoreLayer | None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        # A .gitignore that is a symlink is not read: reading through it could leave the tree.
        if not _is_regular(st.st_mode) or st.st_size > MAX_GITIGNORE_BYTES:
            return None
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as f:
                text = f.read(MAX_GITIGNORE_BYTES).decode("utf-8", "replace")
        except OSError:
            return None
        return parse_gitignore(text, base)

    def walk(self, max_depth: int | None = None) -> Iterator[WalkEntry]:
        """Depth-first, pre-order, entries sorted by name; directories are yielded before their
        contents. Never enters symlinks. The consumer may stop iterating at any time."""
        top_layers = self.root_layers()
        top = self.scan(self.root, "", 1, top_layers)
        stack: list[tuple[Iterator[WalkEntry], tuple[IgnoreLayer, ...]]] = [(iter(top), top_layers)]
        while stack:
            it, layers = stack[-1]
            entry = next(it, None)
            if entry is None:
                stack.pop()
                continue
            yield entry
            if entry.kind == DIRECTORY and (max_depth is None or entry.depth < max_depth):
                sub_layers = self.child_layers(entry, layers)
                children = self.scan(entry.path, entry.rel, entry.depth + 1, sub_layers)
                if children:
                    stack.append((iter(children), sub_layers))


def _kind(de: os.DirEntry[str]) -> str:
    try:
        if de.is_symlink():
            return SYMLINK
        if de.is_dir(follow_symlinks=False):
            return DIRECTORY
        if de.is_file(follow_symlinks=False):
            return FILE
    except OSError:
        pass
    return OTHER


def _is_regular(mode: int) -> bool:
    return stat.S_ISREG(mode)


def read_link(path: str) -> str:
    """The symlink's target text (not resolved: nothing is followed), or '?' if unreadable."""
    try:
        return os.readlink(path)
    except OSError:
        return "?"
