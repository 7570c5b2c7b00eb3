"""The clients `mcp-batteries config` writes for: where each keeps its MCP servers, in which shape,
and what it does with `${...}` in the values (which decides where a bearer token can go).

Each fact is from the client's own documentation or source, as read in 2026:

- claude-desktop: `claude_desktop_config.json` in the app's support folder, `mcpServers` with stdio
  entries only (modelcontextprotocol.io "Connect to local MCP servers"). It expands nothing. Remote
  servers go through the `mcp-remote` bridge (its README), which expands `${VAR}` in its own
  arguments from its environment, once: so the entry carries `--header Authorization:${AUTH_HEADER}`
  (no space inside an argument: that breaks on Windows) and `env.AUTH_HEADER = "Bearer <token>"`
  literally. A `${MCP_AUTH_TOKEN}` inside that value would reach the server as those characters.
- claude-code: `.mcp.json` in the project (project scope), `type: stdio|http`; expands `${VAR}` and
  `${VAR:-default}` in command, args, env, url and headers (code.claude.com/docs/en/mcp).
- cline: `cline_mcp_settings.json` in VS Code's global storage for `saoudrizwan.claude-dev`;
  `disabled`/`autoApprove` on every entry, `type: streamableHttp` for HTTP (without it a `url`
  means the old SSE transport); no variable expansion anywhere (docs.cline.bot "MCP servers").
- cursor: `~/.cursor/mcp.json`, `mcpServers`; `url` + `headers` for HTTP; interpolates
  `${env:NAME}`, `${userHome}`, `${workspaceFolder}` in command, args, env, url and headers
  (cursor.com/docs "Model Context Protocol", config interpolation).
- vscode: the user profile's `mcp.json` (JSON with comments), top-level `servers`, `type` on every
  entry; `inputs` of type `promptString` with `password: true` are asked once and stored in its
  secret storage, referenced as `${input:ID}`; predefined variables such as `${workspaceFolder}`
  are resolved (code.visualstudio.com/docs/copilot/customization/mcp-servers).
- windsurf: `~/.codeium/windsurf/mcp_config.json`, `mcpServers`, `serverUrl` (not `url`) for HTTP;
  interpolates `${env:NAME}` in command, args, env, serverUrl, url and headers
  (docs.windsurf.com/windsurf/cascade/mcp).
- zed: `settings.json` (JSON with comments; `~/.config/zed/`, `%APPDATA%\\Zed` on Windows),
  `context_servers`: `command`/`args`/`env` or `url`/`headers` (zed.dev/docs/ai/mcp; the
  settings type in zed's `project_settings.rs`); values are taken literally.
- goose: `~/.config/goose/config.yaml` (`%APPDATA%\\Block\\goose\\config` on Windows),
  `extensions.NAME` with `type: stdio` (`cmd`, `args`, `envs`, `env_keys`, `timeout`) or
  `type: streamable_http` (`uri`, `headers`) (goose docs "Configuration Files"); header values are
  taken literally.
- codex: `~/.codex/config.toml` (`$CODEX_HOME`), `[mcp_servers.NAME]` with `command`/`args` or
  `url` + `bearer_token_env_var` (the variable's name; Codex reads it and refuses an inline
  `bearer_token`) (developers.openai.com/codex/mcp).
- gemini: `~/.gemini/settings.json`, `mcpServers`, `httpUrl` for Streamable HTTP (`url` means SSE);
  string values in settings.json may reference `$VAR` or `${VAR}` (geminicli.com/docs/tools/mcp-server,
  /docs/cli/configuration).

So a bearer token is referenced by name where the client expands it (claude-code, cursor, vscode,
windsurf, gemini, codex), and written into the file only where nothing expands it (claude-desktop
through mcp-remote, cline, zed, goose): then with `--write` from `$MCP_AUTH_TOKEN` at that moment,
the file owner-only (0600), and never printed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from mcp_batteries.errors import ConfigError

__all__ = [
    "BRIDGE_HEADER_ENV",
    "CLIENTS",
    "TABLE",
    "Client",
    "Places",
    "client_named",
    "input_id",
]

#: The variable mcp-remote reads the whole header value from, in Claude Desktop's entry.
BRIDGE_HEADER_ENV = "AUTH_HEADER"

Format = Literal["json", "jsonc", "yaml", "toml"]
#: How an HTTP entry carries the bearer token: a `${...}` reference the client expands, the token
#: itself (the client expands nothing), the variable's name (Codex), or a password input (VS Code).
TokenStyle = Literal["reference", "literal", "variable", "input"]


@dataclass(frozen=True)
class Places:
    """Where to look, for this OS and person (tests pass their own)."""

    platform: str
    home: Path
    environ: Mapping[str, str]
    cwd: Path

    @classmethod
    def here(cls) -> Places:
        return cls(sys.platform, Path.home(), os.environ, Path.cwd())

    def app_support(self) -> Path:
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        if self.platform == "win32":
            return self.appdata()
        return self.xdg_config()

    def appdata(self) -> Path:
        return Path(self.environ.get("APPDATA") or self.home / "AppData" / "Roaming")

    def xdg_config(self) -> Path:
        return Path(self.environ.get("XDG_CONFIG_HOME") or self.home / ".config")


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    format: Format
    #: The keys from the top of the file to the table of servers.
    servers_key: tuple[str, ...]
    token_style: TokenStyle
    file: Callable[[Places], Path]
    stdio: Callable[[str, str, Sequence[str]], dict[str, Any]]
    http: Callable[[str, str, str | None, str | None], dict[str, Any]]
    #: `${...}` for the project the client has open, where it has one: a filesystem entry without a
    #: directory gets it (instead of the directory the client happens to start servers in).
    workspace: str | None = None
    #: `${...}` syntax for an environment variable, for `token_style == "reference"`.
    reference: str = ""
    #: JSON clients that reject comments and trailing commas (their files are refused if they have them).
    strict_json: bool = True

    def token_reference(self, variable: str) -> str:
        if self.token_style == "input":
            return f"${{input:{input_id(variable)}}}"
        return self.reference.format(variable)


def input_id(variable: str) -> str:
    """VS Code's input id for a token variable (MCP_AUTH_TOKEN -> mcp-auth-token)."""
    return variable.lower().replace("_", "-")


