"""One page of a query result, built chunk by chunk within its limits (rows, bytes per value, bytes).

The engines fetch rows in chunks and hand each to a `PageBuilder`, which makes the values JSON-safe
(values.py), cuts each text or binary value to `max_value_bytes`, serializes the chunk once, and stops
the fetch when the page has `limit` rows or its rows reach `max_reply_bytes`. Chunks start at one row
and grow at most fourfold per fetch, as far as the rows' measured size allows (about
`CHUNK_TARGET_BYTES` per chunk): a query whose values are huge holds few of them at once, and a page
of small rows needs a handful of fetches. What is not bounded here: one row is fetched whole, so a
single value of hundreds of megabytes passes through memory once (the driver materializes it) before
it is cut.

The page is returned twice in the tool result, as the tool's structured content and, for hosts that
show only text, as the compact JSON of that same object (docs/sql.md says why not a text table).
Both say what was cut and how to get the rest: `next_offset` for rows, `cut_values` and `note` for
values (substr(...) continues a text value where it was cut).
"""

from __future__ import annotations

import math
from base64 import b64encode
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic_core

from mcp_sql.models import ColumnMeta, CutValue, QueryResult
from mcp_sql.values import to_json_value

#: Raw bytes of fetched values one chunk aims at (memory bound of the fetch, besides one huge row).
CHUNK_TARGET_BYTES = 4 * 1024 * 1024
MAX_CHUNK_ROWS = 4096
#: How many cut values a result lists one by one (the note counts the rest).
MAX_LISTED_CUTS = 20
_ROW_OVERHEAD = 8  # bytes a non-text cell is assumed to take, for chunk sizing
_NoneType = type(None)
_PLAIN = frozenset({_NoneType, bool, int, str})
_TEXT_OR_NULL = frozenset({_NoneType, str})


@dataclass(frozen=True)
class ResultLimits:
    """The bounds of one reply: rows per page, bytes per value, bytes of all rows together."""

    max_rows: int
    max_value_bytes: int = 16_384
    max_reply_bytes: int = 512 * 1024

    def __post_init__(self) -> None:
        if self.max_rows < 1 or self.max_value_bytes < 16 or self.max_reply_bytes < 1024:
            raise ValueError("max_rows >= 1, max_value_bytes >= 16 and max_reply_bytes >= 1024")


@dataclass(frozen=True)
class Page:
    """A finished page: the structured result and its JSON text (the same object)."""

    result: QueryResult
    text: str

    def structured(self) -> dict[str, Any]:
        return self.result.to_json()


@dataclass(frozen=True)
class Truncated:
    """A value the database already cut (postgres_caps.py): its first part and its full length in
    characters (text) or bytes (binary)."""

    head: str | bytes
    total: int


@dataclass
class _Cut:
    row: int
    column: int
    shown: int
    total: int
    unit: str


def cut_text(value: str, max_bytes: int) -> str | None:
    """`value` cut at a character boundary to at most `max_bytes` UTF-8 bytes; None when it fits."""
    if len(value) * 4 <= max_bytes:
        return None
    if len(value) <= max_bytes:
        encoded = value.encode("utf-8", "surrogatepass")
        if len(encoded) <= max_bytes:
            return None
    else:
        encoded = value[:max_bytes].encode("utf-8", "surrogatepass")
    return encoded[:max_bytes].decode("utf-8", "ignore")


