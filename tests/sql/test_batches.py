"""execute: a batch is one transaction its statements cannot end or split, and every error about
its outcome is true. Outcomes are checked against the database through a separate connection."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest
from mcp_batteries.errors import BatteriesError, InvalidInput, UpstreamError
from mcp_sql import postgres_write, sqlite_engine
from mcp_sql.batch_guard import check_batch
from mcp_sql.database import Database, open_database

from .conftest import SEED_ROWS, PgAdmin

pytestmark = pytest.mark.anyio

INSERT_A = "INSERT INTO t VALUES (10, 'A')"
MISSING = "INSERT INTO no_such_table VALUES (1)"

# Transaction control in every spelling that matters; each must be refused before anything runs.
CONTROL = [
    "commit",
    "COMMIT",
    "/* done */ Commit -- really",
    "-- a comment line\nCOMMIT;",
    "END",
    "end transaction",
    "ROLLBACK",
    "rollback to savepoint s",
    "SAVEPOINT s",
    "release s",
    "RELEASE SAVEPOINT s",
    "BEGIN",
    "begin immediate",
    "START TRANSACTION",
    "abort",
    "PREPARE TRANSACTION 'x'",
    "COMMIT PREPARED 'x'",
    "ROLLBACK PREPARED 'x'",
    "DELETE FROM t WHERE id = 3; COMMIT",
    "UPDATE t SET name = 'x'; /* hidden */ rollback",
]
PG_ONLY = [
    "DO $$ BEGIN COMMIT; END $$",
    "do $body$ begin insert into t values (11, 'b'); rollback; end $body$",
    "DO 'BEGIN COMMIT; END'",
    "DO LANGUAGE plpgsql $$ BEGIN COMMIT AND CHAIN; END $$",
]


def sqlite_db_rows(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT id, name FROM t ORDER BY id").fetchall()
    finally:
        conn.close()


# -- the guard, unit by unit ---------------------------------------------------------------------
@pytest.mark.parametrize("sql", CONTROL)
@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_transaction_control_is_refused_in_every_spelling(sql: str, dialect: Any) -> None:
    with pytest.raises(InvalidInput, match=r"transaction control|own list item") as info:
        check_batch([INSERT_A, sql], dialect, transaction=True)
    assert "statement 2" in str(info.value)


@pytest.mark.parametrize("sql", PG_ONLY)
def test_commit_inside_a_do_block_is_refused(sql: str) -> None:
    with pytest.raises(InvalidInput, match="inside a DO block"):
        check_batch([sql], "postgres", transaction=True)


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET name = 'x'; DELETE FROM t; END", "sqlite"),
        ("UPDATE t SET name = CASE WHEN id = 1 THEN 'a' ELSE 'b' END", "sqlite"),
        ("INSERT INTO t VALUES (1, 'commit'), (2, \"rollback\")", "sqlite"),
        ('CREATE TABLE "commit" (a int)', "postgres"),
        ("DO $$ BEGIN RAISE NOTICE 'commit later'; -- commit\n END $$", "postgres"),
        ("CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END", "postgres"),
        ("CREATE PROCEDURE p() LANGUAGE plpgsql AS $$ BEGIN COMMIT; END $$", "postgres"),
    ],
)
def test_statements_that_only_mention_transaction_words_pass(sql: str, dialect: Any) -> None:
    check_batch([sql], dialect, transaction=True)


def test_autocommit_statement_refuses_transaction_control_with_its_own_reason() -> None:
    with pytest.raises(InvalidInput, match="transaction=false"):
        check_batch(["commit"], "sqlite", transaction=False)


# -- SQLite through the engine -------------------------------------------------------------------
async def test_sqlite_issue_repro_commit_inside_batch_is_refused_and_nothing_runs(
    sqlite_rw: Database, sqlite_file: Path
) -> None:
    with pytest.raises(InvalidInput, match="statement 2 is transaction control"):
        await sqlite_rw.execute([INSERT_A, "commit", MISSING], None, transaction=True)
    assert sqlite_db_rows(sqlite_file) == SEED_ROWS
    with pytest.raises(InvalidInput, match="transaction control"):
        await sqlite_rw.execute(
            ["INSERT INTO t VALUES (11, 'B')", "commit", INSERT_A], None, transaction=True
        )
    assert sqlite_db_rows(sqlite_file) == SEED_ROWS


@pytest.mark.parametrize("transaction", [True, False])
async def test_sqlite_lone_commit_gets_a_specific_error(sqlite_rw: Database, transaction: bool) -> None:
    with pytest.raises(InvalidInput, match="transaction control"):
        await sqlite_rw.execute(["commit"], None, transaction=transaction)
    # The writer is not left inside a transaction: a later batch commits normally.
    await sqlite_rw.execute([INSERT_A], None, transaction=True)


async def test_sqlite_failed_batch_says_it_rolled_back_and_did(
    sqlite_rw: Database, sqlite_file: Path
) -> None:
    with pytest.raises(UpstreamError, match="statement 3 of 3 failed, so the transaction was rolled back"):
        await sqlite_rw.execute([INSERT_A, "DELETE FROM t WHERE id = 1", MISSING], None, transaction=True)
    assert sqlite_db_rows(sqlite_file) == SEED_ROWS


async def test_sqlite_authorizer_refuses_transaction_control_when_the_guard_is_bypassed(
    sqlite_rw: Database, sqlite_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_engine, "check_batch", lambda *a, **k: None)
    with pytest.raises(BatteriesError, match="rolled back") as info:
        await sqlite_rw.execute([INSERT_A, "COMMIT", MISSING], None, transaction=True)
    assert "transaction control is refused" in str(info.value)
    assert sqlite_db_rows(sqlite_file) == SEED_ROWS


async def test_sqlite_deferred_constraint_failing_at_commit_is_reported_as_such(tmp_path: Path) -> None:
    path = tmp_path / "fk.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
        "CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER"
        " REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);"
    )
    conn.close()
    db = await open_database("main", str(path), allow_write=True, statement_timeout_s=2, max_rows=10)
    try:
        with pytest.raises(UpstreamError, match="COMMIT failed and the transaction was rolled back"):
            await db.execute(
                ["INSERT INTO parent VALUES (1)", "INSERT INTO child VALUES (1, 99)"], None, transaction=True
            )
        check = sqlite3.connect(path)
        assert check.execute("SELECT count(*) FROM parent").fetchone() == (0,)
        check.close()
        # The connection is usable afterwards.
        await db.execute(["INSERT INTO parent VALUES (2)"], None, transaction=True)
    finally:
        await db.close()


@pytest.mark.parametrize("call", ["query", "execute"])
async def test_sqlite_integer_outside_64_bits_is_a_clear_error(sqlite_rw: Database, call: str) -> None:
    with pytest.raises(InvalidInput, match="64-bit integer range") as info:
        if call == "query":
            await sqlite_rw.query("SELECT ?", [10**30], limit=1)
        else:
            await sqlite_rw.execute(["INSERT INTO t VALUES (?, 'x')"], [-(10**30)], transaction=True)
    assert "string" in str(info.value)


# -- PostgreSQL through the engine ---------------------------------------------------------------
async def test_postgres_issue_repro_commit_inside_batch_is_refused_and_nothing_runs(
    pg_rw: Database, pg_admin: PgAdmin
) -> None:
    with pytest.raises(InvalidInput, match="statement 2 is transaction control"):
        await pg_rw.execute([INSERT_A, "commit", MISSING], None, transaction=True)
    assert await pg_admin.rows() == SEED_ROWS


@pytest.mark.parametrize("sql", [*CONTROL, *PG_ONLY])
async def test_postgres_refuses_every_spelling_before_anything_runs(
    pg_rw: Database, pg_admin: PgAdmin, sql: str
) -> None:
    with pytest.raises(InvalidInput):
        await pg_rw.execute([INSERT_A, sql, MISSING], None, transaction=True)
    assert await pg_admin.rows() == SEED_ROWS


@pytest.mark.parametrize("transaction", [True, False])
async def test_postgres_lone_commit_gets_a_specific_error(pg_rw: Database, transaction: bool) -> None:
    with pytest.raises(InvalidInput, match="transaction control"):
        await pg_rw.execute(["commit"], None, transaction=transaction)


async def test_postgres_procedure_that_commits_inside_a_batch_is_rolled_back(
    pg_rw: Database, pg_admin: PgAdmin
) -> None:
    """The second wall: PostgreSQL refuses COMMIT in a procedure called inside a transaction block."""
    await pg_admin.exec("CREATE PROCEDURE sneaky() LANGUAGE plpgsql AS $$ BEGIN COMMIT; END $$")
    with pytest.raises(InvalidInput, match="statement 2 of 2 failed, so the transaction was rolled back"):
        await pg_rw.execute([INSERT_A, "CALL sneaky()"], None, transaction=True)
    assert await pg_admin.rows() == SEED_ROWS


async def test_postgres_commit_slipping_past_the_guard_is_reported_truthfully(
    pg_rw: Database, pg_admin: PgAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the guard bypassed, the engine notices the ended transaction and says what may be kept."""
    monkeypatch.setattr(postgres_write, "check_batch", lambda *a, **k: None)
    with pytest.raises(UpstreamError, match="ended the batch's transaction") as info:
        await pg_rw.execute([INSERT_A, "COMMIT", MISSING], None, transaction=True)
    assert "may already be committed" in str(info.value)
    assert (10, "A") in await pg_admin.rows()  # the message did not claim otherwise


