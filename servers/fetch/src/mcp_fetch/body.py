"""Turning response bytes into something usable: bounded decompression, media type, charset.

Decompression is done here rather than by httpx because httpx decompresses each network chunk in
one call: a 64 KiB chunk of a gzip bomb becomes ~64 MiB in memory before anyone can count it.
`BoundedDecoder` asks zlib for at most the bytes still allowed, so memory never exceeds the cap.
"""

from __future__ import annotations

import codecs
import re
import zlib
from typing import Literal

from mcp_batteries.errors import UpstreamError
from mcp_batteries.safety import scrub

# Only what the standard library can decode is advertised; brotli/zstd would need extra packages.
ACCEPT_ENCODING = "gzip, deflate"
# Real pages compress 3-20x, very repetitive ones ~100x; a gzip bomb of zeros about 1000x.
MAX_COMPRESSION_RATIO = 200
# The ratio is only judged once this much has been decoded, so tiny highly compressible bodies pass.
_RATIO_GRACE_BYTES = 1024 * 1024

Kind = Literal["html", "text", "image", "binary"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {"application/json", "application/xml", "application/javascript", "application/x-javascript",
     "application/ecmascript", "application/yaml", "application/x-yaml", "application/toml",
     "application/sql", "application/graphql", "application/x-sh", "image/svg+xml",
     "application/x-ndjson", "application/csv"}
)  # fmt: skip
UNINFORMATIVE_TYPES = frozenset(
    {"", "application/octet-stream", "binary/octet-stream", "application/unknown"}
)


class BodyTooLarge(Exception):
    def __init__(self, *, ratio: float | None = None) -> None:
        super().__init__()
        self.ratio = ratio  # set when the compression-ratio guard, not the size cap, tripped


class _ZlibStream:
    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        # wbits 47 accepts gzip and zlib headers; "deflate" is zlib-wrapped per RFC 9110, but some
        # servers send raw deflate, so that is tried if the zlib header is missing.
        self._wbits = 47 if encoding in ("gzip", "x-gzip") else 15
        self._decompressor = zlib.decompressobj(self._wbits)
        self._started = False

    def decompress(self, data: bytes, max_length: int) -> tuple[bytes, bytes]:
        """Up to max_length decoded bytes, and the input not yet consumed."""
        try:
            out = self._decompressor.decompress(data, max_length)
        except zlib.error as exc:
            if self._encoding == "deflate" and not self._started:
                self._decompressor = zlib.decompressobj(-15)
                self._started = True
                return self.decompress(data, max_length)
            raise UpstreamError(
                f"The server sent a corrupt {self._encoding}-compressed body ({exc})."
            ) from exc
        self._started = True
        if self._decompressor.eof and self._decompressor.unused_data:
            # Concatenated gzip members: start a fresh decompressor on what follows.
            rest = self._decompressor.unused_data
            self._decompressor = zlib.decompressobj(self._wbits)
            return out, rest
        return out, self._decompressor.unconsumed_tail

    def flush(self) -> bytes:
        try:
            return self._decompressor.flush()
        except zlib.error as exc:
            raise UpstreamError(
                f"The server sent a corrupt {self._encoding}-compressed body ({exc})."
            ) from exc


