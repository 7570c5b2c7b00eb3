"""Settings of mcp-git: the common flags plus which repositories it may touch and how."""

from __future__ import annotations

from mcp_batteries.definition import NameList, ServerSettings
from pydantic import Field, field_validator


class GitSettings(ServerSettings):
    server_name = "git"

    directories: NameList = Field(
        default_factory=list,
        description=(
            "Directories in which repositories are discovered and git_init may create new ones "
            "(default: the current directory, unless --repository is given; refused when that is / or "
            "your home directory or above it)."
        ),
        json_schema_extra={"positional": True, "metavar": "DIR"},
    )
    repository: NameList = Field(
        default_factory=list,
        description="A repository the server may use (its working tree; repositories nested in it are not).",
    )
    allow_network: bool = Field(
        False, description="Offer git_fetch, git_pull and git_push (remote operations)."
    )
    author: str | None = Field(
        None,
        description=(
            "Identity for commits, tags and stashes in repositories that configure none, "
            "as 'Name <email>' (a repository's own user.name/user.email always wins)."
        ),
    )
    timeout: float = Field(60.0, gt=0, description="Seconds a local git command may run.")
    network_timeout: float = Field(300.0, gt=0, description="Seconds a fetch, pull or push may run.")
    discover_depth: int = Field(
        3, ge=0, le=10, description="How deep below each DIR repositories are discovered."
    )
    watch: bool = Field(True, description="Watch subscribed repositories to send live change notifications.")
    watch_max_dirs: int = Field(
        20_000,
        ge=0,
        description=(
            "Watch a working tree for status changes only up to this many directories; "
            "bigger trees are polled instead."
        ),
    )

    @field_validator("author")
    @classmethod
    def _author_is_name_and_email(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from mcp_git.authors import parse_author

        parse_author(value)  # raises ValueError with the reason
        return value
