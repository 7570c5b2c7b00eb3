"""CSV and TSV → a Markdown table (the first row as its header), with the standard library's csv.

The delimiter of CSV is sniffed from the first 64 KiB among `,` `;` `|` and tab (servers label
semicolon-separated files text/csv too); TSV is tab-separated. Text is decoded like any fetched
text (declared charset, else UTF-8, else windows-1252).
"""

from __future__ import annotations

import csv
import io
from typing import Any

from .model import Document, DocumentError, DocumentTooLarge, Section
from .style import Style


def convert(job: Any) -> Document:
    from ..body import decode_text

    text = decode_text(job.body, job.charset, is_html=False)[0]
    kind = "TSV table" if job.format == "tsv" else "CSV table"
    delimiter = "\t" if job.format == "tsv" else _sniff(text[:65536])
    limits = job.limits
    csv.field_size_limit(1024 * 1024)
    rows: list[list[str]] = []
    cells = 0
    cut_columns = False
    try:
        for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter):
            if not any(cell.strip() for cell in row):
                continue
            cells += len(row)
            if cells > limits.max_cells:
                raise DocumentTooLarge(
                    f"The {kind} holds more than {limits.max_cells:,} cells; it was not converted."
                )
            if len(row) > limits.max_columns:
                row, cut_columns = row[: limits.max_columns], True
            rows.append(row)
    except csv.Error as exc:
        raise DocumentError(f"The {kind} is malformed ({exc}).") from exc
    if not rows:
        raise DocumentError(f"The {kind} is empty.")
    body = Style(job.output).table(rows)
    notices = (f"Only the first {limits.max_columns} columns are shown.",) if cut_columns else ()
    return Document(
        kind=kind, unit=None, sections=(Section("1", body, f"{len(rows):,} rows"),), notices=notices
    )


def _sniff(sample: str) -> str:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;|\t").delimiter
    except csv.Error:
        return ","
