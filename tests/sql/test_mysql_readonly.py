"""MySQL/MariaDB read-only mode: every attempt is refused and afterwards nothing has changed.

The corpus is the MySQL classes below plus the corpora of the other engines (SQLite and
PostgreSQL), run as the administrative user (root: privileges do not help the walls) and as the
least-privilege user. After each attempt: table t keeps its rows, the sequence its value, no table,
routine, event, database or user appeared, no file was written, no named lock is held, global
settings are unchanged, and the pool's next call still runs in the read-only session with its
timeout. Then the engine walls are tried without the parser (straight on a pool connection).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from typing import Any

import anyio
import pytest
from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput
from mcp_sql.database import Database

from .conftest import MyAdmin, as_lists
from .test_postgres_readonly import BYPASSES as PG_BYPASSES
from .test_sqlite_readonly import BYPASSES as SQLITE_BYPASSES

pytestmark = pytest.mark.anyio

SEED_ROWS = [(1, "alice"), (2, "bob"), (3, "carol")]
OUT = f"/tmp/mcp_sql_my_escape_{uuid.uuid4().hex[:8]}"
EVIL = f"mcp_evil_{uuid.uuid4().hex[:6]}"

MYSQL_BYPASSES: list[str] = [
    # several statements in one call (multi-statements are off at the protocol level)
    "SELECT 1; DROP TABLE t",
    "COMMIT; DROP TABLE t",
    "SELECT 1;DELETE FROM t",
    "SELECT 1\n;\nDROP TABLE t",
    # session settings the walls depend on
    "SET SESSION tx_read_only = 0",
    "SET @@session.tx_read_only = 0",
    "SET @@tx_read_only = 0",
    "SET SESSION TRANSACTION READ WRITE",
    "SET TRANSACTION READ WRITE",
    "SET autocommit = 0",
    "SET SESSION max_statement_time = 0",
    "SET max_statement_time = 0",
    "SET max_execution_time = 0",
    "SET STATEMENT max_statement_time = 0 FOR SELECT 1",
    "SET NAMES gbk",
    "SET CHARACTER SET gbk",
    "SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
    "SET SESSION sql_mode = 'ANSI_QUOTES'",
    "SET @x = 1",
    "SET GLOBAL read_only = 0",
    "SET GLOBAL max_connections = 5",
    "SET @@GLOBAL.max_connections = 5",
    f"SET GLOBAL general_log_file = '{OUT}'",
    "SET GLOBAL general_log = 1",
    "SET ROLE NONE",
    "SET PASSWORD = PASSWORD('x')",
    # ending or splitting the read-only transaction
    "COMMIT",
    "ROLLBACK",
    "BEGIN",
    "START TRANSACTION",
    "START TRANSACTION READ WRITE",
    "SAVEPOINT a",
    "RELEASE SAVEPOINT a",
    "ROLLBACK TO SAVEPOINT a",
    "XA START 'x'",
    "XA END 'x'",
    "XA COMMIT 'x'",
    "XA RECOVER",
    "LOCK TABLES t WRITE",
    "LOCK TABLES t READ",
    "UNLOCK TABLES",
    "FLUSH TABLES WITH READ LOCK",
    # prepared statements and SQL from strings
    "PREPARE s1 FROM 'DELETE FROM t'",
    "PREPARE s1 FROM @sql",
    "EXECUTE s1",
    "DEALLOCATE PREPARE s1",
    "EXECUTE IMMEDIATE 'DELETE FROM t'",
    "EXECUTE IMMEDIATE 'DROP TABLE t'",
    # executable comments, hints and lexer disagreements
    "/*!50000 DROP TABLE t */",
    "/*! DELETE FROM t */",
    "SELECT 1 /*!; DROP TABLE t */",
    "/*M! DROP TABLE t */",
    "SELECT /*! SLEEP(5), */ 1",
    "SELECT 1 /*M!100000 , LOAD_FILE('/etc/passwd') */",
    "SELECT /*+ MAX_EXECUTION_TIME(100000000) */ * FROM t",
    "SELECT 1 --1, LOAD_FILE('/etc/passwd')",
    "SELECT 1 # c\n, LOAD_FILE('/etc/passwd')",
    "SELECT `LOAD_FILE`('/etc/passwd')",
    "SELECT load_file ('/etc/passwd')",
    "SELECT LOAD_FILE(0x2f6574632f706173737764)",
    "SELECT 1 /* unterminated",
    "SELECT 'unterminated",
    # server files
    f"SELECT * FROM t INTO OUTFILE '{OUT}'",
    f"SELECT * FROM t INTO DUMPFILE '{OUT}'",
    f"SELECT 1 INTO OUTFILE '{OUT}'",
    f"SELECT * INTO OUTFILE '{OUT}' FROM t",
    f"WITH x AS (SELECT 1) SELECT * FROM x INTO OUTFILE '{OUT}'",
    f"TABLE t INTO OUTFILE '{OUT}'",
    "SELECT name INTO @v FROM t LIMIT 1",
    "SELECT LOAD_FILE('/etc/passwd')",
    "LOAD DATA INFILE '/etc/hostname' INTO TABLE t",
    "LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE t",
    "LOAD XML INFILE '/etc/hostname' INTO TABLE t",
    # handlers, locks and waiting on purpose
    "HANDLER t OPEN",
    "HANDLER t READ FIRST",
    "SELECT SLEEP(100)",
    "SELECT BENCHMARK(100000000, MD5('x'))",
    "DO SLEEP(100)",
    "SELECT GET_LOCK('mcp_lock', 0)",
    "DO GET_LOCK('mcp_lock', 0)",
    "SELECT RELEASE_ALL_LOCKS()",
    "SELECT MASTER_POS_WAIT('x', 1)",
    "SELECT MASTER_GTID_WAIT('0-1-1', 100)",
    # administration
    "DO 1",
    "FLUSH TABLES",
    "FLUSH PRIVILEGES",
    "FLUSH LOGS",
    "KILL 1",
    "KILL QUERY 1",
    "KILL CONNECTION CONNECTION_ID()",
    "SHUTDOWN",
    "RESET QUERY CACHE",
    "PURGE BINARY LOGS BEFORE NOW()",
    "RESET MASTER",
    "INSTALL SONAME 'ha_blackhole'",
    "UNINSTALL SONAME 'ha_blackhole'",
    "CHANGE MASTER TO MASTER_HOST='x'",
    "BINLOG 'x'",
    "CACHE INDEX t IN hot",
    "LOAD INDEX INTO CACHE t",
    "USE mysql",
    "ANALYZE TABLE t",
    "OPTIMIZE TABLE t",
    "REPAIR TABLE t",
    "CHECK TABLE t",
    # writes, also hidden in CTEs, RETURNING and locks
    "WITH x AS (SELECT 1) INSERT INTO t SELECT 4, 'x'",
    "INSERT INTO t SELECT 4, 'dave'",
    "INSERT INTO t VALUES (4, 'dave')",
    "REPLACE INTO t VALUES (1, 'mallory')",
    "UPDATE t SET name = 'x'",
    "DELETE FROM t",
    "DELETE t FROM t JOIN t AS u",
    "INSERT INTO t VALUES (5, 'e') RETURNING id",
    "DELETE FROM t RETURNING *",
    "SELECT * FROM t FOR UPDATE",
    "SELECT * FROM t LOCK IN SHARE MODE",
    "SELECT * FROM t FOR SHARE",
    "SELECT * FROM t FOR UPDATE NOWAIT",
    "SELECT * FROM (SELECT * FROM t FOR UPDATE) x",
    "SELECT @a := 1",
    "SELECT 1 INTO @a",
    # routines with side effects
    "CALL p()",
    "SELECT f()",
    "SELECT f() FROM t",
    "SELECT (SELECT f())",
    "SELECT * FROM t WHERE f() = 1",
    "CREATE FUNCTION g() RETURNS INT RETURN 1",
    "CREATE PROCEDURE q() SELECT 1",
    "DROP PROCEDURE p",
    "CREATE EVENT e ON SCHEDULE AT NOW() DO DELETE FROM t",
    "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.name = 'x'",
    # sequences (MariaDB)
    "SELECT NEXTVAL(s)",
    "SELECT NEXT VALUE FOR s",
    "SELECT SETVAL(s, 100)",
    "SELECT LASTVAL(s)",
    "ALTER SEQUENCE s RESTART 100",
    "DROP SEQUENCE s",
    "CREATE SEQUENCE s2",
    # DDL and accounts
    "CREATE TEMPORARY TABLE tt (a INT)",
    "CREATE TEMPORARY TABLE tt SELECT * FROM t",
    "CREATE TABLE u (a INT)",
    "CREATE TABLE u AS SELECT * FROM t",
    "DROP TABLE t",
    "ALTER TABLE t ADD COLUMN c INT",
    "TRUNCATE t",
    "RENAME TABLE t TO t2",
    "CREATE INDEX ix ON t (name)",
    "CREATE VIEW v AS SELECT 1",
    f"CREATE DATABASE {EVIL}",
    f"CREATE USER {EVIL}",
    f"GRANT ALL ON *.* TO {EVIL}",
    f"CREATE ROLE {EVIL}",
    "ALTER USER CURRENT_USER() IDENTIFIED BY 'x'",
    # EXPLAIN that runs the statement
    "EXPLAIN DELETE FROM t",
    "EXPLAIN ANALYZE SELECT * FROM t",
    "ANALYZE SELECT * FROM t",
    "ANALYZE DELETE FROM t",
    "EXPLAIN FORMAT=JSON DELETE FROM t",
    "DESCRIBE DELETE FROM t",
    "EXPLAIN EXTENDED UPDATE t SET name = 'x'",
]
# Statements the server reads differently from the way they look: refused or failing is fine, and
# running is fine only for these, where what MySQL runs is harmless (the state check still applies).
LEXER_PROBES: dict[str, str] = {
    "SELECT 'a\\' , LOAD_FILE('/etc/passwd') -- '": "one string, then a syntax error",
    "SELECT 1 -- comment\r, pg_read_file('/etc/passwd')": "MySQL comments run to \\n: it runs SELECT 1",
}
FOREIGN_BYPASSES = [sql for sql, _ in PG_BYPASSES] + [sql for sql, _, _ in SQLITE_BYPASSES]
CORPUS = list(dict.fromkeys(MYSQL_BYPASSES + FOREIGN_BYPASSES + list(LEXER_PROBES)))


async def _state(admin: MyAdmin) -> dict[str, Any]:
    """Everything a bypass could change, read from outside the code under test."""
    db = admin.env.database
    return {
        "rows": await admin.rows(),
        "objects": await admin.rows(
            "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES "
            f"WHERE TABLE_SCHEMA = '{db}' ORDER BY 1"
        ),
        "routines": await admin.rows(
            f"SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = '{db}' ORDER BY 1"
        ),
        "events": await admin.value(
            f"SELECT COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = '{db}'"
        ),
        "triggers": await admin.value(
            f"SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{db}'"
        ),
        "sequence": await admin.rows("SELECT next_not_cached_value FROM s"),
        "evil": await admin.value(
            f"SELECT (SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{EVIL}') + "
            f"(SELECT COUNT(*) FROM mysql.user WHERE User = '{EVIL}')"
        ),
        "lock": await admin.value("SELECT IS_USED_LOCK('mcp_lock')"),
        "globals": await admin.rows(
            "SELECT @@GLOBAL.max_connections, @@GLOBAL.read_only, @@GLOBAL.general_log, "
            "@@GLOBAL.general_log_file, @@GLOBAL.max_statement_time, @@GLOBAL.sql_mode"
        ),
        "file": await anyio.Path(OUT).exists(),
    }


async def _walls_still_up(db: Database) -> None:
    var = db._pool._read_only_var  # type: ignore[attr-defined]
    check = await db.query(
        f"SELECT @@SESSION.{var}, @@in_transaction, @@max_statement_time, @@character_set_client, "
        "@@sql_mode LIKE '%BACKSLASH%', @x, IS_USED_LOCK('mcp_lock') IS NULL",
        None,
        limit=1,
    )
    assert as_lists(check.rows) == [[1, 1, 5.0, "utf8mb4", 0, None, 1]]


def stable_id(sql: str) -> str:
    """Test ids without this run's random names (parallel workers must collect the same ids)."""
    return re.sub(r"/tmp/mcp_sql_\w*escape_[0-9a-f]+", "<out>", sql).replace(EVIL, "<evil>")[:60]


