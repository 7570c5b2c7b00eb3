"""list_directory, list_directory_with_sizes, directory_tree and search_files.

Outputs follow the reference server's tools (users' prompts depend on them) with bounded size.
Each entry point takes the allowed directories and the caller's raw path and checks containment
itself (``access.resolve``); directories are read through descriptors opened component by
component from their allowed root, and symlinks are never followed: they are shown as links,
never entered, and sized with ``lstat``. Names are shown in the one reversible form of
``mcp_batteries.safety`` (git-style quoting when a name is not clean text), which every path
argument accepts back. Glob and exclude semantics are in ``patterns.py``.
"""

from __future__ import annotations

import json
import math
import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcp_batteries.errors import InvalidInput
from mcp_batteries.safety import AllowedDirectories, Directory, open_directory, translate_os_error
from mcp_batteries.work import NEVER, CancelToken

from mcp_filesystem.access import quote_name, quote_path, resolve
from mcp_filesystem.patterns import compile_glob, has_glob_chars
from mcp_filesystem.tempfiles import is_temp_name, remove_if_stale
from mcp_filesystem.walker import (
    DIRECTORY,
    FILE,
    SYMLINK,
    Progress,
    WalkEntry,
    Walker,
    check_offset,
    read_link,
)

MAX_LIST_ENTRIES = 2_000  # one page of list_directory(_with_sizes); `offset` pages on
MAX_TREE_ENTRIES = 20_000
MAX_SEARCH_RESULTS = 1_000
MAX_VISITED = 1_000_000


@dataclass(frozen=True)
class Listing:
    text: str
    truncated: bool
    entries: int  # entries in the directory (all of them, even when the text was truncated)


@dataclass(frozen=True)
class TreeResult:
    json_text: str  # always valid JSON: [{"name", "type", "children"?, "target"?, "truncated"?}]
    text: str  # json_text plus, when cut short, a note on how to see the rest
    truncated: bool
    entries: int


@dataclass(frozen=True)
class SearchResult:
    paths: list[str]  # as shown (quoted where needed)
    truncated: bool
    text: str


def format_size(size: int) -> str:
    """The reference's formatSize: '0 B', '512 B', '1.50 KB', ... up to TB."""
    units = ["B", "KB", "MB", "GB", "TB"]
    if size <= 0:
        return "0 B"
    i = min(math.floor(math.log(size) / math.log(1024)), len(units) - 1)
    if i <= 0:
        return f"{size} B"
    return f"{size / 1024**i:.2f} {units[i]}"


@dataclass(frozen=True, slots=True)
class _Row:
    tag: str  # [FILE], [DIR] or [LINK]
    name: str  # as shown
    size: int  # lstat size (0 for directories)
    target: str  # a link's target as shown, else ""


def _read_directory(allowed: AllowedDirectories, path: str, *, tidy: bool) -> tuple[Path, list[_Row]]:
    """One directory's entries (sorted like the reference: case-folded name), read through a
    descriptor opened component by component from its allowed root."""
    real = resolve(allowed, path)
    if not real.is_dir():
        raise InvalidInput(f"{quote_path(real)} is a file, not a directory; read it with read_text_file.")
    directory = open_directory(real, allowed)
    try:
        with directory.scandir() as it:
            raw = list(it)
        rows = []
        for de in raw:
            if is_temp_name(de.name):
                if tidy:
                    remove_if_stale(directory, de.name)
                continue
            rows.append(_row(de, directory))
    except OSError as exc:
        raise translate_os_error(exc, real) from None
    finally:
        directory.close()
    rows.sort(key=lambda r: (r[0].casefold(), r[0]))
    return real, [row for _, row in rows]


def _row(de: os.DirEntry[str], directory: Directory) -> tuple[str, _Row]:
    try:
        if de.is_symlink():
            return de.name, _Row("[LINK]", quote_name(de.name), 0, quote_path(read_link(de.name, directory)))
        if de.is_dir(follow_symlinks=False):
            return de.name, _Row("[DIR]", quote_name(de.name), 0, "")
        size = de.stat(follow_symlinks=False).st_size
    except OSError:
        size = 0
    return de.name, _Row("[FILE]", quote_name(de.name), size, "")


def _page_note(tool: str, offset: int, shown: int, total: int, extra: str = "") -> str:
    """Where a page of entries sits in the whole listing, and the call that gets the next page."""
    if not shown:
        return f"[No entries at offset {offset:,}: the directory has {total:,}.]"
    first, last = offset + 1, offset + shown
    more = (
        f" Call {tool} with offset={last} for the next page, or search_files with a pattern to find "
        "specific entries."
        if last < total
        else ""
    )
    return f"[Showing entries {first:,}-{last:,} of {total:,}.{extra}{more}]"


