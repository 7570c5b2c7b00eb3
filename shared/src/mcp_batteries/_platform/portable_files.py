"""The portable family: for platforms without descriptor-relative opens (Windows).

No `dir_fd`, no `O_NOFOLLOW`, no `O_DIRECTORY`, no `/proc`, no `fcntl`: a `PathDirectory` is a
directory's real path plus its identity (device, inode / NTFS file index), and every operation
first proves the path still leads there without a link:

1. `os.path.realpath(path) == path` (Windows: the handle's final path, which also expands 8.3 short
   names and resolves junctions and other reparse points), and
2. `os.stat(path)` is still the directory that was opened (same identity).

A file opened for reading is then proven by identity: `fstat` of the descriptor must be the entry
`lstat` saw (not a link), and on Windows its handle's final path must be the expected one. So the
content of a read never comes from outside. What is weaker than the POSIX family: a directory
swapped for a link during the few microseconds between the check and a write, a creation or a
listing is not excluded (docs/platforms.md says so, and servers say so in their instructions).

Windows differences handled here: junctions and other reparse points count as links; a link to a
directory is removed with `rmdir`; `os.rename` never replaces (so it is the no-replace rename);
directories cannot be opened to `fsync`. On Linux (forced with `MCP_BATTERIES_PLATFORM=portable`)
the same code runs with POSIX names, which is how the escape corpus tests it.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, suppress
from typing import Final

from mcp_batteries._platform.interface import (
    Directory,
    Files,
    Identity,
    RmtreeErrorHandler,
    identity_of,
    is_link_like,
)

__all__ = ["PathDirectory", "PortableFiles"]

WINDOWS: Final = sys.platform == "win32"

_NOINHERIT: Final = getattr(os, "O_NOINHERIT", 0) | getattr(os, "O_CLOEXEC", 0)
_BINARY: Final = getattr(os, "O_BINARY", 0)
# Where it exists (not on Windows), a FIFO put in place after the check must not hang the open.
_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_READ_FLAGS: Final = os.O_RDONLY | _BINARY | _NOINHERIT | _NONBLOCK | getattr(os, "O_NOCTTY", 0)
_NEW_FILE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY | _NOINHERIT


def _swapped(path: str) -> OSError:
    return OSError(errno.ELOOP, "a link was found where a directory was checked", path)


def _not_a_link(path: str) -> os.stat_result:
    st = os.lstat(path)
    if is_link_like(st):
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
    return st


class PathDirectory(Directory):
    """A directory held by its real path and identity, re-proven before every use."""

    __slots__ = ("identity", "path")

    def __init__(self, path: str, identity: Identity) -> None:
        self.path = path
        self.identity = identity

    def _prove(self) -> None:
        """Still reached without a link, and still the directory that was opened."""
        if os.path.realpath(self.path) != self.path:
            raise _swapped(self.path)
        st = os.stat(self.path)
        if identity_of(st) != self.identity or not stat.S_ISDIR(st.st_mode):
            raise _swapped(self.path)

    def _at(self, name: str) -> str:
        if not name or name in (".", "..") or os.sep in name or (os.altsep and os.altsep in name):
            raise OSError(errno.EINVAL, "not a single name", name)
        return os.path.join(self.path, name)

    def lstat(self, name: str) -> os.stat_result:
        self._prove()
        return os.lstat(self._at(name))

    def fstat(self) -> os.stat_result:
        self._prove()
        return os.stat(self.path)

    def open_dir(self, name: str, *, traverse_only: bool = False) -> Directory:
        self._prove()
        path = self._at(name)
        st = _not_a_link(path)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
        real = os.path.realpath(path)  # the stored spelling (case, long name) where the OS gives it
        if os.path.dirname(real) != self.path or identity_of(os.stat(real)) != identity_of(st):
            raise _swapped(path)
        return PathDirectory(real, identity_of(st))

    def open_file(self, name: str) -> int:
        self._prove()
        path = self._at(name)
        before = _not_a_link(path)
        fd = os.open(path, _READ_FLAGS)
        try:
            after = os.fstat(fd)
            if identity_of(after) != identity_of(before):
                raise _swapped(path)  # what was opened is not the entry that was checked
            _prove_handle(fd, path)
            self._prove()
        except BaseException:
            os.close(fd)
            raise
        return fd

    def create_file(self, name: str, mode: int) -> int:
        self._prove()
        path = self._at(name)
        fd = os.open(path, _NEW_FILE_FLAGS, mode)
        try:
            if identity_of(os.fstat(fd)) != identity_of(_not_a_link(path)):
                raise _swapped(path)
            _prove_handle(fd, path)
            self._prove()
        except BaseException:
            os.close(fd)
            raise
        return fd

    def mkdir(self, name: str, mode: int = 0o777) -> None:
        self._prove()
        os.mkdir(self._at(name), mode)

    def unlink(self, name: str) -> None:
        self._prove()
        os.unlink(self._at(name))  # on Windows this also removes a link to a directory, or a junction

    def rmdir(self, name: str) -> None:
        self._prove()
        os.rmdir(self._at(name))

    def replace(self, name: str, into: Directory, new_name: str) -> None:
        target = _path_directory(into)
        self._prove()
        target._prove()
        os.replace(self._at(name), target._at(new_name))

    def rename_noreplace(self, name: str, into: Directory, new_name: str) -> None:
        target = _path_directory(into)
        self._prove()
        target._prove()
        destination = target._at(new_name)
        if not WINDOWS:  # Windows' rename never replaces; elsewhere: check, then rename
            try:
                os.lstat(destination)
            except FileNotFoundError:
                pass
            else:
                raise FileExistsError(errno.EEXIST, "File exists", destination)
        os.rename(self._at(name), destination)

    def readlink(self, name: str) -> str:
        self._prove()
        return os.readlink(self._at(name))

    def scandir(self) -> AbstractContextManager[Iterator[os.DirEntry[str]]]:
        self._prove()
        return os.scandir(self.path)

    def sync(self) -> None:
        """Nothing: a directory cannot be opened to be synced on Windows (NTFS journals renames)."""

    def rmtree(self, name: str, onerror: RmtreeErrorHandler) -> None:
        self._prove()
        path = self._at(name)
        _not_a_link(path)
        # shutil's path-based removal: it does not enter links (nor junctions, on Windows), but a
        # directory swapped for one during the removal is not excluded (docs/platforms.md).
        shutil.rmtree(path, onerror=onerror)

    def close(self) -> None:
        """Nothing is held open."""


def _path_directory(directory: Directory) -> PathDirectory:
    if not isinstance(directory, PathDirectory):
        raise TypeError("directories of two platform families cannot be mixed")
    return directory


def _prove_handle(fd: int, expected: str) -> None:
    """Windows: the opened handle's own final path must be the expected one (a redirection by a
    junction or link swapped in anywhere on the way shows there). Elsewhere nothing can tell."""
    final = _handle_final_path(fd)
    if final is not None and os.path.normcase(final) != os.path.normcase(os.path.realpath(expected)):
        raise _swapped(expected)


if sys.platform == "win32":
    import ctypes
    import msvcrt
    from ctypes import wintypes

    _kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    _GetFinalPathNameByHandleW = _kernel32.GetFinalPathNameByHandleW
    _GetFinalPathNameByHandleW.argtypes = [wintypes.HANDLE, wintypes.LPWSTR, wintypes.DWORD, wintypes.DWORD]
    _GetFinalPathNameByHandleW.restype = wintypes.DWORD

    def _handle_final_path(fd: int) -> str | None:
        handle = msvcrt.get_osfhandle(fd)
        buffer = ctypes.create_unicode_buffer(32768)
        length = _GetFinalPathNameByHandleW(handle, buffer, len(buffer), 0)
        if not length or length >= len(buffer):
            return None
        final = buffer.value
        if final.startswith("\\\\?\\UNC\\"):
            return "\\\\" + final[8:]
        return final[4:] if final.startswith("\\\\?\\") else final

else:

    def _handle_final_path(fd: int) -> str | None:
        return None


class PortableFiles(Files):
    name = "portable"

    def open_root(self, root: str, *, traverse_only: bool = False) -> Directory:
        st = _not_a_link(root)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), root)
        directory = PathDirectory(root, identity_of(st))
        directory._prove()
        return directory

    def reopen_directory(self, path: str, identity: Identity) -> Directory | None:
        st = _not_a_link(path)
        if identity_of(st) != identity or not stat.S_ISDIR(st.st_mode):
            return None
        directory = PathDirectory(path, identity)
        directory._prove()
        return directory

    def reopen_file(self, path: str, identity: Identity) -> int | None:
        before = _not_a_link(path)
        if not stat.S_ISREG(before.st_mode) or identity_of(before) != identity:
            return None
        fd = os.open(path, _READ_FLAGS)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or identity_of(st) != identity:
                os.close(fd)
                return None
            _prove_handle(fd, path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def final_path(self, path: str) -> str | None:
        return None  # `os.path.realpath` is the OS's own resolution here (Windows: the final path)

    def canonical_directory(self, path: str) -> str:
        return path

    def sync_directory(self, path: str) -> None:
        """Nothing: a directory cannot be opened to be synced on Windows."""

    def make_blocking(self, fd: int) -> None:
        if _NONBLOCK:
            os.set_blocking(fd, True)

    def keep_owner_and_mode(self, fd: int, like: os.stat_result) -> None:
        # Windows keeps only a read-only bit in the mode, and owners are ACLs: the replacement
        # inherits its directory's ACL. Where the calls exist (not on Windows before 3.13) the mode
        # bits are carried over; owners are not attempted.
        fchmod = getattr(os, "fchmod", None)
        if fchmod is not None:
            with suppress(OSError):
                fchmod(fd, stat.S_IMODE(like.st_mode))
