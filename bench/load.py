"""Load on the bundle: N concurrent clients against `mcp-batteries serve` over HTTP.

    uv run --all-packages python bench/load.py                 # 50 clients, every mode, ~3 minutes
    uv run --all-packages python bench/load.py --quick         # 20 clients, shorter, ~1 minute
    uv run --all-packages python bench/load.py --clients 100 --seconds 30 --only stateful,churn

The bundle runs as a subprocess (the `mcp-batteries` console script) serving filesystem and sql
on a generated tree and SQLite file. Each client is a closed loop: it sends its next call as soon
as the previous answer has arrived, with no sleeps; most calls are cheap
(`list_allowed_directories`), a share (`--heavy-share`) are heavy (a `grep` over the tree, or a
500-row `query`). Modes:

- `stateful`: handshake-era clients (2025-11-25), one session each (`Mcp-Session-Id`);
- `modern`: 2026-07-28 clients: no session, every request stands alone (the same bundle);
- `stateless`: handshake-era clients against `mcp-batteries serve --stateless`;
- `churn`: sessions opened (initialize), used once, and closed (DELETE), `--sessions` of them;
- `ops` (only when named: `--only ops`): what operating it costs. `modern` clients against a
  bundle with metrics off and nothing else (`--no-metrics`), then against one with everything
  on: `/metrics` (scraped every 5 s), an audit line for every call (`--audit-all`), per-caller
  limits (`--rate-limit 100000 --max-calls-in-flight 1000`: checked on every call, never hit)
  and spans exported by OTLP/HTTP to a receiver in this process (`--ops-features` picks some,
  `--ops-trace-ratio` samples traces); off and on alternate (`--ops-rounds` pairs), and the
  report gives the throughput ratio of the same run and the server's CPU per call.
  `bench/ops_overhead.py` measures the same per call in-process, without the neighbours' noise.

`--replicas 3` runs three bundles (the same configuration, `--bus URL` for the change bus between
them) behind HAProxy on loopback (`haproxy` must be installed: `apt-get install haproxy`), which
balances round-robin and keeps each session on the replica that opened it (a stick table learnt
from the `Mcp-Session-Id` of `initialize`'s answer, as docs/deploy.md shows): 2026-07-28
requests go anywhere. CPU and RSS are then the replicas' sums.

Each mode warms up, then measures for `--seconds`; RSS of the server process is sampled every
second of the measurement ("flat" = the growth from the first to the last second after warm-up).
The clients speak HTTP/1.1 themselves over asyncio streams (one keep-alive connection each), so
the load generator spends little CPU: on a 2-core machine it shares the cores with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
_BASE_IN_BANNER = re.compile(r"Streamable HTTP on (http://\S+) \(")


# -- a small HTTP/1.1 client -----------------------------------------------------------------------


class HttpConnection:
    """One keep-alive connection; `request` returns (status, headers, body) with the body read whole
    (Content-Length or chunked, as uvicorn sends SSE)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def request(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            await self._connect()
        assert self.reader is not None and self.writer is not None
        lines = [
            f"{method} {path} HTTP/1.1",
            f"host: {self.host}:{self.port}",
            f"content-length: {len(body)}",
        ]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        status_line = await self.reader.readline()
        if not status_line:
            await self.close()
            raise ConnectionError("connection closed by the server")
        status = int(status_line.split(b" ", 2)[1])
        received: dict[str, str] = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            received[name.strip().lower()] = value.strip()
        if "content-length" in received:
            data = await self.reader.readexactly(int(received["content-length"]))
        elif received.get("transfer-encoding") == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            data = b"".join(parts)
        else:
            data = await self.reader.read()
        if received.get("connection") == "close":
            await self.close()
        return status, received, data


def rpc_answer(body: bytes, request_id: int) -> dict[str, Any]:
    """The JSON-RPC answer in a JSON or SSE body."""
    if body[:1] == b"{":
        answer: dict[str, Any] = json.loads(body)
        return answer
    for line in body.split(b"\n"):
        if line.startswith(b"data:") and line[5:].strip():
            message = json.loads(line[5:])
            if message.get("id") == request_id:
                found: dict[str, Any] = message
                return found
    raise ValueError(f"no answer to request {request_id} in {body[:200]!r}")


# -- clients -----------------------------------------------------------------------------------------


@dataclass
class Call:
    path: str
    tool: str
    arguments: dict[str, Any]
    heavy: bool


@dataclass
class Stats:
    cheap: list[float] = field(default_factory=list)
    heavy: list[float] = field(default_factory=list)
    by_tool: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def record(self, call: Call, seconds: float) -> None:
        (self.heavy if call.heavy else self.cheap).append(seconds)
        self.by_tool.setdefault(call.tool, []).append(seconds)


class McpClient:
    """One client on one connection: a handshake-era session, or modern sessionless requests."""

    def __init__(self, host: str, port: int, era: str) -> None:
        self.http = HttpConnection(host, port)
        self.era = era
        self.sessions: dict[str, str] = {}  # path -> Mcp-Session-Id
        self.next_id = 0

    def _headers(self, path: str, method: str, name: str | None = None) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if self.era == "modern":
            headers.update({"mcp-protocol-version": MODERN_VERSION, "mcp-method": method})
            if name is not None:
                headers["mcp-name"] = name
        else:
            headers["mcp-protocol-version"] = HANDSHAKE_VERSION
            if path in self.sessions:
                headers["mcp-session-id"] = self.sessions[path]
        return headers

    async def open(self, path: str) -> None:
        """Handshake-era: initialize (a session, unless the server is stateless) and initialized."""
        if self.era == "modern":
            return
        self.next_id += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench-load", "version": "1"},
            },
        }
        status, headers, data = await self.http.request(
            "POST", path, self._headers(path, "initialize"), json.dumps(body).encode()
        )
        if status != 200:
            raise RuntimeError(f"initialize: HTTP {status}: {data[:200]!r}")
        if "mcp-session-id" in headers:
            self.sessions[path] = headers["mcp-session-id"]
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        status, _, data = await self.http.request(
            "POST", path, self._headers(path, "notifications/initialized"), note
        )
        if status != 202:
            raise RuntimeError(f"initialized: HTTP {status}: {data[:200]!r}")

    async def close_session(self, path: str) -> None:
        session = self.sessions.pop(path, None)
        if session is not None:
            headers = {"mcp-session-id": session, "mcp-protocol-version": HANDSHAKE_VERSION}
            status, _, data = await self.http.request("DELETE", path, headers)
            if status not in (200, 204):
                raise RuntimeError(f"DELETE: HTTP {status}: {data[:200]!r}")

    async def call(self, call: Call) -> None:
        self.next_id += 1
        params: dict[str, Any] = {"name": call.tool, "arguments": call.arguments}
        if self.era == "modern":
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                "io.modelcontextprotocol/clientInfo": {"name": "bench-load", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params}
        status, _, data = await self.http.request(
            "POST", call.path, self._headers(call.path, "tools/call", call.tool), json.dumps(body).encode()
        )
        if status != 200:
            raise RuntimeError(f"{call.tool}: HTTP {status}: {data[:200]!r}")
        answer = rpc_answer(data, self.next_id)
        if "error" in answer or answer.get("result", {}).get("isError"):
            raise RuntimeError(f"{call.tool}: {json.dumps(answer)[:300]}")