class PageBuilder:
    """Collects one page of rows within `limits`; see the module docstring."""

    def __init__(
        self,
        columns: Sequence[str],
        types: Sequence[str | None],
        *,
        limit: int,
        offset: int,
        limits: ResultLimits,
        infer_type: Callable[[Any], str | None] | None = None,
    ) -> None:
        self._names = list(columns)
        self._types = list(types)
        self._infer = infer_type
        self._limit = min(limit, limits.max_rows)
        self._offset = offset
        self._limits = limits
        self._rows: list[Sequence[Any]] = []
        self._json_parts: list[bytes] = []
        self._bytes = 0
        self._cuts: list[_Cut] = []
        self._chunk = 1
        self._more = False
        self._stopped_by_bytes = False
        self.done = False

    # -- fetching ------------------------------------------------------------------------------
    def wanted(self) -> int:
        """How many rows to fetch next: one more than the page needs tells whether more follow."""
        return max(1, min(self._chunk, self._limit - len(self._rows) + 1))

    def add(self, chunk: Sequence[Sequence[Any]], *, exhausted: bool) -> None:
        """Take a fetched chunk; `exhausted` when the cursor has no rows after it. Sets `done`."""
        room = self._limit - len(self._rows)
        if len(chunk) > room:
            self._more = True
            chunk = chunk[:room]
        if chunk:
            self._take(chunk)
        if self._more or exhausted or not chunk:
            self.done = True

    def _take(self, chunk: Sequence[Sequence[Any]]) -> None:
        start = len(self._rows)
        rows, cuts = json_safe_rows(chunk, self._limits.max_value_bytes, first_row=start)
        if self._infer is not None and None in self._types:
            self._fill_types(chunk)
        encoded = pydantic_core.to_json(rows)
        budget = self._limits.max_reply_bytes - self._bytes
        if len(encoded) > budget and (start > 0 or len(rows) > 1):
            keep = _rows_within(rows, budget, at_least=1 if start == 0 else 0)
            rows = rows[:keep]
            cuts = [c for c in cuts if c.row < start + keep]
            encoded = pydantic_core.to_json(rows)
            self._more = True
            self._stopped_by_bytes = True
        if rows:
            self._rows.extend(rows)
            self._json_parts.append(encoded[1:-1])
            self._bytes += len(encoded)
            self._cuts.extend(cuts)
        self._chunk = next_chunk_size(chunk)

    def _fill_types(self, chunk: Sequence[Sequence[Any]]) -> None:
        assert self._infer is not None
        for i, known in enumerate(self._types):
            if known is None:
                sample = next((row[i] for row in chunk if row[i] is not None), None)
                if sample is not None:
                    self._types[i] = self._infer(sample)

    # -- the page ---------------------------------------------------------------------------------
    def finish(self) -> Page:
        columns = [ColumnMeta(name=n, type=t) for n, t in zip(self._names, self._types, strict=True)]
        count = len(self._rows)
        truncated = self._more
        next_offset = self._offset + count if truncated else None
        listed = [
            CutValue(row=c.row, column=self._names[c.column], shown=c.shown, total=c.total, unit=c.unit)  # type: ignore[arg-type]
            for c in self._cuts[:MAX_LISTED_CUTS]
        ]
        note = self._note(count, next_offset)
        result = QueryResult.model_construct(
            columns=columns,
            rows=self._rows,
            row_count=count,
            offset=self._offset,
            truncated=truncated,
            next_offset=next_offset,
            cut_values=listed,
            note=note,
        )
        # The text is the structured object itself, built from the chunks already serialized.
        head = _json({"columns": [c.model_dump() for c in columns]})[:-1]
        tail = _json(
            {
                "row_count": count,
                "offset": self._offset,
                "truncated": truncated,
                "next_offset": next_offset,
                "cut_values": [c.model_dump() for c in listed],
                "note": note,
            }
        )[1:]
        rows = b",".join(self._json_parts).decode()
        return Page(result, f'{head},"rows":[{rows}],{tail}')

    def _note(self, count: int, next_offset: int | None) -> str | None:
        parts = []
        if next_offset is not None:
            why = (
                f"the reply reached its {self._limits.max_reply_bytes:,}-byte limit"
                if self._stopped_by_bytes
                else "more rows exist"
            )
            parts.append(
                f"{count} rows shown; {why}: call query again with offset={next_offset} for the next page"
                + (" (or select fewer or narrower columns)" if self._stopped_by_bytes else "")
            )
        if self._cuts:
            first = self._cuts[0]
            name = self._names[first.column]
            more = f" ({len(self._cuts)} values in all; see cut_values)" if len(self._cuts) > 1 else ""
            if first.unit == "characters":
                step = self._limits.max_value_bytes // 4
                how = (
                    f"read the rest with substr({name}, {first.shown + 1}, {step}) and so on "
                    "(SQL substr counts characters from 1)"
                )
            elif first.unit == "bytes":
                how = (
                    f"read the rest of a binary value with substr({name}, {first.shown + 1}, "
                    f"{self._limits.max_value_bytes}) (bytes, from 1)"
                )
            else:
                how = "select the parts you need (e.g. a JSON path) instead of the whole value"
            parts.append(
                f"values longer than {self._limits.max_value_bytes:,} bytes were cut: row {first.row}, "
                f"column {name!r} shows {first.shown:,} of {first.total:,} {first.unit}{more}; {how}"
            )
        return "; ".join(parts) or None


