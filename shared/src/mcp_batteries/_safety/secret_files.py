"""Files that hold secrets (bearer tokens, the tokens file, request-state keys) must be private
to their owner.

As ssh does with a private key: a file that its group or anyone else may read, write or execute
is refused when it is loaded, with the fix in the message. Readable, it lets another account on
the machine take the secret; writable, it lets another account put in one of its own.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from mcp_batteries.errors import ConfigError

__all__ = ["check_private"]

#: Any permission for the group or for others.
OPEN_TO_OTHERS = stat.S_IRWXG | stat.S_IRWXO


def check_private(path: Path, flag: str) -> None:
    """Raise ConfigError (one line: flag, file, mode, fix) unless only the owner has access.

    `path` is followed through symlinks (a mounted secret's link to its data). Windows has no
    POSIX modes: nothing is checked there. A missing file is left to the reader to report.
    """
    if os.name == "nt":
        return
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & OPEN_TO_OTHERS:
        raise ConfigError(
            f"{flag} {path}: its group or others may read or write it (mode "
            f"{stat.S_IMODE(mode):04o}), so another account could take or replace the secret; make it "
            f"private to its owner: chmod 600 {shlex.quote(str(path))}"
        )
