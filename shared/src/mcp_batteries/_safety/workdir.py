"""The current directory as a server's default scope, and where it is refused.

A server that touches files (filesystem, git) serves the directories it is given. Given none, it
serves the current directory: convenient in a terminal (`mcp-batteries-filesystem` in a project),
but a client or a service manager chooses that directory, not the person, and they choose wide
ones: Claude Desktop on macOS starts servers in `/`, desktop launchers on Linux start apps in the
home directory, systemd starts services in `/` unless told otherwise, Windows apps often start in
the system directory. Serving any of those would give a model the whole disk or the whole home
with write tools, silently. So the default is refused there, with a message that says what to
pass; anywhere else it is used and said once on stderr (the reference filesystem server, given no
directory, serves only what a client's roots name; ours needs an explicit directory for those).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from mcp_batteries.errors import ConfigError

__all__ = ["current_directory_scope", "too_wide_to_default"]


def too_wide_to_default(
    directory: Path, *, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    """Why `directory` (resolved) is too wide to serve by default, or None when it is not."""
    environ = os.environ if environ is None else environ
    home = home if home is not None else Path.home()
    with contextlib.suppress(OSError):
        home = home.resolve()
    if directory == Path(directory.anchor):
        return "the root of the file system"
    if directory == home:
        return "your home directory"
    if directory in home.parents:
        return "a parent of your home directory"
    system_root = environ.get("SystemRoot")
    if system_root and (directory == Path(system_root) or Path(system_root) in directory.parents):
        return "the Windows system directory"
    return None


def current_directory_scope(command: str, *, setting: str = "directories") -> str:
    """The current directory for a server given no directory, or ConfigError where that is too wide.

    `command` is the server's command as a person types it (`mcp-batteries-filesystem`) and
    `setting` the TOML key that names directories, for the message that says what to pass instead.
    """
    directory = Path.cwd().resolve()
    why = too_wide_to_default(directory)
    if why is not None:
        raise ConfigError(
            f"no directory given, and the current directory {directory} is {why}: a client or service "
            f"manager chose it, and serving it would expose far more than you meant. Name the directory: "
            f"`{command} DIR` (`.` from a terminal in the directory you mean), "
            f"or `{setting}` in its TOML table"
        )
    sys.stderr.write(f"{command}: no directory given: serving the current directory {directory}\n")
    return str(directory)
