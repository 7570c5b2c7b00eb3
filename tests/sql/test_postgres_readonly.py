"""PostgreSQL read-only mode: the bypasses a READ ONLY transaction alone does not stop.

Each attempt must be refused clearly, and afterwards nothing may have changed: table t keeps its
rows, no server file appears, settings are untouched, no extra connection was opened.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import asyncpg
import pytest
from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput
from mcp_sql.database import Database

from .conftest import as_lists

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

SEED_ROWS = [(1, "alice"), (2, "bob"), (3, "carol")]
OUT = f"/tmp/mcp_sql_escape_{uuid.uuid4().hex[:8]}"

BYPASSES: list[tuple[str, type[BatteriesError]]] = [
    ("COMMIT; DROP TABLE t", InvalidInput),
    ("SELECT 1; DROP TABLE t", InvalidInput),
    ("ROLLBACK; DELETE FROM t", InvalidInput),
    ("DROP TABLE t", AccessDenied),
    ("DELETE FROM t", AccessDenied),
    ("TRUNCATE t", AccessDenied),
    ("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", AccessDenied),
    ("WITH x AS (UPDATE t SET name = 'x' RETURNING *) SELECT count(*) FROM x", AccessDenied),
    ("SELECT * INTO t_copy FROM t", AccessDenied),
    ("CREATE TEMP TABLE tmp AS SELECT 1", AccessDenied),
    ("SELECT * FROM t FOR UPDATE", AccessDenied),
    ("SELECT * FROM t FOR SHARE", AccessDenied),
    ("SELECT pg_read_file('/etc/passwd')", AccessDenied),
    ("SELECT pg_catalog.pg_read_file('/etc/passwd')", AccessDenied),
    ("SELECT \"pg_read_file\"('/etc/passwd')", AccessDenied),
    ("SELECT pg_read_binary_file('/etc/passwd')", AccessDenied),
    ("SELECT * FROM pg_ls_dir('/')", AccessDenied),
    ("SELECT pg_stat_file('/etc/passwd')", AccessDenied),
    ("SELECT lo_import('/etc/passwd')", AccessDenied),
    (f"SELECT lo_export(1, '{OUT}')", AccessDenied),
    ("SELECT lo_create(0)", AccessDenied),
    (f"COPY t TO '{OUT}'", AccessDenied),
    (f"COPY t TO PROGRAM 'touch {OUT}'", AccessDenied),
    ("COPY t FROM PROGRAM 'echo 9,x'", AccessDenied),
    ("SELECT * FROM dblink('dbname=postgres', 'DROP TABLE t') AS x(a text)", AccessDenied),
    ("SELECT dblink_exec('dbname=postgres', 'DROP TABLE t')", AccessDenied),
    ("SELECT dblink_connect('c', 'dbname=postgres')", AccessDenied),
    ("SELECT set_config('default_transaction_read_only', 'off', false)", AccessDenied),
    ("SELECT set_config('role', 'none', true)", AccessDenied),
    ("SELECT set_config('session_authorization', 'postgres', true)", AccessDenied),
    ("SELECT set_config('statement_timeout', '0', false)", AccessDenied),
    ("SET default_transaction_read_only = off", AccessDenied),
    ("SET ROLE NONE", AccessDenied),
    ("RESET ROLE", AccessDenied),
    ("RESET ALL", AccessDenied),
    ("SET SESSION AUTHORIZATION postgres", AccessDenied),
    ("SELECT pg_terminate_backend(pg_backend_pid())", AccessDenied),
    ("SELECT pg_cancel_backend(1)", AccessDenied),
    ("SELECT pg_reload_conf()", AccessDenied),
    ("SELECT pg_rotate_logfile()", AccessDenied),
    ("SELECT pg_create_physical_replication_slot('mcp_slot')", AccessDenied),
    ("SELECT pg_create_logical_replication_slot('mcp_slot', 'test_decoding')", AccessDenied),
    ("SELECT pg_drop_replication_slot('mcp_slot')", AccessDenied),
    ("SELECT pg_advisory_lock(42)", AccessDenied),
    ("SELECT pg_try_advisory_lock(42)", AccessDenied),
    ("ANALYZE t", AccessDenied),
    ("VACUUM t", AccessDenied),
    ("REINDEX TABLE t", AccessDenied),
    ("CLUSTER t", AccessDenied),
    ("EXPLAIN ANALYZE DELETE FROM t", AccessDenied),
    ("EXPLAIN (ANALYZE) DELETE FROM t", AccessDenied),
    ("EXPLAIN (FORMAT TEXT, ANALYZE true) SELECT * FROM t", AccessDenied),
    ("EXPLAIN DELETE FROM t", AccessDenied),
    ("SELECT query_to_xml('select pg_read_file(''/etc/passwd'')', true, false, '')", AccessDenied),
    ("SELECT query_to_xml_and_xmlschema('select 1', true, false, '')", AccessDenied),
    ("SELECT cursor_to_xml('c', 1, true, false, '')", AccessDenied),
    ("SELECT * FROM ts_stat('select to_tsvector(name) from t')", AccessDenied),
    ("DO $$ BEGIN DELETE FROM t; END $$", AccessDenied),
    ("CALL p()", AccessDenied),
    ("SELECT nextval('s')", AccessDenied),
    ("SELECT setval('s', 100)", AccessDenied),
    ("LISTEN chan", AccessDenied),
    ("NOTIFY chan", AccessDenied),
    ("SELECT pg_notify('chan', 'x')", AccessDenied),
    ("PREPARE p AS DELETE FROM t", AccessDenied),
    ("EXECUTE p", AccessDenied),
    ("DEALLOCATE ALL", AccessDenied),
    ("LOCK TABLE t", AccessDenied),
    ("ALTER SYSTEM SET work_mem = '1GB'", AccessDenied),
    ("GRANT ALL ON t TO PUBLIC", AccessDenied),
    ("CREATE EXTENSION IF NOT EXISTS dblink", AccessDenied),
    ("BEGIN", AccessDenied),
    ("COMMIT", AccessDenied),
    ("DECLARE c CURSOR WITH HOLD FOR SELECT 1", AccessDenied),
    ("SELECT 1 -- comment\r, pg_read_file('/etc/passwd')", AccessDenied),
    ("SELECT (SELECT pg_read_file('/etc/passwd'))", AccessDenied),
    ("SELECT * FROM ROWS FROM (pg_ls_dir('/')) AS x", AccessDenied),
    ("SELECT crosstab('select 1')", AccessDenied),
]


async def _connections(admin: Any) -> int:
    # Only sessions a bypass could open (dblink targets the postgres database): counting every
    # backend on the cluster would fail whenever anything else uses the same server.
    return int(
        await admin.value(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' AND datname = 'postgres'"
        )
    )


@pytest.mark.parametrize(
    ("sql", "expected"), BYPASSES, ids=[b[0].replace(OUT, "<out>")[:60] for b in BYPASSES]
)
async def test_bypass_is_refused_and_nothing_changes(
    pg_ro: Database, pg_admin: Any, sql: str, expected: type[BatteriesError]
) -> None:
    await pg_admin.exec("CREATE EXTENSION IF NOT EXISTS dblink")
    connections_before = await _connections(pg_admin)
    with pytest.raises(expected) as info:
        await pg_ro.query(sql, None, limit=10)
    message = str(info.value)
    assert len(message) > 30  # says what was refused and what is allowed
    assert await pg_admin.rows() == SEED_ROWS
    assert await pg_admin.value("SELECT count(*) FROM pg_class WHERE relname IN ('t_copy', 'tmp')") == 0
    assert await pg_admin.value("SELECT last_value FROM s") == 1
    assert await pg_admin.value("SELECT count(*) FROM pg_replication_slots") == 0
    assert await pg_admin.value("SELECT count(*) FROM pg_largeobject_metadata") == 0
    # pg_locks is cluster-wide: count only this test database's locks (others may share the server).
    assert (
        await pg_admin.value(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        == 0
    )
    assert await _connections(pg_admin) <= connections_before
    assert not await anyio.Path(OUT).exists()
    # The pool's sessions keep their settings: reads are still in a read-only transaction.
    check = await pg_ro.query("SELECT current_setting('transaction_read_only')", None, limit=1)
    assert as_lists(check.rows) == [["on"]]


async def test_multi_statement_is_refused_by_postgres_even_without_the_parser(
    pg_ro: Any, pg_admin: Any
) -> None:
    """The extended protocol is a wall of its own: asyncpg's prepare refuses two statements."""
    async with pg_ro._pool.read_transaction() as conn:
        with pytest.raises(asyncpg.PostgresSyntaxError, match="multiple commands"):
            await conn.prepare("COMMIT; DROP TABLE t")
    assert await pg_admin.rows() == SEED_ROWS


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT lo_import('/etc/passwd')",
        f"COPY t TO '{OUT}'",
        "SELECT pg_terminate_backend(pg_backend_pid())",
        "SELECT pg_reload_conf()",
        "CREATE TABLE escaped (a int)",
        "DELETE FROM t",
        "SELECT nextval('s')",
        "SELECT * FROM t FOR UPDATE",
        "SELECT * FROM dblink('dbname=postgres', 'select 1') AS x(a int)",
    ],
    ids=lambda sql: sql.replace(OUT, "<out>"),  # parallel workers must collect the same ids
)
async def test_engine_walls_hold_when_the_parser_is_bypassed(pg_ro: Any, pg_admin: Any, sql: str) -> None:
    """Run straight inside the read transaction (no guard): the role and READ ONLY still refuse."""
    await pg_admin.exec("CREATE EXTENSION IF NOT EXISTS dblink")
    assert pg_ro.reader_role is not None
    async with pg_ro._pool.read_transaction() as conn:
        with pytest.raises(asyncpg.PostgresError) as info:
            await conn.execute(sql)
    assert info.value.sqlstate in {"42501", "25006", "2F003", "08001", "2F002"}, info.value
    assert await pg_admin.rows() == SEED_ROWS
    assert await pg_admin.value("SELECT last_value FROM s") == 1
    assert not await anyio.Path(OUT).exists()


