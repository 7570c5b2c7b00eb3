"""sqlite3 error -> BatteriesError, naming the wall that refused the statement."""

from __future__ import annotations

import sqlite3

from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, LimitExceeded, UpstreamError

from mcp_sql.engine_common import EXECUTE_DISABLED


def not_utf8(exc: sqlite3.Error) -> bool:
    """Whether sqlite3 failed to decode a TEXT value (or name) as UTF-8."""
    return "could not decode to utf-8" in str(exc).lower()


def map_sqlite_error(
    exc: sqlite3.Error, *, timed_out: bool, timeout_s: float, last_denial: str | None
) -> BatteriesError:
    """`timed_out`: the progress handler stopped the statement; `last_denial`: the authorizer's reason."""
    message = str(exc)
    lowered = message.lower()
    if isinstance(exc, sqlite3.ProgrammingError) and "one statement at a time" in lowered:
        return InvalidInput("found several statements; send exactly one statement per call")
    if timed_out or "interrupted" in lowered:
        return LimitExceeded(
            f"the statement ran longer than the {timeout_s:g} s statement timeout and was stopped; "
            "narrow it with WHERE/LIMIT or avoid unbounded recursion"
        )
    if "not authorized" in lowered or "authorization denied" in lowered:
        return AccessDenied(last_denial or f"refused by the read-only policy: {message}")
    if "readonly database" in lowered or "query_only" in lowered:
        return AccessDenied("the database is opened read-only: " + EXECUTE_DISABLED)
    if isinstance(exc, sqlite3.ProgrammingError) and "binding" in lowered:
        return InvalidInput(f"parameters do not match the statement's placeholders: {message}")
    if isinstance(exc, sqlite3.InterfaceError):
        return InvalidInput(f"unsupported parameter value: {message}")
    code = getattr(exc, "sqlite_errorname", None)
    return UpstreamError(f"SQLite error{f' ({code})' if code else ''}: {message}")
