"""Every entry `mcp-batteries config --write` writes works when launched the way its client launches it.

For each client: `config CLIENT ... --write` into the client's default file (under a temporary
HOME), the file read back with an independent parser for its format (json, tomllib, a YAML
loader), the `${...}` the client expands expanded as that client does (and nothing else: a
client that expands nothing gets its values as written), then:

- stdio entries are started exactly as written (command, args, env; a bare PATH, started in `/`
  as Claude Desktop does) and answer a `tools/call`;
- remote entries reach a running bundle (`mcp-batteries serve`, with a bearer token) through
  `mcp-remote`, an MCP client this project does not write: Claude Desktop's entry is itself the
  `npx mcp-remote ...` command and runs as written; for clients that speak HTTP themselves, the
  URL and headers they would send are handed to mcp-remote. The token variable is never in
  mcp-remote's environment, so a header left as `${MCP_AUTH_TOKEN}` fails as it would in the client.

mcp-remote is pinned by `mcp-remote/package.json` + `package-lock.json` next to this file and
installed with `npm ci` into `.tools/mcp-remote` by the Node helpers every npm stage shares (`tests/node.py`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters
from mcp_batteries._bundle.client_table import CLIENTS, Places, client_named
from mcp_batteries.testing import connect
from ruamel.yaml import YAML

from .. import node
from .conftest import ROOT, BundleProcess, bundle_process, client_home, run_config

HERE = Path(__file__).resolve().parent
MCP_REMOTE_DIR = ROOT / ".tools" / "mcp-remote"
TOKEN = "s3cret-token-for-the-launch-test"
BARE_PATH = "/usr/bin:/bin"  # what a desktop app gives the servers it starts

pytestmark = [pytest.mark.anyio]


# -- reading the file as the client does ------------------------------------------------------------


def read_as_client(client: str, path: Path) -> dict[str, Any]:
    """The client's servers table, parsed by a parser we do not write to."""
    spec = client_named(client)
    text = path.read_text()
    if spec.format == "toml":
        document: Any = tomllib.loads(text)
    elif spec.format == "yaml":
        document = YAML(typ="safe").load(text)
    else:
        document = json.loads(text)  # a fresh file: plain JSON
    for key in spec.servers_key:
        document = document[key]
    assert isinstance(document, dict)
    return document


def expand_as_client(client: str, value: str, env: Mapping[str, str], workspace: Path) -> str:
    """`value` with exactly the `${...}` (or `$VAR`) this client expands, expanded its way."""

    def variables(pattern: str, lookup: Mapping[str, str]) -> str:
        return re.sub(pattern, lambda m: lookup.get(m.group(1), ""), value)

    if client == "claude-code":
        return re.sub(
            r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}",
            lambda m: env.get(m.group(1), m.group(2) or ""),
            value,
        )
    if client in ("cursor", "vscode"):
        value = value.replace("${workspaceFolder}", str(workspace)).replace("${userHome}", env["HOME"])
        if client == "vscode":  # a password input: VS Code prompts once; the person types the token
            value = re.sub(r"\$\{input:[^}]+\}", TOKEN, value)
        return variables(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}", env)
    if client == "windsurf":
        return variables(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}", env)
    if client == "gemini":
        value = variables(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", env)
        return variables(r"\$([A-Za-z_][A-Za-z0-9_]*)", env)
    return value  # claude-desktop, cline, zed, goose, codex: taken as written


def expand_all(client: str, value: Any, env: Mapping[str, str], workspace: Path) -> Any:
    if isinstance(value, str):
        return expand_as_client(client, value, env, workspace)
    if isinstance(value, list | tuple):
        return type(value)(expand_all(client, v, env, workspace) for v in value)
    if isinstance(value, dict):
        return {k: expand_all(client, v, env, workspace) for k, v in value.items()}
    return value


def stdio_command(client: str, entry: Mapping[str, Any]) -> tuple[str, list[str], dict[str, str]]:
    if client == "goose":
        assert entry["type"] == "stdio"
        return entry["cmd"], list(entry["args"]), dict(entry.get("envs") or {})
    if "type" in entry:
        assert entry["type"] == "stdio"
    return entry["command"], list(entry.get("args") or []), dict(entry.get("env") or {})


def remote_request(
    client: str, entry: Mapping[str, Any], env: Mapping[str, str]
) -> tuple[str, dict[str, str]]:
    """The URL and headers a client that speaks Streamable HTTP itself sends, from its entry."""
    if client == "codex":
        headers = {}
        if "bearer_token_env_var" in entry:
            headers["Authorization"] = f"Bearer {env.get(entry['bearer_token_env_var'], '')}"
        return entry["url"], headers
    key = {"windsurf": "serverUrl", "gemini": "httpUrl", "goose": "uri"}.get(client, "url")
    if client == "cline":
        assert entry["type"] == "streamableHttp"
    if client in ("claude-code", "vscode"):
        assert entry["type"] == "http"
    if client == "goose":
        assert entry["type"] == "streamable_http"
    return entry[key], dict(entry.get("headers") or {})


def written(
    client: str, tmp_path: Path, *args: str, env: Mapping[str, str | None] | None = None
) -> dict[str, Any]:
    """`config CLIENT ARGS --write` into the client's default file under a temporary HOME."""
    environment = {**client_home(tmp_path), **(env or {})}
    project = tmp_path / "repo"
    project.mkdir(exist_ok=True)
    done = run_config(client, "--write", *args, cwd=project, env=environment)
    assert done.returncode == 0, done.stderr
    home = Path(str(environment["HOME"]))
    places = Places("linux", home, {"XDG_CONFIG_HOME": str(home / ".config")}, project)
    return read_as_client(client, client_named(client).file(places))


# -- stdio -------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("client", CLIENTS)
async def test_a_written_stdio_entry_starts_as_its_client_starts_it_and_answers(
    client: str, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "hello.txt").write_text("hello from the project\n")
    # Clients with a workspace variable get it when no directory is named; the others need one.
    named = [] if client_named(client).workspace else ["--", str(project)]
    entry = written(client, tmp_path, "filesystem", *named)["filesystem"]
    env = {"PATH": BARE_PATH, "HOME": str(tmp_path / "home")}
    command, args, entry_env = expand_all(client, stdio_command(client, entry), env, project)
    params = StdioServerParameters(command=command, args=args, env={**env, **entry_env}, cwd="/")
    with anyio.fail_after(120):
        async with connect(params, "legacy") as session:
            answer = await session.call_tool("read_text_file", {"path": str(project / "hello.txt")})
    assert not answer.is_error, answer
    assert "hello from the project" in str(answer.content)


# -- remote, through mcp-remote ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def node_env() -> dict[str, str]:
    env = node.node_env()
    node.ensure_pinned(HERE / "mcp-remote", MCP_REMOTE_DIR, env)
    return env


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BundleProcess]:
    folder = tmp_path_factory.mktemp("served")
    (folder / "shared.txt").write_text("served by the bundle\n")
    config = folder / "bundle.toml"
    config.write_text(f"[filesystem]\ndirectories = [{json.dumps(str(folder))}]\n")
    with bundle_process("filesystem", "--config", str(config), env={"MCP_AUTH_TOKEN": TOKEN}) as running:
        running.folder = folder  # type: ignore[attr-defined]
        yield running


