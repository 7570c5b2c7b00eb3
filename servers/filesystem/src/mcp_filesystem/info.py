"""get_file_info and MIME type guessing (shared with reading.read_media_file)."""

from __future__ import annotations

import mimetypes
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from mcp_batteries.safety import (
    AllowedDirectories,
    display_path,
    symlink_target_within,
    translate_os_error,
)

from mcp_filesystem.access import resolve

__all__ = ["FileInfo", "get_file_info", "guess_mime_type", "sniff_mime_type"]

# Extension table first: `mimetypes` depends on the host's /etc/mime.types and differs between
# machines (e.g. .m4a, .flac, .webp are missing on some), which would make results flaky.
_EXTENSION_TYPES: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
    ".bmp": "image/bmp",
    ".ico": "image/x-icon",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".avif": "image/avif",
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/ogg",
    ".flac": "audio/flac",
    ".m4a": "audio/mp4",
    ".aac": "audio/aac",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".py": "text/x-python",
    ".json": "application/json",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".csv": "text/csv",
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".ts": "text/x-typescript",
    ".pdf": "application/pdf",
    ".zip": "application/zip",
}

# Types we can confirm from the first bytes. A file whose extension claims one of these but
# whose content does not match is not trusted (see reading.read_media_file).
SNIFFABLE: frozenset[str] = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/svg+xml",
        "audio/mpeg",
        "audio/wav",
        "audio/ogg",
        "audio/flac",
        "audio/mp4",
    }
)


def guess_mime_type(path: str | os.PathLike[str]) -> str | None:
    """MIME type from the file name's extension (case-insensitive), or None."""
    suffix = Path(os.fspath(path)).suffix.lower()
    if suffix in _EXTENSION_TYPES:
        return _EXTENSION_TYPES[suffix]
    guessed, _ = mimetypes.guess_type(os.fsdecode(os.fspath(path)), strict=False)
    return guessed


def sniff_mime_type(head: bytes) -> str | None:
    """MIME type from magic numbers in the first bytes (give at least 64; 1 KiB for SVG)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"ID3") or (len(head) >= 2 and head[0] == 0xFF and (head[1] & 0xE0) == 0xE0):
        return "audio/mpeg"  # ID3 tag, or a bare MPEG audio frame sync
    if head[4:8] == b"ftyp" and head[8:12] in (b"M4A ", b"M4B ", b"mp42", b"isom", b"M4P "):
        return "audio/mp4"
    text = head[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if (
        text.startswith(b"<?xml") or text.startswith(b"<svg") or text.startswith(b"<!--")
    ) and b"<svg" in text:
        return "image/svg+xml"
    return None


FileType = Literal["file", "directory", "symlink", "other"]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What get_file_info reports. Stats describe the path after following an in-tree symlink;
    a symlink pointing outside (or dangling) is described as the link itself (type "symlink",
    target None) so nothing about the outside file leaks."""

    path: str
    size: int
    created: datetime | None  # birth time where the platform exposes it (macOS/BSD), else None
    modified: datetime
    accessed: datetime
    type: FileType
    permissions: str  # octal, e.g. "644"
    is_symlink: bool
    symlink_target: str | None
    mime_type: str | None

    def format(self) -> str:
        """Reference-server-like `key: value` lines."""
        lines = [
            f"path: {self.path}",
            f"type: {self.type}",
            f"size: {self.size}",
            f"created: {self.created.isoformat() if self.created else 'unavailable'}",
            f"modified: {self.modified.isoformat()}",
            f"accessed: {self.accessed.isoformat()}",
            f"isDirectory: {str(self.type == 'directory').lower()}",
            f"isFile: {str(self.type == 'file').lower()}",
            f"permissions: {self.permissions}",
        ]
        if self.is_symlink:
            lines.append(
                f"symlinkTarget: {self.symlink_target or '(outside the allowed directories or dangling)'}"
            )
        if self.mime_type:
            lines.append(f"mimeType: {self.mime_type}")
        return "\n".join(lines)


def _file_type(mode: int) -> FileType:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _ts(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def get_file_info(allowed: AllowedDirectories, path: str) -> FileInfo:
    """Metadata for a file, directory or symlink inside the allowed directories."""
    real = resolve(allowed, path, follow_symlinks=False)
    try:
        st = os.lstat(real)
    except OSError as exc:
        raise translate_os_error(exc, path) from None
    is_link = stat.S_ISLNK(st.st_mode)
    target: Path | None = None
    if is_link:
        target = symlink_target_within(real, allowed)
        if target is not None:
            try:
                st = os.stat(target, follow_symlinks=False)
            except OSError as exc:
                raise translate_os_error(exc, path) from None
    kind = _file_type(st.st_mode)
    birth = getattr(st, "st_birthtime", None)
    mime = guess_mime_type(target or real) if kind == "file" else None
    return FileInfo(
        path=display_path(real),
        size=st.st_size,
        created=_ts(birth) if birth is not None else None,
        modified=_ts(st.st_mtime),
        accessed=_ts(st.st_atime),
        type=kind,
        permissions=f"{stat.S_IMODE(st.st_mode):o}".rjust(3, "0"),
        is_symlink=is_link,
        symlink_target=display_path(target) if target is not None else None,
        mime_type=mime,
    )
