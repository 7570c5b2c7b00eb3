"""Fast file reading and match pre-filtering for grep: cheap tests before the costly regex."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable

TOO_LARGE = b""  # sentinel, compared by identity: "over the size cap"


def read_fd_capped(fd: int, limit: int) -> bytes | None:
    """The bytes of the regular file open on `fd`; ``TOO_LARGE`` if over ``limit``; None if
    unreadable. The caller opened it (checked: ``Walker.open_file``, ``open_for_read``) and closes it."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > limit:
            return TOO_LARGE
        chunks, total = [], 0
        while True:
            # The size is known, so one read usually suffices; loop in case the file grew.
            chunk = os.read(fd, max(st.st_size + 1 - total, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                return TOO_LARGE
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except OSError:
        return None


def _required_literal(pattern: str) -> tuple[str, bool] | None:
    """The longest run of plain characters every match of the regex must contain, with whether the
    pattern turns on case-insensitivity itself (``(?i)``); None if there is no useful run.

    Uses the standard library's regex parser (private, so any surprise just disables the
    shortcut): top-level LITERAL items are mandatory and consecutive ones are adjacent. Patterns
    run on the ``regex`` engine, whose syntax is a superset: where the two could read a pattern
    differently (POSIX classes ``[[:alpha:]]``, which ``re`` parses as a set and literals), no
    shortcut is taken.
    """
    if "[:" in pattern:
        return None
    try:
        from re import _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(pattern)
        literal_op = _parser.LITERAL
    except Exception:
        return None
    best, run = "", []
    for op, arg in [*parsed, (None, None)]:
        if op is literal_op:
            run.append(chr(arg))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    if len(best) < 2:
        return None
    return best, bool(parsed.state.flags & re.IGNORECASE)


def prefilter(pattern: str, is_regex: bool, case_sensitive: bool) -> Callable[[bytes], bool] | None:
    """A cheap bytes-level test that is False only when the file certainly has no match.

    It saves decoding and, above all, the regex: ``re.IGNORECASE`` searches are ~50x slower than
    a bytes ``in``. Needs an ASCII literal (the pattern, or a run every regex match contains).
    Case-insensitive: only ASCII files can be ruled out, because ``re.IGNORECASE`` also matches
    a few non-ASCII letters to ASCII ones (e.g. the Kelvin sign to k).
    """
    literal = pattern
    if is_regex:
        found = _required_literal(pattern)
        if found is None:
            return None
        literal, inline_ignorecase = found
        case_sensitive = case_sensitive and not inline_ignorecase
    if not literal.isascii():
        return None
    needle = literal.encode("ascii")
    if case_sensitive:
        return lambda data: needle in data
    lowered = needle.lower()
    return lambda data: not data.isascii() or lowered in data.lower()
