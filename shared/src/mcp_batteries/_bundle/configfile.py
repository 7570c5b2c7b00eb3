"""The bundle's configuration: one TOML file for the bundle and every server in it.

    # bundle.toml                           (mcp-batteries serve --config bundle.toml)
    host = "0.0.0.0"                        # top level: the bundle (address, auth, limits)
    port = 8000
    allowed_hosts = ["mcp.example.com:*"]

    [filesystem]                            # a table per server: exactly that server's settings
    directories = ["/srv/docs"]
    read_only = true

    [sql]
    databases = ["postgresql://mcp_ro@db/app"]
    rate_limit = 20                         # the per-caller limits may differ per server

    [identities."user:ci-bot"]              # limits of one identity (tokens-file entries win)
    rate_limit = 100
    max_calls_in_flight = 16

Top-level keys are the HTTP listener's and sign-in settings every server shares (the flags a
single server files under "HTTP options", plus `log_level`), which apply to every mount. A
server's table holds that server's own settings and the common per-server ones (`read_only`,
`tools`, `disable_tools`). Precedence is the single server's: flags (`mcp-batteries serve
--port ...`) > environment (`MCP_BATTERIES_<FIELD>` for the bundle, `MCP_<SERVER>_<FIELD>` for a
server, as for that server alone) > the file > defaults. The same machinery builds them
(`mcp_batteries._core.settings.build_settings`); a mistake is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import textwrap
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError

from mcp_batteries._core.cli import (
    _add_argument,
    _describe_validation_error,
    _flag,
    _OneLineParser,
    fail,
)
from mcp_batteries._core.settings import NameList, ServerSettings, build_settings
from mcp_batteries._entry.definition import ServerDefinition, discover
from mcp_batteries.errors import ConfigError

__all__ = [
    "BUNDLE_FIELDS",
    "BundleConfig",
    "BundleSettings",
    "load_file",
    "parse_serve_args",
    "server_settings",
]

#: Fields of every server's settings that belong to the process as a whole: the listener, sign-in,
#: HTTP limits and logging. They are set once, at the bundle's top level, and every mount gets
#: the bundle's values.
BUNDLE_FIELDS: frozenset[str] = frozenset(
    name
    for name, info in ServerSettings.model_fields.items()
    if (info.description or "").startswith("HTTP:") and name != "path"
) | {"log_level"}


def bundle_owned(settings: type[ServerSettings]) -> frozenset[str]:
    """The bundle's fields among a server's settings: those it kept from `ServerSettings` (a server
    may reuse a name for its own setting)."""
    fields = settings.model_fields
    return frozenset(
        name
        for name in BUNDLE_FIELDS
        if name in fields and (fields[name].description or "").startswith("HTTP:")
    ) | ({"log_level"} & set(fields))


#: The bundle's own settings (no server has them).
_BUNDLE_OWN_FIELDS = frozenset({"servers", "shutdown_grace", "startup_timeout"})
#: Bundle settings a server's table may set for that server alone (the top level is the default).
PER_SERVER_OVERRIDES = frozenset({"rate_limit", "max_calls_in_flight"})
#: The table of per-identity limits (`[identities."user:alice"]`), not a server's.
IDENTITIES_TABLE = "identities"
_IDENTITY_KEYS = frozenset({"rate_limit", "max_calls_in_flight"})
#: Common per-server fields the bundle decides for each mount (never the user).
_FORCED_FIELDS = frozenset({"transport", "path", "config"})


class BundleSettings(ServerSettings):
    """`mcp-batteries serve`: the listener and sign-in every mount shares, and which servers to serve."""

    server_name: ClassVar[str] = "batteries"  # env MCP_BATTERIES_<FIELD>
    distribution: ClassVar[str | None] = "mcp-batteries"

    servers: NameList = Field(
        default_factory=list,
        description="Serve only these installed servers (default: every installed server).",
        json_schema_extra={"positional": True, "metavar": "NAME"},
    )
    transport: Literal["http"] = Field("http", description="The bundle always speaks HTTP.")
    config: Path | None = Field(
        None,
        description="The bundle's TOML file: these settings at the top level, and a [table] per server "
        "holding that server's own settings.",
    )
    shutdown_grace: float = Field(
        10.0,
        ge=0,
        description="HTTP: on SIGTERM or Ctrl-C, seconds calls in flight get to finish before sessions end.",
        json_schema_extra={"metavar": "SECONDS"},
    )
    startup_timeout: float = Field(
        30.0,
        gt=0,
        description="HTTP: seconds to wait for every server to start before serving; a server still starting "
        "answers 503 until it is ready.",
        json_schema_extra={"metavar": "SECONDS"},
    )


@dataclass(frozen=True)
class BundleConfig:
    """What `mcp-batteries serve` runs: the bundle's settings and each selected server's."""

    settings: BundleSettings
    #: name -> (definition, settings), in the order the servers are mounted (by name).
    servers: dict[str, tuple[ServerDefinition[Any], ServerSettings]]
    file: Path | None = None
    #: Servers the file configures that are not selected (named on the command line instead).
    skipped: tuple[str, ...] = field(default=())
    #: Limits per identity (`[identities."<subject>"]`): subject -> (rate_limit, max_calls_in_flight).
    identities: dict[str, tuple[float | None, int | None]] = field(default_factory=dict)


# -- the file ------------------------------------------------------------------------------------


def load_file(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The file's (top-level keys, tables by server name); ConfigError for what cannot be read."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"--config: no such file: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config: {path} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--config: cannot read {path}: {exc}") from None
    top = {key: value for key, value in data.items() if not isinstance(value, dict)}
    tables = {key: value for key, value in data.items() if isinstance(value, dict)}
    return top, tables


def check_file(
    path: Path,
    top: Mapping[str, Any],
    tables: Mapping[str, Mapping[str, Any]],
    installed: Mapping[str, ServerDefinition[Any]],
) -> None:
    """Unknown server names and keys, each refused with what is allowed instead."""
    allowed_top = sorted(BUNDLE_FIELDS | _BUNDLE_OWN_FIELDS)
    for key in top:
        if key in allowed_top:
            continue
        if key in ServerSettings.model_fields:
            raise ConfigError(
                f"{key!r} at the top level of {path} is a per-server setting: put it in a server's table, "
                f"e.g. [filesystem] {key} = ..."
            )
        raise ConfigError(
            f"unknown bundle setting {key!r} in {path}; the top level takes: {', '.join(allowed_top)} "
            "(and a [table] per server)"
        )
    for name, table in tables.items():
        if name == IDENTITIES_TABLE and name not in installed:
            continue
        definition = installed.get(name)
        if definition is None:
            raise ConfigError(
                f"unknown server [{name}] in {path}; installed servers: {', '.join(installed) or 'none'}"
            )
        fields = definition.settings.model_fields
        owned = bundle_owned(definition.settings)
        for key in table:
            if key in owned and key not in PER_SERVER_OVERRIDES:
                raise ConfigError(
                    f"{key!r} in [{name}] of {path} is a bundle setting (one listener for every server): "
                    "set it at the top level of the file"
                )
            if key in _FORCED_FIELDS or key not in fields:
                own = sorted(k for k in fields if k not in owned | _FORCED_FIELDS)
                raise ConfigError(
                    f"unknown setting {key!r} in [{name}] of {path}; {name}'s settings are: {', '.join(own)}"
                )


def server_settings(
    definition: ServerDefinition[Any],
    table: Mapping[str, Any],
    bundle: ServerSettings | None,
    *,
    file: Path | None,
) -> ServerSettings:
    """One server's settings: its table from the file, its environment, and the bundle's values."""
    forced: dict[str, Any] = {}
    if bundle is not None:
        forced = {
            name: getattr(bundle, name)
            for name in bundle_owned(definition.settings)
            if not (name in PER_SERVER_OVERRIDES and name in table)
        }
        forced.update(transport="http", path=f"/{definition.name}/mcp", config=None)
    try:
        settings: ServerSettings = build_settings(definition.settings, forced, None, config_table=table)
        return settings
    except ValidationError as exc:
        raise ConfigError(_describe(exc, definition, table, file)) from None


def _describe(
    error: ValidationError, definition: ServerDefinition[Any], table: Mapping[str, Any], file: Path | None
) -> str:
    """A server's bad values, each named where it came from: its environment variable or the file."""
    prefix = definition.settings.env_prefix()
    parts = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else "settings"
        if prefix + field.upper() in os.environ:
            where = prefix + field.upper()
        elif field in table and file is not None:
            where = f"{field} in [{definition.name}] of {file}"
        else:
            where = f"{definition.name}: {field}"
        given = item.get("input")
        shown = f" (got {given!r})" if given is not None and not isinstance(given, dict) else ""
        parts.append(f"{where}: {item['msg']}{shown}")
    return "invalid configuration: " + "; ".join(parts)


