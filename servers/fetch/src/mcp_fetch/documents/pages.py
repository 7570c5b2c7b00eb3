"""The `pages` argument: which pages, sheets, slides or chapters of a document a reply shows.

Written for the model: "3", "2-5", "1,4,7-9", "10-" (to the end), or a sheet's name ("Data").
Numbers count from 1, as a reader does. The reply's outline says what exists ("PDF, 120 pages";
"2 sheets: 1 "Summary" (3 rows), 2 "Data" (10,001 rows)") and, after a selection, which pages come
next, so the model never has to guess a range.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcp_batteries.errors import InvalidInput

from .model import Document, Section, join_sections

_RANGE = re.compile(r"^\s*(\d+)\s*(?:(-)\s*(\d+)?)?\s*$")
_MAX_PARTS = 100
_OUTLINE_SECTIONS = 30  # sections named in an outline; more are counted


@dataclass(frozen=True)
class Selection:
    text: str
    outline: str  # one line for the reply: what the document is, what is shown
    next_pages: str | None  # the `pages` value that continues a selection, None at the end


def plural(unit: str, count: int) -> str:
    return f"{count:,} {unit}{'s' if count != 1 else ''}"


def select(document: Document, spec: str | None) -> Selection:
    sections = document.sections
    if spec is None or not spec.strip():
        return Selection(document.text, _outline(document, None), None)
    if document.unit is None:
        if spec.strip() in ("1", "1-", "1-1"):
            return Selection(document.text, _outline(document, None), None)
        raise InvalidInput(
            f"pages does not apply here: this {document.kind} is a single section; read it with start_index."
        )
    chosen = _parse(spec, document)
    picked = [sections[i] for i in chosen]
    last = chosen[-1]
    next_pages = None
    if last + 1 < len(sections):
        width = max(1, len(chosen))
        end = min(len(sections), last + 1 + width)
        next_pages = str(last + 2) if end == last + 2 else f"{last + 2}-{end}"
    return Selection(join_sections(picked), _outline(document, _ranges(chosen)), next_pages)


def _parse(spec: str, document: Document) -> list[int]:
    sections = document.sections
    names = {s.label.casefold(): i for i, s in enumerate(sections)}
    if document.unit == "sheet" and spec.strip().casefold() in names:
        return [names[spec.strip().casefold()]]
    parts = spec.split(",")
    if len(parts) > _MAX_PARTS:
        raise InvalidInput(f'pages lists {len(parts)} parts; at most {_MAX_PARTS}, e.g. "1-50".')
    chosen: set[int] = set()
    count = len(sections)
    for part in parts:
        if document.unit == "sheet" and part.strip().casefold() in names:
            chosen.add(names[part.strip().casefold()])
            continue
        match = _RANGE.match(part)
        if match is None:
            raise InvalidInput(_bad(spec, document))
        first = int(match.group(1))
        last = int(match.group(3)) if match.group(3) else (count if match.group(2) else first)
        if first < 1 or last < first:
            raise InvalidInput(_bad(spec, document))
        if first > count:
            beyond = ""
            if document.total_units and document.total_units > count:
                beyond = f" (it has {document.total_units:,}; only the first {count:,} were converted)"
            raise InvalidInput(
                f"pages {spec!r} is out of range: the {document.kind} has "
                f"{plural(document.unit or 'page', count)}"
                f"{beyond}, numbered 1-{count}."
            )
        chosen.update(range(first - 1, min(last, count)))
    return sorted(chosen)


def _bad(spec: str, document: Document) -> str:
    unit = document.unit or "page"
    example = ' or a sheet name such as "' + document.sections[0].label + '"' if unit == "sheet" else ""
    return (
        f'pages {spec!r} is not understood: give {unit} numbers counted from 1, such as "3", "2-5", '
        f'"1,4,7-9" or "10-"{example}.'
    )


def _ranges(indices: list[int]) -> str:
    """0-based sorted indices as 1-based ranges: [0,1,2,5] → "1-3, 6"."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ", ".join(str(a + 1) if a == b else f"{a + 1}-{b + 1}" for a, b in runs)


def _outline(document: Document, shown: str | None) -> str:
    sections = document.sections
    if document.unit is None:
        note = sections[0].note if sections and sections[0].note else ""
        return f"Document: {document.kind}{f' ({note})' if note else ''}."
    total = document.total_units or len(sections)
    line = f"Document: {document.kind}, {plural(document.unit, total)}"
    if document.unit == "sheet":
        named = [_sheet(i, s) for i, s in enumerate(sections[:_OUTLINE_SECTIONS])]
        more = f", and {len(sections) - _OUTLINE_SECTIONS} more" if len(sections) > _OUTLINE_SECTIONS else ""
        line += ": " + ", ".join(named) + more
    else:
        blank = [s.label for s in sections if s.note == "no text layer"]
        if blank:
            listed = ", ".join(blank[:20]) + ("..." if len(blank) > 20 else "")
            line += f" ({len(blank)} without a text layer: {listed})"
    line += "."
    if shown is not None:
        line += (
            f" Showing {document.unit}s {shown}."
            if ("-" in shown or "," in shown)
            else f" Showing {document.unit} {shown}."
        )
    elif len(sections) > 1:
        line += f' Select {document.unit}s with the pages argument, e.g. pages="2" or "1-3".'
    return line


def _sheet(index: int, section: Section) -> str:
    return f'{index + 1} "{section.label}"' + (f" ({section.note})" if section.note else "")
