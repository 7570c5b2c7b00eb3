"""`mcp-batteries config`: the MCP client configuration for our servers, printed or merged in.

Each client has its own file, place and shape (as each client documents them):

- claude-desktop: its app config (`claude_desktop_config.json`); stdio `mcpServers` entries;
  no remote entries in its file, so HTTP goes through the documented `mcp-remote` bridge;
- claude-code: `.mcp.json` here (project scope); `type: stdio`, or `type: http` with `headers`
  referencing `${VAR}`;
- cline: its VS Code global-storage settings; `disabled` and `autoApprove` with every entry,
  `type: streamableHttp` for HTTP;
- cursor: `~/.cursor/mcp.json`; `url` and `headers` referencing `${env:VAR}`;
- vscode: the user profile's `mcp.json`; top-level `servers`, `type: stdio` or `type: http` with
  `${input:ID}` and a password `inputs` entry.

stdio entries run each server through uvx by its published name (`uvx mcp-batteries-NAME ARGS`);
HTTP entries point at the bundle (`URL/<name>/mcp`) and carry the bearer token by reference to
an environment variable (or VS Code's password prompt), never the token itself. Claude Desktop
and Cline take header values literally: their entries hold the reference as a placeholder for
the person to fill in, and a later `--write` keeps what they filled in.

`--write` merges into the file: every other server and key stays, a timestamped backup is
written first, the new file replaces the old one atomically, and a run that would change
nothing writes nothing.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp_batteries._bundle.configfile import check_file, load_file, settings_as_args
from mcp_batteries._bundle.scaffold import NAME_PATTERN
from mcp_batteries._core.cli import _OneLineParser, fail
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

CLIENTS = ("claude-desktop", "claude-code", "cline", "cursor", "vscode")
DEFAULT_TOKEN_ENV = "MCP_AUTH_TOKEN"
#: The variable the documented Claude Desktop bridge reads its header from (a space inside an
#: argument breaks on Windows, so the whole header value travels in the environment).
BRIDGE_HEADER_ENV = "AUTH_HEADER"


# -- where each client keeps its file --------------------------------------------------------------


def _app_support(platform: str, home: Path, environ: Mapping[str, str]) -> Path:
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(environ.get("XDG_CONFIG_HOME") or home / ".config")


def default_file(
    client: str,
    *,
    platform: str | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Path:
    """The file `client` reads its MCP servers from, on this OS (arguments: for tests)."""
    platform = platform or sys.platform
    home = home or Path.home()
    environ = os.environ if environ is None else environ
    cwd = cwd or Path.cwd()
    support = _app_support(platform, home, environ)
    if client == "claude-desktop":
        return support / "Claude" / "claude_desktop_config.json"
    if client == "claude-code":
        return cwd / ".mcp.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "vscode":
        return support / "Code" / "User" / "mcp.json"
    if client == "cline":
        storage = support / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
        return storage / "settings" / "cline_mcp_settings.json"
    raise ConfigError(f"unknown client {client!r}; choose one of: {', '.join(CLIENTS)}")


# -- the entries -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientEntries:
    """What goes into one client's file: entries under `servers_key`, plus VS Code's inputs."""

    client: str
    servers_key: str
    entries: dict[str, dict[str, Any]]
    inputs: list[dict[str, Any]]
    #: (entry key, field) pairs holding a placeholder the person fills in with the secret; a later
    #: merge keeps a filled-in value.
    placeholders: tuple[tuple[str, str], ...] = ()

    def document(self) -> dict[str, Any]:
        """The JSON to print: exactly what `--write` merges in."""
        document: dict[str, Any] = {self.servers_key: self.entries}
        if self.inputs:
            document["inputs"] = self.inputs
        return document


def stdio_entry(client: str, args: Sequence[str]) -> dict[str, Any]:
    command: dict[str, Any] = {"command": "uvx", "args": list(args)}
    if client in ("vscode", "claude-code"):
        return {"type": "stdio", **command}
    if client == "cline":
        return {**command, "disabled": False, "autoApprove": []}
    return command


def _input_id(token_env: str) -> str:
    return token_env.lower().replace("_", "-")


def http_entry(client: str, url: str, token_env: str | None) -> dict[str, Any]:
    if client == "claude-desktop":
        # No remote servers in Claude Desktop's file: the documented stdio bridge, mcp-remote.
        args = ["-y", "mcp-remote", url]
        if token_env is None:
            return {"command": "npx", "args": args}
        return {
            "command": "npx",
            "args": [*args, "--header", f"Authorization:${{{BRIDGE_HEADER_ENV}}}"],
            "env": {BRIDGE_HEADER_ENV: f"Bearer ${{{token_env}}}"},
        }
    headers: dict[str, str] = {}
    if token_env is not None:
        reference = {
            "claude-code": f"${{{token_env}}}",
            "cursor": f"${{env:{token_env}}}",
            "vscode": f"${{input:{_input_id(token_env)}}}",
            "cline": f"${{{token_env}}}",
        }[client]
        headers = {"Authorization": f"Bearer {reference}"}
    if client == "cline":
        return {
            "type": "streamableHttp",
            "url": url,
            "headers": headers,
            "disabled": False,
            "autoApprove": [],
        }
    if client == "cursor":
        return {"url": url, "headers": headers} if headers else {"url": url}
    entry: dict[str, Any] = {"type": "http", "url": url}
    if headers:
        entry["headers"] = headers
    return entry


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


def entries_for(
    client: str,
    servers: Mapping[str, Sequence[str]],
    *,
    http: str | None = None,
    token_env: str | None = DEFAULT_TOKEN_ENV,
) -> ClientEntries:
    """The entries for `servers` (name -> its stdio arguments after the script name)."""
    if client not in CLIENTS:
        raise ConfigError(f"unknown client {client!r}; choose one of: {', '.join(CLIENTS)}")
    entries: dict[str, dict[str, Any]] = {}
    for name, args in servers.items():
        if http is None:
            entries[name] = stdio_entry(client, [f"mcp-batteries-{name}", *args])
        else:
            entries[name] = http_entry(client, bundle_url(http, name), token_env)
    inputs: list[dict[str, Any]] = []
    placeholders: tuple[tuple[str, str], ...] = ()
    if http is not None and token_env is not None:
        if client == "vscode":
            inputs.append(
                {
                    "type": "promptString",
                    "id": _input_id(token_env),
                    "description": f"Bearer token for the MCP Batteries server (as in ${token_env})",
                    "password": True,
                }
            )
        elif client == "claude-desktop":
            placeholders = (("env", BRIDGE_HEADER_ENV),)
        elif client == "cline":
            placeholders = (("headers", "Authorization"),)
    servers_key = "servers" if client == "vscode" else "mcpServers"
    return ClientEntries(client, servers_key, entries, inputs, placeholders)


# -- merging into the client's file -----------------------------------------------------------------


def _keep_filled_in(new: dict[str, Any], old: Any, placeholders: Iterable[tuple[str, str]]) -> None:
    """Keep a secret the person put where we wrote a placeholder (e.g. Claude Desktop's header)."""
    if not isinstance(old, dict):
        return
    for section, key in placeholders:
        before = old.get(section)
        value = before.get(key) if isinstance(before, dict) else None
        target = new.get(section)
        if isinstance(value, str) and value and isinstance(target, dict) and key in target:
            target[key] = value


def merge_entries(document: Mapping[str, Any], entries: ClientEntries) -> dict[str, Any]:
    """`document` with `entries` merged in; every other key and server is kept as it was."""
    merged = copy.deepcopy(dict(document))
    servers = merged.get(entries.servers_key)
    if servers is None:
        servers = merged[entries.servers_key] = {}
    if not isinstance(servers, dict):
        raise ConfigError(f"{entries.servers_key!r} in the file is not a JSON object; fix it by hand first")
    for name, entry in entries.entries.items():
        new = copy.deepcopy(entry)
        _keep_filled_in(new, servers.get(name), entries.placeholders)
        servers[name] = new
    if entries.inputs:
        inputs = merged.get("inputs")
        if inputs is None:
            inputs = merged["inputs"] = []
        if not isinstance(inputs, list):
            raise ConfigError("'inputs' in the file is not a JSON array; fix it by hand first")
        for item in entries.inputs:
            same = [
                i for i, old in enumerate(inputs) if isinstance(old, dict) and old.get("id") == item["id"]
            ]
            if same:
                inputs[same[0]] = copy.deepcopy(item)
            else:
                inputs.append(copy.deepcopy(item))
    return merged


@dataclass(frozen=True)
class WriteResult:
    path: Path
    changed: bool
    backup: Path | None


def _render(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _read_document(path: Path) -> tuple[dict[str, Any], str | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        return {}, text
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not plain JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); comments or "
            "trailing commas would be lost, so it is left alone: add the printed entries by hand"
        ) from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path} does not hold a JSON object; fix it by hand first")
    return document, text


