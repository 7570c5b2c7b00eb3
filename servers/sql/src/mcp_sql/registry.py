"""The configured databases of one server: opened for its life, picked by name, offered as resources.

`Databases` is what the tools, resources, completions and subscriptions of server.py reach the
databases through. Names that are not clean text (control characters, bytes that are not UTF-8)
are shown in the quoted form of `mcp_batteries.safety` and accepted back in that form.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mcp_batteries.errors import AccessDenied, InvalidInput, NotFound
from mcp_batteries.safety import quote_name, redact_url, unquote_name
from mcp_batteries.server import cursor_offset

from mcp_sql import present
from mcp_sql.config import SqlSettings
from mcp_sql.database import Database, open_database
from mcp_sql.render import safe_text
from mcp_sql.uris import parse_uri, schema_uri, table_uri
from mcp_sql.urls import check_sqlite_file, parse_database_specs, parse_url

logger = logging.getLogger(__name__)

#: Resources per `resources/list` page.
RESOURCE_PAGE_SIZE = 100
#: Completion values per answer.
MAX_COMPLETIONS = 100


@dataclass(frozen=True)
class ResourceEntry:
    """One listed resource (server.py turns it into the protocol's Resource)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str = "text/plain"


class Databases:
    """The databases named in the settings; open while the server runs (`open_all`)."""

    def __init__(self, settings: SqlSettings) -> None:
        self._settings = settings
        self._specs = parse_database_specs([*settings.databases, *settings.db])
        for url in self._specs.values():
            parsed = parse_url(url)
            if parsed.sqlite_path is not None:
                check_sqlite_file(parsed.sqlite_path)
        self._open: dict[str, Database] = {}

    @property
    def writes(self) -> bool:
        return self._settings.writes_enabled

    def summary(self) -> str:
        """The configured databases for the server's instructions (passwords redacted)."""
        return ", ".join(f"{n} ({redact_url(u)})" for n, u in self._specs.items())

    def opened(self) -> dict[str, Database]:
        """The open databases by name (empty before start-up and after shutdown)."""
        return self._open

    @asynccontextmanager
    async def open_all(self) -> AsyncIterator[Databases]:
        """Open every configured database for the server's life; close them all at the end."""
        s = self._settings
        try:
            for name, url in self._specs.items():
                db = await open_database(
                    name, url, allow_write=self.writes, statement_timeout_s=s.statement_timeout,
                    max_rows=s.max_rows, max_value_bytes=s.max_value_bytes, max_reply_bytes=s.max_reply_bytes,
                )  # fmt: skip
                self._open[name] = db
                for note in db.safety_notes:
                    logger.info("%s: %s", name, note)
            yield self
        finally:
            dbs = list(self._open.values())
            self._open.clear()
            for db in dbs:
                try:
                    await db.close()
                except Exception:
                    logger.exception("closing %s failed", db.name)

    def pick(self, name: str | None) -> Database:
        """The database called `name`; the only one when `name` is None."""
        if not self._open:
            raise NotFound("the databases are not open (the server is starting or stopping)")
        if name is None:
            if len(self._open) == 1:
                return next(iter(self._open.values()))
            raise InvalidInput(
                f"several databases are configured; pass database= one of: {', '.join(self._open)}"
            )
        db = self._open.get(name)
        if db is None:
            raise NotFound(f"no database named {name!r}; configured: {', '.join(self._open)}")
        return db

    # -- tools whose answer is text ------------------------------------------------------------
    async def tables_text(self, database: str | None, schema: str | None, offset: int, limit: int) -> str:
        """One page of list_tables: names, kinds, row counts (exact or estimated, and said which)."""
        db = self.pick(database)
        page = await db.table_page(_name_arg(schema), offset, limit)
        shown = len(page.tables)
        next_offset = offset + shown if offset + shown < page.total else None
        return present.tables_text(
            db.name, page.tables, offset=offset, total=page.total, next_offset=next_offset, note=page.note
        )

    async def describe(self, database: str | None, table: str, schema: str | None) -> str:
        desc = await self.pick(database).describe_table(unquote_name(table), _name_arg(schema))
        return safe_text(desc.ddl)

    async def explain(self, database: str | None, sql: str, *, analyze: bool) -> str:
        if analyze and not self.writes:
            raise AccessDenied(
                "analyze runs the statement; this server is read-only (start it with --allow-write)"
            )
        return safe_text(await self.pick(database).explain(sql, analyze=analyze))

    # -- resources -----------------------------------------------------------------------------
    async def check_subscription(self, session: Any, uri: str) -> None:
        parsed = parse_uri(uri)
        if parsed is None:
            raise InvalidInput(
                "subscribable URIs are sql://{database}/schema and sql://{database}/table/{schema}/{table}"
            )
        name, schema, table = parsed
        db = self.pick(name)
        if table is not None:
            await db.describe_table(table, schema)

    async def schema_text(self, database: str) -> str:
        """Every table and view of `database` as DDL (the sql://{database}/schema resource)."""
        db = self.pick(database)
        parts = [f"-- database {db.name} ({db.dialect})"]
        for t in await db.list_tables():
            parts.append((await db.describe_table(t.name, t.schema_name)).ddl)
        return safe_text("\n\n".join(parts))

    async def table_text(self, database: str, schema: str, table: str) -> str:
        return safe_text((await self.pick(database).describe_table(table, schema)).ddl)

    async def resources_page(self, cursor: str | None) -> tuple[list[ResourceEntry], str | None]:
        """One page of resources/list: each database's schema, then its tables and views."""
        start = cursor_offset(cursor)
        entries: list[ResourceEntry] = []
        for name, db in self._open.items():
            entries.append(ResourceEntry(uri=schema_uri(name), name=f"{quote_name(name)} schema"))
            for t in await db.list_tables():
                shown = f"{quote_name(t.schema_name)}.{quote_name(t.name)}"
                entries.append(
                    ResourceEntry(
                        uri=table_uri(name, t.schema_name, t.name),
                        name=shown,
                        title=f"{t.kind} {shown} in {quote_name(name)}",
                        description=t.comment,
                    )
                )
        end = start + RESOURCE_PAGE_SIZE
        return entries[start:end], str(end) if end < len(entries) else None

    async def complete(
        self, argument: str, prefix: str, known: dict[str, str]
    ) -> tuple[list[str], bool] | None:
        """Completion values for a resource template variable, and whether more match."""
        if argument == "database":
            values = list(self._open)
        elif argument in {"schema", "table"}:
            name = known.get("database") or (next(iter(self._open)) if len(self._open) == 1 else None)
            db = self._open.get(name or "")
            if db is None:
                return [], False
            if argument == "schema":
                values = [s.name for s in await db.list_schemas()]
            else:
                values = [t.name for t in await db.list_tables(known.get("schema"))]
        else:
            return None
        matches = sorted(v for v in map(quote_name, values) if v.startswith(prefix))
        return matches[:MAX_COMPLETIONS], len(matches) > MAX_COMPLETIONS


def _name_arg(name: str | None) -> str | None:
    return unquote_name(name) if name else name
