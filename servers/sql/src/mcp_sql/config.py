"""Settings of mcp-sql: the common flags plus the databases and their limits."""

from __future__ import annotations

from mcp_batteries.definition import PathList, ServerSettings
from pydantic import Field


class SqlSettings(ServerSettings):
    server_name = "sql"

    databases: PathList = Field(
        default_factory=list,
        description=(
            "Databases: postgresql://user@host/db, mysql://user@host/db, sqlite:///file.db, a file path, "
            "or name=URL "
            "(default: an embedded SQLite file)."
        ),
        json_schema_extra={"positional": True, "metavar": "DATABASE"},
    )
    db: PathList = Field(
        default_factory=list,
        description="A named database as name=URL (repeatable; comma-separated in env/TOML).",
    )
    allow_write: bool = Field(
        False, description="Offer the execute tool (INSERT/UPDATE/DDL). Ignored with --read-only."
    )
    statement_timeout: float = Field(30.0, gt=0, description="Seconds before a statement is cancelled.")
    max_rows: int = Field(500, ge=1, description="Most rows one query page (or RETURNING) returns.")
    max_value_bytes: int = Field(
        16_384,
        ge=16,
        description="Longest text or binary value a reply shows, in bytes; longer ones are cut "
        "(the reply says where; substr reads the rest).",
    )
    max_reply_bytes: int = Field(
        512 * 1024,
        ge=1024,
        description="Most bytes of rows in one query page; a page stops early at this size and names "
        "the offset to continue from.",
    )
    schema_poll_interval: float = Field(
        2.0,
        gt=0,
        description="PostgreSQL and MySQL: seconds between schema checks while a client listens for changes.",
    )

    @property
    def writes_enabled(self) -> bool:
        """Writing needs --allow-write and not --read-only."""
        return self.allow_write and not self.read_only
