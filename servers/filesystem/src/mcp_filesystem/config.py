"""Settings of mcp-filesystem: the common flags plus the directories it may touch."""

from __future__ import annotations

from mcp_batteries.definition import PathList, ServerSettings
from pydantic import Field


class FilesystemSettings(ServerSettings):
    server_name = "filesystem"

    directories: PathList = Field(
        default_factory=list,
        description=(
            "Directories the server may read and write (default: the current directory, refused when "
            "that is / or your home directory or above it: see docs/filesystem.md)."
        ),
        json_schema_extra={"positional": True, "metavar": "DIR"},
    )
    watch: bool = Field(
        True,
        description="Watch subscribed files and the allowed directories to send live change notifications.",
    )
    watch_max_dirs: int = Field(
        20_000,
        ge=0,
        description="Watch an allowed directory recursively for list changes up to this many subdirectories.",
    )
