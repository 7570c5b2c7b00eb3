"""What an `execute` batch would destroy, in the words its user is asked to confirm.

Statements that delete rows or alter schema (DELETE, DROP, TRUNCATE, ALTER) are named one by one,
with the rows they would take when a count can say it: `SELECT count(*)` over a DELETE's own table
and WHERE clause (with the statement's own parameters), or over a table about to be dropped or
truncated, run through the read-only query path. INSERT, UPDATE, CREATE and the rest ask nothing.
ALTER that only adds columns asks nothing. A statement the parser cannot read but that starts
like a destructive one is shown as written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from mcp_sql.guard import strip_statement
from mcp_sql.params import split_statement_params

__all__ = ["Planned", "describe_execute", "plan_losses"]

#: A statement's parameters, as `execute` takes them.
Params = list[Any] | dict[str, Any] | None
#: Runs a count (read-only) and gives the number, or None when it cannot be counted.
Counter = Callable[[str, Params], Awaitable[int | None]]

_DESTRUCTIVE_WORDS = ("DELETE", "DROP", "TRUNCATE", "ALTER")
_SHOWN_CHARS = 200


@dataclass(frozen=True, slots=True)
class Planned:
    """One destructive statement: what it does, and the count that says how many rows it takes."""

    what: str
    count_sql: str | None = None
    count_params: Params = None
    #: "rows" the count measures: "rows deleted" / "rows in the table".
    count_of: str = "rows"


def _sqlglot_dialect(dialect: str) -> str:
    return {"postgresql": "postgres"}.get(dialect, dialect)


def _shown(sql: str) -> str:
    text = " ".join(strip_statement(sql).split())
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _table_name(table: exp.Expression, dialect: str) -> str:
    return table.sql(dialect=dialect)


def _dropped(drop: exp.Drop) -> list[exp.Expression]:
    """What a DROP names (sqlglot keeps them in `tables`; older versions in `this`)."""
    objects = list(drop.args.get("tables") or [])
    return objects or ([drop.this] if drop.this is not None else [])


def _plan_one(sql: str, params: Params, dialect: str) -> Planned | None:
    glot = _sqlglot_dialect(dialect)
    try:
        trees = [t for t in sqlglot.parse(sql, read=glot) if t is not None]
    except (ParseError, TokenError, ValueError):
        trees = []
    if len(trees) != 1:
        words = strip_statement(sql).split(None, 1)
        if words and words[0].upper() in _DESTRUCTIVE_WORDS:
            return Planned(f"run {_shown(sql)}")
        return None
    tree = trees[0]
    if isinstance(tree, exp.Delete):
        table = tree.this if isinstance(tree.this, exp.Table) else tree.find(exp.Table)
        if table is None:
            return Planned(f"run {_shown(sql)}")
        name = _table_name(table, glot)
        where = tree.args.get("where")
        simple = not tree.args.get("using") and not tree.args.get("returning") and not tree.args.get("with")
        condition = f" {where.sql(dialect=glot)}" if where is not None else ""
        what = f"delete rows from {name}" + (
            f" ({where.this.sql(dialect=glot)})" if where is not None else " (all of them)"
        )
        if not simple:
            return Planned(what)
        return Planned(what, f"SELECT count(*) FROM {name}{condition}", params, "rows deleted")
    if isinstance(tree, exp.TruncateTable):
        tables = [t for t in tree.expressions if isinstance(t, exp.Table)]
        if len(tables) == 1:
            name = _table_name(tables[0], glot)
            return Planned(
                f"empty the table {name} (TRUNCATE)",
                f"SELECT count(*) FROM {name}",
                None,
                "rows in the table",
            )
        return Planned(f"empty the tables {', '.join(_table_name(t, glot) for t in tables)} (TRUNCATE)")
    if isinstance(tree, exp.Drop):
        kind = str(tree.args.get("kind") or "object").lower()
        objects = _dropped(tree)
        names = ", ".join(o.sql(dialect=glot) for o in objects) or "?"
        if kind == "table" and len(objects) == 1 and isinstance(objects[0], exp.Table):
            return Planned(
                f"drop the table {names} with its data",
                f"SELECT count(*) FROM {names}",
                None,
                "rows in the table",
            )
        if kind == "schema" and len(objects) == 1 and isinstance(objects[0], exp.Table):
            names = objects[0].args["db"].sql(dialect=glot) if objects[0].args.get("db") else names
        return Planned(
            f"drop the {kind} {names}" + (" and everything in it" if tree.args.get("cascade") else "")
        )
    if isinstance(tree, exp.Alter):
        altered = tree.this.sql(dialect=glot) if tree.this is not None else "?"
        drops = [a for a in tree.args.get("actions") or [] if isinstance(a, exp.Drop)]
        if drops:
            dropped = ", ".join(
                f"{str(d.args.get('kind') or 'column').lower()} {o.sql(dialect=glot)}"
                for d in drops
                for o in _dropped(d)
            )
            return Planned(f"alter the table {altered}, dropping {dropped} (its values are lost)")
        actions = tree.args.get("actions") or []
        if actions and all(isinstance(a, exp.ColumnDef) for a in actions):
            return None  # only adds columns: nothing is lost
        return Planned(f"alter the table {altered}: {_shown(sql)}")
    if isinstance(tree, exp.Command) and str(tree.this).upper() in _DESTRUCTIVE_WORDS:
        return Planned(f"run {_shown(sql)}")
    return None


def plan_losses(
    statements: Sequence[str], params: Params, dialect: str, *, transaction: bool
) -> list[Planned]:
    """The destructive statements of a batch, in order (an empty list: nothing to ask)."""
    try:
        per_statement = split_statement_params(list(statements), params, transaction=transaction)
    except Exception:
        per_statement = [None] * len(statements)
    planned = []
    for sql, own in zip(statements, per_statement, strict=False):
        one = _plan_one(sql, own, dialect)
        if one is not None:
            planned.append(one)
    return planned


async def describe_execute(
    statements: Sequence[str],
    params: Params,
    dialect: str,
    database: str,
    count: Counter,
    *,
    transaction: bool,
) -> str | None:
    """What the batch would destroy in `database`, one line per destructive statement, or None."""
    planned = plan_losses(statements, params, dialect, transaction=transaction)
    if not planned:
        return None
    lines = []
    for step in planned:
        counted = await count(step.count_sql, step.count_params) if step.count_sql is not None else None
        suffix = "" if counted is None else f": {counted} {step.count_of}"
        lines.append(f"{step.what}{suffix}")
    if len(lines) == 1:
        return f"{lines[0]} in the database {database}"
    return f"change the database {database} destructively:\n" + "\n".join(f"  {line}" for line in lines)