# -- the command line ------------------------------------------------------------------------------


def _serve_parser(prog: str, installed: Mapping[str, ServerDefinition[Any]]) -> argparse.ArgumentParser:
    names = ", ".join(installed) or "none"
    description = textwrap.fill(
        "Serve every installed MCP Batteries server (or the ones named) in one HTTP process, each at "
        "/<name>/mcp, with /healthz and /status. Settings come from flags, the environment "
        "(MCP_BATTERIES_<OPTION> for these, MCP_<SERVER>_<OPTION> for a server's own) and one TOML file "
        "(--config): top-level keys for these options, a [table] per server with that server's settings.",
        width=100,
    )
    epilog = (
        f"installed servers: {names}\n\n"
        "examples:\n"
        "  mcp-batteries serve                                  # every installed server on 127.0.0.1:8000\n"
        "  mcp-batteries serve filesystem sql --port 9000       # two of them\n"
        "  MCP_AUTH_TOKEN=... mcp-batteries serve --config team.toml --host 0.0.0.0\n"
    )
    parser = _OneLineParser(
        prog=prog,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=argparse.SUPPRESS,
    )
    fields = BundleSettings.model_fields
    _add_argument(parser, "servers", fields["servers"], positional=True)
    listener = parser.add_argument_group("listener and sign-in (shared by every server)")
    for name in sorted(BUNDLE_FIELDS | _BUNDLE_OWN_FIELDS - {"servers"}, key=list(fields).index):
        _add_argument(listener, name, fields[name], positional=False)
    _add_argument(listener, "config", fields["config"], positional=False)
    return parser


