"""The engine-neutral database interface and `open_database`.

Parameters for `query` (and statements of `execute`):
    SQLite:     `?` placeholders with a list, or `:name` placeholders with a dict.
    PostgreSQL: `$1, $2, ...` placeholders with a list (dicts are refused). Strings are converted to
                the parameter's type where PostgreSQL expects a date/time, number, uuid or json.
`execute(statements, params, transaction=...)`:
    one statement: `params` is that statement's list/dict;
    several statements (only with transaction=True): `params` is None or a list with one entry
    (list, dict or None) per statement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from mcp_batteries.errors import InvalidInput

from mcp_sql.models import ExecuteResult, QueryResult, SchemaInfo, TableDescription, TableInfo
from mcp_sql.urls import default_database_path, ensure_sqlite_file, parse_url, redact_url

Params = list[Any] | dict[str, Any] | None


@runtime_checkable
class Database(Protocol):
    # Read-only properties so that engines may narrow them (dialect: Literal["sqlite"]).
    @property
    def name(self) -> str: ...
    @property
    def dialect(self) -> Literal["sqlite", "postgresql"]: ...
    @property
    def url_redacted(self) -> str:
        """The URL without its password."""

    @property
    def allow_write(self) -> bool: ...
    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite file to watch (also watch its -wal); None for PostgreSQL."""

    @property
    def safety_notes(self) -> list[str]:
        """Which read-only walls are active, for the server's start-up log."""

    async def close(self) -> None: ...

    async def query(self, sql: str, params: Params = None, *, limit: int, offset: int = 0) -> QueryResult: ...

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult: ...

    async def list_schemas(self) -> list[SchemaInfo]: ...

    async def list_tables(self, schema: str | None = None) -> list[TableInfo]: ...

    async def describe_table(self, table: str, schema: str | None = None) -> TableDescription: ...

    async def explain(self, sql: str, *, analyze: bool = False) -> str: ...

    async def schema_fingerprint(self) -> str: ...

    async def table_fingerprints(self) -> dict[str, str]: ...


async def open_database(
    name: str,
    url: str,
    *,
    allow_write: bool,
    statement_timeout_s: float,
    max_rows: int,
    pg_reader_role: str | None = "mcp_sql_reader",
) -> Database:
    """Connect to the database named by `url` (see urls.py for the accepted forms).

    `max_rows` caps every page of `query` (a larger `limit` is clamped) and RETURNING rows of
    `execute`. `pg_reader_role`: the NOLOGIN read-only role PostgreSQL reads switch to (created when
    the connecting role may); None disables that wall.
    """
    if statement_timeout_s <= 0:
        raise InvalidInput("statement_timeout_s must be positive")
    if max_rows < 1:
        raise InvalidInput("max_rows must be at least 1")
    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        from mcp_sql.sqlite_engine import SQLiteDatabase

        assert parsed.sqlite_path is not None
        if parsed.sqlite_path == default_database_path().resolve():
            ensure_sqlite_file(parsed.sqlite_path)
        return await SQLiteDatabase.open(
            name,
            parsed.sqlite_path,
            allow_write=allow_write,
            statement_timeout_s=statement_timeout_s,
            max_rows=max_rows,
        )
    from mcp_sql.postgres_engine import PostgresDatabase

    assert parsed.dsn is not None
    return await PostgresDatabase.open(
        name,
        parsed.dsn,
        url_redacted=redact_url(parsed.dsn),
        allow_write=allow_write,
        statement_timeout_s=statement_timeout_s,
        max_rows=max_rows,
        reader_role=pg_reader_role,
    )