@pytest.mark.parametrize("sql", CORPUS, ids=[stable_id(s) for s in CORPUS])
@pytest.mark.parametrize("who", ["root", "reader"])
async def test_bypass_is_refused_and_nothing_changes(my_admin: MyAdmin, who: str, sql: str) -> None:
    from mcp_sql.database import open_database

    url = my_admin.env.url if who == "root" else my_admin.env.reader_url
    db = await open_database("main", url, allow_write=False, statement_timeout_s=5, max_rows=10)
    try:
        before = await _state(my_admin)
        if sql in LEXER_PROBES:
            with contextlib.suppress(BatteriesError):
                await db.query(sql, None, limit=10)
        else:
            with pytest.raises(BatteriesError) as info:
                await db.query(sql, None, limit=10)
            if sql in MYSQL_BYPASSES:  # refused with a clear reason, not failed on the way
                assert isinstance(info.value, AccessDenied | InvalidInput), info.value
            assert len(str(info.value)) > 30
        assert await _state(my_admin) == before
        await _walls_still_up(db)
    finally:
        await db.close()
    assert await my_admin.rows() == SEED_ROWS


# -- the engine walls without the parser ----------------------------------------------------------
async def _direct(db: Database, sql: str) -> int | None:
    """Run `sql` straight on a read call of the pool (no parser): the error code, None if it ran."""
    pool = db._pool  # type: ignore[attr-defined]
    async with pool.call(read_only=True) as call:
        try:
            cursor = call.conn.cursor()
            await cursor.execute(sql)
            if cursor.description:
                await cursor.fetchall()
        except Exception as exc:  # the server's refusal
            return int(exc.args[0])
    return None