class BoundedDecoder:
    """Undoes Content-Encoding incrementally; raises BodyTooLarge past `limit` decoded bytes."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        for coding in codings:
            if coding not in ("gzip", "x-gzip", "deflate"):
                raise UpstreamError(
                    f"The server compressed the body with {coding!r}, which this fetcher cannot decode "
                    f"(it asks for {ACCEPT_ENCODING!r} only)."
                )
        if len(codings) > 1:
            raise UpstreamError(
                f"The server applied several compressions ({content_encoding}); not supported."
            )
        self._stream = _ZlibStream(codings[0]) if codings else None
        self._limit = limit
        self.raw_bytes = 0
        self.decoded_bytes = 0

    def feed(self, chunk: bytes) -> bytes:
        self.raw_bytes += len(chunk)
        if self._stream is None:
            self._count(len(chunk))
            return chunk
        pieces: list[bytes] = []
        data = chunk
        while data:
            out, data = self._stream.decompress(data, self._limit - self.decoded_bytes + 1)
            self._count(len(out))
            pieces.append(out)
        return b"".join(pieces)

    def finish(self) -> bytes:
        """Whatever the decompressor still buffers once the body has ended."""
        if self._stream is None:
            return b""
        rest = self._stream.flush()
        self._count(len(rest))
        return rest

    def _count(self, size: int) -> None:
        self.decoded_bytes += size
        if self.decoded_bytes > self._limit:
            raise BodyTooLarge()
        if (
            self._stream is not None
            and self.decoded_bytes > _RATIO_GRACE_BYTES
            and self.decoded_bytes > MAX_COMPRESSION_RATIO * max(self.raw_bytes, 1)
        ):
            raise BodyTooLarge(ratio=self.decoded_bytes / max(self.raw_bytes, 1))


def parse_content_type(header: str | None) -> tuple[str, str | None]:
    """(lower-case media type, charset parameter or None)."""
    if not header:
        return "", None
    mime, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("'\"") or None
    return mime.strip().lower(), charset


def sniff(body: bytes) -> str | None:
    """The media type evident from the first bytes, for a missing or uninformative Content-Type."""
    if body.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if body.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if body.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if body.startswith(b"RIFF") and body[8:12] == b"WEBP":
        return "image/webp"
    if body.startswith(b"%PDF-"):
        return "application/pdf"
    if body.startswith(b"PK\x03\x04"):
        return "application/zip"
    head = body[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<!doctype html", b"<html")) or any(
        t in head for t in (b"<html", b"<head>", b"<body")
    ):
        return "text/html"
    if b"\x00" not in body[:4096]:
        try:
            body[:4096].decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < 4090:  # a multi-byte character cut at the sample's end is fine
                return None
        return "text/plain"
    return None


def effective_media_type(header_mime: str, body: bytes) -> str:
    if header_mime in UNINFORMATIVE_TYPES:
        return sniff(body) or header_mime or "application/octet-stream"
    return header_mime


def kind_of(mime: str) -> Kind:
    if mime in _HTML_TYPES:
        return "html"
    if mime in IMAGE_TYPES:
        return "image"
    if mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml")):
        return "text"
    return "binary"


# Decoding text. Order (close to what browsers do, plus a guard against the most common mislabel):
#   1. a byte-order mark;
#   2. the charset the server declared: the Content-Type header, else <meta charset> / http-equiv in
#      the first 4 KiB of HTML, else the encoding of an <?xml ...?> declaration;
#   3. without a declaration: UTF-8 if the bytes are UTF-8, else windows-1252.
# A declared label is used only if it names an encoding of the WHATWG Encoding Standard (the ones
# browsers support); anything else (utf-7, base64, unicode_escape, x-user-defined, nonsense) is
# ignored as if nothing had been declared, because Python would either refuse it or decode it into
# something that is not the page's text. Two mislabels are corrected: bytes declared as a legacy
# encoding that are entirely valid, non-ASCII UTF-8 are UTF-8 (a server default of iso-8859-1 on a
# UTF-8 page is common); bytes declared (or taken) as UTF-8 in which no valid multi-byte sequence
# outweighs the invalid bytes are windows-1252.
# Undecodable bytes that remain become U+FFFD (the replacement character), and the text is passed
# through `mcp_batteries.safety.scrub`, so a decoded page can always be serialized into a reply.

_LABEL_ALIASES = {
    "iso-8859-1": "cp1252", "iso8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252",
    "us-ascii": "cp1252", "ascii": "cp1252", "windows-1252": "cp1252",
    "shift_jis": "cp932", "shift-jis": "cp932", "sjis": "cp932", "x-sjis": "cp932", "ms_kanji": "cp932",
    "windows-31j": "cp932", "euc-kr": "cp949", "ks_c_5601-1987": "cp949",
    "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "big5": "big5hkscs",
    "iso-8859-9": "cp1254", "tis-620": "cp874", "iso-8859-11": "cp874", "windows-874": "cp874",
    "x-mac-cyrillic": "mac_cyrillic", "x-mac-roman": "mac_roman", "iso-8859-8-i": "iso8859-8",
}  # fmt: skip
#: Python's names of the WHATWG encodings (after the aliases above).
_WHATWG_CODECS = frozenset(
    {"utf-8", "utf-16-le", "utf-16-be", "utf-16", "cp866", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic",
     "cp874", "gb18030", "big5hkscs", "euc_jp", "iso2022_jp", "cp932", "cp949"}
    | {f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)}
    | {f"cp{n}" for n in range(1250, 1259)}
)  # fmt: skip
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_:.+-]+)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]+encoding\s*=\s*["']([a-zA-Z0-9_:.+-]+)["']""")
_UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
    rb"|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)


def _codec(label: str | None) -> str | None:
    """The Python codec for a declared charset label, or None if it is not a WHATWG encoding."""
    if not label:
        return None
    label = label.strip().lower()
    label = _LABEL_ALIASES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if name not in _WHATWG_CODECS:
        return None
    # A page cannot really be UTF-16 if it declared so in ASCII-compatible bytes; browsers do the same.
    return "utf-8" if name.startswith("utf-16") else name


def _declared_codec(body: bytes, header_charset: str | None, *, is_html: bool) -> str | None:
    declared = _codec(header_charset)
    if declared is None and is_html:
        match = _META_CHARSET.search(body[:4096])
        declared = _codec(match.group(1).decode("ascii")) if match else None
    if declared is None and body.startswith(b"<?xml"):
        match = _XML_ENCODING.match(body[:512])
        declared = _codec(match.group(1).decode("ascii")) if match else None
    return declared


def _mostly_utf8(body: bytes) -> bool:
    """Whether bytes that are not valid UTF-8 are still mostly UTF-8 (valid sequences outnumber bad bytes)."""
    valid = _UTF8_SEQUENCE.findall(body)
    non_ascii = sum(1 for byte in body if byte >= 0x80)
    invalid = non_ascii - sum(len(sequence) for sequence in valid)
    return len(valid) > invalid


def decode_text(body: bytes, header_charset: str | None, *, is_html: bool) -> tuple[str, str]:
    """(text, codec used); never fails, and the text is always serializable (see above)."""
    text, codec = _decode(body, header_charset, is_html=is_html)
    return scrub(text), codec


def _decode(body: bytes, header_charset: str | None, *, is_html: bool) -> tuple[str, str]:
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if body.startswith(bom):
            return body[len(bom) :].decode(codec, errors="replace"), codec
    declared = _declared_codec(body, header_charset, is_html=is_html)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if declared is None or declared == "utf-8":
            return text, "utf-8"
        if text.isascii():  # ASCII bytes can still be another encoding's escapes (iso-2022-jp)
            return body.decode(declared, errors="replace"), declared
        return text, "utf-8"  # declared as a legacy encoding, but entirely valid non-ASCII UTF-8
    if declared is not None and declared != "utf-8":
        return body.decode(declared, errors="replace"), declared
    if _mostly_utf8(body):
        return body.decode("utf-8", errors="replace"), "utf-8"
    return body.decode("cp1252", errors="replace"), "cp1252"
