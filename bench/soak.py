"""Soak: the bundle (filesystem, sql, git, tasks) under 50 clients for minutes, both protocol eras.

    uv run --all-packages python bench/soak.py                  # 50 clients, 10 minutes
    uv run --all-packages python bench/soak.py --minutes 3      # shorter
    uv run --all-packages python bench/soak.py --quick          # 20 clients, 1 minute (smoke check)

One `mcp-batteries serve filesystem sql git tasks` process on generated data (200 text files, a
5,000-row SQLite table, a 300-commit repository with a dirty working tree, a tasks database).
Half the clients speak the handshake era over HTTP (2025-11-25: `initialize`, one
`Mcp-Session-Id` per server, reopened every `--reopen-every` calls, so sessions come and go),
the other half 2026-07-28 (no session; every request carries its `_meta`). Each is a closed loop
(no sleeps). Calls are mixed: cheap ones (`list_allowed_directories`, `git_branch`,
`list_tables`, `next_task`, `list_lists`) and, with `--heavy-share`, heavy ones (a `grep` over
the tree, a 500-row `query`, `git_log` of 100 commits, `git_status`, `list_tasks`, and writes:
`add_task` then `complete_task` of the task just added).

Every 10 s (`--sample-every`) the server process is sampled: RSS, open file descriptors,
threads, and the calls, errors and latencies of the interval. The report is that curve and a
verdict: 0 errors, and after the warm-up (`--warmup-share` of the run, at least 60 s unless the
run is shorter) RSS may grow by at most `--max-rss-growth-mib` and descriptors by at most
`--max-fd-growth` (the first vs the last quarter of the samples after the warm-up: the median RSS,
the fewest descriptors and threads, since calls in flight hold some for a moment). Exits 1 when
the verdict fails. `--trace-memory` runs the bundle under tracemalloc and lists where memory grew
after the warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: import load.py beside it

from load import Call, McpClient, make_data, rpc_answer, server_status

SERVERS = ("filesystem", "sql", "git", "tasks")
_BASE_IN_BANNER = re.compile(r"Streamable HTTP on (http://\S+) \(")


# -- data --------------------------------------------------------------------------------------------


def make_repository(work: Path, commits: int = 300) -> Path:
    """A repository with `commits` commits over 100 files and 20 modified files (generated once)."""
    repo = work / "repo"
    if (repo / ".done").exists():
        return repo
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

    def git(*args: str, input: bytes | None = None) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, input=input, check=True, capture_output=True)

    repo.mkdir(parents=True, exist_ok=True)
    git("init", "--quiet", "--initial-branch=main")
    stream: list[bytes] = []
    for number in range(commits):
        message = f"change {number}\n".encode()
        stream.append(b"commit refs/heads/main\n")
        stamp = b"Soak <soak@example.com> %d +0000\n" % (1_700_000_000 + number * 60)
        stream += [b"author " + stamp, b"committer " + stamp, b"data %d\n" % len(message), message]
        paths = range(100) if number == 0 else [number % 100]
        for index in paths:
            content = f"file {index}, version {number}\n".encode() * 20
            stream.append(b"M 100644 inline f%03d.txt\ndata %d\n" % (index, len(content)) + content + b"\n")
    git("fast-import", "--quiet", input=b"".join(stream))
    git("checkout", "--quiet", "--force", "main")
    git("branch", "feature")
    for index in range(20):
        with open(repo / f"f{index:03d}.txt", "a") as handle:
            handle.write("a local change\n")
    (repo / ".done").write_text("")
    return repo


# -- the bundle --------------------------------------------------------------------------------------


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    host: str
    port: int

    def sample(self) -> dict[str, int]:
        """RSS (KiB), open descriptors and threads of the server process now."""
        pid = self.process.pid
        fields = {}
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "Threads"):
                fields[key] = int(value.split()[0])
        return {
            "rss_kib": fields.get("VmRSS", 0),
            "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "threads": fields.get("Threads", 0),
        }


#: --trace-memory: the bundle's console script run with a SIGUSR1 handler that writes a
#: tracemalloc snapshot (after a full collection) to $SOAK_SNAPSHOTS/snapshot-N.bin.
_TRACED = """
import gc, itertools, os, runpy, signal, sys, tracemalloc
numbers = itertools.count(1)
def dump(signum, frame):
    gc.collect()
    target = os.path.join(os.environ["SOAK_SNAPSHOTS"], f"snapshot-{next(numbers)}.bin")
    tracemalloc.take_snapshot().dump(target + ".part")
    os.replace(target + ".part", target)
