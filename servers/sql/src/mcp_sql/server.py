"""mcp-sql: registers tools, resources, prompts and completions; the work is in the domain modules."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from mcp.types import CallToolResult, Completion, Resource, ResourceTemplateReference, TextContent
from mcp_batteries.app import BatteriesServer
from mcp_batteries.errors import AccessDenied, InvalidInput, NotFound
from mcp_batteries.live import LiveResources
from pydantic import Field

from mcp_sql import present
from mcp_sql.config import SqlSettings
from mcp_sql.database import Database, open_database
from mcp_sql.live import LiveSchema, parse_uri, schema_uri, table_uri
from mcp_sql.models import ExecuteResult, QueryResult
from mcp_sql.render import text_table
from mcp_sql.urls import parse_database_specs, redact_url

logger = logging.getLogger(__name__)

PAGE_SIZE = 100
MAX_COMPLETIONS = 100

INSTRUCTIONS = """SQL databases (SQLite / PostgreSQL). Start with list_tables (or the sql://{database}/schema
resource), then describe_table for columns, keys and indexes, then query. query is read-only and
paged: when a result says more rows exist, call again with the offset it names. Parameters:
SQLite uses ? or :name, PostgreSQL uses $1, $2. Tables are resources (sql://{database}/table/{schema}/{table})
that clients can subscribe to for live schema-change notifications."""

DatabaseArg = Annotated[
    str | None,
    Field(description="Database name (listed in the server instructions); optional with one database."),
]
ParamsArg = Annotated[
    list[Any] | dict[str, Any] | None,
    Field(description="Values: a list for ? or $1 placeholders, a dict for SQLite :name ones."),
]
SchemaArg = Annotated[
    str | None, Field(description="Schema name (default: all schemas / the search path; 'main' on SQLite).")
]


def build_server(settings: SqlSettings) -> BatteriesServer:
    specs = parse_database_specs([*settings.databases, *settings.db])
    writes = settings.writes_enabled
    open_dbs: dict[str, Database] = {}

    def databases() -> dict[str, Database]:
        return open_dbs

    def pick(name: str | None) -> Database:
        if not open_dbs:
            raise NotFound("the databases are not open (the server is starting or stopping)")
        if name is None:
            if len(open_dbs) == 1:
                return next(iter(open_dbs.values()))
            raise InvalidInput(
                f"several databases are configured; pass database= one of: {', '.join(open_dbs)}"
            )
        db = open_dbs.get(name)
        if db is None:
            raise NotFound(f"no database named {name!r}; configured: {', '.join(open_dbs)}")
        return db

    async def check_subscription(session: Any, uri: str) -> None:
        parsed = parse_uri(uri)
        if parsed is None:
            raise InvalidInput(
                "subscribable URIs are sql://{database}/schema and sql://{database}/table/{schema}/{table}"
            )
        name, schema, table = parsed
        db = pick(name)
        if table is not None:
            await db.describe_table(table, schema)

    databases_list = ", ".join(f"{n} ({redact_url(u)})" for n, u in specs.items())
    server = BatteriesServer(
        settings,
        title="SQL",
        instructions=INSTRUCTIONS
        + f"\nDatabases: {databases_list}."
        + ("" if writes else " Read-only: no tool changes data."),
        subscriptions=check_subscription,
    )

    @asynccontextmanager
    async def open_all() -> AsyncIterator[None]:
        try:
            for name, url in specs.items():
                db = await open_database(
                    name, url, allow_write=writes,
                    statement_timeout_s=settings.statement_timeout, max_rows=settings.max_rows,
                )  # fmt: skip
                open_dbs[name] = db
                for note in db.safety_notes:
                    logger.info("%s: %s", name, note)
            yield
        finally:
            await close_all()

    async def close_all() -> None:
        dbs = list(open_dbs.values())
        open_dbs.clear()
        for db in dbs:
            try:
                await db.close()
            except Exception:
                logger.exception("closing %s failed", db.name)

    server.service(open_all)
    LiveResources(server, LiveSchema(databases, poll_interval=settings.schema_poll_interval))

    # -- tools -------------------------------------------------------------------------------
    @server.tool(title="Run a read-only SQL query", read_only=True, idempotent=True)
    async def query(
        sql: Annotated[
            str, Field(description="One SELECT (or WITH/VALUES/read-only SHOW, PRAGMA) statement.")
        ],
        params: ParamsArg = None,
        database: DatabaseArg = None,
        limit: Annotated[
            int | None, Field(ge=1, description="Rows per page (capped by the server's max rows).")
        ] = None,
        offset: Annotated[
            int, Field(ge=0, description="Rows to skip: pass next_offset from the previous page.")
        ] = 0,
    ) -> Annotated[CallToolResult, QueryResult]:
        """Run one read-only SQL statement and return a page of rows as a text table (structured
        output: columns, rows, row_count, truncated, next_offset). Writes, DDL and multiple
        statements are refused here. When truncated, call again with offset=next_offset. Unsure of
        table or column names? Call list_tables / describe_table first."""
        db = pick(database)
        result = await db.query(
            sql, params, limit=min(limit or settings.max_rows, settings.max_rows), offset=offset
        )
        return CallToolResult(
            content=[TextContent(type="text", text=text_table(result))],
            structured_content=result.to_json(),
        )

    if writes:

        @server.tool(title="Execute SQL that changes data", read_only=False, destructive=True)
        async def execute(
            statements: Annotated[
                list[str],
                Field(
                    min_length=1, description="SQL statements (INSERT, UPDATE, DELETE, DDL), one per item."
                ),
            ],
            params: Annotated[
                list[Any] | dict[str, Any] | None,
                Field(description="One statement: its values. Several: a list with one entry per statement."),
            ] = None,
            database: DatabaseArg = None,
            transaction: Annotated[
                bool,
                Field(description="All statements in one transaction (needed for several)."),
            ] = True,
        ) -> Annotated[CallToolResult, ExecuteResult]:
            """Execute statements that change data or schema and report rows affected (and RETURNING
            rows, capped). With transaction=true all statements commit together or none does. There
            is no undo: check with query first. Use query for reads."""
            result = await pick(database).execute(statements, params, transaction=transaction)
            return CallToolResult(
                content=[TextContent(type="text", text=present.execute_text(result))],
                structured_content=result.model_dump(mode="json"),
            )

    @server.tool(title="List schemas", read_only=True, structured_output=False)
    async def list_schemas(database: DatabaseArg = None) -> str:
        """List the database's schemas (namespaces) with their table counts. SQLite has one,
        'main'. Next: list_tables."""
        db = pick(database)
        return present.schemas_text(db.name, await db.list_schemas())

    @server.tool(title="List tables and views", read_only=True, structured_output=False)
    async def list_tables(schema: SchemaArg = None, database: DatabaseArg = None) -> str:
        """List tables and views (schema.name, kind, approximate row count, comment). Next:
        describe_table for the columns of the ones you need."""
        db = pick(database)
        return present.tables_text(db.name, await db.list_tables(schema))

    @server.tool(title="Describe table", read_only=True, structured_output=False)
    async def describe_table(
        table: Annotated[str, Field(description="Table or view name (unquoted).")],
        schema: SchemaArg = None,
        database: DatabaseArg = None,
    ) -> str:
        """Describe a table or view as DDL: columns and types, nullability, defaults, primary and
        foreign keys, indexes, checks, comments and a row estimate. Next: query it."""
        desc = await pick(database).describe_table(table, schema)
        return desc.ddl

    @server.tool(title="Explain query plan", read_only=True, structured_output=False)
    async def explain(
        sql: Annotated[str, Field(description="The statement to explain.")],
        database: DatabaseArg = None,
        analyze: Annotated[
            bool,
            Field(
                description="Actually run it and report real timings (only when the server allows writes)."
            ),
        ] = False,
    ) -> str:
        """Show the query plan of a statement (EXPLAIN; SQLite: EXPLAIN QUERY PLAN) to find slow
        scans and missing indexes. analyze=true runs the statement and is only allowed when the
        server was started with --allow-write."""
        if analyze and not writes:
            raise AccessDenied(
                "analyze runs the statement; this server is read-only (start it with --allow-write)"
            )
        return await pick(database).explain(sql, analyze=analyze)

    # -- resources ---------------------------------------------------------------------------
    @server.resource(
        "sql://{database}/schema",
        name="database-schema",
        title="Database schema",
        description="Every table and view of a database as DDL; subscribe to hear about schema changes.",
        mime_type="text/plain",
    )
    async def schema_resource(database: str) -> str:
        db = pick(database)
        parts = [f"-- database {db.name} ({db.dialect})"]
        for t in await db.list_tables():
            parts.append((await db.describe_table(t.name, t.schema_name)).ddl)
        return "\n\n".join(parts)

    @server.resource(
        "sql://{database}/table/{schema}/{table}",
        name="table",
        title="Table",
        description="One table or view as DDL (columns, keys, indexes); subscribe to hear when it changes.",
        mime_type="text/plain",
    )
    async def table_resource(database: str, schema: str, table: str) -> str:
        return (await pick(database).describe_table(table, schema)).ddl

    async def list_table_resources(session: Any, cursor: str | None) -> tuple[list[Resource], str | None]:
        try:
            start = int(cursor) if cursor else 0
        except ValueError:
            raise InvalidInput(f"invalid cursor {cursor!r}") from None
        resources: list[Resource] = []
        for name, db in open_dbs.items():
            resources.append(Resource(uri=schema_uri(name), name=f"{name} schema", mime_type="text/plain"))
            for t in await db.list_tables():
                resources.append(
                    Resource(uri=table_uri(name, t.schema_name, t.name), name=f"{t.schema_name}.{t.name}",
                             title=f"{t.kind} {t.schema_name}.{t.name} in {name}", mime_type="text/plain",
                             description=t.comment)
                )  # fmt: skip
        page = resources[start : start + PAGE_SIZE]
        more = start + PAGE_SIZE < len(resources)
        return page, str(start + PAGE_SIZE) if more else None

    server.list_resources_with(list_table_resources)

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        if not isinstance(ref, ResourceTemplateReference) or not str(ref.uri).startswith("sql://"):
            return None
        known = dict((context.arguments or {}) if context is not None else {})
        prefix = argument.value or ""
        if argument.name == "database":
            values = list(open_dbs)
        elif argument.name in {"schema", "table"}:
            name = known.get("database") or (next(iter(open_dbs)) if len(open_dbs) == 1 else None)
            db = open_dbs.get(name or "")
            if db is None:
                return Completion(values=[])
            if argument.name == "schema":
                values = [s.name for s in await db.list_schemas()]
            else:
                values = [t.name for t in await db.list_tables(known.get("schema"))]
        else:
            return None
        matches = sorted(v for v in values if v.startswith(prefix))
        return Completion(values=matches[:MAX_COMPLETIONS], has_more=len(matches) > MAX_COMPLETIONS)

    # -- prompts -----------------------------------------------------------------------------
    def target(database: str | None) -> str:
        return f"database {database!r}" if database else "the configured database"

    @server.prompt(title="Explore a database")
    def explore_database(database: str | None = None) -> str:
        """Get an overview of a database: its tables, keys and what the data looks like."""
        return (
            f"Explore {target(database)}. Call list_schemas and list_tables (or read the resource "
            f"sql://{database or '{database}'}/schema), then describe_table for the main tables to learn "
            "columns, primary and foreign keys. Sample a few rows with query (use a small limit). "
            "Summarise what each table holds and how the tables relate."
        )

    @server.prompt(title="Write a SQL query")
    def write_query(question: str, database: str | None = None) -> str:
        """Turn a question into a SQL query against the real schema, run it, and answer."""
        return (
            f"Answer this question with SQL against {target(database)}:\n\n{question}\n\n"
            "First find the relevant tables with list_tables and check their exact columns with "
            "describe_table; do not guess names. Write one read-only SELECT, pass values as params "
            "(SQLite: ? or :name, PostgreSQL: $1, $2) rather than inlining them, and run it with query. "
            "If the result is truncated, page with offset or aggregate instead. Show the SQL and the answer."
        )

    @server.prompt(title="Explain a slow query")
    def explain_slow_query(sql: str, database: str | None = None) -> str:
        """Find out why a query is slow and suggest indexes or rewrites."""
        return (
            f"This query is slow on {target(database)}:\n\n{sql}\n\n"
            "Call explain with it to get the plan, and describe_table for each table it touches to see "
            "existing indexes and row estimates. Identify full scans, bad join orders or sorts that an "
            "index would avoid, and propose concrete CREATE INDEX statements or query rewrites, "
            "explaining the expected effect."
        )

    return server
