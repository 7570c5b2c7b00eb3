"""The one directory walker behind directory_tree, search_files, grep and resources/list.

Safety rules, by construction rather than by a check done earlier:

* Symlinks are never followed: entry types come from ``os.scandir`` without following, a
  symlink is reported as a symlink (with its target text) and never entered.
* Nothing swapped in during the walk is followed either. Each directory is opened without
  following a link and must still be the directory that was listed (same device and inode); a
  file is opened the same way and must be the file that was listed (``Files.reopen_directory`` /
  ``reopen_file`` of the runtime's platform seam, through ``mcp_batteries.safety``). A directory
  or file that changed in between (for instance a parent replaced by a symlink to ``/etc``) is
  skipped and counted in ``changed``, so a walk can never list or read outside its root.
* The walk stops at ``max_visited`` entries and checks its ``CancelToken`` before each directory,
  so a cancelled request stops within one directory's work.
* Our own temporary files (``tempfiles``) are never listed; stale ones are removed when ``tidy``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_batteries.errors import InvalidInput
from mcp_batteries.safety import AllowedDirectories, Directory, open_directory, reopen_directory, reopen_file
from mcp_batteries.work import NEVER, CancelToken

from mcp_filesystem.patterns import ExcludeMatcher, IgnoreLayer, gitignored, parse_gitignore
from mcp_filesystem.tempfiles import is_temp_name, remove_if_stale

Progress = Callable[[int, str], None]
"""Called with (entries visited so far, directory being read). It may raise to abort the walk."""

PROGRESS_EVERY = 500
MAX_GITIGNORE_BYTES = 1 << 20

FILE, DIRECTORY, SYMLINK, OTHER = "file", "directory", "symlink", "other"

Identity = tuple[int, int]  # (st_dev, st_ino)


@dataclass(slots=True)
class WalkEntry:
    path: str  # absolute path (root joined with the relative path)
    rel: str  # relative to the walk root, "/"-separated
    name: str
    kind: str  # FILE, DIRECTORY, SYMLINK or OTHER (fifo, socket, device)
    depth: int  # 1 for the root's own children
    identity: Identity | None  # what opening it must find (directories and files)
    target: str | None = None  # a symlink's target text (never resolved)


@dataclass(slots=True)
class Scanned:
    entries: list[WalkEntry]
    layers: tuple[IgnoreLayer, ...]  # .gitignore layers in force inside this directory


@dataclass
class Walker:
    """Reads directories under ``root`` applying excludes and (optionally) .gitignore files.

    Build it with ``Walker.open`` (which checks the root against the allowed directories).
    ``max_visited`` bounds the work of one call: once that many entries have been read the walk
    stops and ``hit_visit_limit`` is set, so callers can say their answer is incomplete.
    """

    root: str
    root_identity: Identity
    excludes: ExcludeMatcher = field(default_factory=lambda: ExcludeMatcher.compile([]))
    respect_gitignore: bool = False
    progress: Progress | None = None
    max_visited: int = 1_000_000
    cancel: CancelToken = NEVER
    tidy: bool = False  # remove stale temporary files of ours when met
    skip_dir: Callable[[str], bool] | None = None  # directory names never entered (resources/list)
    visited: int = 0
    unreadable_dirs: int = 0
    changed: int = 0  # entries skipped because they were replaced while the walk ran
    hit_visit_limit: bool = False
    _next_progress: int = PROGRESS_EVERY

    @classmethod
    def open(
        cls,
        allowed: AllowedDirectories,
        root: Path,
        exclude_patterns: Sequence[str] = (),
        *,
        respect_gitignore: bool = False,
        progress: Progress | None = None,
        max_visited: int = 1_000_000,
        cancel: CancelToken = NEVER,
        tidy: bool = False,
        skip_dir: Callable[[str], bool] | None = None,
    ) -> Walker:
        """A walker over ``root``, a path from ``resolve_path``: the root is opened component by
        component from its allowed directory (``open_directory``), so it is really inside."""
        with open_directory(root, allowed) as directory:
            st = directory.fstat()
        return cls(
            root=os.fspath(root),
            root_identity=(st.st_dev, st.st_ino),
            excludes=ExcludeMatcher.compile(exclude_patterns),
            respect_gitignore=respect_gitignore,
            progress=progress,
            max_visited=max_visited,
            cancel=cancel,
            tidy=tidy,
            skip_dir=skip_dir,
        )

    def root_entry(self) -> WalkEntry:
        return WalkEntry(self.root, "", os.path.basename(self.root), DIRECTORY, 0, self.root_identity)

    def _open_dir(self, entry: WalkEntry) -> Directory | None:
        try:
            directory = reopen_directory(entry.path, entry.identity) if entry.identity else None
        except OSError:
            # Unreadable (permissions), vanished, or now a symlink (never followed): skip, but count.
            self.unreadable_dirs += 1
            return None
        if directory is None:
            self.changed += 1  # a parent was swapped for a symlink since the listing: not ours to read
        return directory

    def scan(self, directory: WalkEntry, layers: tuple[IgnoreLayer, ...] = ()) -> Scanned:
        """List one directory: excluded and git-ignored entries dropped, sorted by name.

        ``layers`` are the .gitignore layers of the directory's parents; the directory's own
        .gitignore is read here and returned with them for its children.
        """
        self.cancel.check()
        if self.hit_visit_limit:
            return Scanned([], layers)
        opened = self._open_dir(directory)
        if opened is None:
            return Scanned([], layers)
        try:
            if self.respect_gitignore:
                own = self._load_gitignore(opened, directory.rel)
                if own is not None:
                    layers = (*layers, own)
            try:
                with opened.scandir() as it:
                    raw = list(it)
            except OSError:
                self.unreadable_dirs += 1
                return Scanned([], layers)
            raw.sort(key=lambda e: e.name)
            return Scanned(self._entries(opened, directory, raw, layers), layers)
        finally:
            opened.close()

    def _entries(
        self,
        opened: Directory,
        directory: WalkEntry,
        raw: list[os.DirEntry[str]],
        layers: tuple[IgnoreLayer, ...],
    ) -> list[WalkEntry]:
        entries: list[WalkEntry] = []
        prefix = f"{directory.rel}/" if directory.rel else ""
        dir_path = directory.path
        base = dir_path if dir_path.endswith("/") else dir_path + "/"
        depth = directory.depth + 1
        device = directory.identity[0] if directory.identity else 0
        for de in raw:
            self.visited += 1
            if self.visited > self.max_visited:
                self.hit_visit_limit = True
                break
            if self.progress is not None and self.visited >= self._next_progress:
                self._next_progress += PROGRESS_EVERY
                self.progress(self.visited, dir_path)
            name = de.name
            if is_temp_name(name):
                if self.tidy:
                    remove_if_stale(opened, name)
                continue
            kind = _kind(de)
            is_dir = kind == DIRECTORY
            entry_rel = prefix + name
            if is_dir and self.skip_dir is not None and self.skip_dir(name):
                continue
            if self.excludes and self.excludes.excluded(entry_rel, is_dir):
                continue
            if self.respect_gitignore:
                if is_dir and name == ".git":
                    continue
                if layers and gitignored(layers, entry_rel, is_dir):
                    continue
            identity: Identity | None = None
            target = None
            if is_dir:
                try:
                    st = de.stat(follow_symlinks=False)  # a mount point has its own device
                except OSError:
                    continue
                identity = (st.st_dev, st.st_ino)
            elif kind == FILE:
                identity = (device, de.inode())
            elif kind == SYMLINK:
                target = read_link(name, opened)
            entries.append(WalkEntry(base + name, entry_rel, name, kind, depth, identity, target))
        return entries

    def _load_gitignore(self, opened: Directory, base: str) -> IgnoreLayer | None:
        try:
            # A .gitignore that is a symlink is not read: reading through it could leave the tree.
            fd = opened.open_file(".gitignore")
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_GITIGNORE_BYTES:
                return None
            text = os.read(fd, MAX_GITIGNORE_BYTES).decode("utf-8", "replace")
        except OSError:
            return None
        finally:
            os.close(fd)
        return parse_gitignore(text, base)

    def walk(self, max_depth: int | None = None) -> Iterator[WalkEntry]:
        """Depth-first, pre-order, entries sorted by name; directories are yielded before their
        contents. Never enters symlinks. The consumer may stop iterating at any time."""
        top = self.scan(self.root_entry())
        stack: list[tuple[Iterator[WalkEntry], tuple[IgnoreLayer, ...]]] = [(iter(top.entries), top.layers)]
        while stack:
            it, layers = stack[-1]
            entry = next(it, None)
            if entry is None:
                stack.pop()
                continue
            yield entry
            if entry.kind == DIRECTORY and (max_depth is None or entry.depth < max_depth):
                children = self.scan(entry, layers)
                if children.entries:
                    stack.append((iter(children.entries), children.layers))

    def open_file(self, entry: WalkEntry) -> int | None:
        """A read fd on a listed regular file, only if it is still that file (else None)."""
        try:
            fd = reopen_file(entry.path, entry.identity) if entry.identity else None
        except OSError:
            return None  # unreadable or vanished
        if fd is None:
            self.changed += 1
        return fd


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


def read_link(name: str, directory: Directory) -> str:
    """The symlink's target text (not resolved: nothing is followed), or '?' if unreadable."""
    try:
        return directory.readlink(name)
    except OSError:
        return "?"


def check_offset(offset: int, skipped: str) -> None:
    """The offset of a page of a walk's results: an integer >= 0, `skipped` saying of what."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInput(f"offset must be an integer >= 0 ({skipped} to skip), got {offset!r}")