def list_directory(
    allowed: AllowedDirectories,
    path: str,
    max_entries: int = MAX_LIST_ENTRIES,
    *,
    offset: int = 0,
    tidy: bool = False,
) -> Listing:
    """Reference format, sorted by name: '[FILE] name', '[DIR] name', and ours '[LINK] name -> target'.

    One page of `max_entries` entries from `offset`; a partial page ends with a note naming the
    next offset."""
    check_offset(offset, "entries")
    _, rows = _read_directory(allowed, path, tidy=tidy)
    page = rows[offset : offset + max_entries]
    lines = []
    for row in page:
        suffix = f" -> {row.target}" if row.tag == "[LINK]" else ""
        lines.append(f"{row.tag} {row.name}{suffix}")
    truncated = offset + len(page) < len(rows)
    if truncated or offset:
        lines.append(_page_note("list_directory", offset, len(page), len(rows)))
    text = "\n".join(lines) if rows else "(empty directory)"
    return Listing(text, truncated, len(rows))


def list_directory_with_sizes(
    allowed: AllowedDirectories,
    path: str,
    sortBy: Literal["name", "size"] = "name",
    max_entries: int = MAX_LIST_ENTRIES,
    *,
    offset: int = 0,
    tidy: bool = False,
) -> Listing:
    """Reference format ('[FILE] name-padded-to-30  size-padded-to-10', '[DIR] name', then totals).

    Sizes come from lstat, so a symlink's size is the link itself, never its target. Symlinks are
    listed as '[LINK] name -> target' and counted separately in the summary. Paged like
    `list_directory`; the totals always count every entry.
    """
    if sortBy not in ("name", "size"):
        raise InvalidInput(f"sortBy must be 'name' or 'size', not {sortBy!r}.")
    check_offset(offset, "entries")
    _, rows = _read_directory(allowed, path, tidy=tidy)
    if sortBy == "size":
        rows.sort(key=lambda r: -r.size)  # stable: ties keep name order
    page = rows[offset : offset + max_entries]
    lines = []
    for row in page:
        if row.tag == "[DIR]":
            lines.append(f"{row.tag} {row.name}")
        elif row.tag == "[LINK]":
            lines.append(f"{row.tag} {row.name.ljust(30)} -> {row.target}")
        else:
            lines.append(f"{row.tag} {row.name.ljust(30)} {format_size(row.size).rjust(10)}")
    truncated = offset + len(page) < len(rows)
    if truncated or offset:
        lines.append(
            _page_note(
                "list_directory_with_sizes", offset, len(page), len(rows), " The totals count every entry."
            )
        )
    files = sum(1 for r in rows if r.tag == "[FILE]")
    dirs = sum(1 for r in rows if r.tag == "[DIR]")
    links = len(rows) - files - dirs
    total = f"Total: {files} files, {dirs} directories" + (f", {links} symlinks" if links else "")
    combined = sum(r.size for r in rows if r.tag == "[FILE]")
    lines += ["", total, f"Combined size: {format_size(combined)}"]
    return Listing("\n".join(lines), truncated, len(rows))


def _walk_root(allowed: AllowedDirectories, path: str, what: str) -> Path:
    real = resolve(allowed, path)
    if not real.is_dir():
        raise InvalidInput(f"{quote_path(real)} is a file, not a directory; {what}")
    return real


def directory_tree(
    allowed: AllowedDirectories,
    path: str,
    excludePatterns: Sequence[str] = (),
    max_depth: int | None = None,
    respect_gitignore: bool = False,
    *,
    max_entries: int = MAX_TREE_ENTRIES,
    pretty: bool = False,
    progress: Progress | None = None,
    cancel: CancelToken = NEVER,
    tidy: bool = False,
) -> TreeResult:
    """The reference's JSON tree, breadth-first so a cut-short answer still shows the top levels.

    Entries: ``{"name", "type": "file"|"directory"|"symlink", "children": [...]}`` — directories
    always have ``children``; symlinks carry ``"target"`` and are never entered. A directory whose
    children were not (fully) listed, because of ``max_depth`` or the entry limit, carries
    ``"truncated": true``. JSON is compact by default (about half the tokens of the reference's
    2-space indent, same structure); ``pretty=True`` gives the reference's indentation. Names are
    shown quoted when they are not clean text (see ``mcp_batteries.safety``).
    """
    if max_depth is not None and max_depth < 1:
        raise InvalidInput("max_depth must be at least 1 (1 lists only the directory's own entries).")
    real = _walk_root(allowed, path, "directory_tree lists directories.")
    walker = Walker.open(
        allowed,
        real,
        excludePatterns,
        respect_gitignore=respect_gitignore,
        progress=progress,
        max_visited=MAX_VISITED,
        cancel=cancel,
        tidy=tidy,
    )
    tree: list[dict[str, Any]] = []
    root_node: dict[str, Any] = {"children": tree}
    queue: deque[tuple[WalkEntry, dict[str, Any], tuple[Any, ...]]] = deque(
        [(walker.root_entry(), root_node, ())]
    )
    count = 0
    cut = depth_cut = False
    while queue:
        directory, node, layers = queue.popleft()
        if cut:
            node["truncated"] = True
            continue
        scanned = walker.scan(directory, layers)
        for e in scanned.entries:
            if count >= max_entries:
                cut = True
                node["truncated"] = True
                break
            count += 1
            item: dict[str, Any] = {"name": quote_name(e.name), "type": e.kind if e.kind != "other" else FILE}
            if e.kind == SYMLINK:
                item["target"] = quote_path(e.target or "?")
            elif e.kind == DIRECTORY:
                item["children"] = []
                if max_depth is not None and e.depth >= max_depth:
                    item["truncated"] = True
                    depth_cut = True
                else:
                    queue.append((e, item, scanned.layers))
            node["children"].append(item)
    cut = cut or walker.hit_visit_limit
    json_text = (
        json.dumps(tree, indent=2, ensure_ascii=False)
        if pretty
        else json.dumps(tree, separators=(",", ":"), ensure_ascii=False)
    )
    notes = []
    if cut:
        notes.append(
            f'[Tree truncated after {count:,} entries; directories marked "truncated": true were not '
            "fully listed. To see more, call directory_tree on one of those subdirectories, set "
            "max_depth, or add excludePatterns (e.g. node_modules, .git, build).]"
        )
    if depth_cut:
        notes.append(
            f'[Directories at depth {max_depth} are not expanded (marked "truncated": true); call '
            "directory_tree on one of them or raise max_depth to see inside.]"
        )
    notes += _walk_notes(walker)
    text = "\n\n".join([json_text, *notes])
    return TreeResult(json_text, text, cut or depth_cut, count)


