"""SQLite read-only mode: every known bypass is refused by the engine and nothing changes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, LimitExceeded
from mcp_sql.database import Database

from .conftest import as_lists

pytestmark = pytest.mark.anyio

SEED_ROWS = [(1, "alice"), (2, "bob"), (3, "carol")]

# The corpus, also run against MySQL (test_mysql_readonly.py).
BYPASSES: list[tuple[str, type[BatteriesError], str]] = [
    ("DROP TABLE t", AccessDenied, "read-only"),
    ("DELETE FROM t", AccessDenied, "read-only"),
    ("UPDATE t SET name = 'x'", AccessDenied, "read-only"),
    ("INSERT INTO t VALUES (4, 'dave')", AccessDenied, "read-only"),
    ("REPLACE INTO t VALUES (1, 'mallory')", AccessDenied, "read-only"),
    ("CREATE TABLE u (a)", AccessDenied, "read-only"),
    ("CREATE TEMP TABLE u (a)", AccessDenied, "read-only"),
    ("CREATE TEMP VIEW v AS SELECT 1", AccessDenied, "read-only"),
    ("ALTER TABLE t ADD COLUMN c", AccessDenied, "read-only"),
    ("CREATE INDEX ix ON t(name)", AccessDenied, "read-only"),
    ("ANALYZE", AccessDenied, ""),
    ("SELECT 1; DROP TABLE t", InvalidInput, "one statement"),
    ("PRAGMA query_only=OFF; DROP TABLE t", InvalidInput, "one statement"),
    ("PRAGMA query_only=OFF", AccessDenied, "query_only"),
    ("PRAGMA query_only = 0", AccessDenied, "query_only"),
    ("PRAGMA writable_schema = 1", AccessDenied, "writable_schema"),
    ("PRAGMA journal_mode = DELETE", AccessDenied, "journal_mode"),
    ("PRAGMA user_version = 7", AccessDenied, "user_version"),
    ("PRAGMA main.user_version = 7", AccessDenied, "user_version"),
    ("SELECT load_extension('/tmp/evil')", AccessDenied, "load_extension"),
    ("SELECT fts3_tokenizer('simple')", AccessDenied, "fts3_tokenizer"),
    ("BEGIN", AccessDenied, ""),
    ("SAVEPOINT sp", AccessDenied, ""),
    ("UPDATE sqlite_master SET sql = 'x'", AccessDenied, ""),
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(("sql", "expected", "fragment"), BYPASSES)
async def test_write_attempt_is_refused_and_database_file_is_unchanged(
    sqlite_ro: Database,
    sqlite_file: Path,
    sqlite_rows: Callable[[Path], list[tuple[object, ...]]],
    sql: str,
    expected: type[BatteriesError],
    fragment: str,
) -> None:
    before = _digest(sqlite_file)
    with pytest.raises(expected) as info:
        await sqlite_ro.query(sql, None, limit=10)
    assert fragment.lower() in str(info.value).lower()
    assert sqlite_rows(sqlite_file) == SEED_ROWS
    assert _digest(sqlite_file) == before


async def test_attach_same_file_read_write_is_refused_and_nothing_attached(
    sqlite_ro: Database, sqlite_file: Path, sqlite_rows: Callable[[Path], list[tuple[object, ...]]]
) -> None:
    with pytest.raises(AccessDenied, match="ATTACH"):
        await sqlite_ro.query(f"ATTACH 'file:{sqlite_file}?mode=rw' AS x", None, limit=10)
    listing = await sqlite_ro.query("PRAGMA database_list", None, limit=10)
    assert [row[1] for row in listing.rows] == ["main"]
    assert sqlite_rows(sqlite_file) == SEED_ROWS


async def test_attach_new_file_is_refused_and_no_file_is_created(sqlite_ro: Database, tmp_path: Path) -> None:
    target = tmp_path / "new.db"
    with pytest.raises(AccessDenied, match="ATTACH"):
        await sqlite_ro.query(f"ATTACH '{target}' AS x", None, limit=10)
    assert not target.exists()


async def test_vacuum_into_is_refused_and_no_copy_is_written(sqlite_ro: Database, tmp_path: Path) -> None:
    target = tmp_path / "copy.db"
    with pytest.raises(AccessDenied, match="VACUUM INTO"):
        await sqlite_ro.query(f"VACUUM INTO '{target}'", None, limit=10)
    assert not target.exists()


async def test_query_only_stays_on_after_attempt_to_switch_it_off(sqlite_ro: Database) -> None:
    with pytest.raises(AccessDenied):
        await sqlite_ro.query("PRAGMA query_only=OFF", None, limit=10)
    result = await sqlite_ro.query("PRAGMA query_only", None, limit=10)
    assert as_lists(result.rows) == [[1]]


async def test_endless_recursive_cte_is_stopped_at_the_statement_timeout(sqlite_ro: Database) -> None:
    with pytest.raises(LimitExceeded, match="timeout"):
        await sqlite_ro.query(
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
            None,
            limit=10,
        )
    # The connection is usable again straight away.
    result = await sqlite_ro.query("SELECT count(*) FROM t", None, limit=10)
    assert as_lists(result.rows) == [[3]]


async def test_execute_is_disabled_in_read_only_mode(
    sqlite_ro: Database, sqlite_file: Path, sqlite_rows: Callable[[Path], list[tuple[object, ...]]]
) -> None:
    with pytest.raises(AccessDenied, match="--allow-write"):
        await sqlite_ro.execute(["DELETE FROM t"], None, transaction=False)
    assert sqlite_rows(sqlite_file) == SEED_ROWS


async def test_explain_analyze_is_refused_in_read_only_mode(sqlite_ro: Database) -> None:
    with pytest.raises(AccessDenied, match="--allow-write"):
        await sqlite_ro.explain("SELECT * FROM t", analyze=True)


async def test_explain_of_a_write_is_refused_in_read_only_mode(sqlite_ro: Database) -> None:
    with pytest.raises(AccessDenied):
        await sqlite_ro.explain("DELETE FROM t", analyze=False)


async def test_reading_pragmas_with_a_table_argument_are_allowed(sqlite_ro: Database) -> None:
    result = await sqlite_ro.query("PRAGMA table_info(t)", None, limit=10)
    assert [row[1] for row in result.rows] == ["id", "name"]


async def test_describe_table_with_injected_name_does_not_drop_anything(
    sqlite_ro: Database,
    sqlite_rw: Database,
    sqlite_file: Path,
    sqlite_rows: Callable[[Path], list[tuple[object, ...]]],
) -> None:
    from mcp_batteries.errors import NotFound

    for db in (sqlite_ro, sqlite_rw):
        with pytest.raises(NotFound):
            await db.describe_table("x'); DROP TABLE t; --")
        with pytest.raises(NotFound):
            await db.describe_table('t"); DROP TABLE t; --')
    assert sqlite_rows(sqlite_file) == SEED_ROWS
