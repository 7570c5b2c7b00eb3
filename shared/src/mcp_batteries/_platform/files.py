"""The file-system seam: directories that names are looked up in without following links.

A `Directory` is an open directory that was reached without passing through a symbolic link (or,
on Windows, a junction or any other reparse point). Every operation names an entry *in* it: the
entry is never followed when it is a link, and the directory itself cannot be redirected between
the check and the use. How that is proven differs by family:

- `posix_files` holds a directory descriptor (`dir_fd` calls, `O_NOFOLLOW`): nothing above the
  name is looked up again, so a swap cannot redirect it. This is the guarantee the escape tests
  hold every operation to, including under concurrent swaps.
- `portable_files` holds the directory's real path and identity (device, inode / file index):
  before each operation it checks that the path still resolves to itself and is still that
  directory, and files it opens are proven by identity (and on Windows by the handle's final path).
  A swap inside the narrow window between that check and the call is not excluded for writes and
  listings; reads are verified after the open, so their content never comes from outside.

`current()` returns the family's `Files` (family.py decides which); callers go through it on every
use, so a test can switch families in-process (`family.forced`).
"""

from __future__ import annotations

from mcp_batteries._platform import family
from mcp_batteries._platform.interface import Directory, Files, Identity, identity_of, is_link_like

__all__ = ["Directory", "Files", "Identity", "current", "identity_of", "is_link_like"]

_loaded: dict[str, Files] = {}


def current() -> Files:
    """The active family's file operations (the POSIX module is imported only when it is used:
    it imports `fcntl`, which Windows does not have)."""
    name = family.active()
    files = _loaded.get(name)
    if files is None:
        if name == "posix":
            from mcp_batteries._platform.posix_files import PosixFiles

            files = PosixFiles()
        else:
            from mcp_batteries._platform.portable_files import PortableFiles

            files = PortableFiles()
        _loaded[name] = files
    return files