# -- the bundle under test -----------------------------------------------------------------------------


def make_data(work: Path, files: int) -> tuple[Path, Path]:
    tree = work / "tree"
    if not tree.exists():
        rng = random.Random(7)
        words = ["alpha", "beta", "gamma", "delta", "needle", "omega", "kappa", "sigma"]
        for index in range(files):
            folder = tree / f"d{index % 20:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            lines = (" ".join(rng.choice(words) for _ in range(10)) for _ in range(200))
            (folder / f"f{index:04d}.txt").write_text("\n".join(lines) + "\n")
    database = work / "rows.db"
    if not database.exists():
        import sqlite3

        with sqlite3.connect(database) as db:
            db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, value REAL)")
            db.executemany("INSERT INTO t VALUES (?, ?, ?)", ((i, f"row {i}", i * 0.5) for i in range(5000)))
    return tree, database


@dataclass
class Bundle:
    process: subprocess.Popen[bytes]
    host: str
    port: int

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0


@dataclass
class Replicas:
    """Several bundles behind HAProxy: the load's target is the balancer."""

    bundles: list[Bundle]
    balancer: subprocess.Popen[bytes]
    host: str
    port: int

    def cpu_seconds(self) -> float:
        return sum(b.cpu_seconds() for b in self.bundles)

    def rss_kib(self) -> int:
        return sum(b.rss_kib() for b in self.bundles)


