"""Benchmark: mcp-sql (ours) vs the archived reference mcp-server-sqlite, same run, on one SQLite file.

    bash bench/anchors.sh                               # once: installs the reference server
    uv run --all-packages python bench/sql.py           # full run: raw JSON-RPC client, then SDK client
    uv run --all-packages python bench/sql.py --quick   # smoke check (10,000-row big table)
    uv run --all-packages python bench/sql.py --client sdk --before-cmd OLD/.venv/bin/mcp-sql
                                                        # SDK client only, with an older build beside
    uv run --all-packages python bench/sql.py --engine mysql   # ours vs DBHub on MySQL/MariaDB

MySQL (`--engine mysql`, `--mysql-url`, default $MCP_TEST_MYSQL_URL or mysql://root@127.0.0.1:3306):
database `mcp_sql_bench` (created once): 199 small tables and `big` (10,000 rows of mixed types);
ours against DBHub (@bytebase/dbhub from npm, run by Node 22 from .tools/node22 when present), both
over stdio with the raw client: SELECT 1, 10,000 rows, list_tables of 200 tables, describe_table.

Data (`bench/.work/sql/bench-100000.db`, generated once in ~1 s, 16 MB): 199 small tables `t000`..`t198` (5
columns, 2 indexes, a foreign key to the previous table, 20 rows each) and `big`: 100,000 rows of
mixed types (integer, real, text, ISO date, boolean, NULLs, small blobs), indexed, with a foreign key.

Servers: "ours" runs with `--max-rows 10000 --max-reply-bytes 16000000` so a 10,000-row SELECT comes
back whole (like for like); "ours-500" is ours with its default limits (500 rows, 512 KiB per page).
The reference returns every row as `str(list_of_dicts)`; it accepts only statements starting with
SELECT, hence the slow query's form.

Two clients (`--client raw|sdk|both`):
- raw: the harness's own JSON-RPC client (bench/harness.py): server time plus transport.
- sdk: the official `ClientSession`, as agent frameworks use it, with its output-schema validation
  on, over a stdio transport with a linear line reader (the SDK's own `stdio_client` re-splits its
  buffer per chunk, quadratic in a reply's size): what a client really pays for a reply. A second
  database of 200 tables without ANALYZE statistics measures list_tables when rows must be counted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: import the harness beside it

from harness import (
    BENCH_DIR,
    Reply,
    ServerSpec,
    Suite,
    Workload,
    anchor_path,
    arg_parser,
    format_report,
    options_from,
    result_to_json,
    run_suite,
    tool,
    venv_script,
)
from sdk_client import sdk_session, timed_call

# Ours returns a 10,000-row SELECT whole, like the reference (whose replies have no size limit):
# up to 10,000 rows and 16 MB of rows per page instead of the defaults (500 rows, 512 KiB).
OURS_LIKE_FOR_LIKE = ["--max-rows", "10000", "--max-reply-bytes", "16000000"]

N_TABLES = 200  # including `big`
SMALL_ROWS = 20

# ~1-2 s in SQLite's VM on this machine; SELECT-first so the reference accepts it.
SLOW_SQL = (
    "SELECT count(*), sum(x % 7) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
    " WHERE x < {n}) SELECT x FROM c)"
)


def make_database(root: Path, big_rows: int) -> Path:
    """Generate the database once (idempotent: a finished file keeps its name)."""
    db = root / f"bench-{big_rows}.db"
    if db.exists():
        return db
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    print(f"generating {db} ...", file=sys.stderr, flush=True)
    tmp = db.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    rnd = random.Random(4711)
    con = sqlite3.connect(tmp)
    with con:
        for i in range(N_TABLES - 1):
            parent = f" REFERENCES t{i - 1:03d}(id)" if i else ""
            con.execute(
                f"CREATE TABLE t{i:03d} (id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                f" parent_id INTEGER{parent}, amount REAL DEFAULT 0, created TEXT)"
            )
            con.execute(f"CREATE INDEX t{i:03d}_name ON t{i:03d}(name)")
            con.execute(f"CREATE INDEX t{i:03d}_parent ON t{i:03d}(parent_id)")
            con.executemany(
                f"INSERT INTO t{i:03d} VALUES (?, ?, ?, ?, ?)",
                [(k, f"row {k}", k if i else None, k * 1.5, "2026-01-01") for k in range(1, SMALL_ROWS + 1)],
            )
        con.execute(
            "CREATE TABLE big (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES t000(id),"
            " name TEXT NOT NULL, email TEXT, amount REAL, qty INTEGER, active BOOLEAN, created TEXT,"
            " note TEXT, payload BLOB, CHECK (qty >= 0))"
        )
        con.execute("CREATE INDEX big_customer ON big(customer_id)")
        con.execute("CREATE INDEX big_created ON big(created)")
        con.executemany(
            "INSERT INTO big VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    k,
                    k % SMALL_ROWS + 1,
                    f"customer {k}",
                    f"user{k}@example.com" if k % 5 else None,
                    round(rnd.uniform(0, 10_000), 2),
                    rnd.randrange(100),
                    k % 2,
                    f"2026-{k % 12 + 1:02d}-{k % 28 + 1:02d}T12:{k % 60:02d}:00",
                    "lorem ipsum dolor sit amet" if k % 3 == 0 else None,
                    rnd.randbytes(8) if k % 10 == 0 else None,
                )
                for k in range(1, big_rows + 1)
            ),
        )
    con.execute("ANALYZE")
    con.close()
    tmp.rename(db)
    print(f"  done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return db


def ours_page(text: str) -> dict[str, Any] | None:
    """Ours' page: its text is one JSON object (rows travel once; structuredContent on request)."""
    if not text.startswith('{"columns"'):
        return None
    try:
        page = json.loads(text)
    except ValueError:
        return None
    return page if isinstance(page, dict) else None