def _backup_path(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}.{stamp}.bak")
    number = 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.{stamp}-{number}.bak")
    return candidate


def _atomic_write(path: Path, text: str, mode: int) -> None:
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    if hasattr(os, "O_DIRECTORY"):  # the rename itself survives a crash once the directory is synced
        directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def write_entries(path: Path, entries: ClientEntries) -> WriteResult:
    """Merge `entries` into the file at `path`: backup first, atomic replace, nothing if unchanged."""
    # A symlinked config (dotfiles) keeps its link: the file it points to is what changes.
    target = path.resolve() if path.is_symlink() else path
    document, old_text = _read_document(target)
    merged = merge_entries(document, entries)
    if old_text is not None and merged == document:
        return WriteResult(path, changed=False, backup=None)
    backup = None
    mode = 0o600
    if old_text is not None:
        backup = _backup_path(target)
        shutil.copy2(target, backup)
        mode = target.stat().st_mode & 0o7777
    else:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create {target.parent}: {exc.strerror}") from None
    try:
        _atomic_write(target, _render(merged), mode)
    except OSError as exc:
        raise ConfigError(f"cannot write {target}: {exc.strerror}") from None
    return WriteResult(path, changed=True, backup=backup)


# -- the command -------------------------------------------------------------------------------------


