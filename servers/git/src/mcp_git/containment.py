"""Where git may read for a repository: the same containment as mcp-filesystem, for git's own reads.

git follows what a repository's files name: `objects/info/alternates` (other object stores),
symbolic links inside the git directory (a pack, the refs, the whole `objects`), configuration
includes, and, when it reads the working tree, symbolic links to directories. Each could make
the server show what lies outside the directories the operator allowed. The rule, one for all of
them: every place git would read must resolve (symbolic links followed) inside the allowed areas
(`mcp_batteries.safety.AllowedDirectories`, as mcp-filesystem decides it), or the server refuses
with an error that names the file and what it points to. Nothing here runs git; the checks run
when the server (re)reads a repository's configuration (`runner.Git`), before any command.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from mcp_batteries.errors import AccessDenied
from mcp_batteries.safety import AllowedDirectories, quote_name, quote_path, resolve_path, unquote_name

from mcp_git.text import MAX_NAME, clip

__all__ = [
    "allowed_places",
    "check_git_directory_links",
    "check_include",
    "check_object_stores",
    "check_tracked_paths",
]

#: git itself stops following alternates this deep.
MAX_ALTERNATE_DEPTH = 5


def allowed_places(areas: Sequence[Path], *own: Path) -> AllowedDirectories:
    """The operator's areas plus the repository's own directories (a configured repository's git
    directory may lie elsewhere: the operator named that repository)."""
    return AllowedDirectories([p for p in (*areas, *own) if p.is_dir()])


def _outside(what: str, source: Path, target: Path, allowed: AllowedDirectories, effect: str) -> AccessDenied:
    return AccessDenied(
        f"{what} is refused: {quote_path(source)} points to {quote_path(target)}, outside the allowed "
        f"directories ({', '.join(quote_path(r) for r in allowed.roots)}); {effect}"
    )


def check_object_stores(common_dir: Path, allowed: AllowedDirectories, what: str) -> list[Path]:
    """Refuse a repository whose object store, or any store its alternates name (transitively),
    lies outside `allowed`. Returns the alternates files read (their changes must be noticed)."""
    objects = common_dir / "objects"
    real = Path(os.path.realpath(objects))
    if not allowed.contains(real):
        raise _outside(what, objects, real, allowed, "git would read its objects from there")
    read: list[Path] = []
    pending = [(real, 0)]
    seen = {real}
    while pending:
        store, depth = pending.pop()
        alternates = store / "info" / "alternates"
        read.append(alternates)
        try:
            content = alternates.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise AccessDenied(
                f"{what} is refused: {quote_path(alternates)} cannot be read ({exc.strerror})"
            ) from None
        for raw in content.split(b"\n"):
            if not raw or raw.startswith(b"#"):
                continue
            line = os.fsdecode(raw)
            if line.startswith('"'):
                line = unquote_name(line)
            named = Path(line) if os.path.isabs(line) else store / line
            target = Path(os.path.realpath(named))
            if not allowed.contains(target):
                raise _outside(
                    what,
                    alternates,
                    target,
                    allowed,
                    "git would read objects from that store (remove the line, or run `git repack -a -d` "
                    "and delete the file, to use this repository here)",
                )
            if target not in seen and depth + 1 < MAX_ALTERNATE_DEPTH:
                seen.add(target)
                pending.append((target, depth + 1))
    return read


def check_git_directory_links(directories: Iterable[Path], allowed: AllowedDirectories, what: str) -> None:
    """Refuse a git directory holding a symbolic link that resolves outside `allowed` (a pack, a
    loose object, `refs`, `packed-refs`, `logs`, `info/attributes`...): git reads through it.
    `hooks/` is not looked at: git reads nothing there, and hooks never run (core.hooksPath)."""
    visited: set[Path] = set()
    for top in directories:
        real_top = Path(os.path.realpath(top))
        if real_top in visited:
            continue
        stack = [top]
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(directory) as entries:
                    listed = list(entries)
            except OSError:
                continue
            for entry in listed:
                if directory == top and entry.name == "hooks":
                    continue
                if entry.is_symlink():
                    target = Path(os.path.realpath(entry.path))
                    if not allowed.contains(target):
                        raise _outside(
                            what, Path(entry.path), target, allowed, "git would read through that link"
                        )
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
        visited.add(real_top)


def check_include(
    target: Path | None, key: str, value: str, allowed: AllowedDirectories, what: str
) -> Path | None:
    """The real path of a configuration include to read, None when it does not exist (git skips
    it); refuses an include git could not resolve, one outside `allowed`, and anything but a
    regular file (a FIFO or a device would block or feed git)."""
    key = clip(key, MAX_NAME)
    if target is None:
        raise AccessDenied(
            f"{what} is refused: its configuration sets {key} = {clip(value, MAX_NAME)}, which "
            "cannot be resolved to a file; the server reads every included file before git does"
        )
    shown = clip(quote_path(target), MAX_NAME)
    try:
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise AccessDenied(
            f"{what} is refused: {key} names {shown}, which cannot be read ({exc.strerror})"
        ) from None
    real = Path(os.path.realpath(target))
    if not allowed.contains(real):
        raise _outside(what, target, real, allowed, f"{key} would make git read configuration from there")
    if not stat.S_ISREG(st.st_mode):
        raise AccessDenied(f"{what} is refused: {key} names {shown}, which is not a regular file")
    return real


def check_tracked_paths(worktree: Path, tracked: Iterable[bytes], what: str) -> None:
    """Refuse reading the working tree when a tracked file lies behind a symbolic link to a
    directory outside it: git reads tracked files through such links (`git grep` does), although
    `git status` shows them deleted."""
    paths = list(tracked)
    directories: set[bytes] = set()
    for path in paths:
        parent = path.rpartition(b"/")[0]
        while parent and parent not in directories:
            directories.add(parent)
            parent = parent.rpartition(b"/")[0]
    top = os.fsencode(worktree)
    linked: list[bytes] = []
    for directory in directories:
        try:
            if stat.S_ISLNK(os.lstat(top + b"/" + directory).st_mode):
                linked.append(directory)
        except OSError:
            continue
    if not linked:
        return
    allowed = AllowedDirectories([worktree])
    for path in paths:
        through = next((d for d in linked if path.startswith(d + b"/")), None)
        if through is None:
            continue
        try:
            resolve_path(os.fsdecode(top + b"/" + path), allowed, must_exist=False, follow_symlinks=False)
        except AccessDenied:
            raise AccessDenied(
                f"{what} is refused: {quote_name(os.fsdecode(path))} is tracked, but "
                f"{quote_name(os.fsdecode(through))} is a symbolic link to a directory outside the working "
                "tree (git_status shows the file deleted); restore it with git_restore, or search a "
                "revision instead"
            ) from None