def all_or_page(total: int) -> Callable[[Reply], str | None]:
    """Ours: all `total` rows, or a truncated first page of its row limit (10,000 or 500) that names
    the next offset. The reference: all rows, counted in its str(list of dicts)."""

    def check(reply: Reply) -> str | None:
        sc = ours_page(reply.text())
        if isinstance(sc, dict):
            got, truncated = sc["row_count"], sc["truncated"]
            if truncated and got in (10_000, 500) and got < total and sc["next_offset"] == got:
                return None
            return None if got == total and not truncated else f"{got} rows (truncated={truncated})"
        got = reply.text().count("{'id': ")
        return None if got == total else f"{got} rows, expected {total}"

    return check


def q(name: str, sql: str, **kw: object) -> Workload:
    """A query workload: ours' `query(sql)`, the reference's `read_query(query)`."""
    anchor = ("tools/call", {"name": "read_query", "arguments": {"query": sql}})
    return tool(name, "query", {"sql": sql}, overrides={"anchor": anchor}, **kw)  # type: ignore[arg-type]


def build(args: argparse.Namespace) -> Suite:
    big_rows = 10_000 if args.quick else 100_000
    db = make_database(BENCH_DIR / ".work" / "sql", big_rows)
    ours = [*args.ours_cmd.split(), f"sqlite:///{db}"]
    servers = [
        ServerSpec("ours", [*ours, *OURS_LIKE_FOR_LIKE], label=f"{args.ours_cmd} --max-rows 10000"),
        ServerSpec(
            "anchor",
            [anchor_path("sqlite", "bin", "mcp-server-sqlite"), "--db-path", str(db)],
            label="archived reference mcp-server-sqlite (mcp<2)",
        ),
        ServerSpec("ours-500", ours, label=f"{args.ours_cmd} (default --max-rows 500)"),
    ]
    select_10k = "SELECT * FROM big WHERE id <= 10000"
    describe = {"anchor": ("tools/call", {"name": "describe_table", "arguments": {"table_name": "big"}})}
    workloads = [
        q("SELECT 1", "SELECT 1", repeat=200, quick_repeat=20),
        tool("list_tables (200 tables)", "list_tables", {}, repeat=50, quick_repeat=5),
        tool(
            "describe_table big",
            "describe_table",
            {"table": "big"},
            repeat=50,
            quick_repeat=5,
            overrides=describe,
        ),
        q(
            "SELECT 10,000 rows",
            select_10k,
            repeat=20,
            quick_repeat=3,
            check=all_or_page(10_000),
        ),
        q(
            f"SELECT * {big_rows:,} rows",
            "SELECT * FROM big",
            repeat=5,
            quick_repeat=1,
            check=all_or_page(big_rows),
        ),
        q(
            f"SELECT * {big_rows:,} rows, fresh process",
            "SELECT * FROM big",
            repeat=3,
            quick_repeat=1,
            fresh=True,
            check=all_or_page(big_rows),
        ),
        q(
            "slow recursive CTE",
            SLOW_SQL.format(n=args.slow_n // (10 if args.quick else 1)),
            repeat=3,
            quick_repeat=1,
            probe_pings=True,
        ),
    ]
    return Suite(
        title=f"sql: ours vs mcp-server-sqlite ({'quick' if args.quick else 'full'} data)",
        servers=servers,
        workloads=workloads,
        notes=[
            f"data: {db}: {N_TABLES} tables ({N_TABLES - 1} x {SMALL_ROWS} rows + big, {big_rows:,} rows)",
            "ours sends rows once (JSON text; structured on request); the reference str(list of dicts)",
            "SELECT *: ours returns one page (10,000 / 500 rows, truncated, next_offset), the reference all",
            "bytecode cache: on for every server (harness.server_environment)",
            f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}",
        ],
    )


