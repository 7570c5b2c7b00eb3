"""Cold start over stdio: spawn -> `initialize` answered, for every server, in one run.

    bash bench/anchors.sh                                   # optional: the reference servers
    uv run --all-packages python bench/cold_start.py        # 10 starts each, ~2 min
    uv run --all-packages python bench/cold_start.py --starts 3 --only floor,filesystem

Servers: `floor` (a bare `MCPServer` with one tool, bench/floor_server.py: what any server on the
Python SDK pays before its own code runs), `runtime` (the same tool on `BatteriesServer`,
bench/runtime_floor_server.py), our five servers from their venv scripts, and the reference
servers bench/anchors.sh (and bench/git.py) installed, when present. One unrecorded start per
server first (page cache, bytecode), then `--starts` rounds in which every server starts once, the
order rotating each round. Medians of the wall time and of the server's CPU time (user + system,
from /proc, the steadier figure on a shared machine); ratios are each server's median / the
floor's, same run.
Servers start with bytecode caching on (harness.server_environment), as a real installation has.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: the harness beside it

from harness import BENCH_DIR, McpClient, ServerSpec, anchor_path, server_environment, venv_script

ROOT = BENCH_DIR.parent


def specs(data: Path) -> list[ServerSpec]:
    python = sys.executable
    db = data / "cold.db"
    env = server_environment(None)
    found = [
        ServerSpec("floor", [python, str(BENCH_DIR / "floor_server.py")], env=env),
        ServerSpec("runtime", [python, str(BENCH_DIR / "runtime_floor_server.py")], env=env),
        ServerSpec("filesystem", [venv_script("mcp-batteries-filesystem"), str(data)], env=env),
        ServerSpec("sql", [venv_script("mcp-batteries-sql"), f"sqlite:///{db}"], env=env),
        ServerSpec("git", [venv_script("mcp-batteries-git"), "--repository", str(ROOT)], env=env),
        ServerSpec("fetch", [venv_script("mcp-batteries-fetch")], env=env),
        ServerSpec("tasks", [venv_script("mcp-batteries-tasks"), "--db", str(data / "tasks.db")], env=env),
    ]
    anchors = [
        (
            "ref-filesystem",
            [
                "node",
                anchor_path(
                    "filesystem",
                    "node_modules",
                    "@modelcontextprotocol",
                    "server-filesystem",
                    "dist",
                    "index.js",
                ),
                str(data),
            ],
        ),
        ("ref-sqlite", [anchor_path("sqlite", "bin", "mcp-server-sqlite"), "--db-path", str(db)]),
        ("ref-git", [anchor_path("git", "bin", "mcp-server-git"), "--repository", str(ROOT)]),
        ("ref-fetch", [anchor_path("fetch", "bin", "mcp-server-fetch")]),
    ]
    for name, argv in anchors:
        if Path(argv[1] if argv[0] == "node" else argv[0]).exists():
            found.append(ServerSpec(name, argv, env=env))
    return found


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process so far (children it waited for included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


async def start_once(spec: ServerSpec, log_dir: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) from spawn to the initialize result. Closing is not timed."""
    client = await McpClient.spawn(spec, log_dir)
    try:
        await client.initialize(60.0)
        wall = time.perf_counter() - client.spawned_at
        return wall, cpu_seconds(client.pid)
    finally:
        await client.close(grace=2.0)


async def measure(
    chosen: list[ServerSpec], starts: int, log_dir: Path
) -> dict[str, list[tuple[float, float]]]:
    times: dict[str, list[tuple[float, float]]] = {spec.name: [] for spec in chosen}
    for spec in chosen:  # unrecorded: page cache and bytecode
        await start_once(spec, log_dir)
    for round_ in range(starts):
        shift = round_ % len(chosen)
        for spec in chosen[shift:] + chosen[:shift]:
            times[spec.name].append(await start_once(spec, log_dir))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=10, help="recorded starts per server")
    parser.add_argument("--only", default="", help="server names, comma-separated (default: all found)")
    args = parser.parse_args()
    log_dir = BENCH_DIR / ".work" / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as folder:
        data = Path(folder)
        (data / "hello.txt").write_text("hello\n")
        with sqlite3.connect(data / "cold.db") as db:
            db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        chosen = specs(data)
        if args.only:
            wanted = set(args.only.split(","))
            chosen = [s for s in chosen if s.name in wanted or s.name == "floor"]
        times = asyncio.run(measure(chosen, args.starts, log_dir))
    floor_wall = statistics.median(wall for wall, _ in times["floor"])
    floor_cpu = statistics.median(cpu for _, cpu in times["floor"])
    print(f"\nCold start over stdio (spawn -> initialize answered), {args.starts} starts each, medians")
    print("\n| server | wall s | min s | vs floor | CPU s | CPU vs floor |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, found in times.items():
        wall = statistics.median(w for w, _ in found)
        cpu = statistics.median(c for _, c in found)
        print(
            f"| {name} | {wall:.3f} | {min(w for w, _ in found):.3f} | {wall / floor_wall:.2f}x | "
            f"{cpu:.3f} | {cpu / floor_cpu:.2f}x |"
        )


if __name__ == "__main__":
    main()