ENGINE_REFUSES_AS_ROOT = [
    "DELETE FROM t",
    "UPDATE t SET name = 'x'",
    "INSERT INTO t SELECT 4, 'x'",
    "REPLACE INTO t VALUES (1, 'm')",
    "SELECT * FROM t FOR UPDATE",
    "DROP TABLE t",
    "CREATE TABLE u (a INT)",
    "CREATE TEMPORARY TABLE tt (a INT)",
    "ALTER TABLE t ADD COLUMN c INT",
    "TRUNCATE t",
    "RENAME TABLE t TO t2",
    "CREATE INDEX ix ON t (name)",
    f"CREATE DATABASE {EVIL}",
    f"CREATE USER {EVIL}",
    "CALL p()",
    "SELECT f()",
    "SELECT NEXTVAL(s)",
    "SELECT SETVAL(s, 100)",
    "DROP SEQUENCE s",
    "EXECUTE IMMEDIATE 'DELETE FROM t'",
    "EXECUTE IMMEDIATE 'DROP TABLE t'",
    "CREATE EVENT e ON SCHEDULE AT NOW() DO DELETE FROM t",
    "LOAD DATA INFILE '/etc/hostname' INTO TABLE t",
    "LOCK TABLES t WRITE",
    "OPTIMIZE TABLE t",
    "INSERT INTO t VALUES (5, 'e') RETURNING id",
]
ENGINE_REFUSES_THE_READER_TOO = [
    f"SELECT * FROM t INTO OUTFILE '{OUT}'",
    f"SELECT 1 INTO DUMPFILE '{OUT}'",
    "SET GLOBAL max_connections = 5",
    "FLUSH TABLES",
    "KILL 1",
    "PURGE BINARY LOGS BEFORE NOW()",
    "SHUTDOWN",
    "SELECT * FROM mysql.user",
    "INSTALL SONAME 'ha_blackhole'",
]