# --------------------------------------------------------------------------------------------------
# Through the SDK client (issue 10): the official client, as agent frameworks use it, with its
# output-schema validation on, over sdk_client.py's stdio transport whose reader splits lines
# linearly (the SDK's own `stdio_client` re-splits its buffer per chunk: quadratic in a reply's size).
# Checked calls (a tool error or a wrong row count stops the run) and one database per workload.


@dataclass
class ClientCall:
    name: str
    tool: str
    arguments: dict[str, Any]
    anchor: tuple[str, dict[str, Any]] | None = None
    repeat: int = 20
    quick_repeat: int = 5
    check: Callable[[Any], str | None] | None = None
    database: str = "big"
    """Which database the servers answer from: "big" (the main data) or "catalog" (no statistics)."""


async def run_sdk_calls(
    servers: dict[str, list[ServerSpec]],
    calls: list[ClientCall],
    *,
    quick: bool,
    repeat: int | None,
) -> dict[str, dict[str, list[float]]]:
    """Each call K times per server, servers alternating per repetition; seconds per call.

    `servers` maps a database ("big", "catalog") to the servers answering from it; all stay up for
    the whole run, one SDK session each.
    """
    import anyio

    names = [s.name for s in next(iter(servers.values()))]
    times: dict[str, dict[str, list[float]]] = {c.name: {n: [] for n in names} for c in calls}
    async with AsyncExitStack() as stack:
        sessions = {
            (db, s.name): await stack.enter_async_context(sdk_session(s))
            for db, specs in servers.items()
            if any(c.database == db for c in calls)
            for s in specs
        }
        for call in calls:
            k = repeat or (call.quick_repeat if quick else call.repeat)
            print(f"  sdk: {call.name} x{k}", file=sys.stderr, flush=True)
            specs = servers[call.database]
            for rep in range(k + 1):  # the first round warms up and is not recorded
                for spec in specs if rep % 2 == 0 else specs[::-1]:
                    tool_name, arguments = (
                        call.anchor if spec.name == "anchor" and call.anchor else (call.tool, call.arguments)
                    )
                    with anyio.fail_after(300):
                        seconds, result = await timed_call(
                            sessions[call.database, spec.name], tool_name, arguments
                        )
                    if result.is_error:
                        raise RuntimeError(f"{spec.name} {call.name}: {result.content}")
                    problem = call.check(result) if call.check else None
                    if problem:
                        raise RuntimeError(f"{spec.name} {call.name}: {problem}")
                    if rep:
                        times[call.name][spec.name].append(seconds)
    return times


