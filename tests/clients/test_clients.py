"""Every server driven by MCP clients this project does not write, as the hosts people use drive it.

- the official **TypeScript SDK** clients: `@modelcontextprotocol/sdk` (v1, the 2025-era client
  most hosts are built on) and `@modelcontextprotocol/client` (v2, which also speaks
  2026-07-28), through `drive.mjs`: one Node process per server and transport runs every session;
- the **MCP Inspector CLI** (`@modelcontextprotocol/inspector --cli`), the tool developers debug
  with: one process per call, as it is used.

Each server is driven over stdio (the client starts it, as Claude Desktop does) and Streamable
HTTP, in both protocol eras, and through the bundle (`mcp-batteries serve`): list the tools, call
a cheap tool, read a resource (fetch has none). Handshake-era clients that declare roots answer
`roots/list` with an empty list (the Inspector always does, and so does the v2 session here):
filesystem and git must then serve everything configured.

Versions are pinned by `package.json` + `package-lock.json` next to this file and installed into
`.tools/clients` on first use (`tests/node.py`, as for the conformance suite).
"""

from __future__ import annotations

import http.server
import json
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_batteries.testing import http_server, script_path

from ..bundle.conftest import bundle_process
from ..node import INSTALL_TIMEOUT_S, TOOLS, ensure_pinned, node_env

HERE = Path(__file__).resolve().parent
INSTALL_DIR = TOOLS / "clients"
DRIVER = INSTALL_DIR / "drive.mjs"
INSPECTOR = INSTALL_DIR / "node_modules" / ".bin" / "mcp-inspector"
SERVERS = ("filesystem", "sql", "fetch", "git", "tasks")
TRANSPORTS = ("stdio", "http")
#: One Node process: every session of one server and transport (stdio starts the server each time).
DRIVE_TIMEOUT_S = 180
INSPECTOR_TIMEOUT_S = 60

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(INSTALL_TIMEOUT_S + 600)]


# -- the clients ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Clients:
    #: Not shown in failure reports: it is the whole environment.
    env: dict[str, str] = field(repr=False)
    versions: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def clients() -> Clients:
    env = node_env()
    versions = ensure_pinned(HERE, INSTALL_DIR, env)
    # Next to the packages it imports (ES modules resolve from the importing file's folder).
    shutil.copyfile(HERE / "drive.mjs", DRIVER)
    # The Inspector keeps OAuth secrets in the OS keychain, absent here: memory, and no warning.
    env["MCP_INSPECTOR_SECRET_STORE"] = "memory"
    return Clients(env, versions)