@pytest.mark.parametrize("sql", ENGINE_REFUSES_AS_ROOT, ids=stable_id)
async def test_read_only_session_refuses_writes_and_ddl_without_the_parser_even_as_root(
    my_ro: Database, my_admin: MyAdmin, sql: str
) -> None:
    before = await _state(my_admin)
    code = await _direct(my_ro, sql)
    assert code is not None, f"{sql} ran"
    assert await _state(my_admin) == before


@pytest.mark.parametrize("sql", ENGINE_REFUSES_AS_ROOT + ENGINE_REFUSES_THE_READER_TOO, ids=stable_id)
async def test_least_privilege_user_refuses_files_and_administration_without_the_parser(
    my_reader: Database, my_admin: MyAdmin, sql: str
) -> None:
    before = await _state(my_admin)
    code = await _direct(my_reader, sql)
    assert code is not None, f"{sql} ran"
    assert await _state(my_admin) == before


async def test_the_server_refuses_several_statements_in_one_call(my_ro: Database, my_admin: MyAdmin) -> None:
    """Wall 1 without the parser: the connection was opened without CLIENT_MULTI_STATEMENTS."""
    assert await _direct(my_ro, "SELECT 1; DROP TABLE t") == 1064
    assert await _direct(my_ro, "COMMIT; DROP TABLE t") == 1064
    assert await my_admin.rows() == SEED_ROWS