def _headers(authorization: str | None) -> dict[str, str]:
    return {"Authorization": authorization} if authorization is not None else {}


def _plain_stdio(name: str, command: str, args: Sequence[str]) -> dict[str, Any]:
    return {"command": command, "args": list(args)}


def _typed_stdio(name: str, command: str, args: Sequence[str]) -> dict[str, Any]:
    return {"type": "stdio", "command": command, "args": list(args)}


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _claude_desktop_http(
    name: str, url: str, authorization: str | None, variable: str | None
) -> dict[str, Any]:
    # No remote entries in Claude Desktop's file: the stdio bridge mcp-remote. It refuses plain
    # http:// except on loopback unless told, and expands ${AUTH_HEADER} from its environment.
    args = ["-y", "mcp-remote", url]
    if url.startswith("http://") and not _is_loopback(url):
        args.append("--allow-http")
    if authorization is None:
        return {"command": "npx", "args": args}
    return {
        "command": "npx",
        "args": [*args, "--header", f"Authorization:${{{BRIDGE_HEADER_ENV}}}"],
        "env": {BRIDGE_HEADER_ENV: authorization},
    }


def _claude_code_http(name: str, url: str, authorization: str | None, variable: str | None) -> dict[str, Any]:
    return {"type": "http", "url": url, **({"headers": _headers(authorization)} if authorization else {})}


def _cline_stdio(name: str, command: str, args: Sequence[str]) -> dict[str, Any]:
    return {"command": command, "args": list(args), "disabled": False, "autoApprove": []}


def _cline_http(name: str, url: str, authorization: str | None, variable: str | None) -> dict[str, Any]:
    return {
        "type": "streamableHttp",
        "url": url,
        "headers": _headers(authorization),
        "disabled": False,
        "autoApprove": [],
    }


def _url_http(key: str) -> Callable[[str, str, str | None, str | None], dict[str, Any]]:
    def build(name: str, url: str, authorization: str | None, variable: str | None) -> dict[str, Any]:
        return {key: url, **({"headers": _headers(authorization)} if authorization else {})}

    return build


def _zed_stdio(name: str, command: str, args: Sequence[str]) -> dict[str, Any]:
    return {"command": command, "args": list(args), "env": {}}


