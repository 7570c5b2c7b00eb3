"""What an `execute` batch would destroy (`mcp_sql.losses`): the words its user confirms."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_sql.losses import describe_execute, plan_losses

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mysql"])
@pytest.mark.parametrize(
    ("sql", "what", "counted"),
    [
        ("DELETE FROM t WHERE id > 2", "delete rows from t (id > 2)", "SELECT count(*) FROM t WHERE id > 2"),
        ("delete from t", "delete rows from t (all of them)", "SELECT count(*) FROM t"),
        ("DROP TABLE t", "drop the table t with its data", "SELECT count(*) FROM t"),
        ("TRUNCATE TABLE t", "empty the table t (TRUNCATE)", "SELECT count(*) FROM t"),
        (
            "ALTER TABLE t DROP COLUMN name",
            "alter the table t, dropping column name (its values are lost)",
            None,
        ),
        ("DROP SCHEMA s CASCADE", "drop the schema s and everything in it", None),
        ("DROP INDEX i", "drop the index i", None),
    ],
)
def test_destructive_statements_are_named_with_their_count(
    dialect: str, sql: str, what: str, counted: str | None
) -> None:
    (planned,) = plan_losses([sql], None, dialect, transaction=True)
    assert planned.what == what
    assert planned.count_sql == counted


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t VALUES (1)",
        "UPDATE t SET a = 1",
        "CREATE TABLE u (a int)",
        "ALTER TABLE t ADD COLUMN x int",
    ],
)
def test_statements_that_lose_nothing_ask_nothing(sql: str) -> None:
    assert plan_losses([sql], None, "sqlite", transaction=True) == []


def test_a_delete_counts_with_its_own_parameters_in_a_batch() -> None:
    planned = plan_losses(
        ["INSERT INTO t VALUES (?)", "DELETE FROM t WHERE id = ?"], [[7], [3]], "sqlite", transaction=True
    )
    assert [(p.count_sql, p.count_params) for p in planned] == [("SELECT count(*) FROM t WHERE id = ?", [3])]


def test_an_unparsable_destructive_statement_is_shown_as_written() -> None:
    (planned,) = plan_losses(["DROP ((( nonsense"], None, "sqlite", transaction=True)
    assert planned.what == "run DROP ((( nonsense" and planned.count_sql is None


async def test_the_description_carries_the_counts_and_the_database() -> None:
    counts = {"SELECT count(*) FROM t WHERE id > 1": 2, "SELECT count(*) FROM u": 40}

    async def count(sql: str, _params: Any) -> int | None:
        return counts.get(sql)

    one = await describe_execute(
        ["DELETE FROM t WHERE id > 1"], None, "sqlite", "main", count, transaction=True
    )
    assert one == "delete rows from t (id > 1): 2 rows deleted in the database main"
    several = await describe_execute(
        ["DELETE FROM t WHERE id > 1", "DROP TABLE u", "ALTER TABLE v RENAME TO w"],
        None,
        "sqlite",
        "main",
        count,
        transaction=True,
    )
    assert several == (
        "change the database main destructively:\n"
        "  delete rows from t (id > 1): 2 rows deleted\n"
        "  drop the table u with its data: 40 rows in the table\n"
        "  alter the table v: ALTER TABLE v RENAME TO w"
    )
    assert (
        await describe_execute(["INSERT INTO t VALUES (1)"], None, "sqlite", "main", count, transaction=True)
        is None
    )
