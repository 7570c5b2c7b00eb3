"""The integers a client may send: those JSON carries exactly, ±(2^53 - 1).

RFC 8259 (section 6) and I-JSON (RFC 7493) name that range as the one every JSON
implementation agrees on; a JavaScript client cannot even write a larger integer exactly. Past it
lie SQLite's and PostgreSQL's 64-bit integers (2^63 ends in a driver error, not an answer), and
offsets that overflow once a limit is added to them. So every integer argument of every tool is
held to this range (`mcp_batteries._protocol.strict`, applied to every tool by `BatteriesServer`), and
every number parsed from text a client sends (a cursor, a task id in a URI) goes through
`whole_number` with the same bound. Sums of a few such numbers stay far inside 64 bits.
"""

from __future__ import annotations

import re

from mcp_batteries.errors import InvalidInput

__all__ = ["MAX_SAFE_INTEGER", "cursor_offset", "whole_number"]

#: The largest integer JSON carries exactly (Number.MAX_SAFE_INTEGER).
MAX_SAFE_INTEGER = 2**53 - 1

_DIGITS = re.compile(r"[0-9]{1,16}")


def whole_number(text: str) -> int | None:
    """`text` as an integer from 0 to MAX_SAFE_INTEGER written in ASCII digits, else None
    (`int()` would also take "٣", "1_000", " 7 " and numbers of any size)."""
    if not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if value <= MAX_SAFE_INTEGER else None


def cursor_offset(cursor: str | None) -> int:
    """The offset a `nextCursor` of ours holds (None or "": the first page)."""
    if not cursor:
        return 0
    offset = whole_number(cursor)
    if offset is None:
        raise InvalidInput(f"invalid cursor {cursor[:40]!r}: pass back the nextCursor of a previous list")
    return offset
