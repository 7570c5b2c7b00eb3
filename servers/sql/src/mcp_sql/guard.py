"""Statement classification with sqlglot: the parser layer of the read-only defences.

This layer gives clear, early refusals. For PostgreSQL it is also a real wall for the things a
READ ONLY transaction does not stop (server-file functions, set_config, dblink, ...), but a parser
can disagree with the server's own lexer in corner cases, so it is never the only wall: the
engines add a READ ONLY transaction, a statement timeout, one statement per call and (PostgreSQL)
a read-only role; SQLite adds a read-only file handle, query_only and an authorizer.

PostgreSQL read mode accepts exactly one of: SELECT (incl. WITH ... SELECT, UNION/INTERSECT/EXCEPT,
TABLE t), VALUES, SHOW name, EXPLAIN [options] <one of those> (no ANALYZE). Anywhere in the tree it
refuses data-modifying statements (writable CTEs), SELECT INTO, FOR UPDATE/SHARE locks, and calls of
the functions in DENIED_FUNCTIONS / DENIED_PREFIXES. Function calls are found twice: in sqlglot's
tree (all Func nodes, including anonymous ones) and in the raw token stream (name followed by "(").
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
from dataclasses import dataclass
from typing import Literal

import sqlglot
from mcp_batteries.errors import AccessDenied, InvalidInput
from sqlglot import Token, TokenType, exp
from sqlglot.errors import ParseError, TokenError

# sqlglot logs a warning each time it falls back to an opaque Command; those statements are
# refused (or handled) here, so the warning is noise on the server's stderr.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

READ_ONLY_HINT = (
    "the query tool is read-only: it accepts one SELECT, WITH ... SELECT, VALUES, TABLE, SHOW or "
    "EXPLAIN (without ANALYZE) statement"
)

# Functions that reach outside the transaction (files, programs, other sessions, other servers),
# change session state that the read-only walls depend on, or run SQL hidden inside a string
# (which this guard cannot inspect: the string could call set_config('role', 'none', true)).
DENIED_FUNCTIONS: frozenset[str] = frozenset(
    {
        # session state: set_config can undo SET LOCAL ROLE / statement_timeout
        "set_config",
        # server files
        "pg_read_file", "pg_read_binary_file", "pg_stat_file", "pg_logdir_ls", "pg_current_logfile",
        # server control and other sessions
        "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_promote",
        "pg_switch_wal", "pg_create_restore_point", "pg_backup_start", "pg_backup_stop",
        "pg_start_backup", "pg_stop_backup", "pg_log_backend_memory_contexts",
        "pg_import_system_collations", "pg_notify",
        # sequences (nextval/setval write even though the transaction rolls back)
        "nextval", "setval",
        # large objects (server-side lo_import/lo_export touch the server's filesystem)
        "loread", "lowrite",
        # SQL text executed by the function, invisible to this guard
        "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml",
        "cursor_to_xmlschema", "ts_stat", "ts_rewrite", "crosstab", "crosstab2", "crosstab3",
        "crosstab4", "connectby", "xpath_table",
    }
)  # fmt: skip
DENIED_PREFIXES: tuple[str, ...] = (
    "pg_read_", "pg_ls_", "pg_file_", "lo_", "be_lo_", "dblink", "pg_advisory", "pg_try_advisory",
    "pg_stat_reset", "pg_replication_origin", "pg_logical_", "pg_create_", "pg_drop_replication",
    "pg_copy_", "pg_replication_slot", "pg_wal_replay", "binary_upgrade_", "pgr_",
)  # fmt: skip

# In write mode the operator allowed changes to the database, not to the server around it.
WRITE_MODE_DENIED_FUNCTIONS: frozenset[str] = frozenset(
    {"pg_read_file", "pg_read_binary_file", "pg_stat_file", "lo_import", "lo_export", "pg_ls_dir"}
)
WRITE_MODE_DENIED_PREFIXES: tuple[str, ...] = ("pg_read_", "pg_ls_", "pg_file_", "dblink")

# Nodes that must not appear anywhere inside a read statement.
_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command,
    exp.TruncateTable, exp.Copy, exp.Into, exp.Lock, exp.Set, exp.Transaction, exp.Commit,
    exp.Rollback, exp.Use, exp.Analyze,
)  # fmt: skip
_READ_ROOTS: tuple[type[exp.Expression], ...] = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery)

_EXPLAIN_WORDS = re.compile(r"^\s*((?:(?:ANALY[SZ]E|VERBOSE)\b\s*)*)", re.IGNORECASE)
_SHOW_ARG = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.$]*|\"[^\"]+\")\s*;?\s*$")


@dataclass(frozen=True)
class ReadStatement:
    kind: Literal["select", "show", "explain"]
    sql: str
    """The statement with trailing semicolons and whitespace removed."""
    inner: str | None = None
    """For EXPLAIN: the explained statement."""


def strip_statement(sql: str) -> str:
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text


def function_denied(name: str, *, write_mode: bool = False) -> bool:
    lowered = name.lower().rsplit(".", 1)[-1]
    if write_mode:
        return lowered in WRITE_MODE_DENIED_FUNCTIONS or lowered.startswith(WRITE_MODE_DENIED_PREFIXES)
    return lowered in DENIED_FUNCTIONS or lowered.startswith(DENIED_PREFIXES)


def tokens_of(sql: str, dialect: str) -> list[Token]:
    try:
        return list(sqlglot.Dialect.get_or_raise(dialect).tokenize(sql))
    except TokenError as exc:
        raise InvalidInput(f"could not read the SQL: {exc}; check quoting and dollar-quoted strings") from exc


def parse_statements(sql: str, dialect: str) -> list[exp.Expression]:
    try:
        parsed = sqlglot.parse(sql, read=dialect)
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0]
        raise InvalidInput(
            f"the read-only guard could not parse this statement ({first}); only statements it fully "
            "understands are run in read-only mode — simplify the syntax or split the query"
        ) from exc
    return [p for p in parsed if isinstance(p, exp.Expression)]


def _func_names(node: exp.Func) -> list[str]:
    if isinstance(node, exp.Anonymous):
        return [str(node.name)]
    names = [node.sql_name()]
    names.extend(type(node).sql_names())
    return names


def check_functions(tree: exp.Expression, tokens: list[Token], *, write_mode: bool) -> None:
    for func in tree.find_all(exp.Func):
        for name in _func_names(func):
            if function_denied(name, write_mode=write_mode):
                raise _denied_function(name)
    # The token scan does not depend on how sqlglot models a call: any word followed by "(".
    for prev, tok in itertools.pairwise(tokens):
        if tok.token_type == TokenType.L_PAREN and function_denied(prev.text, write_mode=write_mode):
            raise _denied_function(prev.text)


def _denied_function(name: str) -> AccessDenied:
    return AccessDenied(
        f"function {name.lower()}() is not allowed: it reaches outside the read-only transaction "
        "(server files, other sessions or servers, session settings, sequences, or SQL hidden in a "
        "string). Query tables and views directly instead."
    )


# Both checks are pure functions of the SQL text, and a model pages through a result by sending the
# same statement again with another offset: statements that passed are remembered (refusals are
# exceptions, which are not cached).
@functools.lru_cache(maxsize=256)
def check_postgres_read(sql: str) -> ReadStatement:
    """Accept one read-only PostgreSQL statement or raise InvalidInput/AccessDenied saying why."""
    text = strip_statement(sql)
    if not text:
        raise InvalidInput("the SQL is empty; give one SELECT statement")
    tokens = tokens_of(text, "postgres")
    if not tokens:
        raise InvalidInput("the SQL contains only comments; give one SELECT statement")
    first = tokens[0]
    if first.text.upper() == "SHOW" and first.token_type in {TokenType.SHOW, TokenType.COMMAND}:
        rest = text[first.end + 1 :]
        if not _SHOW_ARG.match(rest):
            raise InvalidInput("SHOW takes one setting name (or ALL), e.g. SHOW search_path")
        return ReadStatement("show", text)
    if first.text.upper() == "EXPLAIN" and first.token_type == TokenType.COMMAND:
        inner = _explain_inner(text[first.end + 1 :], allow_analyze=False)
        check_postgres_read_plain(inner)
        return ReadStatement("explain", text, inner)
    check_postgres_read_plain(text, tokens)
    return ReadStatement("select", text)


def _explain_inner(rest: str, *, allow_analyze: bool) -> str:
    """Split EXPLAIN's options from the explained statement; refuse ANALYZE unless allowed."""
    body = rest.lstrip()
    options = ""
    if body.startswith("("):
        close = body.find(")")
        if close < 0:
            raise InvalidInput("EXPLAIN options are missing their closing parenthesis")
        options, body = body[1:close], body[close + 1 :]
    else:
        match = _EXPLAIN_WORDS.match(body)
        if match:
            options, body = match.group(1), body[match.end() :]
    if not allow_analyze and re.search(r"ANALY[SZ]E", options, re.IGNORECASE):
        raise AccessDenied(
            "EXPLAIN ANALYZE is not allowed here: it executes the statement. Use plain EXPLAIN (or the "
            "explain tool without analyze); EXPLAIN ANALYZE needs a server started with --allow-write"
        )
    if not body.strip():
        raise InvalidInput("EXPLAIN needs a statement to explain")
    return body