async def test_reads_run_as_the_reader_role_in_a_read_only_transaction(pg_ro: Any, pg_env: Any) -> None:
    result = await pg_ro.query(
        "SELECT current_user, current_setting('transaction_read_only'), current_setting('statement_timeout')",
        None,
        limit=1,
    )
    assert as_lists(result.rows) == [[pg_env.reader_role, "on", "5s"]]
    assert any("reads run as role" in note for note in pg_ro.safety_notes)


async def test_existing_reader_role_with_dangerous_membership_is_not_used(
    pg_seeded: Any, pg_admin: Any
) -> None:
    from mcp_sql.database import open_database

    role = f"mcp_sql_bad_reader_{uuid.uuid4().hex[:8]}"
    await pg_admin.exec(f'CREATE ROLE "{role}" NOLOGIN; GRANT pg_read_server_files TO "{role}"')
    try:
        db = await open_database(
            "x", pg_seeded.dsn, allow_write=False, statement_timeout_s=5, max_rows=10, pg_reader_role=role
        )
        try:
            assert db.reader_role is None  # type: ignore[attr-defined]
            assert any("pg_read_server_files" in n for n in db.safety_notes)
            # The other walls still apply.
            with pytest.raises(AccessDenied):
                await db.query("SELECT pg_read_file('/etc/passwd')", None, limit=1)
        finally:
            await db.close()
    finally:
        await pg_admin.exec(f'DROP ROLE "{role}"')


async def test_execute_is_disabled_in_read_only_mode(pg_ro: Database, pg_admin: Any) -> None:
    with pytest.raises(AccessDenied, match="--allow-write"):
        await pg_ro.execute(["DELETE FROM t"], None, transaction=False)
    with pytest.raises(AccessDenied, match="--allow-write"):
        await pg_ro.explain("SELECT * FROM t", analyze=True)
    assert await pg_admin.rows() == SEED_ROWS


async def test_describe_table_with_injected_name_does_not_drop_anything(
    pg_ro: Database, pg_admin: Any
) -> None:
    from mcp_batteries.errors import NotFound

    for name in ["x'); DROP TABLE t; --", 't"; DROP TABLE t; --', "t; DROP TABLE t"]:
        with pytest.raises(NotFound):
            await pg_ro.describe_table(name)
        with pytest.raises(NotFound):
            await pg_ro.describe_table("t", schema=name)
        with pytest.raises(NotFound):
            await pg_ro.list_tables(name)
    assert await pg_admin.rows() == SEED_ROWS
