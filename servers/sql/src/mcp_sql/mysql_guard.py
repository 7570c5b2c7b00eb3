"""MySQL/MariaDB statement checks: the parser wall of MySQL reads, and the few rules of write mode.

The engine walls (mysql_pool.py) come first in what they guarantee; this layer refuses early and
clearly, and it is the only wall for what a READ ONLY transaction does not cover when the connecting
user holds the privilege (files, server administration; see docs/sql.md, "Which wall holds what").

Read mode accepts exactly one of: SELECT (WITH ..., UNION, TABLE t), SHOW ..., DESCRIBE/EXPLAIN
<table or SELECT> (no ANALYZE). Anywhere in the tree it refuses writes (INSERT ... SELECT in a CTE
included), SELECT ... INTO (OUTFILE, DUMPFILE, @variable), FOR UPDATE / LOCK IN SHARE MODE, user
variable assignments, and calls of DENIED_FUNCTIONS.

Before parsing, `hidden_code` reads the text the way the server's lexer does and refuses what a
parser that disagrees with it could miss: executable comments (`/*! ... */`, `/*M! ... */`, which
MySQL runs as code), optimizer hints (`/*+ MAX_EXECUTION_TIME(...) */` overrides the timeout), `--`
not followed by a space (a comment to some parsers, two minus signs to MySQL), and unterminated
strings or comments. The server's session runs without ANSI_QUOTES and NO_BACKSLASH_ESCAPES
(mysql_pool.py), so strings and quoted names are lexed here as the server lexes them.
"""

from __future__ import annotations

import functools
import itertools
import re

from mcp_batteries.errors import AccessDenied, InvalidInput
from sqlglot import Token, TokenType, exp

from mcp_sql.guard import (
    READ_ONLY_HINT,
    ReadStatement,
    describe_node,
    describe_statement,
    parse_statements,
    strip_statement,
    tokens_of,
)

MYSQL_READ_HINT = READ_ONLY_HINT.replace("VALUES, TABLE, SHOW or EXPLAIN", "TABLE, SHOW, DESCRIBE or EXPLAIN")

# Functions that reach outside the read (server files), hold server resources past the statement or
# wait on purpose (locks, sleeps: denial of service), or write (sequences).
DENIED_FUNCTIONS: frozenset[str] = frozenset(
    {
        # server files
        "load_file",
        # waiting and burning time on purpose
        "sleep", "benchmark", "master_pos_wait", "source_pos_wait", "master_gtid_wait",
        "wait_for_executed_gtid_set", "wait_until_sql_thread_after_gtids",
        # named locks outlive the statement
        "get_lock", "release_lock", "release_all_locks",
        # sequences (MariaDB): NEXTVAL/SETVAL write
        "nextval", "setval", "lastval",
        # common user-defined functions that run programs
        "sys_exec", "sys_eval", "lib_mysqludf_sys_info",
    }
)  # fmt: skip
WRITE_MODE_DENIED_FUNCTIONS: frozenset[str] = frozenset({"load_file", "sys_exec", "sys_eval"})

# Nodes that must not appear anywhere inside a read statement.
_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command,
    exp.TruncateTable, exp.Copy, exp.Into, exp.Lock, exp.Set, exp.Transaction, exp.Commit,
    exp.Rollback, exp.Use, exp.Analyze, exp.PropertyEQ,
)  # fmt: skip
_READ_ROOTS: tuple[type[exp.Expression], ...] = (exp.Select, exp.SetOperation, exp.Subquery)
_EXPLAIN_OPTIONS = re.compile(r"^\s*(?:(?:EXTENDED|PARTITIONS|FORMAT\s*=\s*\w+)\s+)*", re.IGNORECASE)
# Statements that MySQL commits implicitly (before and after): a batch cannot hold them.
IMPLICIT_COMMIT_WORDS = frozenset(
    {
        "CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "GRANT", "REVOKE", "LOCK", "UNLOCK",
        "INSTALL", "UNINSTALL", "ANALYZE", "OPTIMIZE", "REPAIR", "CHECK", "FLUSH", "RESET", "LOAD",
        "CACHE", "SET PASSWORD",
    }
)  # fmt: skip


