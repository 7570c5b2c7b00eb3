"""Files as resources: a bounded, paginated listing, completion of paths, and reading a file whole.

No symlink is followed while listing (the walk is ``walker.Walker``), hidden directories and the
usual bulk (`.git`, `node_modules`, virtual environments) are skipped, and the listing stops at a
cap, because a `resources/list` over a home directory must answer quickly. The resource template
reaches any file; the listing only helps a person browse.

URIs carry a name's exact bytes percent-encoded (RFC 8089 / RFC 3986), so names that are not
UTF-8 or hold control characters round-trip through `resources/list`, `resources/read` and
subscriptions; a resource's `name` and `title` show the name in the reversible quoted form.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from mcp_batteries.errors import InvalidInput, LimitExceeded
from mcp_batteries.safety import (
    AllowedDirectories,
    display_path,
    file_uri_to_path,
    is_plain,
    open_directory,
    open_for_read,
    resolve_path,
)
from mcp_batteries.work import NEVER, CancelToken

from mcp_filesystem.access import quote_name, quote_path
from mcp_filesystem.info import guess_mime_type, sniff_mime_type
from mcp_filesystem.tempfiles import is_temp_name
from mcp_filesystem.walker import FILE, Walker

PAGE_SIZE = 200
MAX_LISTED = 10_000
MAX_RESOURCE_BYTES = 4 * 1024 * 1024
MAX_COMPLETIONS = 100
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"})

TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/toml")


def path_to_uri(path: str | os.PathLike[str]) -> str:
    """`file:///...` with every byte that is not URI-safe percent-encoded (non-UTF-8 bytes too)."""
    return "file://" + quote(os.fsencode(path), safe="/")


@dataclass(frozen=True)
class ListedFile:
    uri: str
    name: str  # the file's name, quoted where needed
    title: str  # its whole path, quoted where needed
    size: int
    mime_type: str | None


def _skipped_dir(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_DIRS


def _walk_files(allowed: AllowedDirectories, root: Path, limit: int, cancel: CancelToken) -> list[ListedFile]:
    found: list[ListedFile] = []
    walker = Walker.open(allowed, root, cancel=cancel, skip_dir=_skipped_dir, max_visited=MAX_LISTED * 10)
    for entry in walker.walk():
        if entry.kind != FILE:
            continue
        try:
            size = os.lstat(entry.path).st_size
        except OSError:
            continue
        found.append(
            ListedFile(
                path_to_uri(entry.path),
                quote_name(entry.name),
                quote_path(entry.path),
                size,
                guess_mime_type(entry.name),
            )
        )
        if len(found) >= limit:
            break
    return found


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"files:{offset}".encode()).decode()


def decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        kind, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        offset = int(value)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput("invalid cursor: pass back the nextCursor of a previous resources/list") from None
    if kind != "files" or offset < 0:
        raise InvalidInput("invalid cursor: pass back the nextCursor of a previous resources/list")
    return offset


def list_page(
    allowed: AllowedDirectories, cursor: str | None, *, cancel: CancelToken = NEVER
) -> tuple[list[ListedFile], str | None]:
    """One page of files under the allowed directories, and the cursor of the next page."""
    offset = decode_cursor(cursor)
    everything: list[ListedFile] = []
    for root in allowed.roots:
        everything.extend(_walk_files(allowed, root, MAX_LISTED - len(everything), cancel))
        if len(everything) >= MAX_LISTED:
            break
    page = everything[offset : offset + PAGE_SIZE]
    next_offset = offset + PAGE_SIZE
    return page, encode_cursor(next_offset) if next_offset < len(everything) else None


def _as_uri_path(name: str) -> str:
    # The completed value is substituted into `file:///{+path}`: a name that is not plain text
    # travels percent-encoded, like in every other URI we hand out.
    return name if is_plain(name) else quote(os.fsencode(name), safe="")


def complete_path(allowed: AllowedDirectories, partial: str) -> list[str]:
    """Completions of the template's `path` argument (absolute, without the leading '/'), within
    `allowed` (the client's scope, narrowed by its roots)."""
    typed = "/" + unquote(partial, errors="surrogateescape").lstrip("/")
    directory, _, prefix = typed.rpartition("/")
    typed_dir = partial[: len(partial) - len(partial.rpartition("/")[2])].lstrip("/")
    roots = [
        quote(os.fsencode(r), safe="/").lstrip("/") + "/" for r in allowed.roots if str(r).startswith(typed)
    ]
    if not directory:
        return roots[:MAX_COMPLETIONS]  # nothing typed yet: offer the allowed directories themselves
    try:
        real_dir = resolve_path(directory, allowed)
        opened = open_directory(real_dir, allowed)
    except Exception:
        return roots[:MAX_COMPLETIONS]
    candidates: list[str] = []
    try:
        with opened.scandir() as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.startswith(prefix) and not is_temp_name(entry.name):
                    suffix = "/" if entry.is_dir(follow_symlinks=False) else ""
                    candidates.append(f"{typed_dir}{_as_uri_path(entry.name)}{suffix}")
                    if len(candidates) >= MAX_COMPLETIONS:
                        break
    except OSError:
        return []
    finally:
        opened.close()
    return candidates


def check_subscription(allowed: AllowedDirectories, uri: str) -> str:
    """Refuse (AccessDenied, InvalidInput) a subscription to a URI outside `allowed`; else the
    real path it names (what to watch)."""
    return str(resolve_path(file_uri_to_path(uri), allowed, must_exist=False))


def read_resource(allowed: AllowedDirectories, uri: str) -> tuple[str | bytes, str]:
    """A whole file as text (when it decodes as UTF-8) or bytes, with its MIME type. The URI's
    percent-escapes are the name's exact bytes."""
    real = resolve_path(file_uri_to_path(uri), allowed, must_exist=False)
    fd = open_for_read(real, allowed)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_RESOURCE_BYTES:
            raise LimitExceeded(
                f"{display_path(real)} is {size} bytes; resources are served up to "
                f"{MAX_RESOURCE_BYTES} bytes. "
                "Use the read_text_file tool with offset/limit (or head/tail) to page through it"
            )
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_RESOURCE_BYTES + 1)
    finally:
        os.close(fd)
    mime = guess_mime_type(real) or sniff_mime_type(data[:64]) or None
    if b"\x00" not in data[:8192]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            if mime is None or mime.startswith("text/") or mime in TEXT_TYPES or mime.endswith("+json"):
                return text, mime or "text/plain"
    return data, mime or "application/octet-stream"
