"""Public: what differs by operating system, for servers (the seam itself is `_platform/`).

    from mcp_batteries.platform import kill_process_tree, user_data_dir, weaker_guarantee

- `family()`: `"posix"` (Linux, macOS: descriptor-relative opens) or `"portable"` (Windows, or
  forced with `MCP_BATTERIES_PLATFORM=portable`); `weaker_guarantee()`: the sentence a server that
  serves files adds to its instructions when the portable family runs, else None;
- `keep_owner_and_mode`: a replacement file gets the mode (and owner, where allowed) of the file it
  replaces;
- `kill_process_tree`: end a child started with `start_new_session=True` and what it started;
- `address_space_bytes`, `peak_rss_kib`: this process's memory, where the OS tells it;
- `user_data_dir`: where a server keeps its data when the operator names no place.

Directories held without following links are in `mcp_batteries.safety` (`open_directory`,
`open_parent`, `Directory`), since every use of them is a containment rule.
"""

from __future__ import annotations

import os

from mcp_batteries._platform.family import active as family
from mcp_batteries._platform.family import weaker_guarantee
from mcp_batteries._platform.files import current as _files
from mcp_batteries._platform.processes import address_space_bytes, kill_process_tree, peak_rss_kib
from mcp_batteries._platform.userdirs import user_data_dir

__all__ = [
    "address_space_bytes",
    "family",
    "keep_owner_and_mode",
    "kill_process_tree",
    "peak_rss_kib",
    "user_data_dir",
    "weaker_guarantee",
]


def keep_owner_and_mode(fd: int, like: os.stat_result) -> None:
    """Give the new file open at `fd` the permission bits (and owner, when allowed) of `like`."""
    _files().keep_owner_and_mode(fd, like)
