"""`mcp-batteries config`: the MCP client configuration for our servers, printed or merged in.

    argv -> servers and their arguments (names and options in any order; a server's own
            arguments after `--`, or from the bundle's TOML with --config)
         -> entries in the client's shape (client_table.py: what each client reads and expands)
            running each server the way this installation can (launch.py), or pointing at a
            bundle with --http
         -> printed in the client's format, or merged into its file with --write (client_files.py)

Rules that keep a written file from failing later, in the client, with a misleading error:

- a token goes where the client can use it: referenced by name where the client expands
  variables, written into the file (owner-only, and said) where it expands nothing, never
  printed; `--write` for such a client without the token set writes nothing and says why;
- an entry that would serve whatever directory the client starts it in (a filesystem or git
  server without a directory) is never written: the client's workspace variable where it has
  one, otherwise the person names the directory;
- an existing entry of the same name that differs is shown and kept unless `--force`;
- `--write` or `--force` after `--` (given to the server, not to `config`) is refused.

`--write` merges: every other server and setting stays, a timestamped backup is written first, the
new file replaces the old one atomically, and a run that would change nothing writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mcp_batteries._bundle.client_files import WriteResult, open_file, read_file, write_file
from mcp_batteries._bundle.client_table import CLIENTS, Client, Places, client_named, input_id
from mcp_batteries._bundle.configfile import check_file, load_file, settings_as_args
from mcp_batteries._bundle.launch import Launch, launch_for
from mcp_batteries._bundle.scaffold import NAME_PATTERN
from mcp_batteries._core.cli import _OneLineParser, build_parser, fail
from mcp_batteries._entry.definition import ServerDefinition, discover
from mcp_batteries.errors import ConfigError

__all__ = [
    "CLIENTS",
    "DEFAULT_TOKEN_ENV",
    "ClientEntries",
    "config_main",
    "default_file",
    "entries_for",
    "merge_entries",
    "write_entries",
]

DEFAULT_TOKEN_ENV = "MCP_AUTH_TOKEN"
#: Settings that scope a server to directories: without any, it serves where it was started.
SCOPE_FIELDS = ("directories", "repository")
#: Our servers that work in directories, for when they are not installed where `config` runs
#: (`uvx --from mcp-batteries mcp-batteries config ...`): then any argument may name the directory.
SCOPED_SERVERS = ("filesystem", "git")
#: `config`'s own options: after `--` they would go to the server, which is never what was meant.
OWN_OPTIONS = ("--write", "--force", "--file", "--http", "--token-env", "--no-token")


def default_file(client: str, places: Places | None = None) -> Path:
    """The file `client` reads its MCP servers from, on this OS (`places`: for tests)."""
    return client_named(client).file(places or Places.here())


# -- the entries -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientEntries:
    """What goes into one client's file: entries under its servers key, plus VS Code's inputs."""

    client: Client
    entries: dict[str, dict[str, Any]]
    inputs: list[dict[str, Any]] = field(default_factory=list)
    #: The entries hold the token itself (a client that expands no variables): the file is owner-only.
    secret: bool = False

    def render(self) -> str:
        """The entries in the client's own format: exactly what `--write` merges in."""
        file = open_file("", self.client.format, self.client.servers_key, path="(printed)")
        for name, entry in self.entries.items():
            file.set_entry(name, entry)
        for item in self.inputs:
            file.set_input(item)
        return file.text()


def bundle_url(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}/mcp"


def check_base_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--http {url}: give the bundle's base URL, e.g. https://mcp.example.com")
    if parts.query or parts.fragment:
        raise ConfigError(f"--http {url}: give the bundle's base URL without a query or fragment")
    if parts.path.rstrip("/").endswith("/mcp"):
        raise ConfigError(
            f"--http {url}: give the bundle's base URL, not a server's endpoint; "
            "each server is at URL/<name>/mcp"
        )
    return url.rstrip("/")


def placeholder(token_env: str) -> str:
    """What a printed entry holds where a client that expands nothing needs the token itself."""
    return f"<the token from ${token_env}>"


