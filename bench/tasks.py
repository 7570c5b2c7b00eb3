"""Benchmark: mcp-tasks on SQLite and on PostgreSQL, the same workloads, same run.

    uv run --all-packages python bench/tasks.py           # full run (~3 min)
    uv run --all-packages python bench/tasks.py --quick   # smoke check (2,000 tasks, fewer updates)

There is no anchor: the classic demo task server keeps its tasks in memory (nothing to share, no
transactions), so the figures stand alone. What is measured:

1. The harness suite (stdio, raw JSON-RPC, median/p95): `next_task` and `list_tasks` over 10,000
   tasks with subtasks and dependencies, `get_task`, and `add_tasks` of 1,000 tasks (last, as it
   grows the data). Columns: sqlite, postgres (ratio = sqlite / postgres).
2. `next_task` server-side: the same call through the store in this process, on the data as
   generated (before the suite): what the server spends; the stdio round trip adds the client
   and JSON.
3. Lost updates: 2 server processes x 1,000 conditional updates of one counter task (2 loops of
   read-then-update-with-expected_version in each, conflicts retried). The final counter must
   equal the 2,000 applied updates; conflicts are counted.
4. Notification latency: a client of process A subscribes to a task; a client of process B
   changes it; the time from B's request to A's `notifications/resources/updated` (p50/p95).

PostgreSQL: $MCP_TEST_POSTGRES_DSN (default postgresql://postgres@127.0.0.1:5432/test) is an
administrative connection; the benchmark (re)creates the database `mcp_tasks_bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: import the harness beside it

from harness import (
    BENCH_DIR,
    DEFAULT_LOG_DIR,
    McpClient,
    Reply,
    ServerSpec,
    Suite,
    arg_parser,
    format_report,
    options_from,
    percentile,
    result_to_json,
    run_suite,
    tool,
    venv_script,
)

ADMIN_DSN = os.environ.get("MCP_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
PG_DATABASE = "mcp_tasks_bench"
WORK = BENCH_DIR / ".work" / "tasks"


# -- data ------------------------------------------------------------------------------------------
def plan(total: int, seed: int = 1) -> list[list[Any]]:
    """Batches of 1,000: 100 parents x 9 subtasks; about half the parents depend on an earlier one."""
    from mcp_tasks.models import NewTask

    rng = random.Random(seed)
    batches = []
    for b in range(total // 1000):
        items = []
        for p in range(100):
            items.append(
                NewTask(
                    title=f"feature {b}.{p}",
                    priority=rng.choice(["low", "medium", "high"]),
                    key=f"k{p}",
                    due=None
                    if rng.random() < 0.5
                    else f"2027-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    tags=[rng.choice(["api", "ui", "docs", "ops"])],
                    depends_on=[f"k{rng.randint(0, p - 1)}"] if p and rng.random() < 0.5 else [],
                    subtasks=[
                        NewTask(
                            title=f"step {b}.{p}.{c}",
                            priority=rng.choice(["low", "medium", "high"]),
                            status=rng.choice(["todo", "todo", "todo", "in_progress", "done"]),
                        )
                        for c in range(9)
                    ],
                )
            )
        batches.append(items)
    return batches


async def fill(store: Any, total: int) -> None:
    from mcp_tasks.access import Actor

    actor = Actor("local:bench", "bench")
    await store.create_list(actor, "bench")
    for items in plan(total):
        await store.add_tasks(actor, items, list_ref="bench")


def pg_url(database: str) -> str:
    return urlunsplit(urlsplit(ADMIN_DSN)._replace(path=f"/{database}"))


async def prepare(total: int) -> tuple[Path, str]:
    """A SQLite file and a PostgreSQL database, each with `total` tasks (regenerated every run)."""
    import asyncpg
    from mcp_tasks.database import open_backend
    from mcp_tasks.store import TaskStore

    WORK.mkdir(parents=True, exist_ok=True)
    db = WORK / f"bench-{total}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    admin = await asyncpg.connect(ADMIN_DSN)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{PG_DATABASE}"')
    finally:
        await admin.close()
    for opened in (await open_backend(sqlite_path=db), await open_backend(database_url=pg_url(PG_DATABASE))):
        t0 = time.perf_counter()
        try:
            await fill(TaskStore(opened), total)
        finally:
            await opened.close()
        print(f"generated {total:,} tasks in {opened.description} in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)  # fmt: skip
    conn = await asyncpg.connect(pg_url(PG_DATABASE))
    try:
        await conn.execute("VACUUM ANALYZE mcp_tasks.tasks")  # what autovacuum does after a bulk load
    finally:
        await conn.close()
    return db, pg_url(PG_DATABASE)


# -- the harness suite -------------------------------------------------------------------------------
def batch_of(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"title": f"added {seed}.{p}", "priority": rng.choice(["low", "medium", "high"]), "key": f"a{p}",
         "depends_on": [f"a{p - 1}"] if p % 3 else [],
         "subtasks": [{"title": f"added {seed}.{p}.{c}"} for c in range(9)]}
        for p in range(n // 10)
    ]  # fmt: skip


def has_task(reply: Reply) -> str | None:
    content = (reply.result or {}).get("structuredContent") or {}
    return None if content.get("task") else "no task chosen"


def build(args: argparse.Namespace, db: Path, url: str) -> Suite:
    script = venv_script("mcp-batteries-tasks")
    servers = [
        ServerSpec("sqlite", [script, "--db", str(db)], label=f"mcp-tasks --db {db.name}"),
        ServerSpec(
            "postgres", [script, "--database-url", url], label=f"mcp-tasks --database-url .../{PG_DATABASE}"
        ),
        ServerSpec("floor", [sys.executable, str(BENCH_DIR / "floor_server.py")], baseline=True),
    ]
    reps = 3 if args.quick else 10
    return Suite(
        title=f"tasks: SQLite vs PostgreSQL ({args.tasks:,} tasks)",
        servers=servers,
        workloads=[
            tool("next_task", "next_task", {}, repeat=50, quick_repeat=10, check=has_task),
            tool("list_tasks (tree, 50 per page)", "list_tasks", {}, repeat=20, quick_repeat=5),
            tool(
                "list_tasks open+high by due",
                "list_tasks",
                {"status": ["open"], "priority": ["high"], "sort": "due"},
                repeat=20,
                quick_repeat=5,
            ),
            tool("get_task", "get_task", {"task_id": 5}, repeat=50, quick_repeat=10),
            tool(
                "add_tasks of 1,000 (nested, deps)",
                "add_tasks",
                {"list": "bench", "tasks": batch_of(1000, 7)},
                repeat=reps,
                quick_repeat=2,
                warmup=0,
            ),
        ],
        cold_starts=5,
        quick_cold_starts=2,
        notes=[
            f"data: {args.tasks:,} tasks in list 'bench' (10% parents with 9 subtasks, half the parents "
            "depend on an earlier one); add_tasks runs last and grows it by 1,000 per call",
            "the ratio column is sqlite / postgres",
            f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}",
        ],
    )


# -- measurements beyond the harness ----------------------------------------------------------------
class HearingClient(McpClient):
    """A harness client that remembers when each notification arrived."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.heard: list[tuple[float, dict[str, Any]]] = []
        self.arrived = asyncio.Event()

    def _on_server_message(self, message: dict[str, Any]) -> None:
        if "id" not in message:
            self.heard.append((time.perf_counter(), message))
            self.arrived.set()
        super()._on_server_message(message)


