"""The interface each platform family implements: `Directory` (an open directory whose entries are
acted on by name, never through a link) and `Files` (what starts from a path). files.py picks the
family's implementation; its docstring says what each guarantees.
"""

from __future__ import annotations

import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Final

from mcp_batteries._platform.family import Family

__all__ = ["Directory", "Files", "Identity", "RmtreeErrorHandler", "identity_of", "is_link_like"]

Identity = tuple[int, int]
"""(st_dev, st_ino): what an opened directory or file must still be."""

#: Windows: a reparse point (symbolic link, junction, mount point, cloud placeholder...).
FILE_ATTRIBUTE_REPARSE_POINT: Final = 0x400

RmtreeErrorHandler = Callable[[Any, str, Any], object]


def identity_of(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino)


def is_link_like(st: os.stat_result) -> bool:
    """Whether an `lstat` result is something a lookup would follow: a symbolic link, or on
    Windows any reparse point (junctions are not `S_ISLNK` there, and lead elsewhere just the same)."""
    reparse = getattr(st, "st_file_attributes", 0) & FILE_ATTRIBUTE_REPARSE_POINT
    return stat.S_ISLNK(st.st_mode) or bool(reparse)


class Directory(ABC):
    """An open directory reached without following a link; every name is looked up in it.

    Methods raise `OSError` as the system calls do (ELOOP or ENOTDIR where a link sits at a name
    that must not be one); the caller translates (`_safety.paths.translate_os_error`). Use it as a
    context manager, or `close()` it.
    """

    __slots__ = ()

    @abstractmethod
    def lstat(self, name: str) -> os.stat_result:
        """The entry `name` itself (a link is described, not followed)."""

    @abstractmethod
    def fstat(self) -> os.stat_result:
        """The directory itself."""

    @abstractmethod
    def open_dir(self, name: str, *, traverse_only: bool = False) -> Directory:
        """The subdirectory `name`; a link there fails (ELOOP/ENOTDIR). `traverse_only`: only to
        look names up in (Linux opens it O_PATH: no read permission needed, cheaper)."""

    @abstractmethod
    def open_file(self, name: str) -> int:
        """A read descriptor on `name`, never through a link; the open does not wait on a FIFO (it
        may come back non-blocking: `Files.make_blocking`). The caller checks it is a regular file."""

    @abstractmethod
    def create_file(self, name: str, mode: int) -> int:
        """A write descriptor on a new file `name` (fails if anything, a link included, is there)."""

    @abstractmethod
    def mkdir(self, name: str, mode: int = 0o777) -> None: ...

    @abstractmethod
    def unlink(self, name: str) -> None:
        """Remove a file or a link (the link itself)."""

    @abstractmethod
    def rmdir(self, name: str) -> None: ...

    @abstractmethod
    def replace(self, name: str, into: Directory, new_name: str) -> None:
        """Rename `name` to `into/new_name`, replacing what is there (atomically where the OS can)."""

    @abstractmethod
    def rename_noreplace(self, name: str, into: Directory, new_name: str) -> None:
        """Rename `name` to `into/new_name`; FileExistsError if something is there."""

    @abstractmethod
    def readlink(self, name: str) -> str: ...

    @abstractmethod
    def scandir(self) -> AbstractContextManager[Iterator[os.DirEntry[str]]]:
        """The directory's entries (their types as stored: nothing is followed)."""

    @abstractmethod
    def sync(self) -> None:
        """Make renames in it durable where the OS can (errors ignored: some refuse)."""

    @abstractmethod
    def rmtree(self, name: str, onerror: RmtreeErrorHandler) -> None:
        """Remove the tree at `name`, never following a link inside it."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Directory:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


class Files(ABC):
    """One family's file operations that do not start from an open `Directory`."""

    name: Family

    @abstractmethod
    def open_root(self, root: str, *, traverse_only: bool = False) -> Directory:
        """An allowed directory (a real path resolved at start-up); refused (ELOOP) if it has since
        been replaced by a link."""

    @abstractmethod
    def reopen_directory(self, path: str, identity: Identity) -> Directory | None:
        """The directory at `path` if it is still the one listed (`identity`) and not a link; None
        if something else is there now. OSError if it cannot be opened (gone, unreadable)."""

    @abstractmethod
    def reopen_file(self, path: str, identity: Identity) -> int | None:
        """A read descriptor on the regular file at `path` if it is still the one listed, else None.
        OSError if it cannot be opened (gone, unreadable, a link now)."""

    @abstractmethod
    def final_path(self, path: str) -> str | None:
        """What the OS itself resolves an existing `path` to, in one step, where it can tell (Linux:
        `/proc/self/fd`); None where it cannot, and the caller resolves component by component."""

    @abstractmethod
    def canonical_directory(self, path: str) -> str:
        """An existing directory's real path as the file system spells it (macOS: `F_GETPATH` gives
        the stored case on a case-insensitive volume); `path` itself where nothing better is known."""

    @abstractmethod
    def sync_directory(self, path: str) -> None:
        """Make a rename in the directory at `path` survive a crash, where the OS lets a directory
        be synced (POSIX); nothing where it does not (Windows: NTFS journals its renames)."""

    @abstractmethod
    def make_blocking(self, fd: int) -> None:
        """Undo the non-blocking open of `Directory.open_file` for a regular file about to be read."""

    @abstractmethod
    def keep_owner_and_mode(self, fd: int, like: os.stat_result) -> None:
        """Give a replacement file the permission bits (and owner, when allowed) of the file it replaces."""