def check_postgres_read_plain(sql: str, tokens: list[Token] | None = None) -> None:
    """Accept one SELECT/VALUES/TABLE statement (no SHOW/EXPLAIN wrapper)."""
    text = strip_statement(sql)
    tokens = tokens if tokens is not None else tokens_of(text, "postgres")
    statements = parse_statements(text, "postgres")
    if len(statements) != 1:
        raise InvalidInput(
            f"found {len(statements)} statements; send exactly one statement per call "
            "(transaction control such as COMMIT is not accepted)"
        )
    tree = statements[0]
    if not isinstance(tree, _READ_ROOTS):
        raise AccessDenied(f"{describe_statement(tree)} is refused: {READ_ONLY_HINT}")
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise AccessDenied(f"{describe_node(node)} is refused inside a query: {READ_ONLY_HINT}")
    check_functions(tree, tokens, write_mode=False)


def check_postgres_explain_target(sql: str, *, allow_write: bool) -> str:
    """The statement for the explain tool: read rules, or in write mode only the escape rules."""
    text = strip_statement(sql)
    if not allow_write:
        check_postgres_read_plain(text)
    else:
        check_postgres_write(text)
    return text


def check_postgres_write(sql: str) -> None:
    """Write mode: one statement; refuse server-file/program escapes where the parser can see them."""
    text = strip_statement(sql)
    if not text:
        raise InvalidInput("the SQL statement is empty")
    tokens = tokens_of(text, "postgres")
    for prev, tok in itertools.pairwise(tokens):
        if tok.token_type == TokenType.L_PAREN and function_denied(prev.text, write_mode=True):
            raise AccessDenied(
                f"function {prev.text.lower()}() is not allowed even with --allow-write: it reads or "
                "writes the database server's filesystem or opens connections to other servers"
            )
    words = [t.text.upper() for t in tokens[:1]]
    if words and words[0] == "COPY":
        upper = " ".join(t.text.upper() for t in tokens)
        if "PROGRAM" in upper or any(t.token_type == TokenType.STRING for t in tokens):
            raise AccessDenied(
                "COPY to or from a server file or PROGRAM is not allowed; use INSERT statements (or "
                "COPY ... FROM STDIN from a client outside this server)"
            )