async def spawn(spec: ServerSpec) -> HearingClient:
    client = await HearingClient.spawn(spec, DEFAULT_LOG_DIR)
    await client.initialize()
    assert isinstance(client, HearingClient)
    return client


def structured(reply: Reply) -> dict[str, Any]:
    failure = reply.failure()
    if failure:
        raise RuntimeError(failure)
    content: dict[str, Any] = reply.result["structuredContent"]
    return content


@dataclass
class Race:
    applied: int = 0
    conflicts: int = 0
    seconds: list[float] = field(default_factory=list)


async def increment_loop(client: McpClient, task_id: str, n: int, race: Race) -> None:
    for _ in range(n):
        while True:
            current = structured(await client.call_tool("get_task", {"task_id": task_id}))["task"]
            reply = await client.call_tool(
                "update_task",
                {"task_id": task_id, "expected_version": current["version"],
                 "description": str(int(current["description"] or "0") + 1)},
            )  # fmt: skip
            if reply.failure() and "conflict" in reply.failure():  # type: ignore[operator]
                race.conflicts += 1
                continue
            structured(reply)
            race.applied += 1
            race.seconds.append(reply.seconds)
            break


async def lost_updates(spec: ServerSpec, per_process: int, loops: int = 2) -> dict[str, Any]:
    a, b = await spawn(spec), await spawn(spec)
    try:
        task = structured(
            await a.call_tool("add_task", {"title": "race counter", "description": "0", "list": "bench"})
        )
        race = Race()
        t0 = time.perf_counter()
        await asyncio.gather(
            *(
                increment_loop(client, task["id"], per_process // loops, race)
                for client in (a, b)
                for _ in range(loops)
            )
        )
        wall = time.perf_counter() - t0
        final = structured(await a.call_tool("get_task", {"task_id": task["id"]}))["task"]
        counter = int(final["description"])
        return {
            "updates": race.applied, "conflicts": race.conflicts, "lost": race.applied - counter,
            "wall_s": wall, "per_s": race.applied / wall,
            "p50_ms": 1000 * statistics.median(race.seconds), "p95_ms": 1000 * percentile(race.seconds, 95),
        }  # fmt: skip
    finally:
        await a.close()
        await b.close()


async def notification_latency(spec: ServerSpec, rounds: int) -> dict[str, Any]:
    watcher, writer = await spawn(spec), await spawn(spec)
    try:
        task = structured(await writer.call_tool("add_task", {"title": "watched", "list": "bench"}))
        uri = f"tasks://tasks/{task['id']}"
        await watcher.request("resources/subscribe", {"uri": uri})
        latencies = []
        for i in range(rounds):
            seen = len(watcher.heard)
            watcher.arrived.clear()
            sent = time.perf_counter()
            structured(
                await writer.call_tool("update_task", {"task_id": task["id"], "title": f"watched {i}"})
            )
            while not any(m.get("params", {}).get("uri") == uri for _, m in watcher.heard[seen:]):
                await asyncio.wait_for(watcher.arrived.wait(), 10)
                watcher.arrived.clear()
            arrived = next(t for t, m in watcher.heard[seen:] if m.get("params", {}).get("uri") == uri)
            latencies.append(arrived - sent)
            await asyncio.sleep(0.2)  # let the watcher's debounce window close before the next change
        return {"p50_ms": 1000 * statistics.median(latencies), "p95_ms": 1000 * percentile(latencies, 95),
                "rounds": rounds}  # fmt: skip
    finally:
        await watcher.close()
        await writer.close()


async def server_side_next_task(db: Path, url: str, runs: int) -> dict[str, dict[str, float]]:
    from mcp_tasks.access import Actor
    from mcp_tasks.database import open_backend
    from mcp_tasks.store import TaskStore

    figures = {}
    for name, opener in (
        ("sqlite", lambda: open_backend(sqlite_path=db)),
        ("postgres", lambda: open_backend(database_url=url)),
    ):
        backend = await opener()
        try:
            store, actor, times = TaskStore(backend), Actor("local:bench", "bench"), []
            await store.next_task(actor)
            for _ in range(runs):
                t0 = time.perf_counter()
                await store.next_task(actor)
                times.append(time.perf_counter() - t0)
            figures[name] = {
                "p50_ms": 1000 * statistics.median(times),
                "p95_ms": 1000 * percentile(times, 95),
            }
        finally:
            await backend.close()
    return figures


def extras_report(extras: dict[str, Any]) -> str:
    def pair(figures: dict[str, Any], digits: int = 1) -> str:
        return f"{figures['p50_ms']:.{digits}f} / {figures['p95_ms']:.{digits}f} ms"

    ss, race, latency = extras["server_side_next_task"], extras["race"], extras["latency"]
    ra, rb = race["sqlite"], race["postgres"]
    rows = [
        ("next_task server-side, p50 / p95", pair(ss["sqlite"]), pair(ss["postgres"])),
        (f"2 processes x {ra['updates'] // 2:,} conditional updates: applied", f"{ra['updates']:,}",
         f"{rb['updates']:,}"),
        ("... conflicts (retried)", f"{ra['conflicts']:,}", f"{rb['conflicts']:,}"),
        ("... lost updates", str(ra["lost"]), str(rb["lost"])),
        ("... updates per second", f"{ra['per_s']:.0f}", f"{rb['per_s']:.0f}"),
        ("... update_task p50 / p95", pair(ra), pair(rb)),
        (f"notification from another process, p50 / p95 ({latency['sqlite']['rounds']} changes)",
         pair(latency["sqlite"], 0), pair(latency["postgres"], 0)),
    ]  # fmt: skip
    lines = ["", "## Beyond the suite", "", "| measurement | sqlite | postgres |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


async def main() -> None:
    parser = arg_parser("mcp-tasks benchmark (SQLite and PostgreSQL)")
    parser.add_argument(
        "--tasks", type=int, default=None, help="tasks generated (default 10,000; --quick 2,000)"
    )
    parser.add_argument(
        "--updates", type=int, default=None, help="conditional updates per process (default 1,000)"
    )
    parser.add_argument("--skip-suite", action="store_true", help="only the measurements beyond the suite")
    args = parser.parse_args()
    args.tasks = args.tasks or (2000 if args.quick else 10_000)
    updates = args.updates or (200 if args.quick else 1000)
    db, url = await prepare(args.tasks)
    # Server-side next_task first, on the data as generated (the suite's add_tasks grows it).
    extras: dict[str, Any] = {
        "server_side_next_task": await server_side_next_task(db, url, 10 if args.quick else 50)
    }
    suite = build(args, db, url)
    report = ""
    if not args.skip_suite:
        result = await run_suite(suite, options_from(args))
        report = format_report(result)
        print(report, flush=True)
    sqlite_spec, pg_spec = suite.servers[0], suite.servers[1]
    extras["race"] = {
        "sqlite": await lost_updates(sqlite_spec, updates),
        "postgres": await lost_updates(pg_spec, updates),
    }
    rounds = 10 if args.quick else 40
    extras["latency"] = {
        "sqlite": await notification_latency(sqlite_spec, rounds),
        "postgres": await notification_latency(pg_spec, rounds),
    }
    print(extras_report(extras), flush=True)
    if args.json:
        data = result_to_json(result) if not args.skip_suite else {}
        args.json.write_text(json.dumps({**data, "extras": extras}, indent=2, default=str))


if __name__ == "__main__":
    asyncio.run(main())
