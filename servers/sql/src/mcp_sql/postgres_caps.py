"""PostgreSQL: long text and bytea values are cut on the server, before they cross the wire.

A query whose result has text, varchar or bytea columns is run wrapped, so that a value longer than
the server's max value size arrives as its first `max_value_bytes` characters (bytes for bytea) plus
its full length, instead of whole (a `SELECT repeat('x', 100000000)` would otherwise cost this
process a few hundred megabytes for one cell):

    SELECT q.c1, CASE WHEN octet_length(q.c2) > 16384 THEN left(q.c2, 16384) ELSE q.c2 END,
           CASE WHEN octet_length(q.c2) > 16384 THEN char_length(q.c2) END
    FROM (SELECT * FROM (<the user's statement>) AS s OFFSET 0) AS q(c1, c2)

octet_length reads the stored length without detoasting; the full length is computed only for values
that are cut. The user's statement was already checked and prepared on its own (so errors point at
its own text); the wrapper only renames its columns positionally and selects from it, which keeps
its row order. Other types (json, xml, arrays) are cut after fetching (results.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_sql.results import Truncated

_TEXT_TYPES = {"text", "varchar"}
_BINARY_TYPES = {"bytea"}


@dataclass(frozen=True)
class CappedQuery:
    sql: str
    width: int
    """Columns of the user's statement."""
    capped: tuple[int, ...]
    """Positions (0-based) of the columns that carry a length column after them."""

    def restore(self, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        """Rows of the wrapper back to the statement's own columns; cut values become `Truncated`."""
        if not self.capped:
            return [tuple(r) for r in rows]
        out = []
        capped = set(self.capped)
        for row in rows:
            values: list[Any] = []
            position = 0
            for column in range(self.width):
                value = row[position]
                if column in capped:
                    total = row[position + 1]
                    if total is not None:
                        value = Truncated(value, int(total))
                    position += 2
                else:
                    position += 1
                values.append(value)
            out.append(tuple(values))
        return out


def capped_select(sql: str, type_names: Sequence[str], max_value_bytes: int) -> CappedQuery | None:
    """The wrapped statement, or None when no column can hold a long text or binary value."""
    kinds = [
        "text" if name in _TEXT_TYPES else "binary" if name in _BINARY_TYPES else None for name in type_names
    ]
    if not any(kinds):
        return None
    cap = int(max_value_bytes)
    columns = [f"c{i + 1}" for i in range(len(type_names))]
    select: list[str] = []
    capped: list[int] = []
    for i, (column, kind) in enumerate(zip(columns, kinds, strict=True)):
        value = f"q.{column}"
        if kind is None:
            select.append(value)
            continue
        capped.append(i)
        longer = f"octet_length({value}) > {cap}"
        if kind == "text":
            select.append(f"CASE WHEN {longer} THEN left({value}, {cap}) ELSE {value} END")
            select.append(f"CASE WHEN {longer} THEN char_length({value}) END")
        else:
            select.append(f"CASE WHEN {longer} THEN substring({value} FROM 1 FOR {cap}) ELSE {value} END")
            select.append(f"CASE WHEN {longer} THEN octet_length({value}) END")
    # The statement goes on lines of its own: a trailing "-- comment" must not swallow the ")".
    # OFFSET 0 keeps PostgreSQL from pulling the statement up into the wrapper, which would copy an
    # expression such as repeat('x', 10^8) into each of the CASE branches and compute it 4 times.
    inner = f"(SELECT * FROM (\n{sql}\n) AS s OFFSET 0)"
    wrapped = f"SELECT {', '.join(select)} FROM {inner} AS q({', '.join(columns)})"
    return CappedQuery(wrapped, len(type_names), tuple(capped))
