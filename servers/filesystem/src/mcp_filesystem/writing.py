"""write_file (atomic), create_directory, move_file, copy_file, delete_path.

Every mutation happens on a name in a `Directory` obtained by `open_parent` / `open_directory`
(opened component by component from the allowed root without following a link), so no path
lookup above the final name can be redirected by a symlink swapped in after `resolve_path`
checked it (on POSIX; Windows has the weaker guarantee of docs/platforms.md).

Decisions (documented for tool descriptions):

* write_file on a symlink whose target is inside the allowed dirs writes through to the
  target (the link stays a link); one pointing outside is refused by `resolve_path`.
* copy_file copies a top-level symlink's (in-tree) target like `cp`; with `recursive=True`
  symlinks found inside the tree are NOT copied but listed in `CopyResult.skipped`, because a
  relative link recreated at another depth could point somewhere else. FIFOs, sockets and
  devices are skipped the same way.
* move_file and delete_path act on a symlink itself, never on its target.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, UpstreamError
from mcp_batteries.platform import keep_owner_and_mode
from mcp_batteries.safety import (
    AllowedDirectories,
    Directory,
    display_path,
    is_link_like,
    open_directory,
    open_for_read,
    open_parent,
    translate_os_error,
    unquote_path,
)

from mcp_filesystem.access import quote_path, resolve
from mcp_filesystem.encoding import Encoding, encode
from mcp_filesystem.tempfiles import TEMP_PREFIX, is_temp_name, new_temp_name

__all__ = [
    "TEMP_PREFIX",
    "CopyResult",
    "copy_file",
    "copy_file_reply",
    "create_directory",
    "create_directory_reply",
    "delete_path",
    "delete_path_reply",
    "move_file",
    "move_file_reply",
    "write_file",
    "write_file_reply",
]

_CHUNK = 1024 * 1024


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _refuse_if_holds_root(real: Path, allowed: AllowedDirectories, shown: str) -> None:
    # Deleting or moving /a/x must not take the allowed directory /a/x/y with it.
    if any(root != real and _within(root, real) for root in allowed.roots):
        raise AccessDenied(
            f"Access denied: {shown} contains an allowed directory; refusing to remove or move it"
        )


def _existing_regular(directory: Directory, name: str, shown: str) -> os.stat_result | None:
    """Stat of the existing file at `name`, None if absent; refuses non-regular targets."""
    try:
        st = directory.lstat(name)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise translate_os_error(exc, shown) from None
    if stat.S_ISLNK(st.st_mode):
        # resolve_path already followed in-tree links, so a link here was swapped in since.
        raise AccessDenied(f"Access denied: {shown} became a symbolic link while being written; refusing")
    if stat.S_ISDIR(st.st_mode):
        raise InvalidInput(f"{shown} is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInput(f"{shown} is not a regular file (FIFO, socket or device); refusing to replace it")
    return st


def _write_all(fd: int, data: bytes | memoryview) -> int:
    view = memoryview(data)
    total = 0
    while total < len(view):
        total += os.write(fd, view[total:])
    return total


def _replace_atomically(
    directory: Directory,
    name: str,
    shown: str,
    fill: Callable[[int], int],
    like: os.stat_result | None,
    new_mode: int,
) -> int:
    """Write via `fill(fd)` into a fresh temp file beside `name`, fsync, rename over `name`.
    An existing file's permission bits (and owner, when we may) are carried over; a new file
    gets `new_mode` minus the umask."""
    tmp = new_temp_name()  # recognisable: hidden from listings, swept when stale (tempfiles)
    try:
        fd = directory.create_file(tmp, 0o600 if like is not None else new_mode)
    except OSError as exc:
        raise translate_os_error(exc, shown) from None
    try:
        try:
            written = fill(fd)
            if like is not None:
                keep_owner_and_mode(fd, like)
            os.fsync(fd)
        finally:
            os.close(fd)
        directory.replace(tmp, directory, name)
    except BaseException as exc:
        with suppress(OSError):
            directory.unlink(tmp)
        if isinstance(exc, OSError):
            raise translate_os_error(exc, shown) from None
        raise
    directory.sync()  # make the rename durable where the OS can
    return written


def write_file(
    allowed: AllowedDirectories, path: str | Path, content: str | bytes, encoding: Encoding = "utf-8"
) -> int:
    """Create or replace a file atomically; returns the number of bytes written. The parent
    directory must exist (create_directory first). Text is written as UTF-8 (`edit_file` passes
    windows-1252 for a file it read in that encoding)."""
    if isinstance(content, str):
        try:
            data = encode(content, encoding)
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            if encoding == "utf-8":
                raise InvalidInput(
                    f"content holds {bad!r} at position {exc.start}, a lone surrogate that no file can "
                    "store as UTF-8; send text only"
                ) from None
            raise InvalidInput(
                f"the file is in windows-1252 (it is not UTF-8), which cannot hold {bad!r} (position "
                f"{exc.start}); use characters windows-1252 has, or rewrite the whole file as UTF-8 "
                "with write_file"
            ) from None
    else:
        data = bytes(content)
    real = resolve(allowed, path, must_exist=False, allow_root_itself=False)
    shown = display_path(real)
    parent, name = open_parent(real, allowed)
    with parent:
        like = _existing_regular(parent, name, shown)
        return _replace_atomically(parent, name, shown, lambda fd: _write_all(fd, data), like, 0o666)


def create_directory(allowed: AllowedDirectories, path: str) -> Path:
    """mkdir -p inside the allowed directories; every component is created or opened in its
    parent without following a link. Succeeds if the directory already exists."""
    real = resolve(allowed, path, must_exist=False)
    open_directory(real, allowed, create=True).close()
    return real


# --- move --------------------------------------------------------------------------------------


def move_file(allowed: AllowedDirectories, source: str, destination: str) -> Path:
    """Move or rename a file, directory or symlink (the link itself). Fails if the destination
    exists, like the reference server. Across file systems only regular files are moved
    (copied then removed). Returns the new real path."""
    src = resolve(allowed, source, follow_symlinks=False, allow_root_itself=False)
    dst = resolve(allowed, destination, must_exist=False, follow_symlinks=False, allow_root_itself=False)
    shown_src, shown_dst = display_path(src), display_path(dst)
    if src == dst:
        raise InvalidInput(f"source and destination are the same: {shown_src}")
    if _within(dst, src):
        raise InvalidInput(f"cannot move {shown_src} into itself ({shown_dst})")
    _refuse_if_holds_root(src, allowed, shown_src)
    src_dir, src_name = open_parent(src, allowed)
    with src_dir:
        dst_dir, dst_name = open_parent(dst, allowed)
        with dst_dir:
            try:
                src_dir.rename_noreplace(src_name, dst_dir, dst_name)
            except FileExistsError:
                raise InvalidInput(
                    f"destination {shown_dst} already exists; move_file never overwrites"
                ) from None
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise translate_os_error(exc, shown_src) from None
                _move_across_devices(src_dir, src_name, dst_dir, dst_name, shown_src, shown_dst)
    return dst


def _move_across_devices(
    src_dir: Directory, src_name: str, dst_dir: Directory, dst_name: str, shown: str, shown_dst: str
) -> None:
    try:
        st = src_dir.lstat(src_name)
    except OSError as exc:
        raise translate_os_error(exc, shown) from None
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInput(
            f"{shown} is on a different file system than {shown_dst}; only regular files can be moved across "
            "file systems (use copy_file with recursive=True, then delete_path)"
        )
    try:
        exists = _existing_or_none(dst_dir, dst_name) is not None
    except OSError as exc:
        raise translate_os_error(exc, shown_dst) from None
    if exists:
        raise InvalidInput(f"destination {shown_dst} already exists; move_file never overwrites")
    fd = _open_source_file(src_dir, src_name, shown)
    try:
        _replace_atomically(
            dst_dir, dst_name, shown_dst, functools.partial(_copy_fd, fd), None, stat.S_IMODE(st.st_mode)
        )
    finally:
        os.close(fd)
    try:
        src_dir.unlink(src_name)
    except OSError as exc:
        raise translate_os_error(exc, shown) from None


def _existing_or_none(directory: Directory, name: str) -> os.stat_result | None:
    try:
        return directory.lstat(name)
    except FileNotFoundError:
        return None


# --- copy --------------------------------------------------------------------------------------


@dataclass(slots=True)
class CopyResult:
    files: int = 0
    directories: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)  # "relative/path (symlink)" etc.


def _copy_fd(src: int, dst: int) -> int:
    total = 0
    while chunk := os.read(src, _CHUNK):
        total += _write_all(dst, chunk)
    return total


def _open_source_file(directory: Directory, name: str, shown: str) -> int:
    try:
        fd = directory.open_file(name)
    except OSError as exc:
        raise translate_os_error(exc, shown) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InvalidInput(f"{shown} is not a regular file")
    return fd  # O_NONBLOCK has no effect on regular files, so it can stay


def copy_file(
    allowed: AllowedDirectories,
    source: str,
    destination: str,
    overwrite: bool = False,
    recursive: bool = False,
) -> CopyResult:
    """Copy a file (or, with recursive=True, a directory tree). Refuses an existing
    destination unless overwrite=True (then files are replaced atomically and directories
    merged). Permission bits are copied; symlinks and special files inside a tree are skipped
    and reported."""
    src = resolve(allowed, source)
    dst = resolve(allowed, destination, must_exist=False, allow_root_itself=False)
    shown_src, shown_dst = display_path(src), display_path(dst)
    if src == dst:
        raise InvalidInput(f"source and destination are the same: {shown_src}")
    result = CopyResult()
    src_st = os.stat(src)
    if stat.S_ISDIR(src_st.st_mode):
        if not recursive:
            raise InvalidInput(f"{shown_src} is a directory; pass recursive=True to copy a directory tree")
        if _within(dst, src):
            raise InvalidInput(f"cannot copy {shown_src} into itself ({shown_dst})")
        with open_directory(src, allowed) as src_dir:
            parent, name = open_parent(dst, allowed)
            with parent:
                try:
                    existing = _existing_or_none(parent, name)
                    if existing is not None and not overwrite:
                        raise InvalidInput(
                            f"destination {shown_dst} already exists; pass overwrite=True to merge into it"
                        )
                    if existing is None:
                        parent.mkdir(name, stat.S_IMODE(src_st.st_mode) | 0o700)
                        result.directories += 1
                    dst_dir = parent.open_dir(name)
                except OSError as exc:
                    raise translate_os_error(exc, shown_dst) from None
            with dst_dir:
                _copy_tree(src_dir, dst_dir, "", shown_dst, overwrite, result)
        return result

    fd = open_for_read(src, allowed)
    try:
        parent, name = open_parent(dst, allowed)
        with parent:
            like = _existing_regular(parent, name, shown_dst)
            if like is not None and not overwrite:
                raise InvalidInput(
                    f"destination {shown_dst} already exists; pass overwrite=True to replace it"
                )
            fill = functools.partial(_copy_fd, fd)
            mode = stat.S_IMODE(src_st.st_mode)
            result.bytes = _replace_atomically(parent, name, shown_dst, fill, like, mode)
            result.files = 1
    finally:
        os.close(fd)
    return result


def _copy_tree(
    src_dir: Directory, dst_dir: Directory, rel: str, shown_dst: str, overwrite: bool, result: CopyResult
) -> None:
    with src_dir.scandir() as it:
        names = sorted(entry.name for entry in it)
    for name in names:
        if is_temp_name(name):
            continue  # another write's temporary file, not part of the tree
        rel_name = f"{rel}{name}"
        shown = f"{shown_dst}/{display_path(rel_name)}"
        try:
            st = src_dir.lstat(name)
            if is_link_like(st):  # a symbolic link (or, on Windows, a junction)
                result.skipped.append(f"{display_path(rel_name)} (symlink)")
            elif stat.S_ISDIR(st.st_mode):
                with src_dir.open_dir(name) as child_src:  # ENOTDIR if swapped to a link
                    existing = _existing_or_none(dst_dir, name)
                    if existing is None:
                        dst_dir.mkdir(name, stat.S_IMODE(st.st_mode) | 0o700)
                        result.directories += 1
                    elif not overwrite:
                        raise InvalidInput(f"{shown} already exists")
                    with dst_dir.open_dir(name) as child_dst:
                        _copy_tree(child_src, child_dst, f"{rel_name}/", shown_dst, overwrite, result)
            elif stat.S_ISREG(st.st_mode):
                like = _existing_regular(dst_dir, name, shown)
                if like is not None and not overwrite:
                    raise InvalidInput(f"{shown} already exists")
                fd = _open_source_file(src_dir, name, shown)
                try:
                    result.bytes += _replace_atomically(
                        dst_dir,
                        name,
                        shown,
                        functools.partial(_copy_fd, fd),
                        like,
                        stat.S_IMODE(st.st_mode),
                    )
                finally:
                    os.close(fd)
                result.files += 1
            else:
                result.skipped.append(f"{display_path(rel_name)} (special file)")
        except OSError as exc:
            raise translate_os_error(exc, shown) from None


# --- delete ------------------------------------------------------------------------------------


def delete_path(allowed: AllowedDirectories, path: str, recursive: bool = False) -> str:
    """Delete a file, symlink (the link, never its target), empty directory, or — only with
    recursive=True — a directory tree. An allowed directory itself is never deleted.
    Returns what was deleted: "file", "symlink", "directory" or "special file"."""
    real = resolve(allowed, path, follow_symlinks=False, allow_root_itself=False)
    shown = display_path(real)
    parent, name = open_parent(real, allowed)
    with parent:
        try:
            st = parent.lstat(name)
            if not stat.S_ISDIR(st.st_mode) or is_link_like(st):
                parent.unlink(name)
                if is_link_like(st):
                    return "symlink"
                return "file" if stat.S_ISREG(st.st_mode) else "special file"
            _refuse_if_holds_root(real, allowed, shown)
            if not recursive:
                try:
                    parent.rmdir(name)
                except OSError as exc:
                    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                        raise InvalidInput(
                            f"{shown} is a directory that is not empty; pass recursive=True to delete it "
                            "and everything inside"
                        ) from None
                    raise
                return "directory"
        except OSError as exc:
            raise translate_os_error(exc, shown) from None
        failures: list[BatteriesError] = []

        def on_error(
            _func: object, failed: str, info: tuple[type[BaseException], BaseException, object]
        ) -> None:
            exc = info[1]
            failures.append(
                translate_os_error(exc, failed) if isinstance(exc, OSError) else UpstreamError(str(exc))
            )

        parent.rmtree(name, on_error)  # never follows a link inside the tree
        if failures:
            detail = "; ".join(str(f) for f in failures[:5])
            raise type(failures[0])(f"could not delete everything in {shown}: {detail}")
        return "directory"


# --- the tools' replies ------------------------------------------------------------------------


def write_file_reply(allowed: AllowedDirectories, path: str, content: str) -> str:
    written = write_file(allowed, path, content)
    return f"Successfully wrote {written} bytes to {quote_path(unquote_path(path))}"


def create_directory_reply(allowed: AllowedDirectories, path: str) -> str:
    create_directory(allowed, path)
    return f"Successfully created directory {quote_path(unquote_path(path))}"


def move_file_reply(allowed: AllowedDirectories, source: str, destination: str) -> str:
    move_file(allowed, source, destination)
    return f"Successfully moved {quote_path(unquote_path(source))} to {quote_path(unquote_path(destination))}"


def delete_path_reply(allowed: AllowedDirectories, path: str, recursive: bool) -> str:
    kind = delete_path(allowed, path, recursive)
    return f"Deleted {kind} {quote_path(unquote_path(path))}"


def copy_file_reply(
    allowed: AllowedDirectories, source: str, destination: str, overwrite: bool, recursive: bool
) -> str:
    copied = copy_file(allowed, source, destination, overwrite, recursive)
    summary = (
        f"Copied {quote_path(unquote_path(source))} to {quote_path(unquote_path(destination))}: "
        f"{copied.files} file(s), {copied.directories} directories, {copied.bytes} bytes"
    )
    if copied.skipped:
        summary += "\nSkipped (symbolic links and special files are not copied): " + ", ".join(copied.skipped)
    return summary
