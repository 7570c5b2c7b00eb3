"""Cheap calls over Streamable HTTP under wrk: ours vs the TypeScript SDK's server, in one run.

    bash bench/anchors.sh   # not needed: this script installs its own anchor (npm, pinned below)
    apt-get install -y wrk  # the load generator (compiled, so the client does not eat the server's CPU)
    uv run --all-packages python bench/http_calls.py                # 3 modes x 4 servers x 3 rounds, ~6 min
    uv run --all-packages python bench/http_calls.py --quick        # 1 round of 4 s, ~1.5 min
    uv run --all-packages python bench/http_calls.py --only ts,fs --modes stateless --seconds 20

Servers (each with one cheap tool, the reply checked on every call):
- `ts`: the TypeScript SDK's Streamable HTTP server (`@modelcontextprotocol/sdk`, pinned by
  bench/ts_http/package.json + package-lock.json, installed with `npm ci` into .tools/bench-ts-http),
  on plain node:http, tool `hello` (bench/ts_http/server.mjs);
- `bare`: a bare Python `MCPServer` with the same tool (bench/floor_server.py);
- `fs`: mcp-batteries-filesystem, `list_allowed_directories` (no I/O);
- `bundle`: `mcp-batteries serve filesystem`, the same tool at /filesystem/mcp.

Modes (50 connections each by default):
- `stateful`: handshake era (2025-11-25): before wrk starts, one session per connection
  (initialize + initialized); wrk's connections reuse their Mcp-Session-Id;
- `stateless`: handshake era against each server's stateless mode, no initialize;
- `modern`: 2026-07-28 requests (no handshake, no session; Mcp-Method/Mcp-Name headers). The
  TypeScript SDK 1.x does not speak 2026-07-28: its row in this mode is its stateless server
  driven the same way (no handshake), the nearest it has.

For each mode every server is started once, then wrk runs against each in turn, `--rounds` times,
the order reversed every round (drift hits all). Figures per cell are medians over rounds:
calls/s, wrk's p50 and p99, and the server's CPU per call (utime + stime of the server process and
its waited-for children from /proc/PID/stat, over the measured run): the most stable figure on a
shared machine, since 1000 / it is what one free core could serve. Ratios are ours / ts, same run.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: the harness beside it

from harness import BENCH_DIR, server_environment, venv_script

ROOT = BENCH_DIR.parent
TS_PINS = BENCH_DIR / "ts_http"
TS_DIR = ROOT / ".tools" / "bench-ts-http"
HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
MODES = ("stateful", "stateless", "modern")
SERVERS = ("ts", "bare", "fs", "bundle")
_JSON_LINE = re.compile(r"^JSON (\{.*\})$", re.MULTILINE)


# -- the TypeScript anchor -------------------------------------------------------------------------


def install_ts() -> Path:
    """`npm ci` the pinned SDK into .tools/bench-ts-http once per pin (tests/node.py's installer)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from node import ensure_pinned, node_env  # type: ignore[import-not-found]

    env = node_env()
    versions = ensure_pinned(TS_PINS, TS_DIR, env)
    shutil.copyfile(TS_PINS / "server.mjs", TS_DIR / "server.mjs")
    node = shutil.which("node", path=env["PATH"])
    print(f"anchor: @modelcontextprotocol/sdk {versions['@modelcontextprotocol/sdk']} ({node})")
    return TS_DIR / "server.mjs"


# -- servers -------------------------------------------------------------------------------------------


@dataclass
class Target:
    name: str
    path: str
    tool: str
    expect: str  # a substring of a correct reply
    argv: Callable[[int, bool], list[str]]  # (port, stateless) -> argv


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def targets(ts_script: Path | None, tree: Path, config: Path) -> dict[str, Target]:
    python = sys.executable
    bare_boot = (
        "import runpy,sys; ns=runpy.run_path({path!r}); "
        "ns['mcp'].run('streamable-http', host='127.0.0.1', port={port}, stateless_http={stateless})"
    )
    found = {
        "bare": Target(
            "bare",
            "/mcp",
            "hello",
            '"text":"hello"',
            lambda port, stateless: [
                python,
                "-c",
                bare_boot.format(path=str(BENCH_DIR / "floor_server.py"), port=port, stateless=stateless),
            ],
        ),
        "fs": Target(
            "fs",
            "/mcp",
            "list_allowed_directories",
            tree.name,
            lambda port, stateless: [
                venv_script("mcp-batteries-filesystem"),
                "--transport",
                "http",
                "--port",
                str(port),
                "--no-watch",
                *(["--stateless"] if stateless else []),
                str(tree),
            ],
        ),
        "bundle": Target(
            "bundle",
            "/filesystem/mcp",
            "list_allowed_directories",
            tree.name,
            lambda port, stateless: [
                venv_script("mcp-batteries"),
                "serve",
                "filesystem",
                "--config",
                str(config),
                "--port",
                str(port),
                *(["--stateless"] if stateless else []),
            ],
        ),
    }
    if ts_script is not None:
        found["ts"] = Target(
            "ts",
            "/mcp",
            "hello",
            '"text":"hello"',
            lambda port, stateless: [
                "node",
                str(ts_script),
                "--port",
                str(port),
                "--mode",
                "stateless" if stateless else "stateful",
            ],
        )
    return found


@dataclass
class Running:
    target: Target
    process: subprocess.Popen[bytes]
    port: int
    sessions: list[str] = field(default_factory=list)

    def cpu_seconds(self) -> float:
        """utime + stime + cutime + cstime: the server and the children it waited for."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


@contextmanager
def started(target: Target, stateless: bool, log_dir: Path, env: dict[str, str]) -> Iterator[Running]:
    port = free_port()
    log = (log_dir / f"{target.name}-{'stateless' if stateless else 'stateful'}.log").open("wb")
    process = subprocess.Popen(
        target.argv(port, stateless), stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{target.name} exited with {process.returncode}: see {log.name}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{target.name} did not listen within 60 s") from None
                time.sleep(0.05)
        yield Running(target, process, port)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


# -- requests ----------------------------------------------------------------------------------------


def call_body(tool: str, mode: str, server: str) -> str:
    params: dict[str, Any] = {"name": tool, "arguments": {}}
    if mode == "modern" and server != "ts":
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "bench-http", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, separators=(",", ":")
    )


def headers_for(mode: str, tool: str, server: str) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if mode == "modern" and server != "ts":
        headers.update({"Mcp-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/call", "Mcp-Name": tool})
    else:
        headers["Mcp-Protocol-Version"] = HANDSHAKE_VERSION
    return headers


def post(port: int, path: str, headers: dict[str, str], body: str) -> tuple[int, dict[str, str], str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body=body.encode(), headers=headers)
        response = connection.getresponse()
        data = response.read().decode()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        connection.close()


def open_sessions(running: Running, count: int) -> None:
    """One handshake-era session per wrk connection: initialize + notifications/initialized."""
    target = running.target
    headers = headers_for("stateful", target.tool, target.name)
    for _ in range(count):
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench-http", "version": "1"},
            },
        }
        status, received, data = post(running.port, target.path, headers, json.dumps(init))
        session = received.get("mcp-session-id")
        if status != 200 or not session:
            raise RuntimeError(f"{target.name}: initialize gave HTTP {status}, no session: {data[:300]}")
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        status, _, data = post(running.port, target.path, {**headers, "Mcp-Session-Id": session}, note)
        if status != 202:
            raise RuntimeError(f"{target.name}: initialized gave HTTP {status}: {data[:300]}")
        running.sessions.append(session)


def check_one_call(running: Running, mode: str) -> None:
    target = running.target
    headers = headers_for(mode, target.tool, target.name)
    if running.sessions:
        headers["Mcp-Session-Id"] = running.sessions[0]
    status, _, data = post(running.port, target.path, headers, call_body(target.tool, mode, target.name))
    if status != 200 or target.expect not in data or '"isError":true' in data:
        raise RuntimeError(f"{target.name} ({mode}): not a correct result: HTTP {status}: {data[:300]}")


# -- wrk -----------------------------------------------------------------------------------------------

LUA = r"""
local sessions = {%(sessions)s}
local expected = %(expected)s
local threads = {}
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("id", next_id)
  table.insert(threads, thread)
end

wrk.method = "POST"
wrk.path = %(path)s
wrk.body = %(body)s
%(headers)s

local mine = {}
local turn = 0
bad = 0
sample = ""

function init(args)
  -- this thread's share of the sessions: connections of one thread take them in turn
  local threads_n = tonumber(args[1])
  for i, s in ipairs(sessions) do
    if (i - 1) %% threads_n == id - 1 then table.insert(mine, s) end
  end
end

if #sessions > 0 then
  -- Requests in flight on one session need distinct JSON-RPC ids (the SDK keys its streams by
  -- id): each thread numbers its own, and threads hold disjoint sessions.
  local before_id, after_id = string.match(wrk.body, '^(.-"id":)1(,.*)$')
  function request()
    turn = turn + 1
    wrk.headers["Mcp-Session-Id"] = mine[(turn %% #mine) + 1]
    return wrk.format(nil, nil, nil, before_id .. turn .. after_id)
  end
end

function response(status, headers, body)
  local wrong = not string.find(body, expected, 1, true) or string.find(body, '"isError":true', 1, true)
  if status ~= 200 or wrong then
    bad = bad + 1
    if sample == "" then sample = status .. " " .. string.gsub(string.sub(body, 1, 200), '[%%c"\\]', " ") end
  end
end

function done(summary, latency, requests)
  local total_bad = 0
  local first = ""
  for _, t in ipairs(threads) do
    total_bad = total_bad + t:get("bad")
    if first == "" then first = t:get("sample") end
  end
  local e = summary.errors
  io.write(string.format(
    'JSON {"requests":%%d,"duration_us":%%d,"bad":%%d,"socket_errors":%%d,' ..
    '"p50_us":%%d,"p99_us":%%d,"sample":"%%s"}\n',
    summary.requests, summary.duration, total_bad, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), first))
end
"""


def lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid Lua string literal for this ASCII text


def write_lua(running: Running, mode: str, directory: Path) -> Path:
    target = running.target
    headers = headers_for(mode, target.tool, target.name)
    script = LUA % {
        "sessions": ", ".join(lua_string(s) for s in running.sessions),
        "expected": lua_string(target.expect),
        "path": lua_string(target.path),
        "body": lua_string(call_body(target.tool, mode, target.name)),
        "headers": "\n".join(f"wrk.headers[{lua_string(k)}] = {lua_string(v)}" for k, v in headers.items()),
    }
    path = directory / f"{target.name}-{mode}.lua"
    path.write_text(script)
    return path


@dataclass
class Cell:
    calls_per_s: float
    p50_ms: float
    p99_ms: float
    cpu_ms_per_call: float
    bad: int
    socket_errors: int
    sample: str


def run_wrk(running: Running, lua: Path, connections: int, threads: int, seconds: float) -> Cell:
    url = f"http://127.0.0.1:{running.port}{running.target.path}"
    argv = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "-s",
        str(lua),
        url,
        "--",
        str(threads),
    ]
    cpu_before = running.cpu_seconds()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    out = done.stdout
    cpu = running.cpu_seconds() - cpu_before
    found = _JSON_LINE.search(out)
    if found is None:
        raise RuntimeError(f"wrk printed no figures:\n{out}")
    figures: dict[str, Any] = json.loads(found.group(1))
    requests = max(1, int(figures["requests"]))
    return Cell(
        calls_per_s=requests / (figures["duration_us"] / 1e6),
        p50_ms=figures["p50_us"] / 1000,
        p99_ms=figures["p99_us"] / 1000,
        cpu_ms_per_call=cpu * 1000 / requests,
        bad=int(figures["bad"]),
        socket_errors=int(figures["socket_errors"]),
        sample=str(figures["sample"]),
    )


# -- the run -------------------------------------------------------------------------------------------


def median_cell(cells: list[Cell]) -> Cell:
    return Cell(
        calls_per_s=statistics.median(c.calls_per_s for c in cells),
        p50_ms=statistics.median(c.p50_ms for c in cells),
        p99_ms=statistics.median(c.p99_ms for c in cells),
        cpu_ms_per_call=statistics.median(c.cpu_ms_per_call for c in cells),
        bad=sum(c.bad for c in cells),
        socket_errors=sum(c.socket_errors for c in cells),
        sample=next((c.sample for c in cells if c.sample), ""),
    )


def run_mode(
    mode: str, chosen: list[Target], args: argparse.Namespace, work: Path, env: dict[str, str]
) -> dict[str, Cell]:
    stateless = mode != "stateful"
    cells: dict[str, list[Cell]] = {t.name: [] for t in chosen}
    with contextlib.ExitStack() as stack:
        running = [stack.enter_context(started(t, stateless, work, env)) for t in chosen]
        scripts: dict[str, Path] = {}
        for server in running:
            if mode == "stateful":
                open_sessions(server, args.connections)
            check_one_call(server, mode)
            scripts[server.target.name] = write_lua(server, mode, work)
            run_wrk(server, scripts[server.target.name], args.connections, args.threads, args.warmup)
        if args.profile:
            for server in running:
                if server.target.name != "ts":
                    profile(server, mode, scripts[server.target.name], args)
            return {}
        for round_ in range(args.rounds):
            for server in running if round_ % 2 == 0 else list(reversed(running)):
                cell = run_wrk(
                    server, scripts[server.target.name], args.connections, args.threads, args.seconds
                )
                cells[server.target.name].append(cell)
                if not args.quiet:
                    print(
                        f"  {mode:9} {server.target.name:7} round {round_ + 1}: {cell.calls_per_s:8.0f}/s "
                        f"p50 {cell.p50_ms:6.2f} p99 {cell.p99_ms:6.2f} ms  "
                        f"cpu {cell.cpu_ms_per_call:.3f} ms/call"
                        + (f"  BAD {cell.bad}: {cell.sample}" if cell.bad else ""),
                        flush=True,
                    )
    return {name: median_cell(found) for name, found in cells.items()}


#: Where a sample's innermost frame is, by the file it is in (first match wins).
PROFILE_GROUPS = (
    ("mcp_batteries, mcp_filesystem (ours)", ("(mcp_batteries/", "(mcp_filesystem/")),
    ("uvicorn + h11", ("(uvicorn/", "(h11/")),
    ("sse_starlette", ("(sse_starlette/",)),
    ("starlette", ("(starlette/",)),
    ("mcp SDK", ("(mcp/",)),
    ("pydantic", ("(pydantic/", "(pydantic_core/", "(<pydantic")),
    ("anyio", ("(anyio/",)),
    ("asyncio + selectors", ("(asyncio/", "(selectors.py")),
    ("opentelemetry", ("(opentelemetry/",)),
)


def profile(server: Running, mode: str, lua: Path, args: argparse.Namespace) -> None:
    """One measured run under py-spy (raw stacks in bench/.work/http/); where the time goes."""
    out = BENCH_DIR / ".work" / "http" / f"profile-{server.target.name}-{mode}.txt"
    spy = subprocess.Popen(
        [
            *(args.profile, "record", "--format", "raw", "--rate", "250", "--nonblocking", "-o", str(out)),
            *("-d", str(round(args.seconds)), "-p", str(server.process.pid)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    cell = run_wrk(server, lua, args.connections, args.threads, args.seconds)
    spy.wait()
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = 0
    for line in out.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        frames = stack.split(";")
        if not frames or "select (selectors.py" in frames[-1] or "epoll" in frames[-1]:
            continue  # idle: waiting for the network
        total += count
        leaf = frames[-1]
        group = next((g for g, marks in PROFILE_GROUPS if any(m in leaf for m in marks)), "")
        group = group or ("other stdlib" if re.search(r"\(\w+(/\w+)*\.py:", leaf) else "other")
        own[group] = own.get(group, 0) + count
        seen: set[str] = set()
        for frame in frames:
            name = frame.split(" (")[0]
            if name not in seen:
                seen.add(name)
                inclusive[name] = inclusive.get(name, 0) + count
    print(f"\n  profile {server.target.name} {mode}: {cell.calls_per_s:.0f} calls/s under py-spy; {out}")
    print("  busy samples by the innermost frame's package:")
    for group, count in sorted(own.items(), key=lambda item: -item[1]):
        print(f"    {100 * count / max(1, total):5.1f} %  {group}")
    print("  functions by inclusive share (top 25):")
    for name, count in sorted(inclusive.items(), key=lambda item: -item[1])[:25]:
        print(f"    {100 * count / max(1, total):5.1f} %  {name}")


def format_report(results: dict[str, dict[str, Cell]], args: argparse.Namespace) -> str:
    lines = [
        f"Streamable HTTP, one cheap tool, wrk -t{args.threads} -c{args.connections}, "
        f"{args.rounds} x {args.seconds:g} s per cell (medians); ratios: server / ts, same run",
        "",
        "| mode | server | calls/s | p50 ms | p99 ms | CPU ms/call | CPU vs ts | calls/s vs ts | bad |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, cells in results.items():
        ts = cells.get("ts")
        for name, cell in cells.items():
            cpu_ratio = f"{cell.cpu_ms_per_call / ts.cpu_ms_per_call:.2f}x" if ts else "-"
            rate_ratio = f"{cell.calls_per_s / ts.calls_per_s:.2f}x" if ts else "-"
            bad = cell.bad + cell.socket_errors
            lines.append(
                f"| {mode} | {name} | {cell.calls_per_s:.0f} | {cell.p50_ms:.2f} | {cell.p99_ms:.2f} | "
                f"{cell.cpu_ms_per_call:.3f} | {cpu_ratio} | {rate_ratio} | {bad} |"
            )
    bad_cells = [
        f"{mode}/{name}: {cell.bad} wrong replies, {cell.socket_errors} socket errors; e.g. {cell.sample}"
        for mode, cells in results.items()
        for name, cell in cells.items()
        if cell.bad or cell.socket_errors
    ]
    if bad_cells:
        lines += ["", "FAILURES (these cells do not measure correct calls):", *bad_cells]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 4 s per cell")
    parser.add_argument(
        "--only", default=",".join(SERVERS), help=f"servers, comma-separated ({','.join(SERVERS)})"
    )
    parser.add_argument(
        "--modes", default=",".join(MODES), help=f"modes, comma-separated ({','.join(MODES)})"
    )
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--seconds", type=float, default=None, help="per measured run (default 10; quick 4)")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured wrk run per server and mode")
    parser.add_argument(
        "--rounds", type=int, default=None, help="measured runs per cell (default 3; quick 1)"
    )
    parser.add_argument(
        "--profile",
        metavar="PY_SPY",
        default=None,
        help="path of a py-spy binary: profile one run of each Python server per mode instead",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the medians here")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args()
    args.seconds = args.seconds or (4.0 if args.quick else 10.0)
    args.rounds = args.rounds or (1 if args.quick else 3)
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install -y wrk")
    names = [n for n in args.only.split(",") if n]
    modes = [m for m in args.modes.split(",") if m]
    for unknown in {*names} - set(SERVERS) | {*modes} - set(MODES):
        sys.exit(f"unknown server or mode: {unknown}")

    work = BENCH_DIR / ".work" / "http"
    work.mkdir(parents=True, exist_ok=True)
    tree = Path(tempfile.mkdtemp(prefix="bench-http-tree-", dir=work))
    (tree / "hello.txt").write_text("hello\n")
    config = work / "bundle.toml"
    config.write_text(f'[filesystem]\ndirectories = ["{tree}"]\nwatch = false\n')
    ts_script = install_ts() if "ts" in names else None
    env = server_environment(None)
    if ts_script is not None:
        from node import node_env  # on sys.path since install_ts

        env["PATH"] = node_env()["PATH"]  # a Node >= 22 first, if the system's is older
    known = targets(ts_script, tree, config)
    chosen = [known[n] for n in SERVERS if n in names]

    results: dict[str, dict[str, Cell]] = {}
    try:
        for mode in modes:
            results[mode] = run_mode(mode, chosen, args, work, env)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    if args.profile:
        return
    print()
    print(format_report(results, args))
    if args.json:
        args.json.write_text(
            json.dumps(
                {mode: {n: c.__dict__ for n, c in cells.items()} for mode, cells in results.items()}, indent=2
            )
        )


if __name__ == "__main__":
    main()
