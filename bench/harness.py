"""A small, dependency-free benchmark harness for stdio MCP servers.

Why not the SDK's client: its stdio reader re-splits its whole buffer on every ~64 KiB chunk, so a
large response costs the *client* seconds of CPU (notes/sdk-v2.md §9). Here the client speaks
JSON-RPC itself with a linear line reader, and a response is timed when its last byte arrives, before
it is parsed (large responses are parsed lazily, only if a caller looks at them).

The building blocks, from low to high level:

- `ServerSpec`: how to start one server (argv, env, cwd) and which role it plays.
- `McpClient`: one server process; `spawn`, `initialize`, `request`, `call_tool`, `ping`,
  `peak_rss_kib`, `close`.
- `Workload`: a named request (method + params, optionally different per server) repeated K times,
  optionally in a fresh process (for a clean peak-RSS figure) and/or probed with pings.
- `Suite` + `run_suite`: cold starts, then every workload with servers interleaved per repetition,
  then ping probes; `print_report` prints the side-by-side table; `run_cli` wires it to argparse.

A benchmark script (see bench/filesystem.py) builds a `Suite` and calls `run_cli`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PROTOCOL_VERSION = "2025-06-18"  # legacy handshake: what every anchor speaks
BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_LOG_DIR = BENCH_DIR / ".work" / "logs"

READ_CHUNK = 1 << 20  # bytes per read() from the server's stdout
LAZY_PARSE_BYTES = 256 * 1024  # lines at least this long are parsed only on demand


class ServerExited(RuntimeError):
    """The server process closed its stdout (crashed or exited) with requests in flight."""


class RequestTimeout(RuntimeError):
    """No response within the timeout."""


# --------------------------------------------------------------------------------------------------
# Specs and replies


@dataclass
class ServerSpec:
    """How to start one server.

    `name` is its column in the table ("ours", "anchor", "floor"...). The first spec in a suite is the
    subject; the ratio column is servers[0] / servers[1]. A `baseline` server (e.g. a bare
    MCPServer "hello" server: the SDK's floor) takes part in cold start, runs only the workloads that
    name it in `Workload.only`, and is reported below the table, not as a column.
    """

    name: str
    argv: list[str]
    env: dict[str, str] | None = None  # full environment; None = inherit
    cwd: str | None = None
    label: str = ""  # free text for the report, e.g. "reference filesystem 2026.8.31 (Node 20)"
    baseline: bool = False

    def missing(self) -> str | None:
        """Why this server cannot start, or None. Checked up front so a missing server is a skip."""
        exe = self.argv[0]
        if os.sep in exe:
            return None if os.access(exe, os.X_OK) else f"not executable: {exe}"
        path = (self.env or os.environ).get("PATH")
        return None if shutil.which(exe, path=path) else f"not on PATH: {exe}"


def server_environment(env: dict[str, str] | None) -> dict[str, str]:
    """The environment a server starts with: bytecode caching on, as on a user's machine.

    With PYTHONDONTWRITEBYTECODE set (as in this sandbox) every start of a Python server compiles
    hundreds of modules from source, which no real installation does (uv and pip compile or cache
    bytecode). Bytecode goes to bench/.work/pycache, never into the measured installations.
    """
    base = dict(os.environ if env is None else env)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    base.setdefault("PYTHONPYCACHEPREFIX", str(BENCH_DIR / ".work" / "pycache"))
    return base


_HEAD_ID = re.compile(rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+)')
_TAIL_ID = re.compile(rb',\s*"id"\s*:\s*(-?\d+)\s*\}\s*$')


def _peek_id(line: bytes) -> int | None:
    """The top-level id of a large response without parsing it.

    Python SDKs (pydantic) write `{"jsonrpc":"2.0","id":N,...`; the TypeScript SDK writes
    `{"result":...,"jsonrpc":"2.0","id":N}`. Inside JSON strings quotes are escaped, and a nested
    object ending in "id":N would be followed by two braces, so neither pattern can match inside
    the payload. None means "parse it".
    """
    m = _HEAD_ID.match(line, 0, 200) or _TAIL_ID.search(line, max(0, len(line) - 200))
    return int(m.group(1)) if m else None


@dataclass
class Reply:
    """One JSON-RPC response. `seconds` runs from the write of the request to the arrival of the
    response's final newline; parsing is not included."""

    id: int
    seconds: float
    size: int  # bytes of the JSON line, without the newline
    raw: bytes = field(repr=False)
    _message: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def message(self) -> dict[str, Any]:
        if self._message is None:
            self._message = json.loads(self.raw)
        return self._message

    @property
    def result(self) -> Any:
        return self.message.get("result")

    @property
    def error(self) -> Any:
        return self.message.get("error")

    def failure(self) -> str | None:
        """A short description if this is a JSON-RPC error or a tool result with isError, else None."""
        msg = self.message
        if "error" in msg:
            err = msg["error"]
            return f"JSON-RPC {err.get('code')}: {str(err.get('message'))[:200]}"
        res = msg.get("result")
        if isinstance(res, dict) and res.get("isError"):
            texts = [c.get("text", "") for c in res.get("content", []) if isinstance(c, dict)]
            return "isError: " + " ".join(texts)[:200]
        return None

    def text(self) -> str:
        """Concatenated text content of a tools/call result (for sanity checks in scripts)."""
        res = self.result or {}
        return "".join(c.get("text", "") for c in res.get("content", []) if isinstance(c, dict))


# --------------------------------------------------------------------------------------------------
# One server process


class McpClient:
    """A stdio MCP server under test, spoken to with raw JSON-RPC."""

    def __init__(self, spec: ServerSpec, proc: asyncio.subprocess.Process, log_path: Path) -> None:
        self.spec = spec
        self.proc = proc
        self.log_path = log_path
        self.spawned_at = time.perf_counter()
        self.server_info: dict[str, Any] = {}
        self.notifications = 0
        self._next_id = 0
        self._pending: dict[int, tuple[asyncio.Future[Reply], float]] = {}
        self._closed = asyncio.Event()
        self._reader = asyncio.create_task(self._read_loop())

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return not self._closed.is_set() and self.proc.returncode is None

    @classmethod
    async def spawn(cls, spec: ServerSpec, log_dir: Path = DEFAULT_LOG_DIR) -> McpClient:
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{spec.name}.stderr.log"
        # Append: many processes of the same server share one log; the marker separates them.
        with log_path.open("ab") as log:
            log.write(f"\n=== {time.strftime('%H:%M:%S')} {' '.join(spec.argv)}\n".encode())
            log.flush()
            t0 = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                *spec.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=server_environment(spec.env),
                cwd=spec.cwd,
                limit=READ_CHUNK,  # only affects the transport's pause threshold; we never readline
            )
        client = cls(spec, proc, log_path)
        client.spawned_at = t0
        return client

    # -- reading -------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        """Linear line splitting: each byte is scanned once, partial lines are kept as chunk lists."""
        assert self.proc.stdout is not None
        partial: list[bytes] = []
        try:
            while True:
                chunk = await self.proc.stdout.read(READ_CHUNK)
                if not chunk:
                    break
                now = time.perf_counter()
                if b"\n" not in chunk:
                    partial.append(chunk)
                    continue
                pieces = chunk.split(b"\n")
                partial.append(pieces[0])
                self._on_line(b"".join(partial), now)
                for line in pieces[1:-1]:
                    self._on_line(line, now)
                partial = [pieces[-1]] if pieces[-1] else []
        finally:
            self._closed.set()
            for fut, _ in self._pending.values():
                if not fut.done():
                    fut.set_exception(ServerExited(f"{self.spec.name} exited; see {self.log_path}"))
            self._pending.clear()

    def _on_line(self, line: bytes, arrived: float) -> None:
        if not line.strip():
            return
        message: dict[str, Any] | None = None
        msg_id = _peek_id(line) if len(line) >= LAZY_PARSE_BYTES else None
        if msg_id is None:
            try:
                message = json.loads(line)
            except ValueError:
                print(f"[{self.spec.name}] non-JSON line on stdout: {line[:120]!r}", file=sys.stderr)
                return
            if "method" in message:
                self._on_server_message(message)
                return
            msg_id = message.get("id")
        pending = self._pending.pop(msg_id, None) if isinstance(msg_id, int) else None
        if pending is None or not isinstance(msg_id, int):
            return  # a late answer to a request that timed out
        fut, sent = pending
        if not fut.done():
            fut.set_result(Reply(msg_id, arrived - sent, len(line), line, message))

    def _on_server_message(self, message: dict[str, Any]) -> None:
        if "id" not in message:
            self.notifications += 1  # log/progress/list_changed notifications: counted, ignored
            return
        # A request from the server. We declare no client capabilities, so only ping is expected.
        if message["method"] == "ping":
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "not supported by the benchmark client"},
            }
        self._write(reply)

    # -- writing -------------------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def send(self, method: str, params: dict[str, Any] | None = None) -> asyncio.Future[Reply]:
        """Send a request now; the future resolves with its Reply. Lets callers overlap requests."""
        if not self.alive:
            raise ServerExited(f"{self.spec.name} is not running; see {self.log_path}")
        self._next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            msg["params"] = params
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = (fut, time.perf_counter())
        self._write(msg)
        return fut

    async def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 120.0
    ) -> Reply:
        fut = self.send(method, params)
        assert self.proc.stdin is not None
        await self.proc.stdin.drain()
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise RequestTimeout(f"{self.spec.name}: {method} took more than {timeout:g} s") from None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg)
        assert self.proc.stdin is not None
        await self.proc.stdin.drain()

    async def initialize(self, timeout: float = 60.0) -> Reply:
        reply = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcp-batteries-bench", "version": "0"},
            },
            timeout,
        )
        if reply.error:
            raise RuntimeError(f"{self.spec.name}: initialize failed: {reply.error}")
        self.server_info = reply.result.get("serverInfo", {})
        await self.notify("notifications/initialized")
        return reply

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = 120.0) -> Reply:
        return await self.request("tools/call", {"name": name, "arguments": arguments}, timeout)

    async def ping(self, timeout: float = 120.0) -> Reply:
        return await self.request("ping", None, timeout)

    async def tool_names(self) -> set[str]:
        reply = await self.request("tools/list", {})
        return {t["name"] for t in (reply.result or {}).get("tools", [])}

    # -- memory and shutdown -------------------------------------------------------------------

    def peak_rss_kib(self) -> int | None:
        """Peak RSS (VmHWM) of the server, or of the largest process in its tree when it is a
        wrapper (e.g. `uv run`). Must be read before the process exits."""
        peaks = [p for p in (_vm_hwm_kib(pid) for pid in _process_tree(self.pid)) if p is not None]
        return max(peaks) if peaks else None

    async def close(self, grace: float = 3.0) -> None:
        """EOF on stdin is the stdio shutdown signal; escalate to SIGTERM/SIGKILL if ignored."""
        if self.proc.returncode is None:
            with contextlib.suppress(Exception):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            for sig in ("eof", "terminate", "kill"):
                if sig == "terminate":
                    with contextlib.suppress(ProcessLookupError):
                        self.proc.terminate()
                elif sig == "kill":
                    with contextlib.suppress(ProcessLookupError):
                        self.proc.kill()
                try:
                    await asyncio.wait_for(self.proc.wait(), grace)
                    break
                except TimeoutError:
                    continue
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader


