"""mcp-sql: registers tools, resources, prompts and completions; the work is in the domain modules."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import (
    CallToolResult,
    Completion,
    PromptReference,
    Resource,
    ResourceTemplateReference,
    TextContent,
)
from mcp_batteries.live import LiveResources
from mcp_batteries.server import BatteriesServer, CacheHint, Consent, changes_wanted, note_change
from pydantic import Field

from mcp_sql import audited, losses, present
from mcp_sql.config import SqlSettings
from mcp_sql.live import LiveSchema
from mcp_sql.losses import Params
from mcp_sql.models import ExecuteResult
from mcp_sql.registry import Databases

TABLES_PAGE_SIZE = 200

INSTRUCTIONS = """SQL databases (SQLite / PostgreSQL / MySQL / MariaDB). Start with list_tables (or the sql://{database}/schema
resource), then describe_table for columns, keys and indexes, then query. query is read-only and
paged: when a result says more rows exist, call again with the offset it names; long values are cut
(the result says where; substr reads the rest). Parameters:
SQLite uses ? or :name, PostgreSQL uses $1, $2, MySQL and MariaDB use ?. Tables are resources (sql://{database}/table/{schema}/{table})
that clients can subscribe to for live schema-change notifications."""

DatabaseArg = Annotated[
    str | None,
    Field(description="Database name (listed in the server instructions); optional with one database."),
]
ParamsArg = Annotated[
    list[Any] | dict[str, Any] | None,
    Field(description="Values: a list for ? (SQLite, MySQL) or $1 placeholders, a dict for SQLite :name."),
]
SchemaArg = Annotated[
    str | None, Field(description="Schema name (default: all schemas / the search path; 'main' on SQLite).")
]


def build_server(settings: SqlSettings) -> BatteriesServer:
    databases = Databases(settings)
    writes = databases.writes
    server = BatteriesServer(
        settings,
        title="SQL",
        instructions=INSTRUCTIONS
        + f"\nDatabases: {databases.summary()}."
        + ("" if writes else " Read-only: no tool changes data."),
        subscriptions=databases.check_subscription,
    )
    server.service(databases.open_all)
    LiveResources(server, LiveSchema(databases.opened, poll_interval=settings.schema_poll_interval))

    # -- tools -------------------------------------------------------------------------------
    @server.tool(
        title="Run a read-only SQL query",
        read_only=True,
        idempotent=True,
        task_support="optional",
        paging="call it again with a smaller limit and offset, or select fewer columns",
    )
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
        structured: Annotated[
            bool,
            Field(
                description="Also return the page as structuredContent, for programs (the text is "
                "already the same JSON; sending both doubles the reply)."
            ),
        ] = False,
    ) -> CallToolResult:
        """Run one read-only SQL statement and return a page of rows as one JSON object: columns
        (name, type), rows as arrays in column order, row_count, truncated, next_offset, and a note
        saying what was cut. Pages are bounded in rows and bytes and long values are cut: when
        truncated, call again with offset=next_offset; read the rest of a cut value with
        substr(column, start, length). Writes, DDL and multiple statements are refused here. Unsure
        of table or column names? Call list_tables / describe_table first."""
        page = await databases.pick(database).query_page(
            sql, params, limit=limit or settings.max_rows, offset=offset
        )
        return CallToolResult(
            content=[TextContent(type="text", text=page.text)],
            structured_content=page.structured() if structured else None,
        )

    if writes:

        async def destruction(
            statements: list[str], params: Params, database: str | None, transaction: bool
        ) -> str | None:
            db = databases.pick(database)

            async def count(sql: str, values: Params) -> int | None:
                try:
                    result = await db.query(sql, values, limit=1)
                except Exception:
                    return None
                row = result.rows[0] if result.rows else None
                first = next(iter(row.values() if isinstance(row, dict) else row), None) if row else None
                return first if isinstance(first, int) else None

            return await losses.describe_execute(
                statements, params, db.dialect, db.name, count, transaction=transaction
            )

        @server.tool(
            title="Execute SQL that changes data",
            read_only=False,
            destructive=True,
            task_support="optional",
            confirm=destruction,
        )
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
            *,
            consent: Consent,
        ) -> Annotated[CallToolResult, ExecuteResult]:
            """Execute statements that change data or schema and report rows affected (and RETURNING
            rows, capped). With transaction=true all statements run in one transaction that the
            server begins and commits: all are kept or none is. Do not include COMMIT, ROLLBACK,
            BEGIN or SAVEPOINT (they are refused). transaction=false runs one statement on its own
            (for VACUUM, CREATE INDEX CONCURRENTLY). There is no undo: check with query first.
            DELETE, DROP, TRUNCATE and ALTER may first ask the user, naming the rows and objects
            they would destroy."""
            if not consent.go_ahead:
                refused = ExecuteResult(statements=[], transaction=transaction, committed=False)
                return CallToolResult(
                    content=[TextContent(type="text", text=consent.refusal)],
                    structured_content=refused.model_dump(mode="json"),
                )
            db = databases.pick(database)
            result = await db.execute(statements, params, transaction=transaction)
            if changes_wanted():
                for change in audited.execute_changes(statements, result, db.dialect, db.name):
                    note_change(**change)
            return CallToolResult(
                content=[TextContent(type="text", text=present.execute_text(result))],
                structured_content=result.model_dump(mode="json"),
            )

    @server.tool(title="List schemas", read_only=True, structured_output=False)
    async def list_schemas(database: DatabaseArg = None) -> str:
        """List the database's schemas (namespaces) with their table counts. SQLite has one,
        'main'. Next: list_tables."""
        db = databases.pick(database)
        return present.schemas_text(db.name, await db.list_schemas())

    @server.tool(title="List tables and views", read_only=True, structured_output=False)
    async def list_tables(
        schema: SchemaArg = None,
        database: DatabaseArg = None,
        offset: Annotated[
            int, Field(ge=0, description="Tables to skip: the offset a previous page named.")
        ] = 0,
        limit: Annotated[int, Field(ge=1, le=1000, description="Tables per page.")] = TABLES_PAGE_SIZE,
    ) -> str:
        """List tables and views (schema.name, kind, row count, comment), a page at a time. Row
        counts are exact (N), estimates from statistics (~N) or a lower bound (>=N). Next:
        describe_table for the columns of the ones you need."""
        return await databases.tables_text(database, schema, offset, limit)

    @server.tool(title="Describe table", read_only=True, structured_output=False)
    async def describe_table(
        table: Annotated[
            str, Field(description="Table or view name (unquoted, or as list_tables shows it).")
        ],
        schema: SchemaArg = None,
        database: DatabaseArg = None,
    ) -> str:
        """Describe a table or view as DDL: columns and types, nullability, defaults, primary and
        foreign keys, indexes, checks, comments and a row count. Next: query it."""
        return await databases.describe(database, table, schema)

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
        return await databases.explain(database, sql, analyze=analyze)

    # -- resources ---------------------------------------------------------------------------
    @server.resource(
        "sql://{database}/schema",
        name="database-schema",
        title="Database schema",
        description="Every table and view of a database as DDL; subscribe to hear about schema changes.",
        mime_type="text/plain",
    )
    async def schema_resource(database: str) -> str:
        return await databases.schema_text(database)

    @server.resource(
        "sql://{database}/table/{schema}/{table}",
        name="table",
        title="Table",
        description="One table or view as DDL (columns, keys, indexes); subscribe to hear when it changes.",
        mime_type="text/plain",
    )
    async def table_resource(database: str, schema: str, table: str) -> str:
        return await databases.table_text(database, schema, table)

    async def list_table_resources(session: Any, cursor: str | None) -> tuple[list[Resource], str | None]:
        entries, next_cursor = await databases.resources_page(cursor)
        return [Resource(**vars(e)) for e in entries], next_cursor

    # Schemas change rarely (migrations), and subscribers hear of each change at once; private:
    # what a database holds is for the callers allowed to use it.
    schema_hint = CacheHint(ttl_ms=60_000, scope="private")
    server.list_resources_with(list_table_resources, cache=schema_hint)
    server.cache(r"sql://.*", schema_hint)

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        # Template variables (database, schema, table) and every prompt's `database` argument.
        if isinstance(ref, PromptReference):
            if argument.name != "database":
                return None
        elif not isinstance(ref, ResourceTemplateReference) or not str(ref.uri).startswith("sql://"):
            return None
        known = dict((context.arguments or {}) if context is not None else {})
        found = await databases.complete(argument.name, argument.value or "", known)
        return None if found is None else Completion(values=found[0], has_more=found[1])

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
            "(SQLite: ? or :name, PostgreSQL: $1, $2, MySQL: ?) rather than inlining them, and run it "
            "with query. "
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