def hidden_code(text: str) -> str | None:
    """Why `text` holds something the server would read differently from a parser, or None.

    A small lexer of MySQL's own rules: quotes ('...', "...", `...`, with doubled quotes and, in
    '...' and "...", backslash escapes), comments (/* */, #, and -- followed by a space or control
    character).
    """
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            j = i + 1
            while True:
                if j >= n:
                    return f"a {ch}-quoted string or name is not closed"
                if text[j] == "\\" and ch != "`":
                    j += 2
                    continue
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                return "a /* comment is not closed"
            body = text[i + 2 : end]
            if body.startswith("!") or body[:2].upper() == "M!":
                return (
                    "executable comments (/*! ... */, /*M! ... */) are refused: MySQL and MariaDB run "
                    "their content as SQL"
                )
            if body.startswith("+"):
                return "optimizer hints (/*+ ... */) are refused: they can lift the statement timeout"
            i = end + 2
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("--", i):
            after = text[i + 2 : i + 3]
            if after and after not in " \t\r\n\f\v":
                return (
                    "'--' followed by something other than a space is refused: MySQL reads it as two "
                    "minus signs, other parsers as a comment (write '- -' or '-- ' with a space)"
                )
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        else:
            i += 1
    return None


def function_denied(name: str, *, write_mode: bool = False) -> bool:
    lowered = name.lower().strip("`").rsplit(".", 1)[-1]
    return lowered in (WRITE_MODE_DENIED_FUNCTIONS if write_mode else DENIED_FUNCTIONS)


def _denied_function(name: str) -> AccessDenied:
    return AccessDenied(
        f"function {name.lower()}() is not allowed: it reads server files, waits or holds locks on "
        "purpose, or writes (sequences). Query tables and views directly instead."
    )


def _check_functions(tree: exp.Expression, tokens: list[Token]) -> None:
    for func in tree.find_all(exp.Func):
        names = [str(func.name)] if isinstance(func, exp.Anonymous) else [func.sql_name()]
        for name in names:
            if function_denied(name):
                raise _denied_function(name)
    # Any word followed by "(" (backquoted names included), whatever sqlglot made of the call.
    for prev, tok in itertools.pairwise(tokens):
        if tok.token_type == TokenType.L_PAREN and function_denied(prev.text):
            raise _denied_function(prev.text)
    words = [t.text.upper() for t in tokens]
    for a, b, c in zip(words, words[1:], words[2:], strict=False):
        if (a, b, c) == ("NEXT", "VALUE", "FOR"):
            raise AccessDenied("NEXT VALUE FOR writes the sequence; it is not allowed in a read")


def _check_text(text: str) -> None:
    if not text:
        raise InvalidInput("the SQL is empty; give one SELECT statement")
    problem = hidden_code(text)
    if problem:
        raise AccessDenied(f"{problem}. {MYSQL_READ_HINT}")


@functools.lru_cache(maxsize=256)
def check_mysql_read(sql: str) -> ReadStatement:
    """Accept one read-only MySQL statement or raise InvalidInput/AccessDenied saying why."""
    text = strip_statement(sql)
    _check_text(text)
    tokens = tokens_of(text, "mysql")
    if not tokens:
        raise InvalidInput("the SQL contains only comments; give one SELECT statement")
    statements = parse_statements(text, "mysql")
    if len(statements) != 1:
        raise InvalidInput(
            f"found {len(statements)} statements; send exactly one statement per call "
            "(transaction control such as COMMIT is not accepted)"
        )
    tree = statements[0]
    if isinstance(tree, exp.Show):
        return ReadStatement("show", text)
    if isinstance(tree, exp.Describe):
        inner = _explain_inner(text, tokens)
        if inner is None:  # DESCRIBE table
            return ReadStatement("show", text)
        check_mysql_read_plain(inner)
        return ReadStatement("explain", text, inner)
    _check_tree(tree, tokens)
    return ReadStatement("select", text)