def _walk_notes(walker: Walker) -> list[str]:
    notes = []
    if walker.unreadable_dirs:
        notes.append(f"[{walker.unreadable_dirs} directories could not be read (permission denied).]")
    if walker.changed:
        notes.append(f"[{walker.changed} entries changed while being read and were skipped.]")
    return notes


def search_files(
    allowed: AllowedDirectories,
    path: str,
    pattern: str,
    excludePatterns: Sequence[str] = (),
    *,
    max_results: int = MAX_SEARCH_RESULTS,
    respect_gitignore: bool = False,
    progress: Progress | None = None,
    offset: int = 0,
    cancel: CancelToken = NEVER,
    tidy: bool = False,
) -> SearchResult:
    """Find files and directories under ``path``; returns absolute paths, depth-first, by name.

    * A pattern with glob characters (``* ? [ {``) is matched like the reference (minimatch,
      ``dot: true``) against the path relative to ``path``: ``*.py`` matches only top-level
      entries, ``**/*.py`` matches at any depth, ``src/**/test_*.py`` under ``src``.
    * A pattern without glob characters is a case-insensitive substring of the entry's name
      (of its relative path if the pattern contains ``/``) — the older reference behaviour.

    Excluded directories are not entered. Symlinks are reported but never followed. Results come
    a page of ``max_results`` at a time, from match number ``offset`` (the walk is sorted, so
    pages are stable while the tree does not change).
    """
    check_offset(offset, "entries")
    if not pattern or not pattern.strip():
        raise InvalidInput("pattern must not be empty; use e.g. '**/*.py' or a part of a file name.")
    real = _walk_root(allowed, path, "search_files searches directories.")
    walker = Walker.open(
        allowed,
        real,
        excludePatterns,
        respect_gitignore=respect_gitignore,
        progress=progress,
        max_visited=MAX_VISITED,
        cancel=cancel,
        tidy=tidy,
    )
    is_glob = has_glob_chars(pattern)
    regex = compile_glob(pattern) if is_glob else None
    needle = pattern.casefold()
    on_path = "/" in pattern
    paths: list[str] = []
    truncated = False
    skipped = 0
    for e in walker.walk():
        if regex is not None:
            hit = regex.match(e.rel) is not None
        else:
            hit = needle in (e.rel if on_path else e.name).casefold()
        if hit:
            if skipped < offset:
                skipped += 1
                continue
            if len(paths) >= max_results:
                truncated = True
                break
            paths.append(quote_path(e.path))
    lines = list(paths)
    if truncated:
        lines.append(
            f"[Showing results {offset + 1:,}-{offset + len(paths):,}; there are more. Call search_files "
            f"with offset={offset + len(paths)} for the next page, or narrow the search with a more "
            "specific pattern, excludePatterns or a subdirectory.]"
        )
    elif walker.hit_visit_limit:
        truncated = True
        lines.append(
            f"[Stopped after visiting {MAX_VISITED:,} entries; results may be incomplete. Search a "
            "subdirectory or add excludePatterns.]"
        )
    if not paths:
        lines.insert(0, "No matches found" if not offset else f"No matches after the first {skipped:,}")
        if is_glob and "/" not in pattern and "**" not in pattern:
            lines.append(
                f"Note: '{pattern}' is matched against paths relative to {quote_path(real)}, so it only "
                f"matches top-level entries; use '**/{pattern}' to search all subdirectories."
            )
    lines += _walk_notes(walker)
    return SearchResult(paths, truncated, "\n".join(lines))