async def test_postgres_failed_batch_says_it_rolled_back_and_did(pg_rw: Database, pg_admin: PgAdmin) -> None:
    with pytest.raises(UpstreamError, match="statement 3 of 3 failed, so the transaction was rolled back"):
        await pg_rw.execute([INSERT_A, "DELETE FROM t WHERE id = 1", MISSING], None, transaction=True)
    assert await pg_admin.rows() == SEED_ROWS


async def test_postgres_deferred_constraint_failing_at_commit_is_reported_as_such(
    pg_rw: Database, pg_admin: PgAdmin
) -> None:
    await pg_admin.exec(
        "CREATE TABLE parent (id int PRIMARY KEY);"
        "CREATE TABLE child (id int PRIMARY KEY, parent_id int"
        " REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)"
    )
    with pytest.raises(UpstreamError, match="COMMIT failed and the transaction was rolled back"):
        await pg_rw.execute(
            ["INSERT INTO parent VALUES (1)", "INSERT INTO child VALUES (1, 99)"], None, transaction=True
        )
    assert await pg_admin.value("SELECT count(*) FROM parent") == 0


async def test_postgres_statement_that_needs_autocommit_says_so(pg_rw: Database) -> None:
    with pytest.raises(InvalidInput, match="transaction=false"):
        await pg_rw.execute(["VACUUM t"], None, transaction=True)


