"""A server's whole entry point: argv -> settings -> server -> transport."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from mcp_batteries.cli import fail, parse_settings
from mcp_batteries.errors import ConfigError
from mcp_batteries.settings import ServerSettings
from mcp_batteries.transports import run

if TYPE_CHECKING:
    from mcp_batteries.app import BatteriesServer

S = TypeVar("S", bound=ServerSettings)


def main(
    settings_cls: type[S],
    build: Callable[[S], BatteriesServer],
    *,
    description: str,
    epilog: str = "",
    argv: list[str] | None = None,
) -> None:
    """Parse the command line, build the server and serve it; bad configuration exits 2."""
    prog = f"mcp-{settings_cls.server_name}"
    settings = parse_settings(settings_cls, argv, prog=prog, description=description, epilog=epilog)
    try:
        server = build(settings)
        run(server, script=prog)
    except ConfigError as exc:
        fail(str(exc), prog=prog)
    except BaseExceptionGroup as group:
        # A service that cannot start (a database that refuses connections) fails inside the
        # lifespan's task group: still one line for the person, not a traceback.
        config_errors, _ = group.split(ConfigError)
        if config_errors is None:
            raise
        fail(str(_first_leaf(config_errors)), prog=prog)


def _first_leaf(group: BaseExceptionGroup[ConfigError]) -> BaseException:
    first: BaseException = group
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first