def _explain_inner(text: str, tokens: list[Token]) -> str | None:
    """The statement an EXPLAIN/DESCRIBE explains (None for DESCRIBE of a table); no ANALYZE."""
    rest = text[tokens[0].end + 1 :]
    options = _EXPLAIN_OPTIONS.match(rest)
    body = rest[options.end() :] if options else rest
    first = body.lstrip().split(None, 1)[0].upper() if body.strip() else ""
    if first == "ANALYZE":
        raise AccessDenied(
            "EXPLAIN ANALYZE is not allowed here: it executes the statement. Use plain EXPLAIN (or the "
            "explain tool without analyze); analyze needs a server started with --allow-write"
        )
    if first in {"SELECT", "WITH", "TABLE", "(", ""} or body.lstrip().startswith("("):
        return body if first else None
    if first in {"INSERT", "UPDATE", "DELETE", "REPLACE"}:
        raise AccessDenied(f"EXPLAIN of {first} is refused here: {MYSQL_READ_HINT}")
    return None


def check_mysql_read_plain(sql: str) -> None:
    """Accept one SELECT statement (no SHOW/EXPLAIN wrapper)."""
    text = strip_statement(sql)
    _check_text(text)
    statements = parse_statements(text, "mysql")
    if len(statements) != 1:
        raise InvalidInput(f"found {len(statements)} statements; send exactly one statement per call")
    _check_tree(statements[0], tokens_of(text, "mysql"))


def _check_tree(tree: exp.Expression, tokens: list[Token]) -> None:
    if not isinstance(tree, _READ_ROOTS):
        raise AccessDenied(f"{describe_statement(tree)} is refused: {MYSQL_READ_HINT}")
    for node in tree.walk():
        if isinstance(node, exp.PropertyEQ):
            raise AccessDenied(f"assigning user variables (:=) is refused: {MYSQL_READ_HINT}")
        if isinstance(node, _FORBIDDEN_NODES):
            raise AccessDenied(f"{describe_node(node)} is refused inside a query: {MYSQL_READ_HINT}")
    _check_functions(tree, tokens)


def check_mysql_explain_target(sql: str, *, allow_write: bool) -> str:
    """The statement for the explain tool: read rules, or in write mode only the escape rules."""
    text = strip_statement(sql)
    if not allow_write:
        check_mysql_read_plain(text)
    else:
        check_mysql_write(text)
        if leading_words(text)[:1] and leading_words(text)[0] in IMPLICIT_COMMIT_WORDS:
            raise InvalidInput("explain takes SELECT, INSERT, UPDATE, DELETE or REPLACE statements")
    return text


def check_mysql_write(sql: str) -> None:
    """Write mode: refuse what reaches the server's files or hides code from these checks."""
    text = strip_statement(sql)
    if not text:
        raise InvalidInput("the SQL statement is empty")
    problem = hidden_code(text)
    if problem:
        raise AccessDenied(problem)
    tokens = tokens_of(text, "mysql")
    for prev, tok in itertools.pairwise(tokens):
        if tok.token_type == TokenType.L_PAREN and function_denied(prev.text, write_mode=True):
            raise AccessDenied(
                f"function {prev.text.lower()}() is not allowed even with --allow-write: it reads the "
                "database server's files or runs programs"
            )
    upper = [t.text.upper() for t in tokens if t.token_type not in {TokenType.STRING, TokenType.IDENTIFIER}]
    if "OUTFILE" in upper or "DUMPFILE" in upper or (upper[:2] == ["LOAD", "DATA"]) or upper[:1] == ["LOAD"]:
        raise AccessDenied(
            "reading or writing server files (SELECT ... INTO OUTFILE/DUMPFILE, LOAD DATA, LOAD XML) is "
            "not allowed; use INSERT statements with parameters"
        )


def leading_words(sql: str) -> list[str]:
    """The first two words of a statement, upper-cased (comments skipped)."""
    try:
        tokens = tokens_of(strip_statement(sql), "mysql")
    except InvalidInput:
        return []
    return [t.text.upper() for t in tokens[:2]]


def implicit_commit(sql: str) -> bool:
    """Whether MySQL commits implicitly around this statement (DDL, account and table maintenance)."""
    words = leading_words(sql)
    if not words:
        return False
    return words[0] in IMPLICIT_COMMIT_WORDS or " ".join(words) in IMPLICIT_COMMIT_WORDS