async def test_nothing_a_statement_does_to_its_session_survives_the_call(
    my_ro: Database, my_admin: MyAdmin
) -> None:
    """Wall 3 without the parser: user variables, settings, locks, prepared statements are reset."""
    for sql in (
        "SET @x = 1",
        "SET SESSION max_statement_time = 0",
        "SET SESSION tx_read_only = 0",
        "SET NAMES latin1",
        "SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'",
        "SELECT GET_LOCK('mcp_lock', 0)",
        "PREPARE s1 FROM 'SELECT 1'",
        "COMMIT",
        "SET autocommit = 0",
        "LOCK TABLES t READ",
        "HANDLER t OPEN",
    ):
        assert await _direct(my_ro, sql) is None, sql  # each of these runs...
    assert await _direct(my_ro, "EXECUTE s1") == 1243  # ...and is gone at the next call
    assert await _direct(my_ro, "DELETE FROM t") == 1792
    await _walls_still_up(my_ro)
    assert await my_admin.rows() == SEED_ROWS


async def test_a_timeout_lifted_inside_the_statement_is_still_enforced_by_kill_query(
    my_admin: MyAdmin,
) -> None:
    """SET STATEMENT max_statement_time=0 FOR ... (past the parser) is stopped by the watchdog."""
    from mcp_batteries.errors import LimitExceeded
    from mcp_sql.database import open_database

    db = await open_database("main", my_admin.env.url, allow_write=False, statement_timeout_s=1, max_rows=10)
    try:
        pool = db._pool  # type: ignore[attr-defined]
        with pytest.raises(LimitExceeded):
            async with pool.call(read_only=True) as call:
                await call.conn.query("SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(30)")
        running = await my_admin.value(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SLEEP(30)%' "
            "AND INFO NOT LIKE '%PROCESSLIST%'"
        )
        assert running == 0
        assert as_lists((await db.query("SELECT 1", None, limit=1)).rows) == [[1]]
    finally:
        await db.close()


async def test_string_parameters_cannot_break_out_of_their_literal(
    my_ro: Database, my_admin: MyAdmin
) -> None:
    for value in ("' OR 1=1 -- ", "\\' OR 1=1 -- ", "\xbf' OR 1=1 -- ", "\\", "x\x00y", '"', "\x1a"):
        result = await my_ro.query("SELECT ?, COUNT(*) FROM t WHERE name = ?", [value, value], limit=1)
        assert as_lists(result.rows) == [[value, 0]]
    assert await my_admin.rows() == SEED_ROWS


async def test_execute_is_disabled_in_read_only_mode(my_ro: Database, my_admin: MyAdmin) -> None:
    with pytest.raises(AccessDenied, match="--allow-write"):
        await my_ro.execute(["DELETE FROM t"], None, transaction=False)
    with pytest.raises(AccessDenied, match="--allow-write"):
        await my_ro.explain("SELECT * FROM t", analyze=True)
    assert await my_admin.rows() == SEED_ROWS


async def test_describe_table_with_injected_name_does_not_drop_anything(
    my_ro: Database, my_admin: MyAdmin
) -> None:
    from mcp_batteries.errors import NotFound

    for name in ["x'); DROP TABLE t; --", "t`; DROP TABLE t; --", "t; DROP TABLE t"]:
        with pytest.raises(NotFound):
            await my_ro.describe_table(name)
        with pytest.raises(NotFound):
            await my_ro.describe_table("t", schema=name)
    assert await my_admin.rows() == SEED_ROWS