@contextlib.contextmanager
def replicas(config: Path, count: int, work: Path, *extra: str) -> Iterator[Replicas]:
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not os.access(haproxy, os.X_OK):
        raise SystemExit("--replicas needs HAProxy: apt-get install haproxy")
    with contextlib.ExitStack() as stack:
        bundles = [stack.enter_context(bundle(config, *extra)) for _ in range(count)]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        servers = "\n".join(f"    server r{i} {b.host}:{b.port}" for i, b in enumerate(bundles))
        cfg = work / "haproxy.cfg"
        cfg.write_text(
            "global\n    maxconn 4096\n\ndefaults\n    mode http\n    timeout connect 5s\n"
            "    timeout client 300s\n    timeout server 300s\n\n"
            f"frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\n"
            "backend replicas\n    balance roundrobin\n"
            # A session's requests reach the replica that opened it: learnt from its answer.
            "    stick-table type string len 128 size 100k expire 30m\n"
            "    stick store-response res.hdr(mcp-session-id)\n"
            "    stick match req.hdr(mcp-session-id)\n"
            f"{servers}\n"
        )
        balancer = subprocess.Popen([haproxy, "-db", "-f", str(cfg)], stdout=subprocess.DEVNULL)
        try:
            for _ in range(200):
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
                time.sleep(0.05)  # HAProxy is another process: wait for its port
            yield Replicas(bundles, balancer, "127.0.0.1", port)
        finally:
            balancer.terminate()
            balancer.wait(timeout=10)


#: Set by --profile: run the bundle under cProfile, writing FILE.<mode> when it stops.
PROFILE: str | None = None


