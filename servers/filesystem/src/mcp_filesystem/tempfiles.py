"""Our own temporary files: named so they can be recognised, hidden from listings, and swept.

`write_file` (and every writer built on it) writes `.mcp-fs-<16 hex>.tmp` beside the target and
renames it into place. A process killed between the two (`kill -9`, power loss) leaves that file
behind. Listings, walks, grep and `resources/list` never show such names, and a walk that meets
one whose last change is older than `STALE_AFTER_S` removes it (unless the server is read-only):
no write of ours goes that long without touching its temporary file. Only names matching the
exact pattern, and only regular files, are ever removed.
"""

from __future__ import annotations

import re
import secrets
import stat
import time
from contextlib import suppress
from typing import Final

from mcp_batteries.safety import Directory

__all__ = ["STALE_AFTER_S", "TEMP_PREFIX", "is_temp_name", "new_temp_name", "remove_if_stale"]

TEMP_PREFIX: Final = ".mcp-fs-"
STALE_AFTER_S: Final = 3600.0
_PATTERN: Final = re.compile(r"\.mcp-fs-[0-9a-f]{16}\.tmp")


def new_temp_name() -> str:
    return f"{TEMP_PREFIX}{secrets.token_hex(8)}.tmp"


def is_temp_name(name: str) -> bool:
    """Whether `name` is one of our temporary files (cheap prefix test first: called per entry)."""
    return name.startswith(TEMP_PREFIX) and _PATTERN.fullmatch(name) is not None


def remove_if_stale(directory: Directory, name: str, *, now: float | None = None) -> bool:
    """Unlink our temporary file `name` in `directory` if it is a regular file untouched for
    `STALE_AFTER_S`; True if removed. Errors (gone already, no permission) are ignored."""
    if not is_temp_name(name):
        return False
    with suppress(OSError):
        st = directory.lstat(name)
        if stat.S_ISREG(st.st_mode) and (now or time.time()) - st.st_mtime > STALE_AFTER_S:
            directory.unlink(name)
            return True
    return False
