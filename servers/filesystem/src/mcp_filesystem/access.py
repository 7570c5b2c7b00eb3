"""Every tool's first step: the caller's path string, as shown to it, to a safe real path.

Paths reach the model in one reversible form (`mcp_batteries.safety`: git-style C quoting for
names that are not clean text) and come back in that form, so every entry point unquotes before
`resolve_path` checks containment. Everything here runs in the worker thread with the rest of
the tool's work: resolving stats the file system.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp_batteries.safety import (
    AllowedDirectories,
    open_path_for_read,
    quote_name,
    quote_path,
    resolve_path,
    unquote_path,
)

__all__ = ["open_to_read", "quote_name", "quote_path", "resolve"]


def resolve(
    allowed: AllowedDirectories,
    path: str | Path,
    *,
    must_exist: bool = True,
    allow_root_itself: bool = True,
    follow_symlinks: bool = True,
) -> Path:
    """`resolve_path` for a path as the caller wrote it (a `str`): quoted forms
    (`"bad\\377.txt"`, or quoted components `dir/"a\\nb"`) are unquoted first; `file://` URIs
    are percent-decoded. A `Path` is a real name already (from an earlier resolve) and is taken
    as it is."""
    return resolve_path(
        os.fspath(path) if isinstance(path, Path) else unquote_path(path),
        allowed,
        must_exist=must_exist,
        allow_root_itself=allow_root_itself,
        follow_symlinks=follow_symlinks,
    )


def open_to_read(allowed: AllowedDirectories, path: str) -> tuple[int, Path]:
    """`(fd, real path)` of the regular file the caller named, checked and opened in one step
    (`paths.open_path_for_read`: no `realpath` when the path holds no symlink). Caller closes."""
    return open_path_for_read(unquote_path(path), allowed)
