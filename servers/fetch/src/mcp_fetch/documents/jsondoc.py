"""JSON → Markdown: a list of flat records as a table, anything else indented in a ```json fence.

Parsed with the standard library (no object hooks, so nothing but data is built); nesting deeper
than `max_depth` is refused (the parser's own recursion guard catches the rest).
"""

from __future__ import annotations

import json
from typing import Any

from .model import Document, DocumentError, DocumentTooLarge, Section
from .style import Style

_MAX_TABLE_KEYS = 30


def convert(job: Any) -> Document:
    from ..body import decode_text

    text = decode_text(job.body, job.charset, is_html=False)[0]
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise DocumentTooLarge("The JSON document is nested too deeply to read.") from exc
    except ValueError as exc:
        raise DocumentError(f"The JSON document is malformed ({exc}).") from exc
    depth = _depth(value, job.limits.max_depth)
    if depth > job.limits.max_depth:
        raise DocumentTooLarge(f"The JSON document is nested more than {job.limits.max_depth} levels deep.")
    style = Style(job.output)
    table = _records_table(value, style)
    if table is not None:
        return Document(
            kind="JSON document", unit=None, sections=(Section("1", table, f"{len(value):,} records"),)
        )
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    return Document(kind="JSON document", unit=None, sections=(Section("1", style.fence(pretty, "json")),))


def _depth(value: Any, limit: int) -> int:
    """The nesting depth of `value`, counted without recursion and given up past `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return depth
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def _records_table(value: Any, style: Style) -> str | None:
    if not isinstance(value, list) or not value or not all(isinstance(item, dict) for item in value):
        return None
    keys: dict[str, None] = {}
    for item in value:
        for key, cell in item.items():
            if isinstance(cell, (dict, list)):
                return None
            keys.setdefault(str(key))
        if len(keys) > _MAX_TABLE_KEYS:
            return None
    rows = [list(keys)]
    rows.extend([_cell(item.get(key)) for key in keys] for item in value)
    return style.table(rows)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
