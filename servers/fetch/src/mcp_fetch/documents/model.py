"""What a converted document is, the limits every converter works under, and how it fails.

A `Document` is a list of `Section`s: the pages of a PDF, the sheets of a workbook, the slides of a
deck, the chapters of a book, or one section for formats without such units (Word, CSV, JSON, XML).
The `pages` argument of the fetch tool selects sections; `start_index` pages through their text.

Converters run in a child process (`isolate`), so a document crosses a pipe as JSON (`to_json` /
`from_json`): never pickle, because a converter that a hostile file managed to subvert must not be
able to run code in the server by what it sends back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

Output = Literal["markdown", "text"]
#: How a conversion fails, as the server will report it (InvalidInput, LimitExceeded, UpstreamError).
FailureKind = Literal["invalid", "limit", "upstream"]


class DocumentError(Exception):
    """A document that cannot be converted, with the sentence the model will read."""

    kind: FailureKind = "invalid"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DocumentTooLarge(DocumentError):
    """A document beyond one of the `DocumentLimits` (pages, cells, bytes inside a zip, nesting...)."""

    kind: FailureKind = "limit"


@dataclass(frozen=True)
class DocumentLimits:
    """What one conversion may consume. Every converter checks its own counts against these."""

    #: Pages of a PDF, slides of a deck and chapters of a book converted; the rest are named, not read.
    max_sections: int = 2000
    #: Characters of converted text kept for one document; conversion stops there with a notice.
    max_output_chars: int = 8_000_000
    #: Cells read from a workbook (all sheets), rows of a CSV count as cells too.
    max_cells: int = 2_000_000
    #: Columns of a sheet or CSV shown; a wider table is cut with a notice.
    max_columns: int = 200
    #: Members of a zip container (OOXML, ODF, EPUB).
    max_zip_entries: int = 10_000
    #: Bytes a zip container may expand to, all members together (checked while decompressing).
    max_unzipped_bytes: int = 256 * 1024 * 1024
    #: How much a zip member may expand its compressed size (after the first MiB); XML compresses
    #: 5-30x, a zip bomb 1000x and more.
    max_zip_ratio: int = 200
    #: Nesting of JSON, XML and feeds.
    max_depth: int = 100


@dataclass(frozen=True)
class Section:
    label: str  # "1" for the first page or slide, the sheet's name for a sheet
    text: str  # the converted text, starting with the section's marker line
    note: str = ""  # what the outline says about it: "10,000 rows", "no text layer"


@dataclass(frozen=True)
class Document:
    kind: str  # "PDF", "Word document", "Excel workbook"...
    unit: str | None  # "page", "sheet", "slide", "chapter"; None when the document is one section
    sections: tuple[Section, ...]
    title: str | None = None
    notices: tuple[str, ...] = ()
    #: Units the document has when more exist than were converted (e.g. a PDF of 50,000 pages).
    total_units: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # converter figures for the log (peak RSS...)

    @property
    def text(self) -> str:
        return join_sections(self.sections)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "kind": self.kind,
                "unit": self.unit,
                "sections": [[s.label, s.text, s.note] for s in self.sections],
                "title": self.title,
                "notices": list(self.notices),
                "total_units": self.total_units,
                "extra": self.extra,
            },
            ensure_ascii=False,
        ).encode("utf-8", errors="surrogatepass")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Document:
        return cls(
            kind=str(data["kind"]),
            unit=data["unit"],
            sections=tuple(Section(str(a), str(b), str(c)) for a, b, c in data["sections"]),
            title=data["title"],
            notices=tuple(str(n) for n in data["notices"]),
            total_units=data["total_units"],
            extra=dict(data.get("extra") or {}),
        )


def join_sections(sections: tuple[Section, ...] | list[Section]) -> str:
    return "\n\n".join(s.text.strip("\n") for s in sections if s.text.strip()) + "\n"


class OutputBudget:
    """Counts converted characters against `max_output_chars`; converters stop when it runs out."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, text: str) -> bool:
        """Count `text`; False once the budget is spent (the caller stops and says so)."""
        self.used += len(text)
        return self.used <= self.limit

    @property
    def spent(self) -> bool:
        return self.used > self.limit


@dataclass(frozen=True)
class Job:
    """What a child converts: everything is plain data, pickled from the server to the child."""

    format: str
    body: bytes
    url: str
    output: Output
    charset: str | None
    limits: DocumentLimits