@pytest.mark.parametrize("sql", ["SELECT $1::int8", "SELECT $1::int4 + 1", "SELECT $1::int2"])
async def test_postgres_integer_out_of_range_is_a_clear_error(pg_ro: Database, sql: str) -> None:
    with pytest.raises(InvalidInput, match=r"out of range|outside") as info:
        await pg_ro.query(sql, [10**30], limit=1)
    assert "$1" in str(info.value)


async def test_postgres_integer_out_of_range_in_execute_is_a_clear_error(
    pg_rw: Database, pg_admin: PgAdmin
) -> None:
    with pytest.raises(InvalidInput, match=r"\$1"):
        await pg_rw.execute(["INSERT INTO t VALUES ($1, 'x')"], [10**30], transaction=True)
    assert await pg_admin.rows() == SEED_ROWS


async def test_postgres_big_integer_for_numeric_or_text_is_kept_exactly(pg_ro: Database) -> None:
    numeric = await pg_ro.query("SELECT $1::numeric", [10**30], limit=1)
    assert numeric.rows[0][0] == str(10**30)


# -- a backend terminated during a call ------------------------------------------------------------
@pytest.fixture
async def admin_conn(pg_admin: PgAdmin) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(pg_admin.env.dsn, timeout=5)
    try:
        yield conn
    finally:
        await conn.close()


async def _terminate_when_running(admin: asyncpg.Connection, needle: str) -> None:
    """Terminate the backend that runs a statement containing `needle`, once it runs."""
    with anyio.fail_after(10):
        while True:
            killed = await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE $1",
                f"%{needle}%",
            )
            if killed:
                return
            await anyio.sleep(0.02)


async def _run_and_terminate(
    admin: asyncpg.Connection, needle: str, call: Callable[[], Any]
) -> BaseException:
    caught: list[BaseException] = []

    async def run() -> None:
        try:
            await call()
        except BaseException as exc:
            caught.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await _terminate_when_running(admin, needle)
    assert caught, "the call survived its backend being terminated"
    return caught[0]


async def test_postgres_terminated_backend_during_query_gets_a_specific_error(
    pg_ro: Database, admin_conn: asyncpg.Connection
) -> None:
    error = await _run_and_terminate(
        admin_conn, "pg_sleep(5.01)", lambda: pg_ro.query("SELECT pg_sleep(5.01)", None, limit=1)
    )
    assert isinstance(error, UpstreamError), repr(error)
    assert "connection was closed by the server" in str(error) and "Retry" in str(error)
    assert "released back to the pool" not in str(error)
    # The pool recovers: the next calls work.
    for _ in range(3):
        assert (await pg_ro.query("SELECT 1", None, limit=1)).rows[0][0] == 1


async def test_postgres_terminated_backend_during_a_batch_keeps_nothing_and_says_so(
    pg_rw: Database, pg_admin: PgAdmin, admin_conn: asyncpg.Connection
) -> None:
    error = await _run_and_terminate(
        admin_conn,
        "pg_sleep(5.02)",
        lambda: pg_rw.execute([INSERT_A, "SELECT pg_sleep(5.02)"], None, transaction=True),
    )
    assert isinstance(error, UpstreamError), repr(error)
    assert "statement 2 of 2 failed" in str(error) and "none of the statements was kept" in str(error)
    assert await pg_admin.rows() == SEED_ROWS
    result = await pg_rw.execute(["INSERT INTO t VALUES (12, 'after')"], None, transaction=True)
    assert result.committed