signal.signal(signal.SIGUSR1, dump)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


async def snapshot(server: Server, directory: Path, number: int) -> Path:
    """Ask the traced bundle for snapshot `number` and wait until it is written."""
    target = directory / f"snapshot-{number}.bin"
    server.process.send_signal(signal.SIGUSR1)
    while not target.exists():  # noqa: ASYNC110 - another process writes it: nothing to wait on
        await asyncio.sleep(0.2)
    return target


def memory_growth(first: Path, last: Path, top: int = 15) -> None:
    """Where the traced bundle's memory grew between two snapshots (by allocation site)."""
    import tracemalloc

    before, after = tracemalloc.Snapshot.load(str(first)), tracemalloc.Snapshot.load(str(last))
    totals = [sum(t.size for t in s.traces) / 2**20 for s in (before, after)]
    print(
        f"\nPython heap (traced by tracemalloc): {totals[0]:.1f} -> {totals[1]:.1f} MiB "
        f"({totals[1] - totals[0]:+.1f}); the rest of RSS is C allocations (SQLite caches, "
        f"buffers) and the allocators' free space; growth by allocation site, top {top}:"
    )
    for stat in after.compare_to(before, "traceback")[:top]:
        print(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7} blocks")
        for line in stat.traceback.format(limit=6, most_recent_first=True):
            print(f"      {line}")


@contextlib.contextmanager
def bundle(
    config: Path, log: Path, servers: list[str], snapshots: Path | None = None, frames: int = 1
) -> Iterator[Server]:
    script = Path(sys.executable).parent / "mcp-batteries"
    command = [str(script), "serve", *servers, "--config", str(config), "--port", "0"]
    env = dict(os.environ)
    if snapshots is not None:
        command = [sys.executable, "-X", f"tracemalloc={frames}", "-c", _TRACED, *command]
        env["SOAK_SNAPSHOTS"] = str(snapshots)
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
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
        # The rest of its stderr goes to the log (read in a thread: the pipe must never fill up).
        stderr = process.stderr

        def copy() -> None:
            with log.open("ab") as sink:
                for line in stderr:
                    sink.write(line)
                    sink.flush()

        threading.Thread(target=copy, daemon=True).start()
        yield Server(process, host, int(port))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


# -- the mix -----------------------------------------------------------------------------------------


@dataclass
class Mix:
    tree: Path
    repo: Path
    heavy_share: float
    servers: list[str]

    def _served(self, rng: random.Random, calls: list[Call]) -> Call:
        return rng.choice([c for c in calls if c.path.split("/")[1] in self.servers])

    def choose(self, rng: random.Random) -> Call:
        if rng.random() >= self.heavy_share:
            return self._served(
                rng,
                [
                    Call("/filesystem/mcp", "list_allowed_directories", {}, heavy=False),
                    Call("/git/mcp", "git_branch", {"branch_type": "local"}, heavy=False),
                    Call("/sql/mcp", "list_tables", {}, heavy=False),
                    Call("/tasks/mcp", "next_task", {}, heavy=False),
                    Call("/tasks/mcp", "list_lists", {}, heavy=False),
                ],
            )
        return self._served(
            rng,
            [
                Call(
                    "/filesystem/mcp",
                    "grep",
                    {"path": str(self.tree), "pattern": "needle omega", "max_matches": 200},
                    heavy=True,
                ),
                Call(
                    "/sql/mcp", "query", {"sql": "SELECT id, name, value FROM t ORDER BY id DESC"}, heavy=True
                ),
                Call("/git/mcp", "git_log", {"max_count": 100}, heavy=True),
                Call("/git/mcp", "git_status", {}, heavy=True),
                Call("/tasks/mcp", "list_tasks", {"status": ["open"], "limit": 50}, heavy=True),
                Call("/tasks/mcp", "add_task", {"title": "soak"}, heavy=True),  # then complete_task
            ],
        )


