"""Files as resources: a bounded, paginated listing, completion of paths, and reading a file whole.

No symlink is followed while listing, hidden directories and the usual bulk (`.git`,
`node_modules`, virtual environments) are skipped, and the listing stops at a cap, because a
`resources/list` over a home directory must answer quickly. The resource template reaches any
file; the listing only helps a person browse.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path

from mcp_batteries.errors import InvalidInput, LimitExceeded
from mcp_batteries.paths import AllowedDirectories, display_path, open_for_read, resolve_path

from mcp_filesystem.info import guess_mime_type, sniff_mime_type

PAGE_SIZE = 200
MAX_LISTED = 10_000
MAX_RESOURCE_BYTES = 4 * 1024 * 1024
MAX_COMPLETIONS = 100
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"})

TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/toml")


@dataclass(frozen=True)
class ListedFile:
    path: Path
    size: int


def _walk_files(root: Path, limit: int) -> list[ListedFile]:
    found: list[ListedFile] = []
    stack = [root]
    while stack and len(found) < limit:
        current = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.name not in SKIPPED_DIRS:
                    subdirs.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                try:
                    size = entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
                found.append(ListedFile(Path(entry.path), size))
                if len(found) >= limit:
                    break
        stack.extend(reversed(subdirs))
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


def list_page(allowed: AllowedDirectories, cursor: str | None) -> tuple[list[ListedFile], str | None]:
    """One page of files under the allowed directories, and the cursor of the next page."""
    offset = decode_cursor(cursor)
    everything: list[ListedFile] = []
    for root in allowed.roots:
        everything.extend(_walk_files(root, MAX_LISTED - len(everything)))
        if len(everything) >= MAX_LISTED:
            break
    page = everything[offset : offset + PAGE_SIZE]
    next_offset = offset + PAGE_SIZE
    return page, encode_cursor(next_offset) if next_offset < len(everything) else None


def complete_path(allowed: AllowedDirectories, partial: str) -> list[str]:
    """Completions of a template's `path` argument (absolute, without the leading '/')."""
    typed = "/" + partial.lstrip("/")
    directory, _, prefix = typed.rpartition("/")
    candidates: list[str] = []
    if not directory:
        # Nothing typed yet: offer the allowed directories themselves.
        return [str(r).lstrip("/") + "/" for r in allowed.roots if str(r).startswith(typed)][:MAX_COMPLETIONS]
    try:
        real_dir = resolve_path(directory or "/", allowed)
    except Exception:
        return [str(r).lstrip("/") + "/" for r in allowed.roots if str(r).startswith(typed)][:MAX_COMPLETIONS]
    try:
        with os.scandir(real_dir) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.startswith(prefix):
                    suffix = "/" if entry.is_dir(follow_symlinks=False) else ""
                    candidates.append(f"{directory.lstrip('/')}/{entry.name}{suffix}")
                    if len(candidates) >= MAX_COMPLETIONS:
                        break
    except OSError:
        return []
    return candidates


def read_resource(allowed: AllowedDirectories, path: str) -> tuple[str | bytes, str]:
    """A whole file as text (when it decodes as UTF-8) or bytes, with its MIME type."""
    real = resolve_path(path, allowed)
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
