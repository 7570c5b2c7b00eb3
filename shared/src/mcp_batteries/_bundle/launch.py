"""How a client should start a server, given how the servers are installed here.

An entry that runs `uvx mcp-batteries-NAME` works only once that package is on PyPI: before then
(or for a server never published) it fails in the client, long after `config` said nothing was
wrong. So the command follows the installation `mcp-batteries config` runs from, read from the
installed distribution's metadata (PEP 610 `direct_url.json`):

- installed from a package index (no `direct_url.json`): the published name, `uvx mcp-batteries-NAME`;
- installed editable from a checkout of this repository (the uv workspace: `uv sync`,
  `scripts/run`, `scripts/mcp-batteries`): that checkout's `scripts/run NAME`, which needs only
  Python and keeps the person's edits live;
- installed some other way (a wheel file, a directory, a VCS URL): the console script's absolute
  path in this environment;
- not installed here at all: the published name, with a note (a server of someone else's).
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["Launch", "checkout_of", "launch_for"]


@dataclass(frozen=True)
class Launch:
    """The command and leading arguments that start one server; the server's own arguments follow."""

    command: str
    args: tuple[str, ...]
    #: Which of the cases above, for the person: "published", "checkout", "installed" or "elsewhere".
    source: str
    #: Says where the command comes from, in a few words.
    how: str


def _file_path(url: str) -> Path | None:
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    return Path(unquote(parts.path))


def checkout_of(directory: Path) -> Path | None:
    """The checkout of this repository `directory` belongs to (it has `scripts/run`), if any."""
    for candidate in (directory, *directory.parents):
        if (candidate / "scripts" / "run").is_file() and (candidate / "pyproject.toml").is_file():
            return candidate
    return None


def _console_script(name: str) -> Path | None:
    suffix = ".exe" if sys.platform == "win32" else ""
    script = Path(sysconfig.get_path("scripts")) / f"{name}{suffix}"
    return script if script.is_file() else None


def launch_for(server: str, distribution: str | None = None) -> Launch:
    """How a client starts `server` (its distribution: `mcp-batteries-SERVER` unless given)."""
    distribution = distribution or f"mcp-batteries-{server}"
    published = Launch("uvx", (distribution,), "published", f"uvx {distribution} (from PyPI)")
    try:
        found = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return Launch(published.command, published.args, "elsewhere", published.how)
    direct = found.read_text("direct_url.json")
    if direct is None:
        return published
    try:
        origin = json.loads(direct)
    except json.JSONDecodeError:
        origin = {}
    source = _file_path(str(origin.get("url", "")))
    editable = bool((origin.get("dir_info") or {}).get("editable"))
    if editable and source is not None:
        checkout = checkout_of(source)
        if checkout is not None:
            run = checkout / "scripts" / "run"
            return Launch(str(run), (server,), "checkout", f"this checkout's {run}")
    script = _console_script(distribution)
    if script is not None:
        return Launch(str(script), (), "installed", f"the installed {script}")
    return published