@dataclass
class Interval:
    """What the clients saw since the last sample."""

    cheap: list[float] = field(default_factory=list)
    heavy: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    by_tool: dict[str, list[float]] = field(default_factory=dict)


class SoakClient(McpClient):
    """load.McpClient that returns the answer (add_task's id feeds complete_task)."""

    async def call_answer(self, call: Call) -> dict[str, Any]:
        self.next_id += 1
        params: dict[str, Any] = {"name": call.tool, "arguments": call.arguments}
        if self.era == "modern":
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "bench-soak", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params}
        headers = self._headers(call.path, "tools/call", call.tool)
        status, _, data = await self.http.request("POST", call.path, headers, json.dumps(body).encode())
        if status != 200:
            raise RuntimeError(f"{call.tool}: HTTP {status}: {data[:200]!r}")
        answer = rpc_answer(data, self.next_id)
        if "error" in answer or answer.get("result", {}).get("isError"):
            raise RuntimeError(f"{call.tool}: {json.dumps(answer)[:300]}")
        return answer


async def client_loop(
    number: int,
    server: Server,
    era: str,
    mix: Mix,
    reopen_every: int,
    box: list[Interval],
    stop: asyncio.Event,
) -> None:
    rng = random.Random(number)
    client = SoakClient(server.host, server.port, era)
    paths = [f"/{name}/mcp" for name in mix.servers]
    calls = 0
    try:
        while not stop.is_set():
            try:
                if era == "legacy" and not client.sessions:
                    for path in paths:
                        await client.open(path)
                call = mix.choose(rng)
                started = time.perf_counter()
                answer = await client.call_answer(call)
                if call.tool == "add_task":
                    task = answer["result"]["structuredContent"]
                    done = Call("/tasks/mcp", "complete_task", {"task_id": task["id"]}, heavy=True)
                    await client.call_answer(done)
                elapsed = time.perf_counter() - started
                (box[0].heavy if call.heavy else box[0].cheap).append(elapsed)
                box[0].by_tool.setdefault(call.tool, []).append(elapsed)
                calls += 1
                if era == "legacy" and calls % reopen_every == 0:
                    for path in paths:
                        await client.close_session(path)
            except Exception as exc:
                if not stop.is_set():
                    box[0].errors.append(f"client {number} ({era}): {exc}"[:400])
                    client.sessions.clear()
                    await client.http.close()
        for path in paths:
            with contextlib.suppress(Exception):
                await client.close_session(path)
    finally:
        await client.http.close()


# -- the run -----------------------------------------------------------------------------------------