def entries_for(
    client_name: str,
    servers: Mapping[str, Sequence[str]],
    *,
    http: str | None = None,
    token_env: str | None = DEFAULT_TOKEN_ENV,
    token: str | None = None,
    launches: Mapping[str, Launch] | None = None,
) -> ClientEntries:
    """The entries for `servers` (name -> its own arguments).

    stdio entries run each server as `launches` says (default: `launch_for` each). HTTP entries point
    at the bundle at `http`; `token` is the token itself, for clients that expand no variables
    (None: a placeholder, for printing).
    """
    client = client_named(client_name)
    entries: dict[str, dict[str, Any]] = {}
    inputs: list[dict[str, Any]] = []
    secret = False
    for name, args in servers.items():
        if http is None:
            launch = (launches or {}).get(name) or launch_for(name)
            entries[name] = client.stdio(name, launch.command, [*launch.args, *args])
            continue
        authorization = None
        if token_env is not None:
            if client.token_style == "literal":
                secret = token is not None
                authorization = f"Bearer {token if token is not None else placeholder(token_env)}"
            else:
                authorization = f"Bearer {client.token_reference(token_env)}"
        entries[name] = client.http(name, bundle_url(http, name), authorization, token_env)
    if http is not None and token_env is not None and client.token_style == "input":
        inputs.append(
            {
                "type": "promptString",
                "id": input_id(token_env),
                "description": f"Bearer token for the MCP Batteries server (as in ${token_env})",
                "password": True,
            }
        )
    return ClientEntries(client, entries, inputs, secret)


# -- merging into the client's file -----------------------------------------------------------------

_HIDDEN_KEYS = frozenset({"env", "envs", "headers", "http_headers", "env_http_headers"})


