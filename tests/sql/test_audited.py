"""`execute_changes`: what an `execute` batch tells the audit trail, in each dialect."""

from __future__ import annotations

import pytest
from mcp_sql.audited import execute_changes
from mcp_sql.models import ExecuteResult, StatementResult

STATEMENTS = [
    "CREATE INDEX ix ON app.items (name)",
    "DROP TABLE a, b",
    "TRUNCATE app.items",
    "ALTER TABLE app.items ADD COLUMN note TEXT",
    "INSERT INTO app.items (name) VALUES ('x') RETURNING id",
    "VACUUM",
]
COMMANDS = ["CREATE INDEX", "DROP TABLE", "TRUNCATE TABLE", "ALTER TABLE", "INSERT", "VACUUM"]


def ran(committed: bool = True) -> ExecuteResult:
    results = [
        StatementResult(index=i, command=command, rows_affected=1 if command == "INSERT" else None)
        for i, command in enumerate(COMMANDS)
    ]
    return ExecuteResult(statements=results, transaction=True, committed=committed)


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mysql"])
def test_each_statement_names_its_rows_or_the_objects_it_created_dropped_or_altered(dialect: str) -> None:
    changes = execute_changes(STATEMENTS, ran(), dialect, "app_db")
    shown = [{k: v for k, v in change.items() if k not in ("database", "command")} for change in changes]
    assert shown == [
        {"action": "create", "object": "index", "name": "ix", "table": "app.items", "statement": 0},
        {"action": "drop", "object": "table", "name": "a", "statement": 1},
        {"action": "drop", "object": "table", "name": "b", "statement": 1},
        {"action": "truncate", "object": "table", "name": "app.items", "statement": 2},
        {"action": "alter", "object": "table", "name": "app.items", "statement": 3},
        {"action": "insert", "statement": 4, "rows": 1, "table": "app.items"},
        {"action": "vacuum", "statement": 5},
    ]
    assert {change["database"] for change in changes} == {"app_db"}


def test_a_batch_that_was_not_committed_changed_nothing() -> None:
    assert execute_changes(STATEMENTS, ran(committed=False), "postgresql", "app_db") == []


def test_a_long_name_is_cut() -> None:
    name = "t" + "x" * 500
    statement = StatementResult(index=0, command="DROP TABLE", rows_affected=None)
    result = ExecuteResult(statements=[statement], transaction=True, committed=True)
    (change,) = execute_changes([f"DROP TABLE {name}"], result, "sqlite", "main")
    assert change["name"] == name[:200]