def parse_serve_args(
    argv: Sequence[str],
    *,
    prog: str = "mcp-batteries serve",
    installed: Mapping[str, ServerDefinition[Any]] | None = None,
) -> BundleConfig:
    """argv -> the bundle to run; any configuration mistake is one line on stderr and exit 2."""
    installed = dict(discover() if installed is None else installed)
    parser = _serve_parser(prog, installed)
    values = vars(parser.parse_args(list(argv)))
    if not values.get("servers"):
        values.pop("servers", None)
    config_value = values.pop("config", None) or os.environ.get(BundleSettings.env_prefix() + "CONFIG")
    path = Path(config_value).expanduser() if config_value else None
    try:
        top: dict[str, Any] = {}
        tables: dict[str, dict[str, Any]] = {}
        if path is not None:
            top, tables = load_file(path)
            check_file(path, top, tables, installed)
        try:
            bundle = build_settings(BundleSettings, values, None, config_table=top)
        except ValidationError as exc:
            fail(_describe_validation_error(exc, values, BundleSettings.env_prefix(), path), prog=prog)
        selected = list(dict.fromkeys(bundle.servers)) or list(installed)
        unknown = [name for name in selected if name not in installed]
        if unknown:
            raise ConfigError(
                f"unknown server(s) {', '.join(unknown)}; installed servers: {', '.join(installed) or 'none'}"
            )
        if not selected:
            raise ConfigError(
                "no MCP Batteries server is installed: install one (e.g. uv tool install mcp-batteries "
                "--with mcp-batteries-filesystem) or name a server package"
            )
        servers = {
            name: (installed[name], server_settings(installed[name], tables.get(name, {}), bundle, file=path))
            for name in sorted(selected)
        }
    except ConfigError as exc:
        fail(str(exc), prog=prog)
    identities: dict[str, tuple[float | None, int | None]] = {}
    if IDENTITIES_TABLE not in installed:
        try:
            identities = identity_limits(tables.pop(IDENTITIES_TABLE, {}), path)
        except ConfigError as exc:
            fail(str(exc), prog=prog)
    skipped = tuple(sorted(set(tables) - set(servers)))
    return BundleConfig(settings=bundle, servers=servers, file=path, skipped=skipped, identities=identities)


def identity_limits(
    table: Mapping[str, Any], file: Path | None
) -> dict[str, tuple[float | None, int | None]]:
    """`[identities."user:alice"] rate_limit = 5, max_calls_in_flight = 2` -> subject -> limits."""
    found: dict[str, tuple[float | None, int | None]] = {}
    for subject, limits in table.items():
        where = f'[{IDENTITIES_TABLE}."{subject}"] of {file}'
        if not isinstance(limits, dict) or not limits or set(limits) - _IDENTITY_KEYS:
            raise ConfigError(f"{where}: give rate_limit and/or max_calls_in_flight")
        rate, in_flight = limits.get("rate_limit"), limits.get("max_calls_in_flight")
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0):
            raise ConfigError(f"{where}: rate_limit must be a number of calls per second above 0")
        if in_flight is not None and (
            isinstance(in_flight, bool) or not isinstance(in_flight, int) or in_flight < 1
        ):
            raise ConfigError(f"{where}: max_calls_in_flight must be a whole number, 1 or more")
        found[subject] = (float(rate) if rate is not None else None, in_flight)
    return found


def settings_as_args(definition: ServerDefinition[Any], table: Mapping[str, Any]) -> list[str]:
    """A server's table as that server's own command-line arguments (for a stdio client entry)."""
    from mcp_batteries._core.cli import _is_bool, _is_list, _positional_field

    fields = definition.settings.model_fields
    positional = _positional_field(definition.settings)
    args: list[str] = []
    tail: list[str] = []
    for key, value in table.items():
        info = fields[key]
        if key == positional:
            tail = [str(v) for v in (value if isinstance(value, list) else [value])]
        elif _is_bool(info.annotation):
            if bool(value) != bool(info.get_default()):
                args.append(_flag(key) if value else "--no-" + key.replace("_", "-"))
        elif _is_list(info.annotation):
            for item in value if isinstance(value, list) else [value]:
                args += [_flag(key), str(item)]
        else:
            args += [_flag(key), str(value)]
    return tail + args