@contextlib.contextmanager
def bundle(config: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[Bundle]:
    script = Path(sys.executable).parent / "mcp-batteries"
    command = [str(script), "serve", "filesystem", "sql", "--config", str(config), "--port", "0", *extra]
    if PROFILE:
        output = f"{PROFILE}.{'stateless' if extra else 'stateful'}"
        command = [sys.executable, "-m", "cProfile", "-o", output, *command]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    assert process.stderr is not None
    try:
        for raw in process.stderr:
            found = _BASE_IN_BANNER.search(raw.decode(errors="replace"))
            if found:
                host, port = found.group(1).removeprefix("http://").rsplit(":", 1)
                break
        else:
            raise RuntimeError("the bundle did not start")
        yield Bundle(process, host, int(port))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


# -- runs ------------------------------------------------------------------------------------------------


@dataclass
class Result:
    mode: str
    clients: int
    seconds: float
    stats: Stats
    rss_kib: list[int]
    server_cpu: float
    client_cpu: float
    store_mib: float

    def row(self) -> dict[str, Any]:
        def pct(values: list[float], q: float) -> float:
            if not values:
                return float("nan")
            ordered = sorted(values)
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

        cheap, heavy = self.stats.cheap, self.stats.heavy
        calls = max(1, len(cheap) + len(heavy))
        return {
            "mode": self.mode,
            "clients": self.clients,
            "cheap_per_s": len(cheap) / self.seconds,
            "heavy_per_s": len(heavy) / self.seconds,
            "cheap_p50_ms": pct(cheap, 0.50),
            "cheap_p99_ms": pct(cheap, 0.99),
            "grep_p50_ms": pct(self.stats.by_tool.get("grep", []), 0.50),
            "grep_p99_ms": pct(self.stats.by_tool.get("grep", []), 0.99),
            "query_p50_ms": pct(self.stats.by_tool.get("query", []), 0.50),
            "query_p99_ms": pct(self.stats.by_tool.get("query", []), 0.99),
            "errors": len(self.stats.errors),
            # CPU per call, contention aside: what one core could serve is 1000 / this.
            "server_cpu_ms/call": self.server_cpu * 1000 / calls,
            "client_cpu_ms/call": self.client_cpu * 1000 / calls,
            "rss_start_mib": self.rss_kib[0] / 1024 if self.rss_kib else float("nan"),
            # RSS grows while the per-session resumable-SSE stores fill up to their bound (1,000
            # events or 4 MiB a session, 64 MiB in all): flat means the second half adds nothing.
            "rss_1st_half_mib": self._growth(0, len(self.rss_kib) // 2),
            "rss_2nd_half_mib": self._growth(len(self.rss_kib) // 2, len(self.rss_kib) - 1),
            "event_stores_mib": self.store_mib,
        }

    def _growth(self, start: int, end: int) -> float:
        if not self.rss_kib or end <= start:
            return float("nan")
        return (self.rss_kib[end] - self.rss_kib[start]) / 1024


def choose(rng: random.Random, heavy_share: float, tree: Path) -> Call:
    if rng.random() >= heavy_share:
        return Call("/filesystem/mcp", "list_allowed_directories", {}, heavy=False)
    if rng.random() < 0.5:
        arguments = {"path": str(tree), "pattern": "needle omega", "max_matches": 200}
        return Call("/filesystem/mcp", "grep", arguments, heavy=True)
    return Call("/sql/mcp", "query", {"sql": "SELECT id, name, value FROM t ORDER BY id DESC"}, heavy=True)


async def closed_loop(
    target: Bundle | Replicas,
    mode: str,
    clients: int,
    warmup: float,
    seconds: float,
    heavy_share: float,
    tree: Path,
) -> Result:
    era = "modern" if mode == "modern" else "legacy"
    stats = Stats()
    measuring = asyncio.Event()
    done = asyncio.Event()

    async def client(number: int) -> None:
        rng = random.Random(number)
        mcp = McpClient(target.host, target.port, era)
        try:
            for path in ("/filesystem/mcp", "/sql/mcp"):
                await mcp.open(path)
            while not done.is_set():
                call = choose(rng, heavy_share, tree)
                started = time.perf_counter()
                try:
                    await mcp.call(call)
                except Exception as exc:
                    if measuring.is_set():
                        stats.errors.append(str(exc)[:300])
                    continue
                if measuring.is_set() and not done.is_set():
                    stats.record(call, time.perf_counter() - started)
            for path in ("/filesystem/mcp", "/sql/mcp"):
                await mcp.close_session(path)
        except Exception as exc:
            stats.errors.append(f"client {number}: {exc}"[:300])
        finally:
            await mcp.http.close()

    rss: list[int] = []
    cpu: dict[str, float] = {}

    async def clock() -> None:
        await asyncio.sleep(warmup)  # the warm-up period, not a readiness wait
        measuring.set()
        cpu["server"], cpu["client"] = target.cpu_seconds(), time.process_time()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rss.append(target.rss_kib())
            await asyncio.sleep(min(1.0, max(0.0, end - time.monotonic())))
        rss.append(target.rss_kib())
        cpu["server"] = target.cpu_seconds() - cpu["server"]
        cpu["client"] = time.process_time() - cpu["client"]
        cpu["stores"] = await event_store_mib(target)  # while the sessions are still open
        done.set()

    started = time.monotonic()
    await asyncio.gather(clock(), *(client(n) for n in range(clients)))
    elapsed = time.monotonic() - started - warmup
    return Result(
        mode, clients, min(elapsed, seconds), stats, rss, cpu["server"], cpu["client"], cpu["stores"]
    )


async def server_status(target: Bundle | Replicas) -> dict[str, Any]:
    http = HttpConnection(target.host, target.port)
    try:
        code, _, body = await http.request("GET", "/status", {})
    finally:
        await http.close()
    status: dict[str, Any] = json.loads(body) if code == 200 else {"servers": []}
    return status


async def event_store_mib(target: Bundle | Replicas) -> float:
    """What the sessions' resumable-SSE stores keep now (the bounded part of RSS growth)."""
    servers = (await server_status(target))["servers"]
    return sum(server.get("event_store_bytes", 0) for server in servers) / 2**20


async def churn(target: Bundle | Replicas, sessions: int, concurrency: int) -> dict[str, Any]:
    """Open, use once and close `sessions` sessions; RSS after the first tenth vs at the end."""
    errors: list[str] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for number in range(sessions):
        queue.put_nowait(number)
    rss: dict[str, int] = {"before": target.rss_kib()}
    checkpoint = max(1, sessions // 10)
    completed = 0
    cheap = Call("/filesystem/mcp", "list_allowed_directories", {}, heavy=False)

    async def worker() -> None:
        nonlocal completed
        mcp = McpClient(target.host, target.port, "legacy")
        try:
            while True:
                try:
                    queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    await mcp.open(cheap.path)
                    await mcp.call(cheap)
                    await mcp.close_session(cheap.path)
                except Exception as exc:
                    errors.append(str(exc)[:300])
                completed += 1
                if completed == checkpoint:
                    rss["warm"] = target.rss_kib()
        finally:
            await mcp.http.close()

    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.monotonic() - started
    rss["after"] = target.rss_kib()
    open_sessions = sum(server["sessions"] for server in (await server_status(target))["servers"])
    return {
        "sessions": sessions,
        "per_s": sessions / elapsed,
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
        "open_after": open_sessions,
        "rss_before_mib": rss["before"] / 1024,
        "rss_warm_mib": rss.get("warm", rss["before"]) / 1024,
        "rss_after_mib": rss["after"] / 1024,
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    columns = list(rows[0])
    rendered = [
        [f"{row[c]:.1f}" if isinstance(row[c], float) else str(row[c]) for c in columns] for row in rows
    ]
    widths = [max(len(c), *(len(r[i]) for r in rendered)) for i, c in enumerate(columns)]
    print(" | ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for line in rendered:
        print(" | ".join(v.rjust(w) for v, w in zip(line, widths, strict=True)))


@contextlib.contextmanager
def otlp_sink() -> Iterator[tuple[str, list[int]]]:
    """A loopback OTLP/HTTP endpoint that accepts (and counts the bytes of) every export."""
    import http.server
    import threading

    received: list[int] = []

    class Sink(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(len(self.rfile.read(int(self.headers.get("content-length") or 0))))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


async def scrape_every(target: Bundle, seconds: float, stop: asyncio.Event) -> int:
    """GET /metrics every `seconds` until `stop`, as Prometheus would; how many scrapes."""
    scrapes = 0
    connection = HttpConnection(target.host, target.port)
    try:
        while not stop.is_set():
            status, _, _ = await connection.request("GET", "/metrics", {})
            if status != 200:
                raise RuntimeError(f"/metrics: HTTP {status}")
            scrapes += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), seconds)
    finally:
        await connection.close()
    return scrapes


async def ops_cost(options: argparse.Namespace, config: Path, tree: Path, work: Path) -> list[dict[str, Any]]:
    """Alternate `modern` runs with operations off and on; rows for both and the ratio."""
    rows: list[dict[str, Any]] = []
    audit = work / "audit.jsonl"
    features = set(options.ops_features.split(","))
    with otlp_sink() as (endpoint, exported):
        on_env: dict[str, str] = {}
        on_args: tuple[str, ...] = () if "metrics" in features else ("--no-metrics",)
        if "traces" in features:
            on_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "bench-load"}
            if options.ops_trace_ratio < 1:
                on_env["OTEL_TRACES_SAMPLER"] = "parentbased_traceidratio"
                on_env["OTEL_TRACES_SAMPLER_ARG"] = str(options.ops_trace_ratio)
        if "audit" in features:
            on_args += ("--audit-log", str(audit), "--audit-all")
        if "limits" in features:
            on_args += ("--rate-limit", "100000", "--max-calls-in-flight", "1000")
        for round_number in range(options.ops_rounds):
            for label, extra, env in (("ops-off", ("--no-metrics",), {}), ("ops-on", on_args, on_env)):
                audit.unlink(missing_ok=True)
                with bundle(config, *extra, env=env) as target:
                    stop = asyncio.Event()
                    scraper = None
                    if label == "ops-on" and "metrics" in features:
                        scraper = asyncio.create_task(scrape_every(target, 5.0, stop))
                    result = await closed_loop(
                        target, "modern", options.clients, options.warmup, options.seconds,
                        options.heavy_share, tree,
                    )  # fmt: skip
                    stop.set()
                    scrapes = await scraper if scraper is not None else 0
                row = result.row()
                row["mode"] = f"{label} #{round_number + 1}"
                rows.append(row)
                if label == "ops-on":
                    lines = sum(1 for _ in audit.open()) if audit.exists() else 0
                    print(
                        f"  {row['mode']}: {lines} audit lines, {scrapes} scrapes, "
                        f"{len(exported)} OTLP exports so far ({sum(exported) / 1024:.0f} KiB)",
                        flush=True,
                    )
                if result.stats.errors:
                    print(f"  {row['mode']}: first error: {result.stats.errors[0]}", flush=True)
    off = [r["cheap_per_s"] + r["heavy_per_s"] for r in rows if r["mode"].startswith("ops-off")]
    on = [r["cheap_per_s"] + r["heavy_per_s"] for r in rows if r["mode"].startswith("ops-on")]
    cost = 1 - (sum(on) / len(on)) / (sum(off) / len(off))
    cpu_off = [r["server_cpu_ms/call"] for r in rows if r["mode"].startswith("ops-off")]
    cpu_on = [r["server_cpu_ms/call"] for r in rows if r["mode"].startswith("ops-on")]
    print(
        f"\nops: throughput off {sum(off) / len(off):.0f} calls/s, on {sum(on) / len(on):.0f} calls/s: "
        f"cost {cost:.1%} (goal < 5 %); server CPU per call off {sum(cpu_off) / len(cpu_off):.3f} ms, "
        f"on {sum(cpu_on) / len(cpu_on):.3f} ms",
        flush=True,
    )
    return rows


async def main_async(options: argparse.Namespace) -> None:
    work = Path(options.work)
    work.mkdir(parents=True, exist_ok=True)
    tree, database = make_data(work, files=options.files)
    config = work / "bundle.toml"
    bus = f'bus = "{options.bus}"\nbus_channel = "bench_load_{os.getpid()}"\n' if options.bus else ""
    config.write_text(
        f'{bus}[filesystem]\ndirectories = ["{tree}"]\nwatch = false\n'
        f'[sql]\ndatabases = ["sqlite:///{database}"]\nmax_rows = 500\n'
    )
    only = set(options.only.split(",")) if options.only else {"stateful", "modern", "stateless", "churn"}
    rows: list[dict[str, Any]] = []
    churned: dict[str, Any] | None = None
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(
        f"load: {options.clients} clients, {options.seconds:.0f}s per mode after {options.warmup:.0f}s "
        f"warm-up, {options.heavy_share:.0%} heavy calls; cores: {os.cpu_count()}; load average: {load}; "
        f"replicas: {options.replicas}{' behind HAProxy' if options.replicas > 1 else ''}",
        flush=True,
    )
    if only & {"stateful", "modern", "churn"}:
        serving = replicas(config, options.replicas, work) if options.replicas > 1 else bundle(config)
        with serving as target:
            for mode in ("stateful", "modern"):
                if mode in only:
                    result = await closed_loop(
                        target,
                        mode,
                        options.clients,
                        options.warmup,
                        options.seconds,
                        options.heavy_share,
                        tree,
                    )
                    rows.append(result.row())
                    if result.stats.errors:
                        print(f"  {mode}: first error: {result.stats.errors[0]}", flush=True)
            if "churn" in only:
                churned = await churn(target, options.sessions, concurrency=min(20, options.clients))
    if "ops" in only:
        rows += await ops_cost(options, config, tree, work)
    if "stateless" in only:
        stateless = (
            replicas(config, options.replicas, work, "--stateless")
            if options.replicas > 1
            else bundle(config, "--stateless")
        )
        with stateless as target:
            result = await closed_loop(
                target,
                "stateless",
                options.clients,
                options.warmup,
                options.seconds,
                options.heavy_share,
                tree,
            )
            rows.append(result.row())
            if result.stats.errors:
                print(f"  stateless: first error: {result.stats.errors[0]}", flush=True)
    print()
    if rows:
        print_table(rows)
    if churned is not None:
        print()
        print_table([churned])
    print(f"\nload average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if options.json:
        Path(options.json).write_text(json.dumps({"modes": rows, "churn": churned}, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (default 50)")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per mode (default 30)")
    parser.add_argument("--warmup", type=float, default=5.0, help="warm-up seconds per mode (default 5)")
    parser.add_argument("--heavy-share", type=float, default=0.05, help="share of heavy calls (default 0.05)")
    parser.add_argument(
        "--sessions", type=int, default=2000, help="sessions the churn mode opens (default 2000)"
    )
    parser.add_argument("--files", type=int, default=200, help="files in the generated tree (default 200)")
    parser.add_argument("--replicas", type=int, default=1, help="bundles behind HAProxy (default 1: none)")
    parser.add_argument(
        "--bus", default="", help="with --replicas: the change bus URL (postgresql:// or redis://)"
    )
    parser.add_argument(
        "--only", default="", help="modes: stateful,modern,stateless,churn,ops (default: all but ops)"
    )
    parser.add_argument("--ops-rounds", type=int, default=2, help="ops mode: off/on pairs (default 2)")
    parser.add_argument(
        "--ops-trace-ratio", type=float, default=1.0, help="ops mode: share of traces sampled (default 1)"
    )
    parser.add_argument(
        "--ops-features",
        default="metrics,audit,limits,traces",
        help="ops mode: what 'on' turns on (default: metrics,audit,limits,traces)",
    )
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "mcp-batteries-load"))
    parser.add_argument("--json", default="", help="also write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="20 clients, 8 s per mode, 500 sessions")
    parser.add_argument("--profile", default="", help="run the bundle under cProfile, writing FILE.<mode>")
    options = parser.parse_args()
    global PROFILE
    PROFILE = options.profile or None
    if options.quick:
        options.clients, options.seconds, options.warmup, options.sessions = 20, 8.0, 2.0, 500
    asyncio.run(main_async(options))


if __name__ == "__main__":
    main()
