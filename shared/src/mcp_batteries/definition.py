"""What a server package exports: one `ServerDefinition`, from which everything else follows.

    definition = ServerDefinition(
        settings=FilesystemSettings,                     # its flags, env and TOML keys
        build="mcp_filesystem.server:build_server",      # imported only when the server starts
        description="MCP server for local files ...",
        examples=(("~/project", "stdio, for Claude Desktop, Cline, Cursor..."), ...),
    )
    main = definition.main                               # both console scripts point here

From the definition come:

- the console scripts: the published name `mcp-batteries-NAME` (what `uvx` runs) and the short
  `mcp-NAME` for people who install the package; both run `definition.main`;
- the version, read from the installed distribution's metadata (one version per release, never
  a hand-kept constant);
- discovery by the bundle (`mcp-batteries serve`): each server package declares its definition
  in the entry-point group `mcp_batteries.servers`, so a server installed from anywhere appears.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mcp_batteries.settings import ServerSettings

if TYPE_CHECKING:
    from mcp_batteries.app import BatteriesServer

__all__ = ["ENTRY_POINT_GROUP", "ServerDefinition", "discover", "distribution_version"]

#: The entry-point group through which server packages announce their definitions.
ENTRY_POINT_GROUP = "mcp_batteries.servers"

S = TypeVar("S", bound=ServerSettings)


def distribution_version(distribution: str) -> str:
    """The installed version of `distribution` (`0+unknown` when run from an uninstalled tree)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True)
class ServerDefinition(Generic[S]):
    """A server: its settings class, how to build it, and what its `--help` says."""

    settings: type[S]
    #: "module:function" taking the settings and returning a `BatteriesServer`; imported lazily
    #: so that `--help` and configuration errors do not pay for the server's imports.
    build: str
    description: str
    #: (arguments, comment) pairs shown in `--help`, each as a command that runs as written.
    examples: Sequence[tuple[str, str]] = ()

    @property
    def name(self) -> str:
        return self.settings.server_name

    @property
    def distribution(self) -> str:
        return self.settings.distribution_name()

    @property
    def version(self) -> str:
        return distribution_version(self.distribution)

    @property
    def scripts(self) -> tuple[str, str]:
        """(published console script, short console script)."""
        return self.distribution, f"mcp-{self.name}"

    def builder(self) -> Callable[[S], BatteriesServer]:
        module, _, attribute = self.build.partition(":")
        built: Callable[[S], BatteriesServer] = getattr(importlib.import_module(module), attribute)
        return built

    def build_server(self, settings: S) -> BatteriesServer:
        return self.builder()(settings)

    def epilog(self) -> str:
        if not self.examples:
            return ""
        command = f"uvx {self.distribution}"
        rows = [(f"{command} {args}".rstrip(), comment) for args, comment in self.examples]
        width = max(len(line) for line, _ in rows)
        lines = [f"  {line.ljust(width)}  # {comment}" if comment else f"  {line}" for line, comment in rows]
        return (
            "examples (installed with pip or uv tool, the command is also "
            f"{self.scripts[1]} or {self.distribution}):\n" + "\n".join(lines) + "\n"
        )

    def prog(self) -> str:
        """The name the user typed, when it is one of ours; else the published script name."""
        invoked = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
        return invoked if invoked in self.scripts else self.distribution

    def main(self, argv: list[str] | None = None) -> None:
        """Parse the command line, build the server and serve it; bad configuration exits 2."""
        from mcp_batteries.transports import serve_main

        serve_main(self, argv)


def discover() -> dict[str, ServerDefinition[Any]]:
    """Every installed server's definition, by name, from the entry-point group."""
    found: dict[str, ServerDefinition[Any]] = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        definition = entry.load()
        if isinstance(definition, ServerDefinition):
            found[definition.name] = definition
    return dict(sorted(found.items()))
