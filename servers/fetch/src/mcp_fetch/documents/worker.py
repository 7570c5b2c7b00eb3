"""What a conversion child runs: the converter for the job's format. No `mcp` import, no network.

Each converter is a module of this package, imported here on demand (and by `preload` in the
forkserver, so children have them ready).
"""

from __future__ import annotations

import importlib

from mcp_batteries.safety import scrub

from .detect import NAMES
from .model import Document, Job, Section

_MODULES = {
    "pdf": "pdf",
    "docx": "word",
    "xlsx": "sheets",
    "xls": "sheets",
    "ods": "sheets",
    "pptx": "slides",
    "epub": "epub",
    "csv": "delimited",
    "tsv": "delimited",
    "json": "jsondoc",
    "xml": "feeds",
}


def convert(job: Job) -> Document:
    module = importlib.import_module(f"{__package__}.{_MODULES[job.format]}")
    document: Document = module.convert(job)
    # Text from a file can hold anything; what crosses the pipe is valid Unicode.
    sections = tuple(Section(scrub(s.label), scrub(s.text), s.note) for s in document.sections)
    return Document(
        kind=document.kind or NAMES[job.format],
        unit=document.unit,
        sections=sections,
        title=scrub(document.title) if document.title else None,
        notices=document.notices,
        total_units=document.total_units,
        extra=document.extra,
    )


def preload() -> None:
    """Import every converter and its libraries (in the forkserver, once)."""
    for name in set(_MODULES.values()):
        module = importlib.import_module(f"{__package__}.{name}")
        getattr(module, "preload", lambda: None)()
