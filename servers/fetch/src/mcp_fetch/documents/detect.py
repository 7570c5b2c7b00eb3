"""Which document format a response is: by its bytes first, then by its declared media type.

Binary formats are recognised by their magic bytes and, for zip containers, by the parts inside
(a .docx, .xlsx, .pptx, .ods and .epub are all zips): a PDF served as application/octet-stream is
still a PDF, and a body declared application/pdf that is not one is reported as damaged rather than
handed to a parser. Text formats (CSV, TSV, JSON, XML and feeds) are recognised by their media type;
an XML body is a feed when its root element says so. The URL's suffix is never consulted: it says
nothing reliable about what a server sends.
"""

from __future__ import annotations

import io
import zipfile
from typing import Literal

from .model import DocumentError

Format = Literal["pdf", "docx", "xlsx", "xls", "ods", "pptx", "epub", "csv", "tsv", "json", "xml"]

#: Formats whose bytes are binary: `raw=true` cannot return them as text.
BINARY_FORMATS: frozenset[str] = frozenset({"pdf", "docx", "xlsx", "xls", "ods", "pptx", "epub"})

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_OOXML = "EncryptedPackage".encode("utf-16-le")

PDF_TYPES = frozenset({"application/pdf", "application/x-pdf", "application/acrobat"})
_OOXML = "application/vnd.openxmlformats-officedocument."
_BY_TYPE: dict[str, Format] = {
    **dict.fromkeys(PDF_TYPES, "pdf"),
    _OOXML + "wordprocessingml.document": "docx",
    "application/vnd.ms-word.document.macroenabled.12": "docx",
    _OOXML + "spreadsheetml.sheet": "xlsx",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
    _OOXML + "presentationml.presentation": "pptx",
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": "pptx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/epub+zip": "epub",
    "text/csv": "csv",
    "application/csv": "csv",
    "text/x-csv": "csv",
    "text/comma-separated-values": "csv",
    "text/tab-separated-values": "tsv",
    "text/tsv": "tsv",
    "application/json": "json",
    "text/json": "json",
    "application/xml": "xml",
    "text/xml": "xml",
    "application/rss+xml": "xml",
    "application/atom+xml": "xml",
    "application/rdf+xml": "xml",
}
#: Declared types that say "some bytes": the bytes decide.
_UNINFORMATIVE = frozenset(
    {"", "application/octet-stream", "binary/octet-stream", "application/unknown", "application/zip",
     "application/x-zip-compressed", "application/download", "application/force-download",
     "application/x-download", "application/vnd.ms-office", "application/x-ole-storage", "application/cdfv2"}
)  # fmt: skip
#: Zip parts that say which OOXML document a zip is.
_OOXML_PARTS: tuple[tuple[str, Format], ...] = (
    ("word/document.xml", "docx"),
    ("xl/workbook.xml", "xlsx"),
    ("xl/workbook.bin", "xlsx"),
    ("ppt/presentation.xml", "pptx"),
)
_ODF_MIMETYPES: dict[bytes, Format] = {
    b"application/vnd.oasis.opendocument.spreadsheet": "ods",
    b"application/epub+zip": "epub",
}
NAMES: dict[str, str] = {
    "pdf": "PDF",
    "docx": "Word document",
    "xlsx": "Excel workbook",
    "xls": "Excel 97-2003 workbook",
    "ods": "OpenDocument spreadsheet",
    "pptx": "PowerPoint deck",
    "epub": "EPUB book",
    "csv": "CSV table",
    "tsv": "TSV table",
    "json": "JSON document",
    "xml": "XML document",
}


def is_document_type(mime: str) -> bool:
    """Whether a declared media type is a binary document (which gets the document size cap)."""
    return _BY_TYPE.get(mime) in BINARY_FORMATS or mime.startswith(
        (
            "application/vnd.openxmlformats-officedocument.",
            "application/vnd.ms-",
            "application/vnd.oasis.opendocument.",
        )
    )


def detect(mime: str, body: bytes) -> Format | None:
    """The document format of `body` (declared as `mime`), or None when it is not a document."""
    head = body[:1024]
    if b"%PDF-" in head:
        return "pdf"
    if body.startswith(b"PK\x03\x04"):
        return _zip_format(mime, body)
    if body.startswith(_OLE_MAGIC):
        return _ole_format(mime, body)
    declared = _BY_TYPE.get(mime)
    if declared is None and mime.endswith("+json"):
        declared = "json"
    if declared is None and mime.endswith("+xml") and mime not in ("application/xhtml+xml", "image/svg+xml"):
        declared = "xml"
    if declared in BINARY_FORMATS:
        raise DocumentError(
            f"The response is declared as {mime} but its bytes are not a {NAMES[declared]} "
            f"(it starts with {body[:16]!r}); the file is damaged or mislabelled."
        )
    return declared


def _zip_format(mime: str, body: bytes) -> Format | None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
        names = set(archive.namelist())
        mimetype = archive.read("mimetype")[:100].strip() if "mimetype" in names else b""
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, KeyError) as exc:
        if mime in _BY_TYPE:
            raise DocumentError(
                f"The {NAMES[_BY_TYPE[mime]]} is damaged: its zip container cannot be read ({exc})."
            ) from exc
        return None
    for part, found in _OOXML_PARTS:
        if part in names:
            return found
    if mimetype in _ODF_MIMETYPES:
        return _ODF_MIMETYPES[mimetype]
    if mimetype.startswith(b"application/vnd.oasis.opendocument."):
        kind = mimetype.decode("ascii", "replace").rsplit(".", 1)[-1]
        raise DocumentError(
            f"The response is an OpenDocument {kind} file; only OpenDocument spreadsheets (.ods) are "
            "converted."
        )
    if "META-INF/container.xml" in names:
        return "epub"
    return None


def _ole_format(mime: str, body: bytes) -> Format | None:
    if _ENCRYPTED_OOXML in body[: 1024 * 1024] or _ENCRYPTED_OOXML in body[-1024 * 1024 :]:
        raise DocumentError(
            "The document is encrypted (password-protected Office file); it cannot be read without the "
            "password, and no password is tried."
        )
    if mime in ("application/msword", "application/vnd.ms-powerpoint"):
        raise DocumentError(
            f"The response is a legacy binary Office file ({mime}); only .docx, .pptx and the spreadsheet "
            "formats (.xlsx, .xls, .ods) are converted."
        )
    return "xls"