def next_chunk_size(rows: Sequence[Sequence[Any]]) -> int:
    """Rows to fetch after the chunk `rows`: at most 4 times as many, and about CHUNK_TARGET_BYTES.

    The size of a row is judged by a sample of the chunk; growing by at most 4x per chunk keeps a
    query whose first rows are small and later ones huge from fetching thousands of huge rows at once.
    """
    if not rows:
        return 1
    step = max(len(rows) // 8, 1)
    sample = rows[::step]
    size = sum(len(v) if isinstance(v, str | bytes) else _ROW_OVERHEAD for row in sample for v in row)
    average = max(size / len(sample), 1.0)
    return max(1, min(MAX_CHUNK_ROWS, 4 * len(rows), int(CHUNK_TARGET_BYTES / average)))


def json_safe_rows(
    rows: Sequence[Sequence[Any]], max_value_bytes: int, *, first_row: int = 0
) -> tuple[list[Sequence[Any]], list[_Cut]]:
    """Rows made JSON-safe with every value cut to `max_value_bytes`, and the cuts.

    Work goes column by column: a column's values share a type, and columns of only ints, NULLs and
    short texts (most of them) are left alone without a call per cell. Only rows with a value that
    changes are copied.
    """
    if not rows:
        return [], []
    patched: dict[int, list[Any]] = {}
    cuts: list[_Cut] = []
    quick_fit = max_value_bytes // 4  # a text of at most this many characters fits in any encoding

    def patch(r: int, c: int, value: Any) -> None:
        row = patched.get(r)
        if row is None:
            row = patched[r] = list(rows[r])
        row[c] = value

    for c, column in enumerate(zip(*rows, strict=True)):
        kinds = set(map(type, column))
        if str in kinds:
            if len(kinds) == 1:
                longest = max(map(len, column))
            elif kinds == _TEXT_OR_NULL:
                longest = max(map(len, filter(None, column)), default=0)
            else:
                longest = max(len(v) for v in column if type(v) is str)
            if longest > quick_fit:
                for r, value in enumerate(column):
                    if type(value) is str and len(value) > quick_fit:
                        shown = cut_text(value, max_value_bytes)
                        if shown is not None:
                            patch(r, c, shown)
                            cuts.append(_Cut(first_row + r, c, len(shown), len(value), "characters"))
        odd = kinds - _PLAIN
        if not odd or (odd == {float} and all(map(math.isfinite, [v for v in column if type(v) is float]))):
            continue
        if odd == {bytes}:
            # Binary columns (BLOB, bytea): the common odd case, converted without the general dispatch.
            for r, value in enumerate(column):
                if value is not None and type(value) is bytes:
                    if len(value) > max_value_bytes:
                        cuts.append(_Cut(first_row + r, c, max_value_bytes, len(value), "bytes"))
                        value = value[:max_value_bytes]
                    row = patched.get(r)
                    if row is None:
                        row = patched[r] = list(rows[r])
                    row[c] = {"$base64": b64encode(value).decode("ascii")}
            continue
        for r, value in enumerate(column):
            if type(value) in odd:
                converted, cut = _convert(value, max_value_bytes)
                patch(r, c, converted)
                if cut is not None:
                    cuts.append(_Cut(first_row + r, c, *cut))
    if not patched:
        return list(rows), cuts
    cuts.sort(key=lambda cut: (cut.row, cut.column))
    return [patched.get(r, row) for r, row in enumerate(rows)], cuts


def _convert(value: Any, max_bytes: int) -> tuple[Any, tuple[int, int, str] | None]:
    """(JSON-safe value, (shown, total, unit) when it was cut)."""
    if isinstance(value, Truncated):
        if isinstance(value.head, bytes):
            return to_json_value(value.head[:max_bytes]), (
                min(len(value.head), max_bytes),
                value.total,
                "bytes",
            )
        head = cut_text(value.head, max_bytes) or value.head
        return head, (len(head), value.total, "characters")
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        if len(data) > max_bytes:
            return to_json_value(data[:max_bytes]), (max_bytes, len(data), "bytes")
        return to_json_value(data), None
    converted = to_json_value(value)
    if isinstance(converted, str):
        shown = cut_text(converted, max_bytes)
        if shown is not None:
            return shown, (len(shown), len(converted), "characters")
        return converted, None
    if isinstance(converted, dict | list):
        text = pydantic_core.to_json(converted).decode()
        if len(text) > max_bytes:
            shown = cut_text(text, max_bytes) or text
            return shown, (len(shown), len(text), "characters of its JSON text")
    return converted, None


def _json(value: Any) -> str:
    return pydantic_core.to_json(value).decode()


def _rows_within(rows: Sequence[Sequence[Any]], budget: int, *, at_least: int) -> int:
    """How many leading rows fit in `budget` bytes of JSON (commas included)."""
    used = 1
    for count, row in enumerate(rows):
        used += len(pydantic_core.to_json(row)) + 1
        if used > budget:
            return max(count, at_least)
    return len(rows)