#: The curve's columns: key, width, format.
COLUMNS = [
    ("t_s", 5, ""),
    ("calls_per_s", 11, ".1f"),
    ("cheap_p50_ms", 12, ".1f"),
    ("cheap_p99_ms", 12, ".1f"),
    ("heavy_p50_ms", 12, ".1f"),
    ("heavy_p99_ms", 12, ".1f"),
    ("errors", 6, ""),
    ("rss_mib", 7, ".1f"),
    ("fds", 4, ""),
    ("threads", 7, ""),
    ("cpu_pct", 7, ".0f"),
    ("sessions", 8, ""),
    ("store_mib", 9, ".2f"),
]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def soak(options: argparse.Namespace) -> int:
    work = Path(options.work)
    work.mkdir(parents=True, exist_ok=True)
    tree, database = make_data(work, files=200)
    repo = make_repository(work)
    tasks_db = work / "tasks.db"
    for stale in (tasks_db, work / "tasks.db-wal", work / "tasks.db-shm"):
        stale.unlink(missing_ok=True)  # every run starts with no tasks (they pile up otherwise)
    config = work / "bundle.toml"
    config.write_text(
        f'[filesystem]\ndirectories = ["{tree}"]\n'
        f'[sql]\ndatabases = ["sqlite:///{database}"]\nmax_rows = 500\n'
        f'[git]\nrepository = ["{repo}"]\n'
        f'[tasks]\ndb = "{tasks_db}"\n'
    )
    duration = options.minutes * 60
    servers = [name for name in options.servers.split(",") if name]
    unknown = set(servers) - set(SERVERS)
    if unknown or not servers:
        raise SystemExit(f"--servers: choose among {', '.join(SERVERS)}")
    warmup = min(max(60.0, duration * options.warmup_share), duration / 2)
    log = work / "bundle.stderr.log"
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(
        f"soak: {options.clients} clients ({options.clients - options.clients // 2} legacy sessions, "
        f"{options.clients // 2} 2026-07-28), {options.minutes:g} min, warm-up {warmup:.0f} s, "
        f"{options.heavy_share:.0%} heavy calls; servers {', '.join(servers)}; cores {os.cpu_count()}; "
        f"load average {load}; bundle log {log}",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    all_errors: list[str] = []
    by_tool: dict[str, list[float]] = {}  # after the warm-up
    snapshots = work / "snapshots" if options.trace_memory else None
    if snapshots is not None:
        snapshots.mkdir(exist_ok=True)
        for old in snapshots.glob("snapshot-*"):
            old.unlink()
    taken: list[Path] = []
    with bundle(config, log, servers, snapshots, options.trace_frames) as server:
        mix = Mix(tree, repo, options.heavy_share, servers)
        box = [Interval()]
        stop = asyncio.Event()
        eras = ["legacy" if n % 2 == 0 else "modern" for n in range(options.clients)]
        clients = [
            asyncio.create_task(client_loop(n, server, era, mix, options.reopen_every, box, stop))
            for n, era in enumerate(eras)
        ]
        started = time.monotonic()
        last_cpu = _cpu_seconds(server.process.pid)
        print(" ".join(f"{key:>{width}}" for key, width, _ in COLUMNS), flush=True)
        while (now := time.monotonic() - started) < duration:
            await asyncio.sleep(min(options.sample_every, duration - now))  # the sampling period
            interval, box[0] = box[0], Interval()
            sample = server.sample()
            status = await server_status(server)  # type: ignore[arg-type]
            cpu = _cpu_seconds(server.process.pid)
            row = {
                "t_s": round(time.monotonic() - started),
                "calls_per_s": (len(interval.cheap) + len(interval.heavy)) / options.sample_every,
                "cheap_p50_ms": pct(interval.cheap, 0.5),
                "cheap_p99_ms": pct(interval.cheap, 0.99),
                "heavy_p50_ms": pct(interval.heavy, 0.5),
                "heavy_p99_ms": pct(interval.heavy, 0.99),
                "errors": len(interval.errors),
                "rss_mib": sample["rss_kib"] / 1024,
                "fds": sample["fds"],
                "threads": sample["threads"],
                "cpu_pct": 100 * (cpu - last_cpu) / options.sample_every,
                "sessions": sum(s.get("sessions", 0) for s in status.get("servers", [])),
                "store_mib": sum(s.get("event_store_bytes", 0) for s in status.get("servers", [])) / 2**20,
            }
            last_cpu = cpu
            rows.append(row)
            all_errors += interval.errors
            if snapshots is not None and not taken and row["t_s"] >= warmup:
                taken.append(await snapshot(server, snapshots, 1))
            if row["t_s"] > warmup:
                for tool, times in interval.by_tool.items():
                    by_tool.setdefault(tool, []).extend(times)
            print(" ".join(f"{row[key]:>{width}{form}}" for key, width, form in COLUMNS), flush=True)
            for error in interval.errors[:3]:
                print(f"      error: {error}", flush=True)
        if snapshots is not None and taken:
            taken.append(await snapshot(server, snapshots, 2))
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        alive = server.process.poll() is None
    print("\nafter the warm-up, per tool (add_task includes its complete_task):")
    for tool, times in sorted(by_tool.items()):
        print(
            f"  {tool:26} {len(times):>8,} calls"
            f"  p50 {pct(times, 0.5):7.1f} ms  p99 {pct(times, 0.99):7.1f} ms"
        )
    if len(taken) == 2:
        memory_growth(*taken)
    return verdict(rows, all_errors, warmup, options, alive)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def verdict(
    rows: list[dict[str, Any]], errors: list[str], warmup: float, options: argparse.Namespace, alive: bool
) -> int:
    after = [r for r in rows if r["t_s"] >= warmup]
    if len(after) < 2:
        print("\nverdict: too short to judge growth (run longer than the warm-up)")
        return 1

    # Each end is a quarter of the samples after the warm-up (at least 3): RSS by its median;
    # descriptors and threads by their minimum, since calls in flight hold pipes, sockets and
    # threads for a moment, while a leaked one is never given back.
    window = max(3, len(after) // 4)

    def edge(key: str, last: bool) -> float:
        values = [r[key] for r in (after[-window:] if last else after[:window])]
        return float(statistics.median(values) if key == "rss_mib" else min(values))

    rss_growth = edge("rss_mib", True) - edge("rss_mib", False)
    fd_growth = edge("fds", True) - edge("fds", False)
    thread_growth = edge("threads", True) - edge("threads", False)
    calls = sum(r["calls_per_s"] for r in rows) * options.sample_every
    checks = [
        (len(errors) == 0, f"errors: {len(errors)} in {calls:,.0f} calls"),
        (alive, "server alive at the end" if alive else "server died"),
        (
            rss_growth <= options.max_rss_growth_mib,
            f"RSS after warm-up: {edge('rss_mib', False):.1f} -> {edge('rss_mib', True):.1f} MiB "
            f"({rss_growth:+.1f}, bound {options.max_rss_growth_mib:g})",
        ),
        (
            fd_growth <= options.max_fd_growth,
            f"descriptors after warm-up: {edge('fds', False):.0f} -> {edge('fds', True):.0f} "
            f"({fd_growth:+.0f}, bound {options.max_fd_growth})",
        ),
        (
            thread_growth <= options.max_fd_growth,
            f"threads after warm-up: {edge('threads', False):.0f} -> {edge('threads', True):.0f} "
            f"({thread_growth:+.0f}, bound {options.max_fd_growth})",
        ),
    ]
    print()
    for ok, text in checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {text}")
    if errors:
        print(f"  first error: {errors[0]}")
    passed = all(ok for ok, _ in checks)
    print(f"verdict: {'PASS' if passed else 'FAIL'}")
    if options.json:
        Path(options.json).write_text(
            json.dumps({"samples": rows, "errors": errors[:100], "passed": passed}, indent=2)
        )
    return 0 if passed else 1


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--clients", type=int, default=50, help="concurrent clients, half per era (default 50)"
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the run (default 10)")
    parser.add_argument(
        "--sample-every", type=float, default=10.0, help="seconds between samples (default 10)"
    )
    parser.add_argument("--heavy-share", type=float, default=0.1, help="share of heavy calls (default 0.1)")
    parser.add_argument(
        "--reopen-every", type=int, default=200, help="a legacy client reopens its sessions every N calls"
    )
    parser.add_argument(
        "--warmup-share", type=float, default=0.2, help="share of the run before growth counts (default 0.2)"
    )
    parser.add_argument("--max-rss-growth-mib", type=float, default=32.0, help="RSS bound after warm-up")
    parser.add_argument("--max-fd-growth", type=int, default=16, help="descriptor bound after warm-up")
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "mcp-batteries-soak"))
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help="the bundle's servers (default: all four)"
    )
    parser.add_argument("--json", default="", help="also write the samples to this file")
    parser.add_argument(
        "--trace-memory",
        action="store_true",
        help="run the bundle under tracemalloc (slower): where memory grew after the warm-up",
    )
    parser.add_argument(
        "--trace-frames", type=int, default=1, help="frames per traced allocation (default 1; more is slower)"
    )
    parser.add_argument("--quick", action="store_true", help="20 clients, 1 minute, a sample every 5 s")
    options = parser.parse_args()
    if options.quick:
        options.clients, options.sample_every = 20, 5.0
        options.minutes = min(options.minutes, 1.0)
    sys.exit(asyncio.run(soak(options)))


if __name__ == "__main__":
    main()
