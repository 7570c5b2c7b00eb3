"""The command line every server shares: argv -> settings, with one-line errors and exit 2.

Flags are generated from the settings model, so a field added to a server's settings class is
a flag, an environment variable and a TOML key at once. A field marked
`json_schema_extra={"positional": True, "metavar": "DIR"}` takes the positional arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from mcp_batteries._core.settings import ServerSettings, build_settings
from mcp_batteries._core.version import distribution_version
from mcp_batteries._safety.redact import redact_text
from mcp_batteries.errors import ConfigError

S = TypeVar("S", bound=ServerSettings)

EXIT_CONFIG_ERROR = 2


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus an error; a person wants the one line that says what is wrong."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see {self.prog} --help)", prog=self.prog)


def fail(message: str, *, prog: str) -> NoReturn:
    # A configuration mistake may quote the setting it is about: no password on the terminal.
    sys.stderr.write(f"{prog}: error: {redact_text(message)}\n")
    raise SystemExit(EXIT_CONFIG_ERROR)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _is_bool(annotation: Any) -> bool:
    return annotation is bool


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_list(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_is_list(arg) for arg in typing.get_args(annotation) if arg is not type(None))
    return origin is list


def _base_type(annotation: Any) -> Any:
    if typing.get_origin(annotation) is typing.Annotated:
        return _base_type(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _base_type(args[0]) if len(args) == 1 else annotation
    return annotation


def _choices(annotation: Any) -> list[str] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return [str(v) for v in typing.get_args(annotation)]
    return None


_METAVARS: dict[Any, str] = {int: "N", float: "SECONDS", Path: "FILE", str: "TEXT"}


def _metavar(name: str, info: FieldInfo) -> str:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if extra.get("metavar"):
        return str(extra["metavar"])
    if _is_list(info.annotation):
        return "NAME"
    return _METAVARS.get(_base_type(info.annotation), "VALUE")


def _positional_field(cls: type[ServerSettings]) -> str | None:
    for name, info in cls.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("positional"):
            return name
    return None


def http_only_fields(cls: type[ServerSettings]) -> list[str]:
    """Settings that only mean something over HTTP (described "HTTP: ..."): with stdio, a mistake."""
    return [name for name, info in cls.model_fields.items() if (info.description or "").startswith("HTTP:")]


def build_parser(
    cls: type[ServerSettings], *, prog: str, description: str, epilog: str = ""
) -> argparse.ArgumentParser:
    prefix = cls.env_prefix()
    notes = textwrap.fill(
        f"Every option can also come from the environment ({prefix}<OPTION>, e.g. {prefix}READ_ONLY=true) "
        "or a TOML file (--config); flags win over the environment, which wins over the file. "
        "Options that take several values can be repeated or given comma-separated.",
        width=100,
    )
    parser = _OneLineParser(
        prog=prog,
        description=f"{textwrap.fill(description, width=100)}\n\n{notes}" if description else notes,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=argparse.SUPPRESS,  # only flags actually given override env and TOML
    )
    # The published name, whichever script was run: it is what to look up, install or report.
    version = f"{cls.distribution_name()} {distribution_version(cls.distribution_name())}"
    parser.add_argument("--version", action="version", version=version, help="Show the version and exit.")
    positional = _positional_field(cls)
    own = parser.add_argument_group(f"{cls.server_name} options")
    common = parser.add_argument_group("common options")
    http = parser.add_argument_group("HTTP options (with --transport http)")
    for name, info in cls.model_fields.items():
        if name in ServerSettings.model_fields:
            group = http if (info.description or "").startswith("HTTP:") else common
        else:
            group = own
        _add_argument(group, name, info, positional=name == positional)
    return parser


def _default_text(info: FieldInfo) -> str:
    if "default" in (info.description or ""):
        return ""  # the description already says it
    default = info.get_default(call_default_factory=True)
    if default is None or default is False or default == [] or default == "":
        return ""
    if default is True:
        return " (on by default)"
    if isinstance(default, list):
        return f" (default: {', '.join(map(str, default))})"
    return f" (default: {default})"


def _add_argument(parser: Any, name: str, info: FieldInfo, *, positional: bool) -> None:
    help_text = (info.description or "").removeprefix("HTTP: ")
    help_text = help_text[:1].upper() + help_text[1:]
    annotation = info.annotation
    if positional:
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        metavar = str(extra.get("metavar") or name.upper())
        parser.add_argument(name, nargs="*", help=help_text + _default_text(info), metavar=metavar)
    elif _is_bool(annotation):
        if info.get_default() is True:
            # On by default: the flag a person needs is the one that turns it off.
            parser.add_argument(
                "--no-" + name.replace("_", "-"),
                dest=name,
                action="store_false",
                help=f"{help_text.rstrip('.')}: on by default; this flag turns it off.",
            )
        else:
            parser.add_argument(_flag(name), dest=name, action="store_true", help=help_text)
    elif _is_list(annotation):
        parser.add_argument(
            _flag(name), dest=name, action="append", help=help_text + _default_text(info),
            metavar=_metavar(name, info),
        )  # fmt: skip
    else:
        choices = _choices(annotation)
        parser.add_argument(
            _flag(name),
            dest=name,
            choices=choices,
            help=help_text + _default_text(info),
            metavar=None if choices else _metavar(name, info),
        )


def _where(field: str, cli_values: dict[str, Any], env_prefix: str, config: Path | None) -> str:
    """Where a setting's bad value came from, named the way the person wrote it."""
    if field in cli_values:
        return _flag(field)
    env_name = env_prefix + field.upper()
    if env_name in os.environ:
        return env_name
    if config is not None:
        return f"{field} in {config}"
    return _flag(field)