def _vm_hwm_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _process_tree(pid: int) -> list[int]:
    """pid and its descendants, via /proc/<pid>/task/<tid>/children."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
    return out


async def start(spec: ServerSpec, log_dir: Path = DEFAULT_LOG_DIR, timeout: float = 60.0) -> McpClient:
    """Spawn + handshake. Kills the process if the handshake fails, so nothing leaks."""
    client = await McpClient.spawn(spec, log_dir)
    try:
        await client.initialize(timeout)
    except BaseException:
        await client.close(grace=1.0)
        raise
    return client


# --------------------------------------------------------------------------------------------------
# Measurements


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100); with few samples p95 is close to the max."""
    s = sorted(values)
    if not s:
        return math.nan
    k = (len(s) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


@dataclass
class Sample:
    """The timed runs of one workload on one server."""

    seconds: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # failures (tool errors, timeouts, crashes)
    peak_rss_kib: int | None = None  # for fresh-process workloads: VmHWM after the last run
    skipped: str | None = None  # why the workload did not run on this server

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else math.nan

    @property
    def p95(self) -> float:
        return percentile(self.seconds, 95)

    @property
    def size(self) -> int | None:
        return int(statistics.median(self.sizes)) if self.sizes else None


async def cold_start_once(spec: ServerSpec, log_dir: Path, timeout: float = 60.0) -> float:
    """Spawn → initialize result, in a fresh process. Closing is not timed."""
    client = await McpClient.spawn(spec, log_dir)
    try:
        await client.initialize(timeout)
        return time.perf_counter() - client.spawned_at
    finally:
        await client.close(grace=2.0)


@dataclass
class PingProbe:
    """Pings sent while one heavy request was in flight."""

    heavy_seconds: float
    latencies: list[float]
    answered_during: int  # pings whose reply arrived before the heavy reply
    error: str | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.latencies) if self.latencies else math.nan

    @property
    def max(self) -> float:
        return max(self.latencies) if self.latencies else math.nan