async def call_through_mcp_remote(command: str, args: list[str], env: dict[str, str]) -> str:
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(MCP_REMOTE_DIR))
    with anyio.fail_after(90):
        async with connect(params, "legacy") as session:
            answer = await session.call_tool("list_allowed_directories", {})
    assert not answer.is_error, answer
    return str(answer.content)


@pytest.mark.slow
@pytest.mark.parametrize("client", CLIENTS)
async def test_a_written_remote_entry_reaches_the_bundle_with_its_token(
    client: str, tmp_path: Path, bundle: BundleProcess, node_env: dict[str, str]
) -> None:
    # The token is in the environment of `config` (a client that expands nothing gets it written
    # in) and of the client (those that expand a reference read it there), never of mcp-remote.
    servers = written(client, tmp_path, "filesystem", "--http", bundle.base, env={"MCP_AUTH_TOKEN": TOKEN})
    entry = servers["filesystem"]
    home = str(tmp_path / "home")
    client_env = {"PATH": node_env["PATH"], "HOME": home, "MCP_AUTH_TOKEN": TOKEN}
    bridge_env = {"PATH": node_env["PATH"], "HOME": home}  # mcp-remote keeps its state in ~/.mcp-auth
    if client == "claude-desktop":
        # The entry is the mcp-remote command itself: run as written (npx finds the pinned copy
        # in the folder it runs in).
        command, args, entry_env = stdio_command(client, entry)
        assert command == "npx" and "mcp-remote" in args
        shown = await call_through_mcp_remote(command, args, {**bridge_env, **entry_env})
    else:
        url, headers = remote_request(client, expand_all(client, entry, client_env, tmp_path), client_env)
        header_args = [part for name, value in headers.items() for part in ("--header", f"{name}:{value}")]
        node = shutil.which("node", path=node_env["PATH"])
        assert node is not None
        bridge = str(MCP_REMOTE_DIR / "node_modules" / "mcp-remote" / "dist" / "proxy.js")
        shown = await call_through_mcp_remote(node, [bridge, url, *header_args], bridge_env)
    assert str(bundle.folder) in shown  # type: ignore[attr-defined]


def test_written_files_with_a_token_in_them_are_owner_only(tmp_path: Path) -> None:
    for client in CLIENTS:
        if client_named(client).token_style != "literal":
            continue
        home = tmp_path / client
        home.mkdir()
        environment = {**client_home(home), "MCP_AUTH_TOKEN": TOKEN}
        done = run_config(client, "sql", "--http", "https://mcp.example.com", "--write", env=environment)
        assert done.returncode == 0, done.stderr
        places = Places(
            "linux", home / "home", {"XDG_CONFIG_HOME": str(home / "home" / ".config")}, Path.cwd()
        )
        path = client_named(client).file(places)
        assert TOKEN in path.read_text(), client
        assert (path.stat().st_mode & 0o777) == 0o600, client
        assert "readable and writable by you only (0600)" in done.stderr
        assert TOKEN not in done.stdout  # printed entries never hold it
    assert os.environ.get("HOME") != str(tmp_path)