def shown(entry: Any) -> str:
    """An entry on one line for the person, with secrets hidden: environment and header values, and
    passwords in URLs (a database URL in an argument)."""

    def hide(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            if key in _HIDDEN_KEYS:
                return {k: "<hidden>" for k in value}
            return {k: hide(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [hide(v) for v in value]
        if isinstance(value, str) and "://" in value and "@" in value:
            parts = urlsplit(value)
            if parts.password:
                netloc = f"{parts.username}:<hidden>@{parts.hostname}" + (
                    f":{parts.port}" if parts.port else ""
                )
                return urlunsplit(parts._replace(netloc=netloc))
        return value

    return json.dumps(hide(entry), ensure_ascii=False)


def merge_entries(
    text: str, entries: ClientEntries, *, path: str = "the file", force: bool = False
) -> tuple[str, dict[str, Any]]:
    """`text` (a client file) with `entries` merged in, and the differing entries it replaced.

    Every other key and server is kept as it was; an entry already there and the same is not
    touched; one that differs is replaced only with `force` (else ConfigError, after showing it).
    """
    client = entries.client
    file = open_file(text, client.format, client.servers_key, path=path, strict_json=client.strict_json)
    existing = file.entries()
    replaced = {
        name: existing[name]
        for name, new in entries.entries.items()
        if name in existing and existing[name] != new
    }
    if replaced and not force:
        for name, old in replaced.items():
            sys.stderr.write(f"{path} already has a different {name!r}: {shown(old)}\n")
        names = ", ".join(repr(name) for name in replaced)
        raise ConfigError(
            f"{names} would be replaced: nothing written; add --force to replace (a backup is kept)"
        )
    for name, new in entries.entries.items():
        if existing.get(name) != new:
            file.set_entry(name, new)
    for item in entries.inputs:
        file.set_input(item)
    return file.text(), replaced


def write_entries(path: Path, entries: ClientEntries, *, force: bool = False) -> WriteResult:
    """Merge `entries` into the file at `path`: backup first, atomic replace, nothing if unchanged."""
    # A symlinked config (dotfiles) keeps its link: the file it points to is what changes.
    target = path.resolve() if path.is_symlink() else path
    old_text = read_file(target)
    new_text, replaced = merge_entries(old_text or "", entries, path=str(path), force=force)
    for name, old in replaced.items():
        sys.stderr.write(f"{path}: replacing {name!r}: {shown(old)}\n")
    result = write_file(target, old_text, new_text, secret=entries.secret)
    return WriteResult(path, result.changed, result.backup)


# -- the command -------------------------------------------------------------------------------------


def _parser(prog: str, installed: Mapping[str, ServerDefinition[Any]]) -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog=prog,
        description=(
            "Print (or --write) the MCP configuration of a client for MCP Batteries servers: stdio entries\n"
            "that start each server the way it is installed here, or with --http, entries for a bundle\n"
            "served by `mcp-batteries serve`. A server's own arguments go after `--`."
        ),
        epilog=(
            f"installed servers: {', '.join(installed) or 'none'}\n\n"
            "examples:\n"
            "  mcp-batteries config claude-desktop filesystem --write -- ~/project   # one directory\n"
            "  mcp-batteries config cursor --config team.toml --write        # arguments from the file\n"
            "  mcp-batteries config claude-code --http https://mcp.example.com --write\n"
            "  mcp-batteries config vscode --http https://mcp.example.com sql --write --file x/mcp.json\n\n"
            "Tokens: clients that expand variables get a reference to $VAR (--token-env); Claude\n"
            "Desktop, Cline, Zed and Goose expand none, so --write puts the token itself (read from\n"
            "$VAR) into their file, made readable by you only."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("client", choices=CLIENTS, metavar="CLIENT", help=f"One of: {', '.join(CLIENTS)}.")
    parser.add_argument(
        "servers", nargs="*", metavar="SERVER", help="Servers to configure (default: every installed server)."
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="The bundle's TOML file: each server's [table] becomes its stdio arguments.",
    )
    parser.add_argument(
        "--http",
        metavar="URL",
        help="The bundle's base URL (mcp-batteries serve): remote entries for URL/<name>/mcp.",
    )
    parser.add_argument(
        "--token-env",
        metavar="VAR",
        default=DEFAULT_TOKEN_ENV,
        help=f"Environment variable that holds the bearer token (default: {DEFAULT_TOKEN_ENV}).",
    )
    parser.add_argument(
        "--no-token",
        action="store_true",
        help="No Authorization header (a loopback bundle, or clients that sign in with OAuth themselves).",
    )
    parser.add_argument("--write", action="store_true", help="Merge the entries into the client's file.")
    parser.add_argument(
        "--force", action="store_true", help="With --write: replace entries of the same name that differ."
    )
    parser.add_argument(
        "--file", metavar="PATH", help="The file to merge into (default: the client's standard file)."
    )
    return parser


def _absolute_if_local(argument: str) -> str:
    """A relative path a person typed means their directory, not the client's working directory."""
    if argument.startswith("-") or "://" in argument or argument.startswith("${"):
        return argument
    candidate = Path(argument).expanduser()
    if candidate.exists():
        return str(candidate.resolve())
    return argument


def scope_missing(definition: ServerDefinition[Any], args: Sequence[str]) -> bool:
    """Whether `args` leave a server that works in directories without any (then it would serve
    whatever directory the client starts it in)."""
    settings = definition.settings
    if not any(name in settings.model_fields for name in SCOPE_FIELDS):
        return False
    parser = build_parser(settings, prog=definition.distribution, description="")
    given = vars(parser.parse_args(list(args)))
    if given.get("config") or os.environ.get(settings.env_prefix() + "CONFIG"):
        return False  # its own TOML file names them (or fails to, and the server says so)
    return not any(given.get(name) for name in SCOPE_FIELDS)


def _server_arguments(
    options: argparse.Namespace,
    names: list[str],
    extra: list[str],
    installed: Mapping[str, ServerDefinition[Any]],
) -> dict[str, list[str]]:
    args: dict[str, list[str]] = {name: [] for name in names}
    if options.config:
        path = Path(options.config).expanduser()
        top, tables = load_file(path)
        check_file(path, top, tables, installed)
        for name in names:
            if name in installed:
                args[name] = settings_as_args(installed[name], tables.get(name, {}))
            elif name in tables:
                raise ConfigError(
                    f"[{name}] in {path}: install {name} here to turn its settings into arguments"
                )
    if extra:
        if len(names) != 1:
            raise ConfigError("arguments after -- go to one server: name exactly one SERVER")
        args[names[0]] += [_absolute_if_local(argument) for argument in extra]
    return args


def _scoped(
    client: Client,
    args: dict[str, list[str]],
    installed: Mapping[str, ServerDefinition[Any]],
    named: bool,
) -> dict[str, list[str]]:
    """`args` with every directory-scoped server given a directory, or left out (with a note)."""
    missing = [
        name
        for name in args
        if (
            scope_missing(installed[name], args[name])
            if name in installed
            else name in SCOPED_SERVERS and not args[name]
        )
    ]
    if not missing:
        return args
    if client.workspace is not None:
        sys.stderr.write(
            f"note: {', '.join(missing)} without a directory: the entries use {client.workspace}, "
            f"the project {client.title} has open\n"
        )
        return {
            name: [*value, client.workspace] if name in missing else value for name, value in args.items()
        }
    why = (
        f"{client.title} would start {{}} in a directory of its own choosing (Claude Desktop, for one, "
        "starts servers in /), and the server would serve that"
    )
    if named:
        example = f"mcp-batteries config {client.name} {missing[0]} --write -- ~/project"
        raise ConfigError(f"{why.format(', '.join(missing))}: name the directory after --, e.g. {example}")
    sys.stderr.write(
        f"note: {', '.join(missing)} left out: {why.format('them')}; configure each with its directory: "
        f"mcp-batteries config {client.name} {missing[0]} -- DIR\n"
    )
    return {name: value for name, value in args.items() if name not in missing}


def _token_for_literal_client(client: Client, token_env: str, path: Path) -> str:
    token = os.environ.get(token_env, "")
    if not token:
        raise ConfigError(
            f"{client.title} expands no variables, so --write puts the token itself into {path} (readable by "
            f"you only): set {token_env} for this command, or use --no-token; nothing written"
        )
    return token


def config_main(argv: Sequence[str], *, prog: str = "mcp-batteries config") -> int:
    argv = list(argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    installed = discover()
    options = _parser(prog, installed).parse_intermixed_args(argv)
    try:
        misplaced = [argument for argument in extra if argument.split("=", 1)[0] in OWN_OPTIONS]
        if misplaced:
            raise ConfigError(
                f"{misplaced[0]} after -- would go to the server, not to config: put it before --, e.g. "
                f"mcp-batteries config {options.client} filesystem {misplaced[0]} -- ~/project"
            )
        client = client_named(options.client)
        names = list(dict.fromkeys(options.servers)) or list(installed)
        if not names:
            raise ConfigError("no MCP Batteries server is installed here: name the servers to configure")
        # The entries point at a bundle or run a published package: a server need not be installed
        # here to be configured, as long as its name could be one.
        malformed = [name for name in names if name not in installed and not NAME_PATTERN.fullmatch(name)]
        if malformed:
            raise ConfigError(f"{', '.join(malformed)}: not a server name (lowercase words joined by '-')")
        if options.file and not options.write:
            raise ConfigError("--file names the file --write merges into: add --write")
        if options.force and not options.write:
            raise ConfigError("--force replaces entries when writing: add --write")
        token_env = None if options.no_token else options.token_env
        if token_env is not None and not token_env.replace("_", "").isalnum():
            raise ConfigError(
                f"--token-env {token_env!r}: give an environment variable name, e.g. MCP_AUTH_TOKEN"
            )
        path = Path(options.file).expanduser() if options.file else client.file(Places.here())
        if options.http is not None:
            if extra or options.config:
                raise ConfigError(
                    "--http entries point at a running bundle: its servers' settings live in its own "
                    "--config, so -- arguments and --config do not apply here"
                )
            http = check_base_url(options.http)
            token = None
            if options.write and token_env is not None and client.token_style == "literal":
                token = _token_for_literal_client(client, token_env, path)
            servers: dict[str, Sequence[str]] = dict.fromkeys(names, ())
            entries = entries_for(client.name, servers, http=http, token_env=token_env, token=token)
            # What is printed never holds the token itself (a terminal, a log, a pasted snippet).
            printed = entries_for(client.name, servers, http=http, token_env=token_env)
        else:
            args = _server_arguments(options, names, extra, installed)
            args = _scoped(client, args, installed, named=bool(options.servers))
            if not args:
                raise ConfigError("nothing to configure")
            launches = {
                name: launch_for(name, installed[name].distribution if name in installed else None)
                for name in args
            }
            _say_launches(launches)
            entries = printed = entries_for(client.name, args, launches=launches)
        sys.stdout.write(printed.render())
        if options.http is not None and token_env is not None and client.token_style == "literal":
            sys.stderr.write(
                f"note: {client.title} expands no variables: the printed entries hold "
                f"{placeholder(token_env)} where the token goes; --write with {token_env} set writes the "
                "token itself into the file, readable by you only\n"
            )
        if options.write:
            _write(path, entries, force=options.force)
    except ConfigError as exc:
        fail(str(exc), prog=prog)
    return 0


def _say_launches(launches: Mapping[str, Launch]) -> None:
    elsewhere = [name for name, launch in launches.items() if launch.source == "elsewhere"]
    if elsewhere:
        sys.stderr.write(
            f"note: {', '.join(elsewhere)} not installed here: the entries run uvx mcp-batteries-NAME, "
            "which works once that package is on PyPI\n"
        )
    hows = sorted({launch.how for launch in launches.values() if launch.source != "elsewhere"})
    for how in hows:
        sys.stderr.write(f"note: the entries start servers with {how}\n")


def _write(path: Path, entries: ClientEntries, *, force: bool) -> None:
    result = write_entries(path, entries, force=force)
    count = len(entries.entries)
    if not result.changed:
        sys.stderr.write(f"{path}: already up to date, nothing written\n")
        return
    where = f"backup: {result.backup}" if result.backup is not None else "created"
    sys.stderr.write(f"{path}: {count} server(s) merged in; {where}\n")
    if entries.secret:
        sys.stderr.write(
            f"{path}: holds the bearer token itself ({entries.client.title} expands no variables), so it is "
            "now readable and writable by you only (0600)\n"
        )
