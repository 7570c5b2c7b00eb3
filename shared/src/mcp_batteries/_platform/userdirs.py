"""Where a server keeps its own data when the operator names no place: the user's data directory.

Windows: `%LOCALAPPDATA%` (`~\\AppData\\Local`); macOS: `~/Library/Application Support`; elsewhere
`$XDG_DATA_HOME` (`~/.local/share`). Under it, `mcp-batteries/<server>/`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["user_data_dir"]


def user_data_dir(server: str) -> Path:
    """`<the user's data directory>/mcp-batteries/<server>` (not created here)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "mcp-batteries" / server
