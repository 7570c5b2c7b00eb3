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

import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mcp_batteries._core.cli import fail, parse_settings
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._core.version import distribution_version
from mcp_batteries._transport.run import run
from mcp_batteries.errors import ConfigError

if TYPE_CHECKING:
    from mcp_batteries._core.app import BatteriesServer

__all__ = ["ENTRY_POINT_GROUP", "ServerDefinition", "discover"]

#: The entry-point group through which server packages announce their definitions.
ENTRY_POINT_GROUP = "mcp_batteries.servers"

S = TypeVar("S", bound=ServerSettings)


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
        """A console script's whole life: parse, build, serve; bad configuration exits 2."""
        prog = self.prog()
        with _collector_paused():
            settings = parse_settings(
                self.settings, argv, prog=prog, description=self.description, epilog=self.epilog()
            )
        try:
            with _collector_paused():
                server = self.build_server(settings)
            run(server, script=self.distribution)
        except ConfigError as exc:
            fail(str(exc), prog=prog)
        except BaseExceptionGroup as group:
            # A service that cannot start (a database that refuses connections) fails inside the
            # lifespan's task group: still one line for the person, not a traceback.
            config_errors, _ = group.split(ConfigError)
            if config_errors is None:
                raise
            fail(str(_first_leaf(config_errors)), prog=prog)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the server starts.

    Start-up (the settings, importing the SDK and the server, registering tools) allocates
    hundreds of thousands of objects that live as long as the process; the collector would scan
    them again and again and find no garbage: ~10 % of a start's CPU (bench/cold_start.py).
    `run` then freezes them out of the collector for good (`_transport/console.tune_gc`).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _first_leaf(group: BaseExceptionGroup[ConfigError]) -> BaseException:
    first: BaseException = group
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


def discover() -> dict[str, ServerDefinition[Any]]:
    """Every installed server's definition, by name, from the entry-point group."""
    found: dict[str, ServerDefinition[Any]] = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        definition = entry.load()
        if isinstance(definition, ServerDefinition):
            found[definition.name] = definition
    return dict(sorted(found.items()))
