"""The POSIX family: directory descriptors, `O_NOFOLLOW`, descriptor-relative calls.

Linux and macOS share it; where they differ it branches explicitly:

- Linux opens directories that are only passed through with `O_PATH` (no read permission needed,
  cheaper) and asks the kernel for a path's resolution in one step (`O_PATH` open, then
  `/proc/self/fd`); renames that must not replace use `renameat2(RENAME_NOREPLACE)`.
- macOS has no `O_PATH` (directories are opened read-only) and no `/proc` (paths are resolved
  component by component); `F_GETPATH` gives an open directory's path as the volume stores it
  (its case, on the default case-insensitive APFS); no `renameat2`: a check, then a rename.

This is the code that ran before the seam existed, moved: same flags, same system calls.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, suppress
from typing import Final

from mcp_batteries._platform.interface import Directory, Files, Identity, RmtreeErrorHandler

__all__ = ["FdDirectory", "PosixFiles"]

LINUX: Final = sys.platform.startswith("linux")
MACOS: Final = sys.platform == "darwin"

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
# O_PATH (Linux) opens a directory for traversal only: no read permission needed, cheaper.
_TRAVERSE: Final = getattr(os, "O_PATH", os.O_RDONLY)
_WALK_FLAGS: Final = _TRAVERSE | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# NONBLOCK: opening a FIFO for reading must not wait for a writer. NOCTTY: a tty never
# becomes our controlling terminal. Both are harmless for regular files.
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _CLOEXEC
_NEW_FILE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC

_PROC_FD: Final = "/proc/self/fd/"
_HAS_PROC_FD: Final = hasattr(os, "O_PATH") and os.path.isdir(_PROC_FD)

_RENAME_NOREPLACE: Final = 1


def _load_renameat2() -> Callable[..., int] | None:
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # not glibc/musl with renameat2 (e.g. macOS)
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func


_renameat2 = _load_renameat2()


class FdDirectory(Directory):
    """A directory descriptor; names are looked up relative to it (`dir_fd`)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def lstat(self, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def fstat(self) -> os.stat_result:
        return os.fstat(self.fd)

    def open_dir(self, name: str, *, traverse_only: bool = False) -> Directory:
        return FdDirectory(os.open(name, _WALK_FLAGS if traverse_only else _DIR_FLAGS, dir_fd=self.fd))

    def open_file(self, name: str) -> int:
        return os.open(name, _FILE_FLAGS, dir_fd=self.fd)

    def create_file(self, name: str, mode: int) -> int:
        return os.open(name, _NEW_FILE_FLAGS, mode, dir_fd=self.fd)

    def mkdir(self, name: str, mode: int = 0o777) -> None:
        os.mkdir(name, mode, dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def rmdir(self, name: str) -> None:
        os.rmdir(name, dir_fd=self.fd)

    def replace(self, name: str, into: Directory, new_name: str) -> None:
        os.rename(name, new_name, src_dir_fd=self.fd, dst_dir_fd=_fd(into))

    def rename_noreplace(self, name: str, into: Directory, new_name: str) -> None:
        """Atomic via renameat2 where available (Linux), else check-then-rename (a narrow race
        that can only clobber in-tree files)."""
        dst_fd = _fd(into)
        if _renameat2 is not None:
            if _renameat2(self.fd, os.fsencode(name), dst_fd, os.fsencode(new_name), _RENAME_NOREPLACE) == 0:
                return
            err = ctypes.get_errno()
            # EINVAL may mean "file system lacks NOREPLACE" (or a dir into itself: the plain rename
            # below reports that again); ENOSYS: old kernel.
            if err not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise OSError(err, os.strerror(err), new_name)
        try:
            os.stat(new_name, dir_fd=dst_fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(name, new_name, src_dir_fd=self.fd, dst_dir_fd=dst_fd)
            return
        raise FileExistsError(errno.EEXIST, "File exists", new_name)

    def readlink(self, name: str) -> str:
        return os.readlink(name, dir_fd=self.fd)

    def scandir(self) -> AbstractContextManager[Iterator[os.DirEntry[str]]]:
        return os.scandir(self.fd)

    def sync(self) -> None:
        with suppress(OSError):  # some file systems refuse fsync on directories
            os.fsync(self.fd)

    def rmtree(self, name: str, onerror: RmtreeErrorHandler) -> None:
        # rmtree's fd-based implementation never follows symlinks inside the tree.
        shutil.rmtree(name, onerror=onerror, dir_fd=self.fd)

    def close(self) -> None:
        os.close(self.fd)


def _fd(directory: Directory) -> int:
    if not isinstance(directory, FdDirectory):
        raise TypeError("directories of two platform families cannot be mixed")
    return directory.fd


class PosixFiles(Files):
    name = "posix"

    def open_root(self, root: str, *, traverse_only: bool = False) -> Directory:
        # O_NOFOLLOW refuses the root if it has since been replaced by a symlink.
        return FdDirectory(os.open(root, _WALK_FLAGS if traverse_only else _DIR_FLAGS))

    def reopen_directory(self, path: str, identity: Identity) -> Directory | None:
        fd = os.open(path, _DIR_FLAGS)
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != identity:
            os.close(fd)  # a parent was swapped for a symlink since the listing
            return None
        return FdDirectory(fd)

    def reopen_file(self, path: str, identity: Identity) -> int | None:
        fd = os.open(path, _FILE_FLAGS)
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            raise
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != identity:
            os.close(fd)
            return None
        return fd

    def final_path(self, path: str) -> str | None:
        """Linux: the kernel's own resolution of an existing path, in two system calls: open it
        O_PATH (symlinks and `..` resolved exactly as any later open would) and read back the name
        of what was opened. None when that cannot answer (a missing component; no /proc, as on
        macOS): the caller then resolves component by component."""
        if not _HAS_PROC_FD:
            return None
        try:
            fd = os.open(path, os.O_PATH | _CLOEXEC)
        except OSError:
            return None
        try:
            real = os.readlink(f"{_PROC_FD}{fd}")
        except OSError:
            return None
        finally:
            os.close(fd)
        if not real.startswith("/") or real.endswith(" (deleted)"):
            return None  # not a plain path (removed meanwhile, or another namespace)
        return real

    def canonical_directory(self, path: str) -> str:
        if MACOS and hasattr(fcntl, "F_GETPATH"):
            # The volume's own spelling (its case, on case-insensitive APFS), so that paths the
            # client sends in that spelling match the allowed directory as text.
            try:
                fd = os.open(path, _DIR_FLAGS)
            except OSError:
                return path
            try:
                raw = fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024))
            except OSError:
                return path
            finally:
                os.close(fd)
            spelled = os.fsdecode(raw.split(b"\0", 1)[0])
            return spelled if spelled.startswith("/") else path
        return self.final_path(path) or path

    def sync_directory(self, path: str) -> None:
        directory = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def make_blocking(self, fd: int) -> None:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)

    def keep_owner_and_mode(self, fd: int, like: os.stat_result) -> None:
        if (like.st_uid, like.st_gid) != (os.getuid(), os.getgid()):
            with suppress(OSError):  # only possible with privileges; not worth failing
                os.fchown(fd, like.st_uid, like.st_gid)
        os.fchmod(fd, stat.S_IMODE(like.st_mode))  # after chown, which clears setuid