async def ping_under_load(
    client: McpClient,
    method: str,
    params: dict[str, Any] | None,
    interval: float = 0.02,
    timeout: float = 120.0,
) -> PingProbe:
    """Send one heavy request, then ping (one at a time, `interval` apart) until it answers.

    A ping still outstanding when the heavy reply arrives is awaited and counted: a server that
    blocks its event loop shows up as one ping whose latency is about the heavy call's duration.
    """
    heavy = client.send(method, params)
    t0 = time.perf_counter()
    latencies: list[float] = []
    answered_during = 0
    error: str | None = None
    try:
        while not heavy.done():
            ping = client.send("ping")
            reply = await asyncio.wait_for(ping, timeout)
            latencies.append(reply.seconds)
            if not heavy.done():
                answered_during += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(heavy), interval)
        heavy_reply = await asyncio.wait_for(heavy, timeout)
        heavy_seconds = heavy_reply.seconds
        error = heavy_reply.failure()
    except (TimeoutError, ServerExited) as exc:
        heavy_seconds = time.perf_counter() - t0
        error = f"{type(exc).__name__}: {exc}"
    return PingProbe(heavy_seconds, latencies, answered_during, error)


# --------------------------------------------------------------------------------------------------
# Workloads and suites


@dataclass
class Workload:
    """A named request repeated `repeat` times per server (servers interleaved per repetition).

    `overrides` maps a server name to its own (method, params) when the servers' tools differ
    (e.g. {"anchor": ("tools/call", {"name": "read_query", "arguments": {...}})}); a server that is
    neither the default nor in `overrides` runs the default. `only` restricts the servers.
    `fresh`: each repetition runs in a new process, and its peak RSS is recorded — use it when the
    memory figure must belong to this workload alone. `probe_pings`: after the timed runs, run it
    once more while pinging. `tool`: skip on servers whose tools/list lacks this tool.
    """

    name: str
    method: str
    params: dict[str, Any] | None = None
    repeat: int = 5
    quick_repeat: int | None = None  # repetitions in --quick mode; default max(1, repeat // 10)
    warmup: int | None = None  # unrecorded calls first; default 1 if repeat >= 10 else 0
    timeout: float = 120.0
    overrides: dict[str, tuple[str, dict[str, Any] | None]] = field(default_factory=dict)
    only: set[str] | None = None
    fresh: bool = False
    probe_pings: bool = False
    in_quick: bool = True  # False: skipped by --quick
    check: Callable[[Reply], str | None] | None = None  # extra validation of the last reply
    note: str = ""

    def call_for(self, server: str) -> tuple[str, dict[str, Any] | None]:
        return self.overrides.get(server, (self.method, self.params))

    def tool_for(self, server: str) -> str | None:
        method, params = self.call_for(server)
        return params.get("name") if method == "tools/call" and params else None

    def runs(self, quick: bool) -> int:
        if not quick:
            return self.repeat
        return self.quick_repeat if self.quick_repeat is not None else max(1, self.repeat // 10)

    def warmups(self, quick: bool) -> int:
        if self.warmup is not None:
            return self.warmup
        return 1 if self.runs(quick) >= 10 else 0


def tool(name: str, tool_name: str, arguments: dict[str, Any], **kw: Any) -> Workload:
    """Shorthand for a tools/call workload: tool("read 100 files", "read_multiple_files", {...})."""
    return Workload(name, "tools/call", {"name": tool_name, "arguments": arguments}, **kw)


@dataclass
class Suite:
    title: str
    servers: list[ServerSpec]
    workloads: list[Workload]
    cold_starts: int = 10
    quick_cold_starts: int = 3
    notes: list[str] = field(default_factory=list)  # printed under the table


@dataclass
class Options:
    quick: bool = False
    only: set[str] | None = None  # server names to run
    filter: str | None = None  # substring of workload names to run
    repeat: int | None = None  # override every workload's repetitions
    cold_starts: int | None = None
    log_dir: Path = DEFAULT_LOG_DIR
    verbose: bool = True


@dataclass
class SuiteResult:
    title: str
    servers: list[ServerSpec]
    unavailable: dict[str, str] = field(default_factory=dict)
    cold_start: dict[str, Sample] = field(default_factory=dict)
    samples: dict[str, dict[str, Sample]] = field(default_factory=dict)  # workload → server → Sample
    probes: dict[str, dict[str, PingProbe]] = field(default_factory=dict)
    peak_rss_kib: dict[str, int | None] = field(default_factory=dict)  # long-lived session peak
    restarts: dict[str, int] = field(default_factory=dict)
    server_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    workloads: list[Workload] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0


def _log(opts: Options, msg: str) -> None:
    if opts.verbose:
        print(msg, file=sys.stderr, flush=True)


class _Session:
    """The long-lived process of one server, restarted after a timeout or crash."""

    def __init__(self, spec: ServerSpec, opts: Options, result: SuiteResult) -> None:
        self.spec, self.opts, self.result = spec, opts, result
        self.client: McpClient | None = None
        self.tools: set[str] = set()
        self.peak_kib = 0

    async def get(self) -> McpClient:
        if self.client is None or not self.client.alive:
            if self.client is not None:  # it died between workloads
                await self.discard()
                self.result.restarts[self.spec.name] = self.result.restarts.get(self.spec.name, 0) + 1
            self.client = await start(self.spec, self.opts.log_dir)
            self.result.server_info[self.spec.name] = self.client.server_info
            self.tools = await self.client.tool_names()
        return self.client

    async def discard(self) -> None:
        """Keep the peak RSS of a process we are about to lose, then close it."""
        if self.client is not None:
            self.peak_kib = max(self.peak_kib, self.client.peak_rss_kib() or 0)
            await self.client.close(grace=1.0)
            self.client = None


async def _run_once(client: McpClient, wl: Workload, server: str, sample: Sample) -> bool:
    """One timed call. Returns False when the server should not be asked again for this workload."""
    method, params = wl.call_for(server)
    try:
        reply = await client.request(method, params, wl.timeout)
    except (RequestTimeout, ServerExited) as exc:
        # The caller discards the process (it may still be grinding) after reading its peak RSS.
        sample.errors.append(f"{type(exc).__name__}: {exc}")
        return False
    sample.seconds.append(reply.seconds)
    sample.sizes.append(reply.size)
    failure = reply.failure() or (wl.check(reply) if wl.check else None)
    if failure:
        sample.errors.append(failure)
    return True


async def _run_workload(
    wl: Workload, sessions: dict[str, _Session], opts: Options, result: SuiteResult
) -> None:
    names = [n for n, sess in sessions.items() if (n in wl.only if wl.only else not sess.spec.baseline)]
    samples = {n: Sample() for n in names}
    result.samples[wl.name] = samples
    # Skip servers that lack the tool (e.g. grep exists only in ours).
    for n in names:
        await sessions[n].get()  # also learns its tool list
        tool_name = wl.tool_for(n)
        if tool_name and tool_name not in sessions[n].tools:
            samples[n].skipped = f"no tool {tool_name!r}"
    active = [n for n in names if samples[n].skipped is None]
    runs = opts.repeat if opts.repeat is not None else wl.runs(opts.quick)

    gave_up: set[str] = set()  # servers that timed out or crashed: don't repeat a 2-minute wait
    if not wl.fresh:
        for n in active:
            for _ in range(wl.warmups(opts.quick)):
                if not await _run_once(await sessions[n].get(), wl, n, samples[n]):
                    await sessions[n].discard()
                    result.restarts[n] = result.restarts.get(n, 0) + 1
                    gave_up.add(n)
                    break
        for n in active:
            samples[n].seconds.clear()  # warm-up calls count for failures, not for times
            samples[n].sizes.clear()
    for rep in range(runs):
        # Alternate the order so neither server always runs right after the other's heavy call.
        order = active if rep % 2 == 0 else active[::-1]
        for n in order:
            if n in gave_up:
                continue
            if wl.fresh:
                client = await start(sessions[n].spec, opts.log_dir)
                try:
                    ok = await _run_once(client, wl, n, samples[n])
                    rss = client.peak_rss_kib()  # None once the process is gone
                    samples[n].peak_rss_kib = max(samples[n].peak_rss_kib or 0, rss or 0) or None
                finally:
                    await client.close(grace=2.0)
            else:
                ok = await _run_once(await sessions[n].get(), wl, n, samples[n])
                if not ok:
                    await sessions[n].discard()  # the next workload gets a fresh process
                    result.restarts[n] = result.restarts.get(n, 0) + 1
            if not ok:
                gave_up.add(n)
    for n in active:
        s = samples[n]
        _log(
            opts,
            f"  {wl.name:<40} {n:<8} median {fmt_time(s.median):>9}  p95 {fmt_time(s.p95):>9}"
            f"  {fmt_bytes(s.size):>9}" + (f"  ERR {s.errors[0]}" if s.errors else ""),
        )

    if wl.probe_pings:
        result.probes[wl.name] = {}
        for n in active:
            client = await sessions[n].get()
            method, params = wl.call_for(n)
            probe = await ping_under_load(client, method, params, timeout=wl.timeout)
            result.probes[wl.name][n] = probe
            if probe.error and ("Timeout" in probe.error or not client.alive):
                await sessions[n].discard()  # a timed-out call may still be running in it
            _log(
                opts,
                f"  {wl.name + ' + pings':<40} {n:<8} {len(probe.latencies)} pings,"
                f" median {fmt_time(probe.median)}, max {fmt_time(probe.max)}",
            )


async def run_suite(suite: Suite, opts: Options) -> SuiteResult:
    t_start = time.perf_counter()
    result = SuiteResult(suite.title, suite.servers, notes=list(suite.notes))
    for s in suite.servers:
        if opts.only is not None and s.name not in opts.only:
            result.unavailable[s.name] = "not selected (--only)"
    specs = [s for s in suite.servers if s.name not in result.unavailable]
    for s in specs:
        why = s.missing()
        if why:
            result.unavailable[s.name] = why
            _log(opts, f"skipping {s.name}: {why}")
    specs = [s for s in specs if s.name not in result.unavailable]

    # Cold start: one unrecorded start per server first (bytecode caches, page cache), then
    # interleaved fresh processes.
    n_cold = (
        opts.cold_starts
        if opts.cold_starts is not None
        else (suite.quick_cold_starts if opts.quick else suite.cold_starts)
    )
    _log(opts, f"cold start x{n_cold}: {', '.join(s.name for s in specs)}")
    for s in list(specs):
        try:
            await cold_start_once(s, opts.log_dir)
        except Exception as exc:  # a server that cannot even start is reported, not fatal
            result.unavailable[s.name] = f"failed to start: {type(exc).__name__}: {exc}"
            _log(opts, f"skipping {s.name}: {result.unavailable[s.name]}")
            specs.remove(s)
    result.cold_start = {s.name: Sample() for s in specs}
    for _ in range(n_cold):
        for s in specs:
            result.cold_start[s.name].seconds.append(await cold_start_once(s, opts.log_dir))
    for s in specs:
        _log(opts, f"  cold start {s.name:<8} median {fmt_time(result.cold_start[s.name].median)}")

    sessions = {s.name: _Session(s, opts, result) for s in specs}
    workloads = [
        w
        for w in suite.workloads
        if (not opts.quick or w.in_quick) and (opts.filter is None or opts.filter in w.name)
    ]
    result.workloads = workloads
    try:
        for wl in workloads:
            await _run_workload(wl, sessions, opts, result)
        for n, sess in sessions.items():
            if sess.client is None and not sess.spec.baseline:
                await sess.get()  # so the session peak exists even when every workload was fresh
            await sess.discard()
            result.peak_rss_kib[n] = sess.peak_kib or None
    finally:
        for sess in sessions.values():
            await sess.discard()
    result.wall_seconds = time.perf_counter() - t_start
    return result


# --------------------------------------------------------------------------------------------------
# Reporting


def fmt_time(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms" if seconds < 0.01 else f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def fmt_kib(kib: int | None) -> str:
    return "-" if not kib else f"{kib / 1024:.0f} MiB"


def _ratio(a: Sample | None, b: Sample | None) -> str:
    if not a or not b or not a.seconds or not b.seconds or b.median == 0:
        return "-"
    return f"{a.median / b.median:.2f}x"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


def _cell(sample: Sample | None, what: str) -> str:
    if sample is None:
        return "-"
    if sample.skipped:
        return "n/a"
    if not sample.seconds:
        return "FAIL" if sample.errors else "-"
    value = fmt_time(sample.median if what == "median" else sample.p95)
    return value + (" !" if sample.errors else "")


def _ping_verdict(p: PingProbe) -> str:
    """A server that answers pings while busy shows many short pings; a blocked one shows one ping
    whose latency is about the heavy call's duration."""
    line = (
        f"call {fmt_time(p.heavy_seconds)}, {len(p.latencies)} pings, median {fmt_time(p.median)},"
        f" max {fmt_time(p.max)}, {p.answered_during} answered before the call finished"
    )
    if p.error:
        return line + f" (call failed: {p.error})"
    if p.latencies and p.max > 0.5 * p.heavy_seconds and p.heavy_seconds > 0.05:
        return line + " — PINGS STALL behind the call"
    return line + " — responsive"


def format_report(res: SuiteResult) -> str:
    """The side-by-side table. Columns per server; the ratio is servers[0] / servers[1]."""
    names = [s.name for s in res.servers if s.name not in res.unavailable]
    main = [s.name for s in res.servers if s.name not in res.unavailable and not s.baseline]
    pair = [s.name for s in res.servers if not s.baseline][:2]
    out = [f"## {res.title}", ""]
    for s in res.servers:
        info = res.server_info.get(s.name, {})
        version = f" [{info.get('name', '')} {info.get('version', '')}]" if info else ""
        state = f" — NOT RUN: {res.unavailable[s.name]}" if s.name in res.unavailable else ""
        out.append(f"- {s.name}: {s.label or ' '.join(s.argv)}{version}{state}")
    out.append("")

    headers = ["workload"]
    for n in main:
        headers += [f"{n} median", f"{n} p95"]
    show_ratio = len(pair) == 2 and all(p in main for p in pair)
    if show_ratio:
        headers.append(f"ratio {pair[0]}/{pair[1]}")
    headers += [f"{n} bytes" for n in main]

    rows = []
    cold_names = [n for n in names if n not in main]
    cs = res.cold_start
    row = ["cold start (spawn → initialize)"]
    for n in main:
        row += [_cell(cs.get(n), "median"), _cell(cs.get(n), "p95")]
    if show_ratio:
        row.append(_ratio(cs.get(pair[0]), cs.get(pair[1])))
    rows.append(row + ["" for _ in main])
    for wl in res.workloads:
        samples = res.samples.get(wl.name, {})
        if not any(n in samples for n in main):
            continue  # a baseline-only workload: listed below the table
        n_runs = max((len(s.seconds) for s in samples.values()), default=0)
        row = [f"{wl.name} (x{n_runs})"]
        for n in main:
            row += [_cell(samples.get(n), "median"), _cell(samples.get(n), "p95")]
        if show_ratio:
            row.append(_ratio(samples.get(pair[0]), samples.get(pair[1])))
        row += [fmt_bytes(samples[n].size) if n in samples else "-" for n in main]
        rows.append(row)
    out += [_table(headers, rows), ""]

    for n in cold_names:
        out.append(
            f"cold start {n}: median {fmt_time(cs[n].median)}, p95 {fmt_time(cs[n].p95)}"
            f" (x{len(cs[n].seconds)}; the floor any server on this stack pays)"
        )
        for wl in res.workloads:
            smp = res.samples.get(wl.name, {}).get(n)
            if smp and smp.seconds:
                out.append(
                    f"{n} '{wl.name}' (x{len(smp.seconds)}): median {fmt_time(smp.median)},"
                    f" p95 {fmt_time(smp.p95)}, {fmt_bytes(smp.size)}"
                )
    out.append(
        "peak RSS (VmHWM) of the long-lived process: "
        + ", ".join(f"{n} {fmt_kib(res.peak_rss_kib.get(n))}" for n in main)
    )
    for wl in res.workloads:
        samples = res.samples.get(wl.name, {})
        if wl.fresh:
            out.append(
                f"peak RSS of a fresh process after '{wl.name}': "
                + ", ".join(f"{n} {fmt_kib(s.peak_rss_kib)}" for n, s in samples.items())
            )
    for wl_name, probes in res.probes.items():
        for n, p in probes.items():
            out.append(f"pings during '{wl_name}' on {n}: {_ping_verdict(p)}")
    if res.restarts:
        out.append("restarts after timeout/crash: " + ", ".join(f"{n} {c}" for n, c in res.restarts.items()))
    for wl_name, by in res.samples.items():
        for n, smp in by.items():
            if smp.errors:
                out.append(f"! {wl_name} on {n}: {len(smp.errors)} failure(s), first: {smp.errors[0]}")
            if smp.skipped:
                out.append(f"n/a {wl_name} on {n}: {smp.skipped}")
    out += [f"note on '{wl.name}': {wl.note}" for wl in res.workloads if wl.note]
    out += [f"note: {x}" for x in res.notes]
    out.append(
        f"(medians and p95 of the repetitions in this one run; only same-run ratios count;"
        f" wall time {res.wall_seconds:.0f} s)"
    )
    return "\n".join(out)


def result_to_json(res: SuiteResult) -> dict[str, Any]:
    def sample(s: Sample) -> dict[str, Any]:
        d = asdict(s)
        d.update(median=s.median, p95=s.p95, size=s.size)
        return d

    return {
        "title": res.title,
        "servers": [asdict(s) for s in res.servers],
        "unavailable": res.unavailable,
        "server_info": res.server_info,
        "cold_start": {n: sample(s) for n, s in res.cold_start.items()},
        "workloads": {w: {n: sample(s) for n, s in by.items()} for w, by in res.samples.items()},
        "probes": {
            w: {n: {**asdict(p), "median": p.median, "max": p.max} for n, p in by.items()}
            for w, by in res.probes.items()
        },
        "peak_rss_kib": res.peak_rss_kib,
        "restarts": res.restarts,
        "wall_seconds": res.wall_seconds,
    }


# --------------------------------------------------------------------------------------------------
# Command line


def arg_parser(description: str) -> argparse.ArgumentParser:
    """The common flags; a script may add its own before calling `run_cli`."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="smoke check: small data, few repetitions")
    p.add_argument("--only", help="comma-separated server names to run (e.g. 'anchor' or 'ours')")
    p.add_argument("--filter", help="run only workloads whose name contains this substring")
    p.add_argument("--repeat", type=int, help="override every workload's repetitions")
    p.add_argument("--cold-starts", type=int, help="override the number of cold starts")
    p.add_argument("--json", type=Path, help="also write the raw results here")
    p.add_argument("--log-dir", type=Path, default=DEFAULT_LOG_DIR, help="servers' stderr logs")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    return p


def options_from(args: argparse.Namespace) -> Options:
    return Options(
        quick=args.quick,
        only=set(args.only.split(",")) if args.only else None,
        filter=args.filter,
        repeat=args.repeat,
        cold_starts=args.cold_starts,
        log_dir=args.log_dir,
        verbose=not args.quiet,
    )


def run_cli(build: Callable[[argparse.Namespace], Suite], parser: argparse.ArgumentParser) -> SuiteResult:
    """Parse args, build the suite (after parsing, so data generation can honour --quick), run it,
    print the report on stdout and optionally write JSON."""
    args = parser.parse_args()
    suite = build(args)
    result = asyncio.run(run_suite(suite, options_from(args)))
    print(format_report(result))
    if args.json:
        args.json.write_text(json.dumps(result_to_json(result), indent=2, default=str))
    return result


def path_without(program: str, path: str | None = None) -> str:
    """PATH with every directory that holds `program` removed, e.g. to run mcp-server-fetch
    without Node (its pure-Python extraction path). Beware: /usr/bin may be among them."""
    dirs: Iterable[str] = (path or os.environ.get("PATH", "")).split(os.pathsep)
    return os.pathsep.join(d for d in dirs if d and not os.access(os.path.join(d, program), os.X_OK))


def venv_script(name: str, venv: Path = BENCH_DIR.parent / ".venv") -> str:
    """A workspace console script, run directly: `uv run` would add ~0.1 s+ to every cold start."""
    return str(venv / "bin" / name)


def anchor_path(*parts: str) -> str:
    """A path inside bench/.anchors/ (installed by bench/anchors.sh)."""
    return str(BENCH_DIR.joinpath(".anchors", *parts))
