"""SQLite authorizer policies: the engine-level wall for SQLite.

sqlite3 calls the authorizer while it compiles every statement, so a refusal here happens before
anything runs, whatever the SQL text looks like. Read policy: reading tables, calling functions
(except the denied ones) and an allow-list of reading pragmas; everything else is refused (writes,
DDL, ATTACH/DETACH — which VACUUM INTO also needs —, transactions, writing pragmas). Write policy:
everything except what escapes the database file (ATTACH/DETACH, load_extension, fts3_tokenizer,
writable_schema and temp_store_directory) and transaction control (the server owns each batch's
transaction).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Literal

from mcp_sql.batch_guard import BATCH_IS_ONE_TRANSACTION

# Pragmas that only report; with an argument only where the argument names what to report on.
READ_PRAGMAS: frozenset[str] = frozenset(
    {
        "application_id", "auto_vacuum", "busy_timeout", "cache_size", "collation_list",
        "compile_options", "data_version", "database_list", "encoding", "foreign_keys",
        "freelist_count", "function_list", "journal_mode", "module_list", "page_count",
        "page_size", "pragma_list", "query_only", "schema_version", "user_version",
        "synchronous", "temp_store", "max_page_count", "recursive_triggers", "case_sensitive_like",
    }
)  # fmt: skip
READ_PRAGMAS_WITH_ARGUMENT: frozenset[str] = frozenset(
    {
        "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
        "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
    }
)  # fmt: skip
DENIED_FUNCTIONS: frozenset[str] = frozenset(
    {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"}
)
WRITE_MODE_DENIED_PRAGMAS: frozenset[str] = frozenset(
    {"writable_schema", "temp_store_directory", "data_store_directory"}
)
_READ_ACTIONS = (
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
)
_SCHEMA_TABLES = {"sqlite_master", "sqlite_temp_master", "sqlite_schema", "sqlite_temp_schema"}

_ACTION_NAMES: dict[int, str] = {
    sqlite3.SQLITE_CREATE_INDEX: "CREATE INDEX",
    sqlite3.SQLITE_CREATE_TABLE: "CREATE TABLE",
    sqlite3.SQLITE_CREATE_TEMP_INDEX: "CREATE TEMP INDEX",
    sqlite3.SQLITE_CREATE_TEMP_TABLE: "CREATE TEMP TABLE",
    sqlite3.SQLITE_CREATE_TEMP_TRIGGER: "CREATE TEMP TRIGGER",
    sqlite3.SQLITE_CREATE_TEMP_VIEW: "CREATE TEMP VIEW",
    sqlite3.SQLITE_CREATE_TRIGGER: "CREATE TRIGGER",
    sqlite3.SQLITE_CREATE_VIEW: "CREATE VIEW",
    sqlite3.SQLITE_DELETE: "DELETE",
    sqlite3.SQLITE_DROP_INDEX: "DROP INDEX",
    sqlite3.SQLITE_DROP_TABLE: "DROP TABLE",
    sqlite3.SQLITE_DROP_TEMP_INDEX: "DROP INDEX",
    sqlite3.SQLITE_DROP_TEMP_TABLE: "DROP TABLE",
    sqlite3.SQLITE_DROP_TEMP_TRIGGER: "DROP TRIGGER",
    sqlite3.SQLITE_DROP_TEMP_VIEW: "DROP VIEW",
    sqlite3.SQLITE_DROP_TRIGGER: "DROP TRIGGER",
    sqlite3.SQLITE_DROP_VIEW: "DROP VIEW",
    sqlite3.SQLITE_INSERT: "INSERT",
    sqlite3.SQLITE_UPDATE: "UPDATE",
    sqlite3.SQLITE_TRANSACTION: "transaction control",
    sqlite3.SQLITE_ALTER_TABLE: "ALTER TABLE",
    sqlite3.SQLITE_REINDEX: "REINDEX",
    sqlite3.SQLITE_ANALYZE: "ANALYZE",
    sqlite3.SQLITE_CREATE_VTABLE: "CREATE VIRTUAL TABLE",
    sqlite3.SQLITE_DROP_VTABLE: "DROP VIRTUAL TABLE",
    sqlite3.SQLITE_SAVEPOINT: "SAVEPOINT",
}

_WRITE_HINT = "the query tool is read-only; writes need execute on a server started with --allow-write"


@dataclass
class Authorizer:
    """A stateful authorizer: `mode` can be switched for the server's own statements."""

    mode: Literal["read", "write", "internal"]
    last_denial: str | None = field(default=None)

    def __call__(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None
    ) -> int:
        if self.mode == "internal":
            return sqlite3.SQLITE_OK
        reason = self._check(action, arg1, arg2)
        if reason is None:
            return sqlite3.SQLITE_OK
        if reason == "":
            return sqlite3.SQLITE_IGNORE
        self.last_denial = reason
        return sqlite3.SQLITE_DENY

    def _check(self, action: int, arg1: str | None, arg2: str | None) -> str | None:
        """None: allow; "": ignore silently; otherwise the refusal message."""
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            return (
                "ATTACH/DETACH (and VACUUM INTO, which attaches its target) are not allowed: they would "
                "open or create another database file than the one this server was given"
            )
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
            return f"function {arg2}() is disabled: it can load code or touch files outside the database"
        if action == sqlite3.SQLITE_PRAGMA:
            return self._check_pragma((arg1 or "").lower(), arg2)
        if self.mode == "write":
            if action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
                # The server begins and ends each batch's transaction (batch_guard.py).
                return f"transaction control is refused: {BATCH_IS_ONE_TRANSACTION}"
            return None
        if action in (
            sqlite3.SQLITE_SELECT,
            sqlite3.SQLITE_READ,
            sqlite3.SQLITE_FUNCTION,
            sqlite3.SQLITE_RECURSIVE,
        ):
            return None
        if action == sqlite3.SQLITE_UPDATE and (arg1 or "").lower() in _SCHEMA_TABLES:
            # SQLite itself reports these while loading the schema for table-valued pragmas;
            # IGNORE turns any real column update into a no-op, so nothing can change.
            return ""
        label = _ACTION_NAMES.get(action, f"operation {action}")
        target = f" on {arg1}" if arg1 and action != sqlite3.SQLITE_TRANSACTION else ""
        return f"{label}{target} is refused: {_WRITE_HINT}"

    def _check_pragma(self, name: str, argument: str | None) -> str | None:
        if self.mode == "write":
            if name in WRITE_MODE_DENIED_PRAGMAS:
                return f"PRAGMA {name} is not allowed: it can corrupt the database or redirect files"
            return None
        if name in READ_PRAGMAS_WITH_ARGUMENT or (name in READ_PRAGMAS and argument is None):
            return None
        shown = f"PRAGMA {name} = {argument}" if argument is not None else f"PRAGMA {name}"
        return (
            f"{shown} is refused: only reading pragmas are allowed in read-only mode (e.g. table_info, "
            "index_list, foreign_key_list, or a setting's name without a value)"
        )