def sdk_report(servers: list[ServerSpec], times: dict[str, dict[str, list[float]]]) -> str:
    names = [s.name for s in servers]
    head = ["workload (SDK ClientSession, validation on)", *[f"{n} median" for n in names]]
    head += [f"{n}/anchor" for n in names if n != "anchor"]
    rows = []
    for call, per in times.items():
        med = {n: statistics.median(v) for n, v in per.items() if v}
        row = [call, *[f"{med[n] * 1000:.1f} ms" for n in names]]
        row += [f"{med[n] / med['anchor']:.2f}x" for n in names if n != "anchor"]
        rows.append(row)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows]]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def sdk_rows(total: int) -> Callable[[Any], str | None]:
    """The SDK-client check: ours' structured row_count (or a page naming next_offset), the reference's
    text counted as in `all_or_page`."""

    def check(result: Any) -> str | None:
        text = "".join(getattr(c, "text", "") for c in result.content)
        sc = ours_page(text)
        if isinstance(sc, dict):
            got = sc["row_count"]
            return None if got == total else f"{got} rows, expected {total}"
        got = text.count("{'id': ")
        return None if got == total else f"{got} rows, expected {total}"

    return check


def sdk_servers(args: argparse.Namespace, databases: dict[str, Path]) -> dict[str, list[ServerSpec]]:
    """Per database: ours (like for like), the reference and, with --before-cmd, an older ours."""
    servers: dict[str, list[ServerSpec]] = {}
    for key, db in databases.items():
        specs = [
            ServerSpec("ours", [*args.ours_cmd.split(), f"sqlite:///{db}", *OURS_LIKE_FOR_LIKE]),
            ServerSpec("anchor", [anchor_path("sqlite", "bin", "mcp-server-sqlite"), "--db-path", str(db)]),
        ]
        if args.before_cmd:
            # The older build has no byte limit on replies, only the row limit.
            specs.append(
                ServerSpec("before", [*args.before_cmd.split(), f"sqlite:///{db}", "--max-rows", "10000"])
            )
        servers[key] = specs
    return servers


def make_catalog_database(root: Path) -> Path:
    """200 small tables and no ANALYZE statistics: list_tables must count their rows itself."""
    db = root / "catalog-200.db"
    if db.exists():
        return db
    root.mkdir(parents=True, exist_ok=True)
    tmp = db.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp)
    with con:
        for i in range(N_TABLES):
            con.execute(f"CREATE TABLE c{i:03d} (id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount REAL)")
            con.executemany(
                f"INSERT INTO c{i:03d} (name, amount) VALUES (?, ?)",
                [(f"row {k}", k * 1.5) for k in range(1, SMALL_ROWS + 1)],
            )
    con.close()
    tmp.rename(db)
    return db


def sdk_calls() -> list[ClientCall]:
    select_10k = "SELECT * FROM big WHERE id <= 10000"
    return [
        ClientCall("SELECT 1", "query", {"sql": "SELECT 1"}, ("read_query", {"query": "SELECT 1"}), 100, 20),
        ClientCall(
            "SELECT 10,000 rows",
            "query",
            {"sql": select_10k},
            ("read_query", {"query": select_10k}),
            20,
            5,
            sdk_rows(10_000),
        ),
        ClientCall("list_tables (200 tables, ANALYZEd)", "list_tables", {}, ("list_tables", {}), 50, 10),
        ClientCall(
            "list_tables (200 tables, no statistics)",
            "list_tables",
            {},
            ("list_tables", {}),
            50,
            10,
            database="catalog",
        ),
        ClientCall(
            "describe_table big",
            "describe_table",
            {"table": "big"},
            ("describe_table", {"table_name": "big"}),
            50,
            10,
        ),
    ]