# -- what each server is given, and asked ------------------------------------------------------
@dataclass
class Server:
    name: str
    args: list[str]
    #: The bundle's TOML table for this server.
    table: str
    tool: str
    arguments: dict[str, Any]
    #: Text the tool's answer holds.
    answer: str
    resource: str | None = None
    content: str = ""
    tools: list[str] = field(default_factory=list)


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path != "/page.html":
            self.send_error(404)
            return
        body = b"<html><body><h1>Hello</h1><p>Fetched by an independent client.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def page() -> Iterator[str]:
    """A web page on 127.0.0.1 for mcp-fetch (allowed with --allow-private-host)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page.html"
    finally:
        server.shutdown()
        thread.join(timeout=5)


def toml_list(*values: str) -> str:
    return json.dumps(list(values))


def build(name: str, tmp_path: Path, page: str) -> Server:
    if name == "filesystem":
        files = tmp_path / "files"
        files.mkdir()
        (files / "a.txt").write_text("alpha, read by an independent client\n")
        return Server(
            name, [str(files), "--no-watch"], f"directories = {toml_list(str(files))}",
            "read_text_file", {"path": "a.txt"}, "alpha, read by",
            (files / "a.txt").as_uri(), "alpha, read by", ["read_text_file", "list_allowed_directories"],
        )  # fmt: skip
    if name == "sql":
        database = tmp_path / "app.db"
        with sqlite3.connect(database) as conn:
            conn.execute("CREATE TABLE items (name TEXT)")
            conn.execute("INSERT INTO items VALUES ('widget')")
        conn.close()
        return Server(
            name, [str(database)], f"databases = {toml_list(f'sqlite:///{database}')}",
            "query", {"sql": "SELECT name FROM items"}, "widget",
            "sql://main/schema", "CREATE TABLE items", ["query", "list_tables", "describe_table"],
        )  # fmt: skip
    if name == "fetch":
        return Server(
            name, ["--allow-private-host", "127.0.0.1"], 'allow_private_host = ["127.0.0.1"]',
            "fetch", {"url": page}, "Fetched by an independent client", None, "", ["fetch"],
        )  # fmt: skip
    if name == "git":
        repo = tmp_path / "repo"
        repo.mkdir()
        (repo / "README.md").write_text("# repo\n")
        identity = ["-c", "user.name=Tester", "-c", "user.email=tester@example.com"]
        for command in (
            ["init", "--quiet"],
            ["add", "."],
            [*identity, "commit", "--quiet", "-m", "first commit"],
        ):
            subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)
        return Server(
            name, ["--repository", str(repo), "--no-watch"], f"repository = {toml_list(str(repo))}",
            "git_status", {}, "nothing to commit", "git://repo/log", "first commit",
            ["git_status", "git_log", "git_diff"],
        )  # fmt: skip
    if name == "tasks":
        database = tmp_path / "tasks.db"
        return Server(
            name, ["--db", str(database)], f"db = {json.dumps(str(database))}",
            "add_task", {"title": "planned by an independent client"}, "planned by an independent client",
            "tasks://list", "planned by an independent client", ["add_task", "list_tasks", "next_task"],
        )  # fmt: skip
    raise AssertionError(name)


# -- the TypeScript SDK clients ------------------------------------------------------------------
def sessions(server: Server, target: dict[str, Any], label: str) -> list[dict[str, Any]]:
    """v1 in the 2025 era declaring roots and answering [] (as the Inspector does), v2 in
    2026-07-28, and over HTTP (where a session costs no server start) v2 in the 2025 era too."""
    checks: list[dict[str, Any]] = [
        {"kind": "tools/list", "expect": server.tools},
        {"kind": "tools/call", "name": server.tool, "arguments": server.arguments, "expect": server.answer},
    ]
    if server.resource is not None:
        checks.append({"kind": "resources/read", "uri": server.resource, "expect": server.content})
    modes: list[tuple[str, str, list[str] | None]] = [("v1", "legacy", []), ("v2", "modern", None)]
    if "url" in target:
        modes.append(("v2", "legacy", None))
    return [
        {**target, "label": f"{label} {sdk} {era}" + (" roots=[]" if roots == [] else ""),
         "sdk": sdk, "era": era, "roots": roots, "checks": checks}
        for sdk, era, roots in modes
    ]  # fmt: skip


async def drive(clients: Clients, plan: list[dict[str, Any]], tmp_path: Path) -> list[dict[str, Any]]:
    plan_file = tmp_path / f"plan-{time.monotonic_ns()}.json"
    plan_file.write_text(json.dumps(plan))
    with anyio.fail_after(DRIVE_TIMEOUT_S):
        done = await anyio.run_process(
            ["node", str(DRIVER), str(plan_file)], env=clients.env, check=False, cwd=INSTALL_DIR
        )
    reports = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    assert len(reports) == len(plan), f"drive.mjs exited {done.returncode}:\n{done.stderr.decode()[-3000:]}"
    return reports


def failures(reports: list[dict[str, Any]]) -> list[str]:
    return [
        f"{report['label']}: {check['kind']} failed: {check['detail']}"
        for report in reports
        for check in report["checks"]
        if not check["ok"]
    ]


# -- the Inspector CLI ---------------------------------------------------------------------------
async def inspect(clients: Clients, target: list[str], era: str, *method: str) -> tuple[int, str]:
    """One Inspector CLI call: its exit status and the text of its JSON result."""
    command = [
        str(INSPECTOR),
        "--cli",
        *target,
        "--format",
        "json",
        "--protocol-era",
        era,
        "--method",
        *method,
    ]
    with anyio.fail_after(INSPECTOR_TIMEOUT_S):
        done = await anyio.run_process(command, env=clients.env, check=False, cwd=INSTALL_DIR)
    out = done.stdout.decode()
    try:
        result = json.loads(out).get("result", {})
    except json.JSONDecodeError:
        return done.returncode, out + done.stderr.decode()[-2000:]
    parts = result.get("contents") or result.get("content") or []
    text = "".join(part.get("text", "") for part in parts)
    return done.returncode, text if done.returncode == 0 else text + out + done.stderr.decode()[-2000:]


async def inspector_failures(
    clients: Clients, server: Server, target: list[str], label: str, *, everything: bool
) -> list[str]:
    """A tool call in the 2025 era (the Inspector's default: it declares roots and answers []);
    with `everything`, also a call in 2026-07-28 and a resource read."""
    found = []
    call = ["tools/call", "--tool-name", server.tool, "--tool-args-json", json.dumps(server.arguments)]
    for era in ("legacy", "modern") if everything else ("legacy",):
        status, text = await inspect(clients, target, era, *call)
        if status != 0 or server.answer not in text:
            found.append(f"{label} inspector {era}: tools/call {server.tool} exited {status}: {text[:800]}")
    if everything and server.resource is not None:
        status, text = await inspect(clients, target, "legacy", "resources/read", "--uri", server.resource)
        if status != 0 or server.content not in text:
            found.append(f"{label} inspector legacy: resources/read exited {status}: {text[:800]}")
    return found


async def both_clients(
    clients: Clients,
    tmp_path: Path,
    plan: list[dict[str, Any]],
    inspections: list[tuple[Server, list[str], str]],
    *,
    everything: bool,
) -> list[str]:
    """The TypeScript sessions in one Node process, beside the Inspector calls (one at a time)."""
    found: dict[str, list[str]] = {"ts": [], "inspector": []}

    async def typescript() -> None:
        found["ts"] = failures(await drive(clients, plan, tmp_path))

    async with anyio.create_task_group() as tg:
        tg.start_soon(typescript)
        for server, target, label in inspections:
            found["inspector"] += await inspector_failures(
                clients, server, target, label, everything=everything
            )
    return found["ts"] + found["inspector"]


# -- the tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name", SERVERS)
async def test_independent_clients_drive_the_server(
    clients: Clients, page: str, tmp_path: Path, name: str, transport: str
) -> None:
    server = build(name, tmp_path, page)
    script = script_path(f"mcp-batteries-{name}")
    label = f"{name} {transport}"
    if transport == "stdio":
        config = tmp_path / "inspector.json"
        config.write_text(json.dumps({"mcpServers": {name: {"command": script, "args": server.args}}}))
        plan = sessions(server, {"command": script, "args": server.args}, label)
        inspector = ["--config", str(config), "--server", name]
        found = await both_clients(clients, tmp_path, plan, [(server, inspector, label)], everything=False)
    else:
        async with http_server(f"mcp-batteries-{name}", *server.args) as running:
            plan = sessions(server, {"url": running.url}, label)
            inspections = [(server, [running.url], label)]
            found = await both_clients(clients, tmp_path, plan, inspections, everything=True)
    assert not found, "\n".join(found)


async def test_independent_clients_drive_every_server_in_the_bundle(
    clients: Clients, page: str, tmp_path: Path
) -> None:
    servers = []
    for name in SERVERS:
        (tmp_path / name).mkdir()
        servers.append(build(name, tmp_path / name, page))
    config = tmp_path / "bundle.toml"
    config.write_text("".join(f"[{s.name}]\n{s.table}\n\n" for s in servers))
    with bundle_process("--config", str(config), *SERVERS) as bundle:
        plan = [
            session
            for server in servers
            for session in sessions(server, {"url": bundle.url(server.name)}, f"bundle {server.name}")
        ]
        inspections = [(server, [bundle.url(server.name)], f"bundle {server.name}") for server in servers]
        found = await both_clients(clients, tmp_path, plan, inspections, everything=False)
    assert not found, "\n".join(found) + "\nbundle log:\n" + "\n".join(bundle.log[-30:])


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_typescript_clients_are_asked_before_a_deletion(
    clients: Clients, tmp_path: Path, transport: str
) -> None:
    """docs/confirmation.md with the official TypeScript clients: v1 answers `elicitation/create`
    (2025 era), v2 also answers `InputRequiredResult` rounds (2026-07-28); an accept deletes, a
    decline keeps the file."""
    files = tmp_path / "files"
    files.mkdir()
    answers = [("v1", "legacy", "accept"), ("v1", "legacy", "decline"), ("v2", "modern", "accept"),
               ("v2", "modern", "decline"), ("v2", "legacy", "accept")]  # fmt: skip
    for n, _ in enumerate(answers):
        (files / f"victim-{n}.txt").write_text("precious\n")
    script = script_path("mcp-batteries-filesystem")
    args = [str(files), "--no-watch"]

    def plan(target: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {**target, "label": f"filesystem {transport} {sdk} {era} {elicit}", "sdk": sdk, "era": era,
             "elicit": elicit, "checks": [{
                 "kind": "tools/call", "name": "delete_path", "arguments": {"path": f"victim-{n}.txt"},
                 "expect": "Deleted file" if elicit == "accept" else "Nothing was changed: the user declined",
             }]}
            for n, (sdk, era, elicit) in enumerate(answers)
        ]  # fmt: skip

    if transport == "stdio":
        found = failures(await drive(clients, plan({"command": script, "args": args}), tmp_path))
    else:
        async with http_server("mcp-batteries-filesystem", *args) as running:
            found = failures(await drive(clients, plan({"url": running.url}), tmp_path))
    assert not found, "\n".join(found)
    kept = sorted(p.name for p in files.iterdir())
    assert kept == [f"victim-{n}.txt" for n, (_, _, elicit) in enumerate(answers) if elicit == "decline"]
