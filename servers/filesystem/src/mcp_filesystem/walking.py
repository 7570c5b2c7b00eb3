"""list_directory, list_directory_with_sizes, directory_tree and search_files.

Outputs follow the reference server's tools (users' prompts depend on them) with bounded size.
Symlinks are never followed: they are shown as links, never entered, and sized with ``lstat``.
Callers pass already-validated paths. Glob and exclude semantics are in ``patterns.py``.
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

from mcp_batteries.errors import AccessDenied, InvalidInput, NotFound

from mcp_filesystem.patterns import compile_glob, has_glob_chars
from mcp_filesystem.walker import DIRECTORY, FILE, SYMLINK, Progress, Walker, read_link

MAX_LIST_ENTRIES = 10_000
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
    paths: list[str]
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


def _scan_one(path: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: (e.name.casefold(), e.name))
    except FileNotFoundError:
        raise NotFound(
            f"Directory not found: {path}; check the path with list_allowed_directories."
        ) from None
    except NotADirectoryError:
        raise InvalidInput(f"{path} is a file, not a directory; read it with read_text_file.") from None
    except PermissionError:
        raise AccessDenied(f"Permission denied reading directory {path}.") from None


def _tag(de: os.DirEntry[str]) -> str:
    if de.is_symlink():
        return "[LINK]"
    return "[DIR]" if de.is_dir(follow_symlinks=False) else "[FILE]"


def _cut_note(shown: int, total: int, what: str) -> str:
    return (
        f"[Showing {shown:,} of {total:,} entries. {what} "
        "Use search_files with a pattern to find specific entries in this directory.]"
    )


def list_directory(path: Path, max_entries: int = MAX_LIST_ENTRIES) -> Listing:
    """Reference format, sorted by name: '[FILE] name', '[DIR] name', and ours '[LINK] name -> target'."""
    entries = _scan_one(path)
    lines = []
    for de in entries[:max_entries]:
        tag = _tag(de)
        suffix = f" -> {read_link(de.path)}" if tag == "[LINK]" else ""
        lines.append(f"{tag} {de.name}{suffix}")
    truncated = len(entries) > max_entries
    if truncated:
        lines.append(_cut_note(max_entries, len(entries), "The listing was cut."))
    text = "\n".join(lines) if entries else "(empty directory)"
    return Listing(text, truncated, len(entries))


def list_directory_with_sizes(
    path: Path, sortBy: Literal["name", "size"] = "name", max_entries: int = MAX_LIST_ENTRIES
) -> Listing:
    """Reference format ('[FILE] name-padded-to-30  size-padded-to-10', '[DIR] name', then totals).

    Sizes come from lstat, so a symlink's size is the link itself, never its target. Symlinks are
    listed as '[LINK] name -> target' and counted separately in the summary.
    """
    if sortBy not in ("name", "size"):
        raise InvalidInput(f"sortBy must be 'name' or 'size', not {sortBy!r}.")
    rows: list[tuple[str, str, int, str]] = []  # tag, name, size, link target
    for de in _scan_one(path):
        tag = _tag(de)
        try:
            size = 0 if tag == "[DIR]" else de.stat(follow_symlinks=False).st_size
        except OSError:
            size = 0
        rows.append((tag, de.name, size, read_link(de.path) if tag == "[LINK]" else ""))
    if sortBy == "size":
        rows.sort(key=lambda r: -r[2])  # stable: ties keep name order
    lines = []
    for tag, name, size, target in rows[:max_entries]:
        if tag == "[DIR]":
            lines.append(f"{tag} {name}")
        elif tag == "[LINK]":
            lines.append(f"{tag} {name.ljust(30)} -> {target}")
        else:
            lines.append(f"{tag} {name.ljust(30)} {format_size(size).rjust(10)}")
    truncated = len(rows) > max_entries
    if truncated:
        lines.append(_cut_note(max_entries, len(rows), "The totals below count every entry."))
    files = sum(1 for r in rows if r[0] == "[FILE]")
    dirs = sum(1 for r in rows if r[0] == "[DIR]")
    links = len(rows) - files - dirs
    total = f"Total: {files} files, {dirs} directories" + (f", {links} symlinks" if links else "")
    combined = sum(r[2] for r in rows if r[0] == "[FILE]")
    lines += ["", total, f"Combined size: {format_size(combined)}"]
    return Listing("\n".join(lines), truncated, len(rows))


def directory_tree(
    path: Path,
    excludePatterns: Sequence[str] = (),
    max_depth: int | None = None,
    respect_gitignore: bool = False,
    *,
    max_entries: int = MAX_TREE_ENTRIES,
    pretty: bool = False,
    progress: Progress | None = None,
) -> TreeResult:
    """The reference's JSON tree, breadth-first so a cut-short answer still shows the top levels.

    Entries: ``{"name", "type": "file"|"directory"|"symlink", "children": [...]}`` — directories
    always have ``children``; symlinks carry ``"target"`` and are never entered. A directory whose
    children were not (fully) listed, because of ``max_depth`` or the entry limit, carries
    ``"truncated": true``. JSON is compact by default (about half the tokens of the reference's
    2-space indent, same structure); ``pretty=True`` gives the reference's indentation.
    """
    if max_depth is not None and max_depth < 1:
        raise InvalidInput("max_depth must be at least 1 (1 lists only the directory's own entries).")
    _scan_one(path)  # the same not-found / not-a-directory errors as list_directory
    walker = Walker.create(
        path, excludePatterns, respect_gitignore=respect_gitignore, progress=progress, max_visited=MAX_VISITED
    )
    tree: list[dict[str, Any]] = []
    root_node: dict[str, Any] = {"children": tree}
    queue = deque([(str(path), "", 0, root_node, walker.root_layers())])
    count = 0
    cut = depth_cut = False
    while queue:
        dir_path, rel, depth, node, layers = queue.popleft()
        if cut:
            node["truncated"] = True
            continue
        for e in walker.scan(dir_path, rel, depth + 1, layers):
            if count >= max_entries:
                cut = True
                node["truncated"] = True
                break
            count += 1
            item: dict[str, Any] = {"name": e.name, "type": e.kind if e.kind != "other" else FILE}
            if e.kind == SYMLINK:
                item["target"] = read_link(e.path)
            elif e.kind == DIRECTORY:
                item["children"] = []
                if max_depth is not None and e.depth >= max_depth:
                    item["truncated"] = True
                    depth_cut = True
                else:
                    queue.append((e.path, e.rel, e.depth, item, walker.child_layers(e, layers)))
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
    if walker.unreadable_dirs:
        notes.append(f"[{walker.unreadable_dirs} directories could not be read (permission denied).]")
    text = "\n\n".join([json_text, *notes])
    return TreeResult(json_text, text, cut or depth_cut, count)


def search_files(
    path: Path,
    pattern: str,
    excludePatterns: Sequence[str] = (),
    *,
    max_results: int = MAX_SEARCH_RESULTS,
    respect_gitignore: bool = False,
    progress: Progress | None = None,
) -> SearchResult:
    """Find files and directories under ``path``; returns absolute paths, depth-first, by name.

    * A pattern with glob characters (``* ? [ {``) is matched like the reference (minimatch,
      ``dot: true``) against the path relative to ``path``: ``*.py`` matches only top-level
      entries, ``**/*.py`` matches at any depth, ``src/**/test_*.py`` under ``src``.
    * A pattern without glob characters is a case-insensitive substring of the entry's name
      (of its relative path if the pattern contains ``/``) — the older reference behaviour.

    Excluded directories are not entered. Symlinks are reported but never followed.
    """
    if not pattern or not pattern.strip():
        raise InvalidInput("pattern must not be empty; use e.g. '**/*.py' or a part of a file name.")
    _scan_one(path)
    walker = Walker.create(
        path, excludePatterns, respect_gitignore=respect_gitignore, progress=progress, max_visited=MAX_VISITED
    )
    is_glob = has_glob_chars(pattern)
    regex = compile_glob(pattern) if is_glob else None
    needle = pattern.casefold()
    on_path = "/" in pattern
    paths: list[str] = []
    truncated = False
    for e in walker.walk():
        if regex is not None:
            hit = regex.match(e.rel) is not None
        else:
            hit = needle in (e.rel if on_path else e.name).casefold()
        if hit:
            if len(paths) >= max_results:
                truncated = True
                break
            paths.append(e.path)
    lines = list(paths)
    if truncated:
        lines.append(
            f"[Stopped after {max_results:,} results; there are more. Use a more specific pattern, "
            "add excludePatterns, or search a subdirectory.]"
        )
    elif walker.hit_visit_limit:
        truncated = True
        lines.append(
            f"[Stopped after visiting {MAX_VISITED:,} entries; results may be incomplete. Search a "
            "subdirectory or add excludePatterns.]"
        )
    if not paths:
        lines.insert(0, "No matches found")
        if is_glob and "/" not in pattern and "**" not in pattern:
            lines.append(
                f"Note: '{pattern}' is matched against paths relative to {path}, so it only matches "
                f"top-level entries; use '**/{pattern}' to search all subdirectories."
            )
    return SearchResult(paths, truncated, "\n".join(lines))
