"""The rules of an `execute` batch, checked before any statement of it runs.

A batch is one transaction that the server begins and ends: with transaction=true every statement
commits together or none does. A statement that ended or split that transaction (COMMIT, END,
ROLLBACK, ABORT, BEGIN, START TRANSACTION, SAVEPOINT, RELEASE, PREPARE TRANSACTION, COMMIT/ROLLBACK
PREPARED) would make the server's "all or nothing" untrue, so such statements are refused here, in
any case, with comments around them, after a semicolon inside one item, or (PostgreSQL) inside a DO
block. With transaction=false the one statement runs on its own (autocommit), and transaction control
there would leave the server's connection inside a transaction, so it is refused too.

This is the first wall, made for clear and early refusals. The engines add a second one that does not
depend on parsing: SQLite's write authorizer refuses transaction statements, PostgreSQL refuses
COMMIT/ROLLBACK inside a procedure or DO block run in a transaction block, and both engines check
after every statement that the batch's transaction is still open.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import sqlglot
from mcp_batteries.errors import InvalidInput
from sqlglot import Token, TokenType
from sqlglot.errors import TokenError

from mcp_sql.guard import strip_statement

Dialect = Literal["sqlite", "postgres", "mysql"]

BATCH_IS_ONE_TRANSACTION = (
    "execute runs its statements as one transaction that the server begins and commits (all or "
    "nothing), so statements cannot end or split it: leave out COMMIT/ROLLBACK/BEGIN/SAVEPOINT and "
    "send the statements that belong together in one call; if one fails, none is kept"
)
AUTOCOMMIT_NO_CONTROL = (
    "with transaction=false the statement runs on its own and is committed at once, so transaction "
    "control has nothing to act on (and would leave the connection in a transaction)"
)

# The first word(s) of a statement that ends, opens or splits a transaction.
_CONTROL_WORDS = {"COMMIT", "END", "ROLLBACK", "ABORT", "BEGIN", "SAVEPOINT", "RELEASE", "XA"}
_CONTROL_PAIRS = {("START", "TRANSACTION"), ("PREPARE", "TRANSACTION")}
# Tokens whose text is a value or a quoted name, never a keyword.
_LITERAL_TOKENS = {TokenType.STRING, TokenType.IDENTIFIER, TokenType.NUMBER, TokenType.NATIONAL_STRING}
# Inside a PL/pgSQL body (DO): COMMIT / ROLLBACK as statements.
_PLPGSQL_CONTROL = re.compile(r"(?:^|[;\s])(COMMIT|ROLLBACK)\b(?:\s+AND\s+(?:NO\s+)?CHAIN)?\s*(?:;|$)", re.I)
_DOLLAR_BODY = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$(.*)\$\1\$", re.DOTALL)
_QUOTED_BODY = re.compile(r"'((?:[^']|'')*)'", re.DOTALL)


def check_batch(statements: Sequence[str], dialect: Dialect, *, transaction: bool) -> None:
    """Refuse a batch that holds transaction control or several statements in one item."""
    for index, sql in enumerate(statements):
        segments = split_statements(sql, dialect)
        label = f"statement {index + 1}" if len(statements) > 1 else "the statement"
        for segment in segments:
            control = transaction_control(segment, dialect)
            if control:
                why = BATCH_IS_ONE_TRANSACTION if transaction else AUTOCOMMIT_NO_CONTROL
                raise InvalidInput(f"{label} is transaction control ({control}), which is refused: {why}")
        if len(segments) > 1:
            raise InvalidInput(
                f"{label} holds {len(segments)} statements separated by ';'; put each statement in its "
                "own list item (they still run as one transaction)"
            )


def split_statements(sql: str, dialect: Dialect) -> list[list[Token]]:
    """The statements of `sql` as token lists, split at semicolons outside BEGIN/CASE ... END blocks.

    Trigger bodies (SQLite `CREATE TRIGGER ... BEGIN ...; END`) and SQL-standard function bodies
    (PostgreSQL `BEGIN ATOMIC ...; END`) hold semicolons of their own; a BEGIN that is not the first
    word of a statement opens such a block, as CASE opens an expression that END closes.
    """
    text = strip_statement(sql)
    if not text:
        raise InvalidInput("the SQL statement is empty")
    try:
        tokens = list(sqlglot.Dialect.get_or_raise(dialect).tokenize(text))
    except TokenError as exc:
        raise InvalidInput(f"could not read the SQL: {exc}; check quoting and dollar-quoted strings") from exc
    segments: list[list[Token]] = []
    current: list[Token] = []
    depth = 0
    for token in tokens:
        kind = token.token_type
        if kind == TokenType.SEMICOLON and depth == 0:
            if current:
                segments.append(current)
            current = []
            continue
        if kind == TokenType.CASE or (kind == TokenType.BEGIN and current):
            depth += 1
        elif kind == TokenType.END and current and depth > 0:
            depth -= 1
        current.append(token)
    if current:
        segments.append(current)
    return segments


def transaction_control(tokens: list[Token], dialect: Dialect) -> str | None:
    """What transaction control the statement `tokens` is (e.g. "COMMIT"), or None."""
    words = [t.text.upper() if t.token_type not in _LITERAL_TOKENS else "" for t in tokens[:3]]
    if not words:
        return None
    first = words[0]
    if first in _CONTROL_WORDS:
        return first
    if len(tokens) > 1 and first in {"START", "PREPARE"}:
        # sqlglot reads PREPARE as a command whose rest is one string token.
        second = tokens[1].text.split(None, 1)[0].upper() if tokens[1].text.strip() else ""
        if (first, second) in _CONTROL_PAIRS:
            return f"{first} {second}"
    if dialect == "postgres" and first == "DO" and len(tokens) > 1:
        body = " ".join(t.text for t in tokens[1:])
        dollar = _DOLLAR_BODY.search(body)
        quoted = _QUOTED_BODY.search(body)
        code = dollar.group(2) if dollar else quoted.group(1).replace("''", "'") if quoted else body
        match = _PLPGSQL_CONTROL.search(_strip_plpgsql_noise(code))
        if match:
            return f"{match.group(1).upper()} inside a DO block"
    return None


def _strip_plpgsql_noise(code: str) -> str:
    """A PL/pgSQL body without its comments and string literals (where COMMIT is only text)."""
    code = re.sub(r"--[^\n]*", " ", code)
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.DOTALL)
    return re.sub(r"'(?:[^']|'')*'", "''", code)
