"""Benchmark: mcp-sql (ours) vs the archived reference mcp-server-sqlite, same run, on one SQLite file.

    bash bench/anchors.sh                               # once: installs the reference server
    uv run --all-packages python bench/sql.py           # full run
    uv run --all-packages python bench/sql.py --quick   # smoke check (10,000-row big table)

Data (`bench/.work/sql/bench-100000.db`, generated once in ~1 s, 16 MB): 199 small tables `t000`..`t198` (5
columns, 2 indexes, a foreign key to the previous table, 20 rows each) and `big`: 100,000 rows of
mixed types (integer, real, text, ISO date, boolean, NULLs, small blobs), indexed, with a foreign key.

Servers: "ours" runs with `--max-rows 10000` so a 10,000-row SELECT comes back whole (like for like);
"ours-500" is ours with its default row limit (500 rows per page). The reference returns every row as
`str(list_of_dicts)`; it accepts only statements starting with SELECT, hence the slow query's form.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: import the harness beside it

from harness import (
    BENCH_DIR,
    Reply,
    ServerSpec,
    Suite,
    Workload,
    anchor_path,
    arg_parser,
    run_cli,
    tool,
    venv_script,
)

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


def all_or_page(total: int) -> Callable[[Reply], str | None]:
    """Ours: all `total` rows, or a truncated first page of its row limit (10,000 or 500) that names
    the next offset. The reference: all rows, counted in its str(list of dicts)."""

    def check(reply: Reply) -> str | None:
        res = reply.result or {}
        sc = res.get("structuredContent")
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
        ServerSpec("ours", [*ours, "--max-rows", "10000"], label=f"{args.ours_cmd} --max-rows 10000"),
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
            "ours sends rows twice (a text table + structuredContent); the reference str(list of dicts)",
            "SELECT *: ours returns one page (10,000 / 500 rows, truncated, next_offset), the reference all",
            "bytecode cache: on for every server (harness.server_environment)",
            f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}",
        ],
    )


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "sql benchmark")
    parser.add_argument(
        "--ours-cmd", default=venv_script("mcp-sql"), help="command for our server, without the URL"
    )
    parser.add_argument("--slow-n", type=int, default=4_000_000, help="rows the slow recursive CTE counts to")
    run_cli(build, parser)


if __name__ == "__main__":
    main()