def _goose_stdio(name: str, command: str, args: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "stdio",
        "name": name,
        "description": f"MCP Batteries {name} server",
        "enabled": True,
        "cmd": command,
        "args": list(args),
        "envs": {},
        "env_keys": [],
        "timeout": 300,
    }


def _goose_http(name: str, url: str, authorization: str | None, variable: str | None) -> dict[str, Any]:
    return {
        "type": "streamable_http",
        "name": name,
        "description": f"MCP Batteries {name} server",
        "enabled": True,
        "uri": url,
        "headers": _headers(authorization),
        "envs": {},
        "env_keys": [],
        "timeout": 300,
    }


def _codex_http(name: str, url: str, authorization: str | None, variable: str | None) -> dict[str, Any]:
    return {"url": url, **({"bearer_token_env_var": variable} if variable else {})}


def _vscode_file(places: Places) -> Path:
    return places.app_support() / "Code" / "User" / "mcp.json"


def _cline_file(places: Places) -> Path:
    storage = places.app_support() / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
    return storage / "settings" / "cline_mcp_settings.json"


def _zed_file(places: Places) -> Path:
    if places.platform == "win32":
        return places.appdata() / "Zed" / "settings.json"
    return places.xdg_config() / "zed" / "settings.json"


def _goose_file(places: Places) -> Path:
    if places.platform == "win32":
        return places.appdata() / "Block" / "goose" / "config" / "config.yaml"
    return places.xdg_config() / "goose" / "config.yaml"


def _codex_file(places: Places) -> Path:
    return Path(places.environ.get("CODEX_HOME") or places.home / ".codex") / "config.toml"


TABLE: tuple[Client, ...] = (
    Client(
        "claude-desktop", "Claude Desktop", "json", ("mcpServers",), "literal",
        file=lambda p: p.app_support() / "Claude" / "claude_desktop_config.json",
        stdio=_plain_stdio, http=_claude_desktop_http,
    ),
    Client(
        "claude-code", "Claude Code", "json", ("mcpServers",), "reference",
        file=lambda p: p.cwd / ".mcp.json",
        stdio=_typed_stdio, http=_claude_code_http, reference="${{{}}}",
    ),
    Client(
        "cline", "Cline", "json", ("mcpServers",), "literal",
        file=_cline_file, stdio=_cline_stdio, http=_cline_http,
    ),
    Client(
        "cursor", "Cursor", "json", ("mcpServers",), "reference",
        file=lambda p: p.home / ".cursor" / "mcp.json",
        stdio=_plain_stdio, http=_url_http("url"), reference="${{env:{}}}", workspace="${workspaceFolder}",
    ),
    Client(
        "vscode", "VS Code", "jsonc", ("servers",), "input",
        file=_vscode_file, stdio=_typed_stdio, http=_claude_code_http,
        workspace="${workspaceFolder}", strict_json=False,
    ),
    Client(
        "windsurf", "Windsurf", "json", ("mcpServers",), "reference",
        file=lambda p: p.home / ".codeium" / "windsurf" / "mcp_config.json",
        stdio=_plain_stdio, http=_url_http("serverUrl"), reference="${{env:{}}}",
    ),
    Client(
        "zed", "Zed", "jsonc", ("context_servers",), "literal",
        file=_zed_file, stdio=_zed_stdio, http=_url_http("url"), strict_json=False,
    ),
    Client(
        "goose", "Goose", "yaml", ("extensions",), "literal",
        file=_goose_file, stdio=_goose_stdio, http=_goose_http,
    ),
    Client(
        "codex", "Codex CLI", "toml", ("mcp_servers",), "variable",
        file=_codex_file, stdio=_plain_stdio, http=_codex_http,
    ),
    Client(
        "gemini", "Gemini CLI", "json", ("mcpServers",), "reference",
        file=lambda p: p.home / ".gemini" / "settings.json",
        stdio=_plain_stdio, http=_url_http("httpUrl"), reference="${{{}}}",
    ),
)  # fmt: skip

CLIENTS: tuple[str, ...] = tuple(client.name for client in TABLE)


def client_named(name: str) -> Client:
    for client in TABLE:
        if client.name == name:
            return client
    raise ConfigError(f"unknown client {name!r}; choose one of: {', '.join(CLIENTS)}")