# --------------------------------------------------------------------------------------------------
# MySQL / MariaDB: ours vs DBHub (issue 25).

MYSQL_BENCH_DB = "mcp_sql_bench"


async def make_mysql_database(admin_url: str, big_rows: int = 10_000) -> None:
    """Create `mcp_sql_bench` once: 199 small tables with a foreign key each, and `big`."""
    import asyncmy
    from mcp_sql.mysql_target import parse_mysql_url

    conn = await asyncmy.connect(**parse_mysql_url(admin_url).connect_kwargs(), autocommit=True)
    try:
        cursor = conn.cursor()
        await cursor.execute(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (MYSQL_BENCH_DB,)
        )
        if (await cursor.fetchone())[0] == N_TABLES:
            return
        await cursor.execute(f"DROP DATABASE IF EXISTS {MYSQL_BENCH_DB}")
        await cursor.execute(f"CREATE DATABASE {MYSQL_BENCH_DB}")
        await cursor.execute(f"USE {MYSQL_BENCH_DB}")
        await cursor.execute(
            "CREATE TABLE big (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, score DOUBLE, "
            "created DATE, active BOOLEAN, note TEXT, payload VARBINARY(16), KEY big_name (name))"
        )
        await cursor.execute(
            "INSERT INTO big SELECT seq, CONCAT('name-', seq), seq / 7, "
            "'2024-01-01' + INTERVAL seq % 365 DAY, "
            f"seq % 2, IF(seq % 5 = 0, NULL, REPEAT('n', seq % 40)), UNHEX(MD5(seq)) FROM seq_1_to_{big_rows}"
        )
        previous = "big"
        for i in range(N_TABLES - 1):
            name = f"t{i:03d}"
            await cursor.execute(
                f"CREATE TABLE {name} (id INT PRIMARY KEY, ref INT, label VARCHAR(20), "
                f"amount DECIMAL(10,2), at DATETIME, KEY {name}_label (label), "
                f"FOREIGN KEY (ref) REFERENCES {previous} (id))"
            )
            await cursor.execute(
                f"INSERT INTO {name} SELECT seq, seq, CONCAT('l', seq), seq * 1.5, NOW() "
                f"FROM seq_1_to_{SMALL_ROWS}"
            )
            previous = name
        await cursor.execute("ANALYZE TABLE big")
    finally:
        conn.close()


def dbhub_or_ours_rows(total: int) -> Callable[[Reply], str | None]:
    """Ours: a page of `total` rows; DBHub: its JSON reply's row count."""

    def check(reply: Reply) -> str | None:
        page = ours_page(reply.text())
        if page is not None:
            return None if page["row_count"] == total else f"{page['row_count']} rows"
        try:
            data = json.loads(reply.text()).get("data", {})
        except ValueError:
            return f"not JSON: {reply.text()[:100]}"
        got = data.get("count", len(data.get("rows", [])))
        return None if got == total else f"{got} rows, expected {total}"

    return check


