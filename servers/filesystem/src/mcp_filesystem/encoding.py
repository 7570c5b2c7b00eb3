"""File contents that are not UTF-8: one named, reversible fallback instead of lost bytes.

Text tools read UTF-8. Bytes that do not decode as UTF-8 are read as windows-1252, as the WHATWG
Encoding Standard defines it (what browsers do for Latin-1 and windows-1252 pages): every byte is
exactly one character and back, so nothing is replaced or lost. The five bytes windows-1252
leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) map to the control characters U+0081.. of the
same number, which Python's own `cp1252` codec refuses. `edit_file` writes such a file back in
windows-1252, so the bytes an edit does not touch stay exactly as they were; a character that
windows-1252 cannot hold is refused with a clear error instead of being mangled.
"""

from __future__ import annotations

import codecs
from typing import Final, Literal

__all__ = ["FALLBACK", "Encoding", "decode", "encode", "is_utf8", "utf8_boundary"]

Encoding = Literal["utf-8", "windows-1252"]
FALLBACK: Final = "windows-1252"
_HANDLER: Final = "mcp-filesystem-whatwg-1252"
_UNDEFINED: Final = frozenset({0x81, 0x8D, 0x8F, 0x90, 0x9D})


def _whatwg_1252(error: UnicodeError) -> tuple[str | bytes, int]:
    if isinstance(error, UnicodeDecodeError):
        chunk = error.object[error.start : error.end]
        if all(b in _UNDEFINED for b in chunk):
            return "".join(chr(b) for b in chunk), error.end
    elif isinstance(error, UnicodeEncodeError):
        chunk_text = error.object[error.start : error.end]
        if all(ord(c) in _UNDEFINED for c in chunk_text):
            return bytes(ord(c) for c in chunk_text), error.end
    raise error


codecs.register_error(_HANDLER, _whatwg_1252)


def is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decode(data: bytes) -> tuple[str, Encoding]:
    """The text of `data` and the encoding it was read in: UTF-8, else windows-1252."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("cp1252", _HANDLER), "windows-1252"


def encode(text: str, encoding: Encoding) -> bytes:
    """`text` in `encoding`; UnicodeEncodeError (with the offending position) if it cannot be."""
    if encoding == "utf-8":
        return text.encode("utf-8")
    return text.encode("cp1252", _HANDLER)


def utf8_boundary(data: bytes | bytearray) -> int:
    """The length of `data` without a UTF-8 sequence cut off at its end (for byte caps)."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte < 0x80:
            return end  # ASCII: nothing cut
        if byte >= 0xC0:  # a lead byte: is its sequence complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return end if back >= need else end - back
    return end
