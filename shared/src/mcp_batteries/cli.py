"""The command line every server shares: argv -> settings, with one-line errors and exit 2.

Flags are generated from the settings model, so a field added to a server's settings class is
a flag, an environment variable and a TOML key at once. A field marked
`json_schema_extra={"positional": True, "metavar": "DIR"}` takes the positional arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from mcp_batteries.errors import ConfigError
from mcp_batteries.settings import ServerSettings, build_settings

S = TypeVar("S", bound=ServerSettings)

EXIT_CONFIG_ERROR = 2


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus an error; a person wants the one line that says what is wrong."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see {self.prog} --help)", prog=self.prog)


def fail(message: str, *, prog: str) -> NoReturn:
    sys.stderr.write(f"{prog}: error: {message}\n")
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


def _choices(annotation: Any) -> list[str] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return [str(v) for v in typing.get_args(annotation)]
    return None


def _positional_field(cls: type[ServerSettings]) -> str | None:
    for name, info in cls.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("positional"):
            return name
    return None


def build_parser(
    cls: type[ServerSettings], *, prog: str, description: str, epilog: str = ""
) -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog=prog,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=argparse.SUPPRESS,  # only flags actually given override env and TOML
    )
    positional = _positional_field(cls)
    for name, info in cls.model_fields.items():
        _add_argument(parser, name, info, positional=name == positional)
    return parser


def _add_argument(parser: argparse.ArgumentParser, name: str, info: FieldInfo, *, positional: bool) -> None:
    help_text = info.description or ""
    annotation = info.annotation
    if positional:
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        metavar = str(extra.get("metavar") or name.upper())
        parser.add_argument(name, nargs="*", help=help_text, metavar=metavar)
    elif _is_bool(annotation):
        parser.add_argument(_flag(name), dest=name, action=argparse.BooleanOptionalAction, help=help_text)
    elif _is_list(annotation):
        parser.add_argument(_flag(name), dest=name, action="append", help=help_text + " Repeatable.")
    else:
        choices = _choices(annotation)
        parser.add_argument(
            _flag(name), dest=name, choices=choices, help=help_text, metavar=None if choices else "VALUE"
        )


def _describe_validation_error(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "settings"
        flag = _flag(field) if item["loc"] else field
        given = item.get("input")
        shown = f" (got {given!r})" if given is not None and not isinstance(given, dict) else ""
        parts.append(f"{flag}: {item['msg']}{shown}")
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
    prog = prog or f"mcp-{cls.server_name}"
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
    try:
        return build_settings(cls, values, config_path)
    except ValidationError as exc:
        fail(_describe_validation_error(exc), prog=prog)
    except ConfigError as exc:
        fail(str(exc), prog=prog)
    except Exception as exc:  # a malformed TOML file or environment value
        fail(f"invalid configuration: {exc}".splitlines()[0], prog=prog)
