"""The audit trail: one JSON line per tool call that changes something (or per call, if asked).

Each line is appended with one `os.write` on a descriptor opened `O_APPEND` and handed to the
kernel before the reply leaves (the middleware in `observe` writes it, then returns the result):
a `kill -9` of the server right after a call returns cannot lose its line; `--audit-fsync` also
survives a power cut, at the price of a disk sync per line. Rotation by the usual means: after
`logrotate` moves the file, SIGHUP makes the next line reopen the path; or `--audit-max-bytes`
rotates it here (PATH -> PATH.1 -> ... PATH.5).

A line (keys in this order):

    {"time": "2026-11-26T03:00:00.123456Z", "caller": "user:alice", "caller_name": "alice",
     "server": "filesystem", "tool": "write_file", "arguments_sha256": "<hex>",
     "arguments": {...redacted, bounded...}, "outcome": "ok", "duration_ms": 1.9,
     "trace_id": "<hex or null>", "changes": [...]}

`arguments_sha256` is the SHA-256 of the canonical JSON of the arguments as sent (keys sorted,
no spaces, UTF-8), so an auditor holding the original can prove which call it was;
`arguments` is what the one redaction (`mcp_batteries._safety.redact.redact_value`) shows, cut to
`MAX_ARGUMENT_BYTES`. `changes` is what the server reported through `note_change` during the call
(empty when the server reports nothing).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from mcp_batteries._safety.redact import redact_value
from mcp_batteries.errors import ConfigError

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "AuditLog",
    "arguments_digest",
    "changes_wanted",
    "note_change",
    "shown_arguments",
]

logger = logging.getLogger(__name__)

#: Redacted arguments longer than this (as JSON) are replaced by their cut text.
MAX_ARGUMENT_BYTES = 4096
#: How many rotated files are kept (PATH.1 is the newest).
KEEP_ROTATED = 5

#: What the call being audited changed, as the server reports it (`note_change`).
_changes: ContextVar[list[dict[str, Any]] | None] = ContextVar("mcp_batteries_audit_changes", default=None)


def note_change(**what: Any) -> None:
    """Record what the tool call being handled changed (`path=...`, `rows=...`, `commit=...`), for
    its audit line. Does nothing outside an audited call."""
    changes = _changes.get()
    if changes is not None:
        changes.append(what)


def changes_wanted() -> bool:
    """Whether `note_change` would record anything: a server skips working out what a call
    changed (an extra query, a `git for-each-ref`) when nobody will read it."""
    return _changes.get() is not None


def collecting_changes() -> list[dict[str, Any]]:
    """Start collecting `note_change` reports for the current call; the list they land in."""
    changes: list[dict[str, Any]] = []
    _changes.set(changes)
    return changes


def arguments_digest(arguments: Any) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def shown_arguments(arguments: Any) -> Any:
    """The arguments as an audit line shows them: redacted, and bounded in size."""
    shown = redact_value(arguments)
    text = json.dumps(shown, ensure_ascii=False, default=str)
    if len(text.encode()) <= MAX_ARGUMENT_BYTES:
        return shown
    return {"cut": True, "text": text[: MAX_ARGUMENT_BYTES // 4]}


def now_iso() -> str:
    """UTC now as `2026-11-26T03:00:00.123456Z`."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


class AuditLog:
    """An append-only JSON-lines file, reopened on request (SIGHUP) and rotated by size."""

    def __init__(self, path: Path, *, fsync: bool = False, max_bytes: int = 0) -> None:
        self.path = path.expanduser()
        self.fsync = fsync
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._reopen = False
        self._fd = -1
        self._size = 0
        self._open()

    def _open(self) -> None:
        try:
            self._fd = os.open(
                self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600
            )
        except OSError as exc:
            raise ConfigError(
                f"--audit-log {self.path}: cannot open it for appending: {exc.strerror}"
            ) from None
        self._size = os.fstat(self._fd).st_size

    def request_reopen(self) -> None:
        """Reopen the path before the next line (safe to call from a signal handler)."""
        self._reopen = True

    def write(self, record: Mapping[str, Any]) -> None:
        """Append `record` as one line; returns once the kernel has it (and the disk, with fsync)."""
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode(
            "utf-8", "replace"
        )
        with self._lock:
            if self._reopen:
                self._reopen = False
                self._close()
                self._open()
            if self.max_bytes and self._size and self._size + len(data) > self.max_bytes:
                self._rotate()
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            self._size += len(data)
            if self.fsync:
                os.fsync(self._fd)

    def _rotate(self) -> None:
        self._close()
        for number in range(KEEP_ROTATED - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{number}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{number + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        self._open()

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def close(self) -> None:
        with self._lock:
            self._close()