def _describe_validation_error(
    error: ValidationError, cli_values: dict[str, Any], env_prefix: str, config: Path | None
) -> str:
    parts = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "settings"
        if item["type"] == "extra_forbidden":
            # Flags and the environment only ever name known fields: an unknown key is the file's.
            source = f" in {config}" if config is not None else ""
            parts.append(f"unknown setting {field!r}{source} (see --help for the settings)")
            continue
        where = _where(str(item["loc"][0]), cli_values, env_prefix, config) if item["loc"] else field
        given = item.get("input")
        shown = f" (got {given!r})" if given is not None and not isinstance(given, dict) else ""
        parts.append(f"{where}: {item['msg']}{shown}")
    return "invalid configuration: " + "; ".join(parts)


def parse_settings(
    cls: type[S],
    argv: list[str] | None = None,
    *,
    prog: str | None = None,
    description: str = "",
    epilog: str = "",
) -> S:
    """Parse argv into settings; on any configuration error print one line and exit 2."""
    prog = prog or cls.distribution_name()
    parser = build_parser(cls, prog=prog, description=description, epilog=epilog)
    namespace = parser.parse_args(sys.argv[1:] if argv is None else argv)
    values = vars(namespace)
    positional = _positional_field(cls)
    if positional is not None and not values.get(positional):
        values.pop(positional, None)  # nothing given: let env, TOML or the default decide
    config_file = values.get("config") or os.environ.get(cls.env_prefix() + "CONFIG")
    config_path = Path(config_file).expanduser() if config_file else None
    if config_path is not None and not config_path.is_file():
        fail(f"--config: no such file: {config_path}", prog=prog)
    if config_path is not None:
        _check_toml(config_path, prog)
    try:
        settings = build_settings(cls, values, config_path)
    except ValidationError as exc:
        fail(_describe_validation_error(exc, values, cls.env_prefix(), config_path), prog=prog)
    except ConfigError as exc:
        fail(str(exc), prog=prog)
    except Exception as exc:  # a malformed environment value
        fail(f"invalid configuration: {exc}".splitlines()[0], prog=prog)
    if settings.transport != "http":
        given = [_flag(name) for name in http_only_fields(cls) if name in values]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            fail(
                f"{', '.join(given)} only {verb} to HTTP; add --transport http "
                "(without it the server speaks stdio, for a client that starts it)",
                prog=prog,
            )
    return settings


def _check_toml(path: Path, prog: str) -> None:
    try:
        tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        fail(f"--config: {path} is not valid TOML: {exc}", prog=prog)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"--config: cannot read {path}: {exc}", prog=prog)