def _parser(prog: str, installed: Mapping[str, ServerDefinition[Any]]) -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog=prog,
        description=(
            "Print (or --write) the MCP configuration of a client for MCP Batteries servers: stdio entries\n"
            "that run each server with uvx, or with --http, entries for a bundle served by\n"
            "`mcp-batteries serve`. The token is referenced through an environment variable, never written."
        ),
        epilog=(
            f"installed servers: {', '.join(installed) or 'none'}\n\n"
            "examples:\n"
            "  mcp-batteries config claude-desktop filesystem -- ~/project   # stdio, one directory\n"
            "  mcp-batteries config cursor --config team.toml --write        # arguments from the file\n"
            "  mcp-batteries config claude-code --http https://mcp.example.com --write\n"
            "  mcp-batteries config vscode sql --http https://mcp.example.com --write --file x/mcp.json\n"
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
        help=f"Environment variable the client reads the bearer token from (default: {DEFAULT_TOKEN_ENV}).",
    )
    parser.add_argument(
        "--no-token",
        action="store_true",
        help="No Authorization header (a loopback bundle, or clients that sign in with OAuth themselves).",
    )
    parser.add_argument("--write", action="store_true", help="Merge the entries into the client's file.")
    parser.add_argument(
        "--file", metavar="PATH", help="The file to merge into (default: the client's standard file)."
    )
    return parser


def _absolute_if_local(argument: str) -> str:
    """A relative path a person typed means their directory, not the client's working directory."""
    if argument.startswith("-") or "://" in argument:
        return argument
    candidate = Path(argument).expanduser()
    if candidate.exists():
        return str(candidate.resolve())
    return argument


def config_main(argv: Sequence[str], *, prog: str = "mcp-batteries config") -> int:
    argv = list(argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    installed = discover()
    options = _parser(prog, installed).parse_args(argv)
    try:
        names = list(dict.fromkeys(options.servers)) or list(installed)
        if not names:
            raise ConfigError("no MCP Batteries server is installed here: name the servers to configure")
        # The entries run `uvx mcp-batteries-NAME` or point at a bundle: a server need not be
        # installed here to be configured, as long as its name could be one.
        malformed = [name for name in names if name not in installed and not NAME_PATTERN.fullmatch(name)]
        if malformed:
            raise ConfigError(f"{', '.join(malformed)}: not a server name (lowercase words joined by '-')")
        elsewhere = [name for name in names if name not in installed]
        if elsewhere:
            sys.stderr.write(
                f"note: {', '.join(elsewhere)} not installed here; the entries run uvx mcp-batteries-NAME "
                f"(installed: {', '.join(installed) or 'none'})\n"
            )
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
        if options.file and not options.write:
            raise ConfigError("--file names the file --write merges into: add --write")
        http = None
        if options.http is not None:
            if extra or options.config:
                raise ConfigError(
                    "--http entries point at a running bundle: its servers' settings live in its own "
                    "--config, so -- arguments and --config do not apply here"
                )
            http = check_base_url(options.http)
        token_env = None if options.no_token else options.token_env
        if token_env is not None and not token_env.replace("_", "").isalnum():
            raise ConfigError(
                f"--token-env {token_env!r}: give an environment variable name, e.g. MCP_AUTH_TOKEN"
            )
        entries = entries_for(options.client, args, http=http, token_env=token_env)
        sys.stdout.write(_render(entries.document()))
        if entries.placeholders:
            sys.stderr.write(
                f"note: {options.client} takes header values as written, so the entries hold the placeholder "
                f"${{{token_env}}}: replace it with the token in the file (a later --write keeps it)\n"
            )
        if options.write:
            path = Path(options.file).expanduser() if options.file else default_file(options.client)
            result = write_entries(path, entries)
            if not result.changed:
                sys.stderr.write(f"{path}: already up to date, nothing written\n")
            elif result.backup is not None:
                sys.stderr.write(
                    f"{path}: {len(entries.entries)} server(s) merged in; backup: {result.backup}\n"
                )
            else:
                sys.stderr.write(f"{path}: created with {len(entries.entries)} server(s)\n")
    except ConfigError as exc:
        fail(str(exc), prog=prog)
    return 0