def build_mysql(args: argparse.Namespace) -> Suite:
    base = args.mysql_url.rsplit("/", 1)[0] if args.mysql_url.count("/") > 2 else args.mysql_url
    url = f"{base}/{MYSQL_BENCH_DB}"
    asyncio.run(make_mysql_database(url.rsplit("/", 1)[0] + "/"))
    node22 = BENCH_DIR.parent / ".tools" / "node22" / "node_modules" / ".bin" / "node"
    node = str(node22) if node22.exists() else "node"
    servers = [
        ServerSpec(
            "ours", [*args.ours_cmd.split(), url, *OURS_LIKE_FOR_LIKE], label=f"{args.ours_cmd} {url}"
        ),
        ServerSpec(
            "anchor",
            [
                node,
                anchor_path("dbhub", "node_modules", "@bytebase", "dbhub", "dist", "index.js"),
                "--transport",
                "stdio",
                "--dsn",
                url,
            ],
            label="DBHub (@bytebase/dbhub, npm)",
        ),
    ]

    def both(
        name: str, ours: tuple[str, dict[str, Any]], dbhub: tuple[str, dict[str, Any]], **kw: Any
    ) -> Workload:
        anchor = ("tools/call", {"name": dbhub[0], "arguments": dbhub[1]})
        return tool(name, ours[0], ours[1], overrides={"anchor": anchor}, **kw)

    select_10k = "SELECT * FROM big WHERE id <= 10000"
    workloads = [
        both(
            "SELECT 1",
            ("query", {"sql": "SELECT 1"}),
            ("execute_sql", {"sql": "SELECT 1"}),
            repeat=200,
            quick_repeat=20,
        ),
        both(
            "SELECT 10,000 rows",
            ("query", {"sql": select_10k}),
            ("execute_sql", {"sql": select_10k}),
            repeat=20,
            quick_repeat=3,
            check=dbhub_or_ours_rows(10_000),
        ),
        both(
            "list_tables (200 tables)",
            ("list_tables", {}),
            ("search_objects", {"object_type": "table", "schema": MYSQL_BENCH_DB, "detail_level": "summary"}),
            repeat=50,
            quick_repeat=5,
        ),
        both(
            "describe_table big",
            ("describe_table", {"table": "big"}),
            (
                "search_objects",
                {"object_type": "column", "schema": MYSQL_BENCH_DB, "table": "big", "detail_level": "full"},
            ),
            repeat=50,
            quick_repeat=5,
        ),
    ]
    return Suite(
        title="sql (MySQL/MariaDB): ours vs DBHub",
        servers=servers,
        workloads=workloads,
        notes=[
            f"data: {url}: {N_TABLES} tables ({N_TABLES - 1} x {SMALL_ROWS} rows + big, 10,000 rows)",
            "DBHub: list_tables = search_objects(table, summary); "
            "describe_table = search_objects(column, full)",
            f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}",
        ],
    )


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "sql benchmark")
    parser.add_argument("--engine", choices=("sqlite", "mysql"), default="sqlite", help="which database")
    parser.add_argument(
        "--mysql-url",
        default=os.environ.get("MCP_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306"),
        help="an account that may create the mcp_sql_bench database",
    )
    parser.add_argument(
        "--ours-cmd", default=venv_script("mcp-sql"), help="command for our server, without the URL"
    )
    parser.add_argument("--slow-n", type=int, default=4_000_000, help="rows the slow recursive CTE counts to")
    parser.add_argument(
        "--client",
        choices=("raw", "sdk", "both"),
        default="both",
        help="raw: the harness's JSON-RPC client; sdk: the SDK ClientSession (linear reader); both",
    )
    parser.add_argument(
        "--before-cmd",
        help="SDK client only: also run this older build of ours (e.g. bench/.work/before/.venv/bin/mcp-sql)",
    )
    args = parser.parse_args()
    if args.engine == "mysql":
        result = asyncio.run(run_suite(build_mysql(args), options_from(args)))
        print(format_report(result))
        return
    if args.client in ("raw", "both"):
        suite = build(args)
        result = asyncio.run(run_suite(suite, options_from(args)))
        print(format_report(result))
        if args.json:
            import json

            args.json.write_text(json.dumps(result_to_json(result), indent=2, default=str))
    if args.client in ("sdk", "both"):
        root = BENCH_DIR / ".work" / "sql"
        databases = {
            "big": make_database(root, 10_000 if args.quick else 100_000),
            "catalog": make_catalog_database(root),
        }
        servers = sdk_servers(args, databases)
        calls = [c for c in sdk_calls() if not args.filter or args.filter in c.name]
        times = asyncio.run(run_sdk_calls(servers, calls, quick=args.quick, repeat=args.repeat))
        print()
        print(sdk_report(servers["big"], times))
        for spec in servers["big"]:
            print(f"  {spec.name}: {' '.join(spec.argv)}")
        print(f"  catalog database: {databases['catalog']} (200 tables x {SMALL_ROWS} rows, no ANALYZE)")
        print(f"  machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}")


if __name__ == "__main__":
    main()
