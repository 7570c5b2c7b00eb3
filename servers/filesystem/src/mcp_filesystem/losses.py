"""What a destructive call would lose, in the words its user is asked to confirm.

`delete_path` loses a file, a link or a tree (every file named with its size, up to a limit);
`copy_file` with overwrite=true loses the destination files it replaces; `write_file` loses the
current content of a file its caller has not read (`ReadLedger`: which
version of which file each caller has read or written). None means nothing would be lost, so
nothing is asked. The descriptions stat without following links; a file's content is read only
to see whether a write would change it.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from mcp_batteries.errors import NotFound
from mcp_batteries.safety import (
    AllowedDirectories,
    Directory,
    display_path,
    is_link_like,
    open_directory,
    open_for_read,
)

from mcp_filesystem.access import resolve

__all__ = [
    "MAX_NAMED",
    "ReadLedger",
    "describe_copy_overwrite",
    "describe_deletion",
    "describe_overwrite",
    "human_size",
]

#: Files named one by one in a question; the rest are counted.
MAX_NAMED = 20
#: Entries a tree's description walks at most (a question must come quickly); beyond, "at least".
MAX_WALKED = 100_000


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes" if size != 1 else "1 byte"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def _modified(st: os.stat_result) -> str:
    return datetime.fromtimestamp(st.st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")


def describe_deletion(allowed: AllowedDirectories, path: str, recursive: bool) -> str | None:
    """What `delete_path(path, recursive)` would destroy, or None (nothing of value, or the call
    will fail anyway and say why: a missing path, a non-empty directory without `recursive`)."""
    try:
        real = resolve(allowed, path, follow_symlinks=False, allow_root_itself=False)
        st = real.lstat()
    except (FileNotFoundError, NotFound):
        return None  # the call itself says so
    shown = display_path(real)
    if is_link_like(st):
        try:
            target = os.readlink(real)
        except OSError:
            target = "?"
        return f"delete the symbolic link {shown} (pointing to {display_path(target)}; the target stays)"
    if stat.S_ISREG(st.st_mode):
        return f"delete the file {shown} ({human_size(st.st_size)}, last modified {_modified(st)})"
    if not stat.S_ISDIR(st.st_mode):
        return f"delete the special file {shown}"
    if not recursive:
        return None  # an empty directory is deleted (nothing lost), a full one is refused
    return _describe_tree(allowed, real, shown)


@dataclass
class _Tally:
    files: list[tuple[str, int]] = field(default_factory=list)
    total: int = 0
    directories: int = 0
    links: int = 0
    others: int = 0
    walked: int = 0

    @property
    def complete(self) -> bool:
        return self.walked < MAX_WALKED


def _tally(directory: Directory, rel: str, tally: _Tally) -> None:
    """Count what is under `directory`, entry by entry through its descriptor (as `rmtree` will
    delete it): a link swapped in for a subdirectory is counted as a link, never followed."""
    with directory.scandir() as entries:
        names = sorted(entry.name for entry in entries)
    for name in names:
        if not tally.complete:
            return
        tally.walked += 1
        try:
            st = directory.lstat(name)
        except OSError:
            continue
        if is_link_like(st):
            tally.links += 1
        elif stat.S_ISDIR(st.st_mode):
            tally.directories += 1
            try:
                child = directory.open_dir(name)
            except OSError:
                continue
            with child:
                _tally(child, f"{rel}{name}/", tally)
        elif stat.S_ISREG(st.st_mode):
            tally.files.append((f"{rel}{name}", st.st_size))
            tally.total += st.st_size
        else:
            tally.others += 1


def _describe_tree(allowed: AllowedDirectories, real: Path, shown: str) -> str | None:
    tally = _Tally()
    with open_directory(real, allowed) as directory:
        _tally(directory, "", tally)
    files = tally.files
    if not (files or tally.links or tally.others or tally.directories):
        return f"delete the empty directory {shown}"
    at_least = "" if tally.complete else "at least "
    parts = [f"{at_least}{len(files)} file{'s' if len(files) != 1 else ''} ({human_size(tally.total)})"]
    if tally.directories:
        parts.append(f"{tally.directories} director{'ies' if tally.directories != 1 else 'y'}")
    if tally.links:
        parts.append(f"{tally.links} symbolic link{'s' if tally.links != 1 else ''}")
    if tally.others:
        parts.append(f"{tally.others} special file{'s' if tally.others != 1 else ''}")
    lines = [f"delete the directory {shown} and everything in it: {', '.join(parts)}"]
    for rel, size in files[:MAX_NAMED]:
        lines.append(f"  {display_path(rel)} ({human_size(size)})")
    if len(files) > MAX_NAMED:
        rest = sum(size for _, size in files[MAX_NAMED:])
        lines.append(f"  ... and {at_least}{len(files) - MAX_NAMED} more files ({human_size(rest)})")
    return "\n".join(lines)


# -- overwriting -----------------------------------------------------------------------------

#: A file's version as its caller saw it: device, inode, size, modification time (ns).
Version = tuple[int, int, int, int]


def _version(st: os.stat_result) -> Version:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ReadLedger:
    """Which version of which file each caller has read or written, most recent first, bounded.

    `write_file` over a file whose current version its caller has seen loses nothing the caller
    does not know; over any other existing file, it asks first. Per process: a caller served by
    another replica is asked (the safe side).
    """

    def __init__(self, capacity: int = 10_000) -> None:
        self._capacity = capacity
        self._seen: OrderedDict[tuple[str, Path], Version] = OrderedDict()
        self._lock = threading.Lock()

    def saw(self, caller: str, real: Path) -> None:
        """Record the version of `real` now on disk as seen by `caller` (after a read or a write)."""
        try:
            st = os.stat(real)
        except OSError:
            return
        with self._lock:
            key = (caller, real)
            self._seen[key] = _version(st)
            self._seen.move_to_end(key)
            while len(self._seen) > self._capacity:
                self._seen.popitem(last=False)

    def saw_path(self, allowed: AllowedDirectories, caller: str, path: str) -> None:
        """`saw` for a path as the caller wrote it (one that fails to resolve is not recorded)."""
        try:
            self.saw(caller, resolve(allowed, path))
        except Exception:
            return

    def has_seen(self, caller: str, real: Path, st: os.stat_result) -> bool:
        with self._lock:
            return self._seen.get((caller, real)) == _version(st)


def describe_overwrite(
    allowed: AllowedDirectories, path: str, content: str, ledger: ReadLedger, caller: str
) -> str | None:
    """What `write_file(path, content)` would lose: the current content of an existing file that
    `caller` has not read (or written) in its current version, unless the content is the same.
    None for a new file, or one the call will refuse anyway (a directory, a special file)."""
    try:
        real = resolve(allowed, path, must_exist=False, allow_root_itself=False)
        st = os.stat(real)
    except (FileNotFoundError, NotFound):
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size == 0 or ledger.has_seen(caller, real, st):
        return None
    new = content.encode("utf-8", "surrogatepass")
    if len(new) == st.st_size:
        try:
            with os.fdopen(open_for_read(real, allowed), "rb") as f:
                if f.read(st.st_size + 1) == new:
                    return None  # the same bytes: nothing lost
        except OSError:
            pass
    return (
        f"replace the file {display_path(real)} ({human_size(st.st_size)}, last modified {_modified(st)}), "
        f"which this client has not read, with {human_size(len(new))} of new content: its current "
        "content will be lost"
    )


def _replaced_in(
    src_dir: Directory, dst_dir: Directory, rel: str, replaced: list[tuple[str, int]], walked: list[int]
) -> None:
    """The non-empty regular files of `dst_dir` that the copy of `src_dir` would replace (as
    `copy_file` walks: through descriptors, links neither followed nor copied)."""
    with src_dir.scandir() as entries:
        names = sorted(entry.name for entry in entries)
    for name in names:
        walked[0] += 1
        if walked[0] > MAX_WALKED:
            return
        try:
            src_st, dst_st = src_dir.lstat(name), dst_dir.lstat(name)
        except OSError:
            continue  # nothing there to replace
        if is_link_like(src_st) or is_link_like(dst_st):
            continue
        if stat.S_ISDIR(src_st.st_mode) and stat.S_ISDIR(dst_st.st_mode):
            try:
                src_child, dst_child = src_dir.open_dir(name), dst_dir.open_dir(name)
            except OSError:
                continue
            with src_child, dst_child:
                _replaced_in(src_child, dst_child, f"{rel}{name}/", replaced, walked)
        elif stat.S_ISREG(src_st.st_mode) and stat.S_ISREG(dst_st.st_mode) and dst_st.st_size > 0:
            replaced.append((f"{rel}{name}", dst_st.st_size))


def describe_copy_overwrite(
    allowed: AllowedDirectories,
    source: str,
    destination: str,
    overwrite: bool,
    recursive: bool,
    ledger: ReadLedger,
    caller: str,
) -> str | None:
    """What `copy_file(..., overwrite=True)` would lose: the destination files it would replace
    (for one file, unless `caller` has seen its current version, as for `write_file`)."""
    if not overwrite:
        return None  # an existing destination is refused
    try:
        src = resolve(allowed, source)
        dst = resolve(allowed, destination, must_exist=False, allow_root_itself=False)
        src_st = os.stat(src)
    except (FileNotFoundError, NotFound):
        return None
    if not stat.S_ISDIR(src_st.st_mode):
        try:
            st = os.lstat(dst)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0 or ledger.has_seen(caller, dst, st):
            return None
        return (
            f"replace the file {display_path(dst)} ({human_size(st.st_size)}, last modified {_modified(st)}) "
            f"with a copy of {display_path(src)}: its current content will be lost"
        )
    if not recursive or not dst.is_dir():
        return None
    replaced: list[tuple[str, int]] = []
    with open_directory(src, allowed) as src_dir, open_directory(dst, allowed) as dst_dir:
        _replaced_in(src_dir, dst_dir, "", replaced, [0])
    if not replaced:
        return None
    total = sum(size for _, size in replaced)
    files = f"{len(replaced)} file{'s' if len(replaced) != 1 else ''}"
    lines = [
        f"replace {files} in {display_path(dst)} ({human_size(total)}) with copies from {display_path(src)}:"
    ]
    lines += [f"  {display_path(rel)} ({human_size(size)})" for rel, size in replaced[:MAX_NAMED]]
    if len(replaced) > MAX_NAMED:
        lines.append(f"  ... and {len(replaced) - MAX_NAMED} more files")
    return "\n".join(lines)
