"""Every tool and resource operation as one plain function: a `Job` and the caller's arguments in,
the reply out. `server.py` only registers these; they run in a worker thread.

Each function takes the caller's raw paths and checks containment itself (through the domain
modules' entry points), so no path reaches the file system unchecked, whichever way it came in.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcp_batteries.safety import AllowedDirectories
from mcp_batteries.work import NEVER, CancelToken

from mcp_filesystem import catalog, editing, losses, reading, walking, writing
from mcp_filesystem import grep as grep_module
from mcp_filesystem.access import quote_path
from mcp_filesystem.info import get_file_info as file_info
from mcp_filesystem.walker import Progress


@dataclass(frozen=True, slots=True)
class Job:
    """What one call may touch and how it reports: the caller's scope (allowed directories
    narrowed by its roots), its cancellation, its progress, and whether stale temporary files of
    ours may be removed on the way (not in read-only mode)."""

    allowed: AllowedDirectories
    cancel: CancelToken = NEVER
    progress: Progress | None = None
    tidy: bool = False


@dataclass(frozen=True, slots=True)
class Media:
    kind: Literal["image", "audio"]
    data: str  # base64
    mime_type: str


# -- reading ---------------------------------------------------------------------------------


def read_text_file(
    job: Job, path: str, head: int | None, tail: int | None, offset: int | None, limit: int | None
) -> str:
    return reading.read_text_file(job.allowed, path, head, tail, offset, limit).render()


def read_media_file(job: Job, path: str) -> Media:
    media = reading.read_media_file(job.allowed, path)
    kind: Literal["image", "audio"] = "audio" if media.mime_type.startswith("audio/") else "image"
    return Media(kind, base64.b64encode(media.data).decode("ascii"), media.mime_type)


def read_multiple_files(job: Job, paths: Sequence[str]) -> str:
    return reading.read_multiple_files(job.allowed, paths).render()


# -- writing ---------------------------------------------------------------------------------


def write_file(job: Job, path: str, content: str) -> str:
    return writing.write_file_reply(job.allowed, path, content)


def edit_file(job: Job, path: str, edits: Sequence[Mapping[str, Any]], dryRun: bool) -> str:
    return editing.edit_file_in(job.allowed, path, edits, dryRun)


def create_directory(job: Job, path: str) -> str:
    return writing.create_directory_reply(job.allowed, path)


def move_file(job: Job, source: str, destination: str) -> str:
    return writing.move_file_reply(job.allowed, source, destination)


def copy_file(job: Job, source: str, destination: str, overwrite: bool, recursive: bool) -> str:
    return writing.copy_file_reply(job.allowed, source, destination, overwrite, recursive)


def delete_path(job: Job, path: str, recursive: bool) -> str:
    return writing.delete_path_reply(job.allowed, path, recursive)


# -- what a destructive call would lose (the question its user confirms) ----------------------


def describe_deletion(job: Job, path: str, recursive: bool) -> str | None:
    return losses.describe_deletion(job.allowed, path, recursive)


def describe_overwrite(
    job: Job, path: str, content: str, ledger: losses.ReadLedger, caller: str
) -> str | None:
    return losses.describe_overwrite(job.allowed, path, content, ledger, caller)


def describe_copy_overwrite(
    job: Job,
    source: str,
    destination: str,
    overwrite: bool,
    recursive: bool,
    ledger: losses.ReadLedger,
    caller: str,
) -> str | None:
    return losses.describe_copy_overwrite(
        job.allowed, source, destination, overwrite, recursive, ledger, caller
    )


def note_seen(job: Job, ledger: losses.ReadLedger, caller: str, paths: Sequence[str]) -> None:
    """After a read, an edit or a write: `caller` knows these files' current content."""
    for path in paths:
        ledger.saw_path(job.allowed, caller, path)


# -- looking around --------------------------------------------------------------------------


def list_directory(job: Job, path: str, offset: int = 0) -> str:
    return walking.list_directory(job.allowed, path, offset=offset, tidy=job.tidy).text


def list_directory_with_sizes(job: Job, path: str, sortBy: Literal["name", "size"], offset: int = 0) -> str:
    return walking.list_directory_with_sizes(job.allowed, path, sortBy, offset=offset, tidy=job.tidy).text


def directory_tree(
    job: Job, path: str, excludePatterns: Sequence[str], max_depth: int | None, respect_gitignore: bool
) -> str:
    return walking.directory_tree(
        job.allowed,
        path,
        excludePatterns,
        max_depth,
        respect_gitignore,
        progress=job.progress,
        cancel=job.cancel,
        tidy=job.tidy,
    ).text


def search_files(job: Job, path: str, pattern: str, excludePatterns: Sequence[str], offset: int = 0) -> str:
    return walking.search_files(
        job.allowed,
        path,
        pattern,
        excludePatterns,
        offset=offset,
        progress=job.progress,
        cancel=job.cancel,
        tidy=job.tidy,
    ).text


def grep(
    job: Job,
    path: str,
    pattern: str,
    is_regex: bool,
    case_sensitive: bool,
    include: Sequence[str],
    excludePatterns: Sequence[str],
    context_lines: int,
    max_matches: int,
    offset: int = 0,
) -> str:
    return grep_module.grep(
        job.allowed,
        path,
        pattern,
        is_regex=is_regex,
        case_sensitive=case_sensitive,
        include=include,
        excludePatterns=excludePatterns,
        context_lines=context_lines,
        max_matches=max_matches,
        offset=offset,
        progress=job.progress,
        cancel=job.cancel,
        tidy=job.tidy,
    ).text


def get_file_info(job: Job, path: str) -> str:
    return file_info(job.allowed, path).format()


def list_allowed_directories(job: Job) -> str:
    if not job.allowed.roots:
        described = job.allowed.describe()
        return described[:1].upper() + described[1:] + "."
    return "Allowed directories:\n" + "\n".join(quote_path(r) for r in job.allowed.roots)


# -- resources -------------------------------------------------------------------------------


def list_resources(job: Job, cursor: str | None) -> tuple[list[catalog.ListedFile], str | None]:
    return catalog.list_page(job.allowed, cursor, cancel=job.cancel)


def read_resource(job: Job, uri: str) -> tuple[str | bytes, str]:
    return catalog.read_resource(job.allowed, uri)


def check_subscription(job: Job, uri: str) -> str:
    return catalog.check_subscription(job.allowed, uri)


def complete_path(job: Job, partial: str) -> list[str]:
    return catalog.complete_path(job.allowed, partial)
