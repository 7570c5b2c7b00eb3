"""PostgreSQL error -> BatteriesError, with the server's message, position and hint."""

from __future__ import annotations

from typing import Any

import asyncpg
from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, LimitExceeded, UpstreamError


def describe_pg_error(exc: asyncpg.PostgresError, sql: str | None) -> str:
    """psql-style text: message, DETAIL, the LINE with a caret under the error position, HINT."""
    fields: dict[str, Any] = exc.as_dict() if hasattr(exc, "as_dict") else {}
    message = fields.get("message") or str(exc)
    sqlstate = fields.get("sqlstate") or getattr(exc, "sqlstate", None)
    lines = [f"PostgreSQL error {sqlstate}: {message}" if sqlstate else f"PostgreSQL error: {message}"]
    if fields.get("detail"):
        lines.append(f"DETAIL: {fields['detail']}")
    position = fields.get("position")
    if sql and position and str(position).isdigit():
        index = max(int(position) - 1, 0)
        line_no = sql.count("\n", 0, index) + 1
        line_start = sql.rfind("\n", 0, index) + 1
        line_end = sql.find("\n", index)
        line_text = sql[line_start : line_end if line_end >= 0 else len(sql)]
        prefix = f"LINE {line_no}: "
        lines.append(prefix + line_text)
        lines.append(" " * (len(prefix) + index - line_start) + "^")
        lines.append(f"(error at character {position})")
    if fields.get("hint"):
        lines.append(f"HINT: {fields['hint']}")
    if fields.get("context") and "PL/pgSQL" in str(fields["context"]):
        lines.append(f"CONTEXT: {fields['context']}")
    return "\n".join(lines)


CONNECTION_CLOSED = (
    "the database connection was closed by the server during the call ({reason}); the statement did "
    "not complete. Retry the call: the next call uses a new connection"
)
# SQLSTATEs of a session the server ended: admin_shutdown (pg_terminate_backend), crash_shutdown,
# cannot_connect_now; class 08 is connection_exception.
_SESSION_ENDED = {"57P01", "57P02", "57P03"}


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc` means the connection is gone (terminated backend, server restart, network)."""
    if isinstance(exc, asyncpg.PostgresError):
        state = str(getattr(exc, "sqlstate", "") or "")
        return state in _SESSION_ENDED or state.startswith("08")
    if isinstance(exc, asyncpg.InterfaceError):
        text = str(exc)
        return "connection is closed" in text or "released back to the pool" in text
    # The driver lost track of the connection's protocol state (a backend terminated mid-operation):
    # the connection cannot be used again, as if it were closed.
    return isinstance(exc, ConnectionError | asyncpg.exceptions.InternalClientError)


def map_pg_error(
    exc: BaseException, sql: str | None, *, timeout_s: float, reader_role: str | None = None
) -> BatteriesError:
    if connection_lost(exc):
        message = str(getattr(exc, "message", "") or exc) or type(exc).__name__
        return UpstreamError(CONNECTION_CLOSED.format(reason=message))
    if isinstance(exc, asyncpg.QueryCanceledError):
        return LimitExceeded(
            f"the statement ran longer than the {timeout_s:g} s statement timeout and was cancelled on "
            "the server; narrow it (WHERE, LIMIT, an index) or ask the operator for a longer timeout"
        )
    if isinstance(exc, TimeoutError):
        return LimitExceeded(f"no answer from PostgreSQL within the {timeout_s:g} s statement timeout")
    if isinstance(exc, asyncpg.PostgresError):
        text = describe_pg_error(exc, sql)
        message = str(getattr(exc, "message", "") or exc)
        if "cannot insert multiple commands into a prepared statement" in message:
            return InvalidInput(
                "found several statements; send exactly one statement per call (statements are sent "
                "through the extended protocol, which runs exactly one)"
            )
        if exc.sqlstate == "25006":  # read_only_sql_transaction
            return AccessDenied(
                f"{text}\nThe query tool runs every statement in a READ ONLY transaction; writes need "
                "execute on a server started with --allow-write"
            )
        if exc.sqlstate == "2D000":  # invalid_transaction_termination
            return InvalidInput(
                f"{text}\nA procedure or DO block tried to COMMIT or ROLLBACK inside the batch's "
                "transaction: execute runs a batch as one transaction that its statements cannot end "
                "(call it alone with transaction=false if it manages its own transactions)"
            )
        if exc.sqlstate == "25001":  # active_sql_transaction: VACUUM, CREATE DATABASE, ...
            return InvalidInput(
                f"{text}\nThis statement cannot run inside a transaction: call execute with it alone "
                "and transaction=false"
            )
        if exc.sqlstate == "22021":  # character_not_in_repertoire: bytes that are not UTF-8
            return UpstreamError(
                f"{text}\nA text value is not valid UTF-8 (the database stores raw bytes, as a "
                "SQL_ASCII database does). Select it as col::bytea for its exact bytes, or decode it "
                "with convert_from(col::bytea, 'LATIN1') (or its real encoding)"
            )
        if exc.sqlstate == "42501":  # insufficient_privilege
            who = f" as the read-only role {reader_role}" if reader_role else ""
            return AccessDenied(f"{text}\nReads run{who} with read privileges only.")
        return UpstreamError(text)
    if isinstance(exc, asyncpg.InterfaceError):
        # Client-side encoding failures (asyncpg's DataError is an InterfaceError).
        if "invalid input for query argument" in str(exc):
            return InvalidInput(f"a parameter does not fit its placeholder's type: {exc}")
        text = str(exc)
        if "argument" in text and ("expects" in text or "passed" in text):
            return InvalidInput(f"parameter count mismatch: {text}")
        return UpstreamError(f"PostgreSQL client error: {text}")
    if isinstance(exc, OSError | ConnectionError):
        return UpstreamError(f"lost the connection to PostgreSQL: {exc}; the next call reconnects")
    return UpstreamError(f"PostgreSQL call failed: {type(exc).__name__}: {exc}")
