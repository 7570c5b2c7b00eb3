"""MySQL/MariaDB error -> BatteriesError, with the server's code, SQLSTATE-like text and a hint."""

from __future__ import annotations

from typing import Any

from asyncmy import errors as my_errors
from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, LimitExceeded, UpstreamError

from mcp_sql.engine_common import EXECUTE_DISABLED
from mcp_sql.pg_errors import CONNECTION_CLOSED

#: What a failed driver call can raise (asyncmy's own errors, timeouts, a lost socket).
DRIVER_ERRORS = (my_errors.MySQLError, TimeoutError, OSError, EOFError)

READ_ONLY_TRANSACTION = 1792  # ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
# The statement timeout: MariaDB's max_statement_time, MySQL's max_execution_time.
_TIMEOUT_CODES = {1969, 3024}
QUERY_INTERRUPTED = 1317  # KILL QUERY (ours, on timeout or cancel)
_LOST = {2006, 2013, 2055, 1927, 4031, 1053}  # gone away, lost during query, shutdown, killed
_PRIVILEGE = {1044, 1045, 1142, 1143, 1227, 1370, 1095, 1211, 1410}
_SYNTAX = 1064


def error_code(exc: BaseException) -> int | None:
    args: tuple[Any, ...] = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def error_text(exc: BaseException) -> str:
    args: tuple[Any, ...] = getattr(exc, "args", ())
    if len(args) >= 2:
        return str(args[1])
    return str(exc) or type(exc).__name__


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc` means the connection is gone (killed, server restart, network)."""
    if isinstance(exc, OSError | EOFError):
        return True
    code = error_code(exc)
    return code in _LOST or (isinstance(exc, my_errors.InterfaceError) and code in {0, None})


def describe_mysql_error(exc: BaseException, sql: str | None) -> str:
    """`MySQL error 1146: Table 'app.nope' doesn't exist`, with the line named for syntax errors."""
    code = error_code(exc)
    message = error_text(exc)
    text = f"MySQL error {code}: {message}" if code else f"MySQL error: {message}"
    if code == _SYNTAX and sql and " at line " in message:
        tail = message.rsplit(" at line ", 1)[1].strip()
        if tail.isdigit() and "\n" in sql:
            lines = sql.splitlines()
            number = int(tail)
            if 0 < number <= len(lines):
                text += f"\nLINE {number}: {lines[number - 1]}"
    return text


def map_mysql_error(
    exc: BaseException, sql: str | None, *, timeout_s: float, timed_out: bool = False, user: str = ""
) -> BatteriesError:
    """`timed_out`: our own watchdog stopped the statement (KILL QUERY past the timeout)."""
    code = error_code(exc)
    if timed_out or code in _TIMEOUT_CODES or (code == QUERY_INTERRUPTED and timed_out):
        return LimitExceeded(
            f"the statement ran longer than the {timeout_s:g} s statement timeout and was stopped on "
            "the server; narrow it (WHERE, LIMIT, an index) or ask the operator for a longer timeout"
        )
    if isinstance(exc, TimeoutError):
        return LimitExceeded(f"no answer from the database within the {timeout_s:g} s statement timeout")
    if connection_lost(exc):
        return UpstreamError(CONNECTION_CLOSED.format(reason=error_text(exc)))
    text = describe_mysql_error(exc, sql)
    if code == READ_ONLY_TRANSACTION:
        return AccessDenied(
            f"{text}\nThe query tool runs every statement in a READ ONLY transaction of a read-only "
            f"session: {EXECUTE_DISABLED}"
        )
    if code in _PRIVILEGE:
        who = f" {user}" if user else ""
        return AccessDenied(f"{text}\nThe connecting user{who} lacks the privilege (reads need only SELECT).")
    if code == _SYNTAX and sql is not None:
        return InvalidInput(
            f"{text}\n(one statement per call: the connection refuses several statements at once)"
            if ";" in sql
            else text
        )
    if isinstance(exc, my_errors.ProgrammingError | my_errors.DataError) and code is None:
        return InvalidInput(f"parameters do not match the statement: {error_text(exc)}")
    return UpstreamError(text)
