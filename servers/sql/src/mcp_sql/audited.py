"""What an `execute` batch changed, for the audit trail (`note_change`, docs/deploy.md#audit-trail).

One entry per statement that ran, in order: its command tag, the rows it affected when the
database counts them, and the objects it created, dropped or altered when the statement names
them (read with sqlglot, as `losses` reads what a batch would destroy):

    {"action": "insert", "database": "main", "statement": 0, "command": "INSERT", "rows": 3,
     "table": "items"}
    {"action": "create", "database": "main", "statement": 1, "command": "CREATE TABLE",
     "object": "table", "name": "tags"}

Names come from the statement the caller sent (already in the audit line's arguments): they are
cut to `MAX_NAME` characters. A statement the parser cannot read is named by its command tag
only.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from mcp_sql.losses import _dropped, _sqlglot_dialect
from mcp_sql.models import ExecuteResult

__all__ = ["MAX_NAME", "execute_changes"]

MAX_NAME = 200

_DATA_ACTIONS = {"INSERT": "insert", "UPDATE": "update", "DELETE": "delete", "REPLACE": "insert"}


def _name(node: exp.Expression | None, dialect: str) -> str:
    return "?" if node is None else node.sql(dialect=dialect)[:MAX_NAME]


def _parsed(sql: str, dialect: str) -> exp.Expression | None:
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except (ParseError, TokenError, ValueError):
        return None
    return trees[0] if len(trees) == 1 and isinstance(trees[0], exp.Expression) else None


def _objects(tree: exp.Expression | None, dialect: str) -> list[dict[str, Any]]:
    """What a DDL statement creates, drops or alters: `{"action", "object", "name"}` each."""
    if isinstance(tree, exp.Create):
        kind = str(tree.args.get("kind") or "object").lower()
        target = tree.this
        if isinstance(target, exp.Schema):  # CREATE TABLE t (columns...): the table is inside
            target = target.this
        if isinstance(target, exp.Index):  # CREATE INDEX ix ON t (...): the index, and its table
            on = target.args.get("table")
            created = {"action": "create", "object": kind, "name": _name(target.this, dialect)}
            return [created if on is None else {**created, "table": _name(on, dialect)}]
        return [{"action": "create", "object": kind, "name": _name(target, dialect)}]
    if isinstance(tree, exp.Drop):
        kind = str(tree.args.get("kind") or "object").lower()
        return [{"action": "drop", "object": kind, "name": _name(o, dialect)} for o in _dropped(tree)]
    if isinstance(tree, exp.Alter):
        kind = str(tree.args.get("kind") or "table").lower()
        return [{"action": "alter", "object": kind, "name": _name(tree.this, dialect)}]
    if isinstance(tree, exp.TruncateTable):
        return [
            {"action": "truncate", "object": "table", "name": _name(t, dialect)}
            for t in tree.expressions
            if isinstance(t, exp.Table)
        ]
    return []


def _table(tree: exp.Expression | None, dialect: str) -> str | None:
    if isinstance(tree, exp.Insert | exp.Update | exp.Delete):
        table = tree.this if isinstance(tree.this, exp.Table) else tree.find(exp.Table)
        return _name(table, dialect) if table is not None else None
    return None


def execute_changes(
    statements: list[str], result: ExecuteResult, dialect: str, database: str
) -> list[dict[str, Any]]:
    """What the statements that ran changed (nothing when the batch was not committed)."""
    if not result.committed:
        return []
    glot = _sqlglot_dialect(dialect)
    changes: list[dict[str, Any]] = []
    for ran in result.statements:
        sql = statements[ran.index] if 0 <= ran.index < len(statements) else ""
        tree = _parsed(sql, glot)
        base: dict[str, Any] = {"database": database, "statement": ran.index, "command": ran.command}
        objects = _objects(tree, glot)
        if objects:
            changes += [{**entry, **base} for entry in objects]
            continue
        entry: dict[str, Any] = {
            "action": _DATA_ACTIONS.get(ran.command, ran.command.lower() or "run"),
            **base,
        }
        if ran.rows_affected is not None:
            entry["rows"] = ran.rows_affected
        table = _table(tree, glot)
        if table is not None:
            entry["table"] = table
        changes.append(entry)
    return changes
