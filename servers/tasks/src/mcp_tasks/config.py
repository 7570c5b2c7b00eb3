"""Settings of mcp-tasks: the common flags plus where the tasks are stored."""

from __future__ import annotations

from pathlib import Path

from mcp_batteries.definition import ServerSettings
from mcp_batteries.platform import user_data_dir
from pydantic import Field, model_validator


def default_database_path() -> Path:
    """The SQLite file used when neither --db nor --database-url is given (the user's data dir)."""
    return user_data_dir("tasks") / "tasks.db"


class TasksSettings(ServerSettings):
    server_name = "tasks"

    db: Path | None = Field(
        None,
        description="SQLite file holding the tasks (default: tasks.db in the user's data directory).",
    )
    database_url: str | None = Field(
        None,
        description=(
            "PostgreSQL instead of SQLite: postgresql://user@host/db. Any number of mcp-tasks "
            "processes (replicas) may share one database."
        ),
        json_schema_extra={"metavar": "URL"},
    )
    page_size: int = Field(50, ge=1, le=500, description="Tasks per list_tasks page unless a call asks.")
    history_days: int = Field(
        30, ge=1, description="Days of change history kept (the stand-up prompt reads it)."
    )
    max_resource_tasks: int = Field(
        10_000, ge=1, description="Most tasks one resource (tasks://list, a list) returns."
    )
    busy_timeout: float = Field(
        30.0, gt=0, description="Seconds a write waits for another process's transaction before failing."
    )

    @model_validator(mode="after")
    def _one_store(self) -> TasksSettings:
        if self.db is not None and self.database_url is not None:
            raise ValueError("give either --db (SQLite) or --database-url (PostgreSQL), not both")
        return self

    @property
    def sqlite_path(self) -> Path:
        return (self.db or default_database_path()).expanduser()
