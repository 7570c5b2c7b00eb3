"""Cutting a long converted page into chunks the model reads with start_index / max_length."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_batteries.errors import InvalidInput

# A chunk may end up to this fraction of max_length early so that it ends at a line or word break;
# cutting mid-word makes both chunks harder to read.
_BREAK_LOOKBACK = 0.1


@dataclass(frozen=True)
class Page:
    content: str
    total_length: int
    start_index: int
    next_start_index: int | None  # None when nothing remains
    truncated: bool


def page(text: str, start_index: int, max_length: int) -> Page:
    total = len(text)
    if start_index < 0:
        raise InvalidInput(f"start_index must be 0 or more, got {start_index}.")
    if max_length <= 0:
        raise InvalidInput(f"max_length must be at least 1, got {max_length}.")
    if start_index > 0 and start_index >= total:
        raise InvalidInput(
            f"start_index {start_index} is past the end of the content, which is {total} characters "
            "long; the whole content has already been returned. Use start_index 0 to read it again."
        )
    end = start_index + max_length
    if end >= total:
        return Page(text[start_index:], total, start_index, None, False)
    end = _nice_break(text, start_index, end)
    return Page(text[start_index:end], total, start_index, end, True)


def _nice_break(text: str, start: int, end: int) -> int:
    """The latest newline, else whitespace, within the look-back window before `end`; else `end`."""
    floor = max(start + 1, end - int((end - start) * _BREAK_LOOKBACK))
    newline = text.rfind("\n", floor, end)
    if newline != -1:
        return newline + 1
    for position in range(end, floor - 1, -1):
        if text[position - 1].isspace():
            return position
    return end
