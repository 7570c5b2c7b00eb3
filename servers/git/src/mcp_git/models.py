"""Structured results (tool `structuredContent` and its output schema).

Listings that can be long (status entries, log, blame, grep, reflog) are columnar: `columns`
names the fields once and `rows` holds arrays, so a client validates one small schema however
many rows there are. Short listings (branches, tags, stashes, remotes, repositories) are lists
of objects. Every listing says how to get the next page (`next_page`, null on the last page).
Every name in here is in the form replies show (see `mcp_git.text`), accepted back as input.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SkipValidation, WithJsonSchema

# Rows of cells (strings, integers or null). The schema says only "an array of arrays", so a client
# validating a big page does one type check per row and nothing per cell; not re-validated here
# either (the domain builds them from strings and integers).
Cell = Any
Rows = Annotated[
    list[list[Cell]], SkipValidation, WithJsonSchema({"type": "array", "items": {"type": "array"}})
]


class Listing(BaseModel):
    repository: str = Field(description="The repository's name (as in git:// URIs).")
    next_page: str | None = Field(
        default=None,
        description="How to get the next page (the call to make), or null when this is the last page.",
    )


class StatusResult(Listing):
    branch: str | None = Field(description="The current branch, or null when HEAD is detached.")
    head: str | None = Field(description="The commit HEAD points at; null before the first commit.")
    upstream: str | None = None
    ahead: int | None = None
    behind: int | None = None
    clean: bool = Field(description="True when nothing is staged, changed or untracked.")
    columns: list[str] = Field(description="Names of the fields in each row.")
    rows: Rows = Field(description="One row per changed path: [path, staged, unstaged, original_path].")
    total: int = Field(description="Changed paths in all pages.")
    offset: int
    next_offset: int | None


class LogResult(Listing):
    columns: list[str]
    rows: Rows = Field(
        description="One row per commit, newest first: [commit, author, email, date, message]."
    )
    skip: int
    next_skip: int | None = Field(description="Pass as skip for the next page; null when there is none.")


class Branch(BaseModel):
    name: str
    kind: Literal["local", "remote"]
    commit: str | None
    current: bool = False
    upstream: str | None = None
    points_to: str | None = Field(
        default=None, description="For a symbolic ref such as origin/HEAD: its target."
    )


class BranchResult(Listing):
    current: str | None
    branches: list[Branch]
    offset: int
    next_offset: int | None


class BlameResult(Listing):
    path: str
    revision: str | None
    columns: list[str]
    rows: Rows = Field(description="One row per line: [line, commit, author, date, text].")
    next_start_line: int | None


class GrepResult(Listing):
    revision: str | None
    columns: list[str]
    rows: Rows = Field(description="One row per match: [path, line, text].")
    offset: int
    next_offset: int | None


class Tag(BaseModel):
    name: str
    commit: str | None = Field(description="The commit the tag points at (peeled).")
    annotated: bool
    subject: str | None = Field(default=None, description="An annotated tag's message (first line).")


class TagResult(Listing):
    message: str | None = Field(default=None, description="What was done (create), or null for a listing.")
    tags: list[Tag]
    offset: int
    next_offset: int | None


class Stash(BaseModel):
    index: int
    name: str = Field(description="stash@{N}")
    commit: str
    description: str


class StashResult(Listing):
    message: str | None = Field(default=None, description="What was done (push, apply, pop, drop).")
    stashes: list[Stash]


class Remote(BaseModel):
    name: str
    fetch_urls: list[str]
    push_urls: list[str]


class RemoteResult(Listing):
    remotes: list[Remote]


class ReflogResult(Listing):
    ref: str
    columns: list[str]
    rows: Rows = Field(description="One row per entry, newest first: [selector, commit, date, action].")
    skip: int
    next_skip: int | None


class RepositoryInfo(BaseModel):
    name: str = Field(description="Its name: usable as repo_path and in git:// URIs.")
    path: str
    uri: str = Field(description="Its status resource, e.g. git://name/status.")


class RepositoriesResult(BaseModel):
    repositories: list[RepositoryInfo]
    allowed: str = Field(description="What this server allows: repositories and directories.")
    offset: int
    next_offset: int | None
    next_page: str | None = None