@functools.lru_cache(maxsize=256)
def sqlite_precheck(sql: str, *, read_only: bool) -> None:
    """Clearer errors before SQLite's authorizer (the actual wall) sees the statement."""
    text = strip_statement(sql)
    if not text:
        raise InvalidInput("the SQL is empty; give one statement")
    try:
        statements = [s for s in sqlglot.parse(text, read="sqlite") if isinstance(s, exp.Expression)]
    except (ParseError, TokenError):
        return  # sqlglot does not know every SQLite extension; SQLite itself will judge it
    if len(statements) > 1:
        raise InvalidInput(
            f"found {len(statements)} statements; send exactly one statement per call"
            + ("" if read_only else " (use execute with transaction=true for several)")
        )
    if not read_only or not statements:
        return
    tree = statements[0]
    if isinstance(tree, exp.Command | exp.Pragma):
        return  # EXPLAIN QUERY PLAN / read pragmas: the authorizer decides precisely
    if not isinstance(tree, _READ_ROOTS):
        raise AccessDenied(
            f"{describe_statement(tree)} is refused: {READ_ONLY_HINT.replace('SHOW', 'PRAGMA')}"
        )
    for node in tree.walk():
        if isinstance(node, exp.Insert | exp.Update | exp.Delete | exp.Create | exp.Drop):
            raise AccessDenied(f"{describe_node(node)} is refused inside a query: {READ_ONLY_HINT}")


def describe_statement(tree: exp.Expression) -> str:
    if isinstance(tree, exp.Command):
        return f"{str(tree.this).upper()} statement"
    names = {
        exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Merge: "MERGE",
        exp.Create: "CREATE", exp.Drop: "DROP", exp.Alter: "ALTER", exp.TruncateTable: "TRUNCATE",
        exp.Copy: "COPY", exp.Set: "SET", exp.Transaction: "BEGIN", exp.Commit: "COMMIT",
        exp.Rollback: "ROLLBACK", exp.Analyze: "ANALYZE", exp.Attach: "ATTACH", exp.Detach: "DETACH",
    }  # fmt: skip
    for cls, label in names.items():
        if isinstance(tree, cls):
            return f"a {label} statement"
    return "this statement"


def describe_node(node: exp.Expression) -> str:
    if isinstance(node, exp.Into):
        return "SELECT ... INTO (creates a table)"
    if isinstance(node, exp.Lock):
        return "FOR UPDATE/SHARE (takes row locks)"
    return describe_statement(node)
