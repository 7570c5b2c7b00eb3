"""Documents for mcp-fetch: PDF, Word, workbooks, slides, EPUB, CSV/TSV, JSON and XML feeds → Markdown.

- `detect`: which format a response is (magic bytes, zip contents, media type; never the URL);
- `convert`: the conversion, run in a child process under a time and memory budget (`isolate`),
  one converter module per format family (`pdf`, `word`, `sheets`, `slides`, `epub`, `delimited`,
  `jsondoc`, `feeds`), all reading through the guarded zip and XML helpers (`safezip`, `safexml`);
- `select`: the `pages` argument, and the reply's outline of what the document holds.

No `mcp` import here: the server's tool wiring is in `server.py`, the fetching in `client.py`.
"""

from __future__ import annotations

from mcp_batteries.errors import BatteriesError, InvalidInput, LimitExceeded, UpstreamError

from .detect import BINARY_FORMATS, NAMES, Format, detect, is_document_type
from .isolate import Budget, ConversionFailed, Job, convert_isolated
from .model import Document, DocumentError, DocumentLimits, Output, Section
from .pages import Selection, select


async def convert(
    format: Format,
    body: bytes,
    *,
    url: str,
    output: Output,
    charset: str | None,
    limits: DocumentLimits,
    budget: Budget,
) -> Document:
    """The document converted, or the BatteriesError a tool reports (never an unexpected exception)."""
    try:
        return await convert_isolated(Job(format, body, url, output, charset, limits), budget)
    except ConversionFailed as exc:
        raise _error(exc.kind, exc.message) from None


def detect_format(mime: str, body: bytes) -> Format | None:
    """`detect`, its complaint about a damaged or mislabelled file as InvalidInput."""
    try:
        return detect(mime, body)
    except DocumentError as exc:
        raise InvalidInput(exc.message) from None


def _error(kind: str, message: str) -> BatteriesError:
    if kind == "limit":
        return LimitExceeded(message)
    if kind == "upstream":
        return UpstreamError(message)
    return InvalidInput(message)


__all__ = [
    "BINARY_FORMATS",
    "NAMES",
    "Budget",
    "Document",
    "DocumentLimits",
    "Format",
    "Section",
    "Selection",
    "convert",
    "detect_format",
    "is_document_type",
    "select",
]
