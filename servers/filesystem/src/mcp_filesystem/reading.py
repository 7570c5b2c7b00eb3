"""read_text_file (head/tail/offset/limit paging with caps), read_media_file, read_multiple_files.

Memory never grows with file size: text is read with `os.pread` in fixed blocks, lines longer
than the byte cap are cut while scanning (at a character boundary), and `tail` reads backwards
from the end. Every open goes through `open_for_read` (component-wise O_NOFOLLOW, regular files
only) after `access.resolve` (quoted names accepted, containment checked).

Contents that are not UTF-8 are never replaced or lost: such a page is decoded as windows-1252
(see `encoding`), one character per byte, and the reply says so; `edit_file` writes the file back
in that encoding. Files with NUL bytes in their first 8 KiB are binary and refused, pointing at
read_media_file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from mcp_batteries.errors import BatteriesError, InvalidInput, LimitExceeded
from mcp_batteries.safety import AllowedDirectories, unquote_path

from mcp_filesystem.access import open_to_read, quote_path
from mcp_filesystem.encoding import Encoding, decode, utf8_boundary
from mcp_filesystem.info import SNIFFABLE, guess_mime_type, sniff_mime_type

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "DEFAULT_MAX_MEDIA_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "FileReadResult",
    "MediaRead",
    "MultiRead",
    "TextRead",
    "read_media_file",
    "read_multiple_files",
    "read_text_file",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 256 * 1024
DEFAULT_MAX_MEDIA_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 1024 * 1024  # read_multiple_files, across all files
_BLOCK = 64 * 1024
_SKIP_BLOCK = 1024 * 1024
_BINARY_PROBE = 8 * 1024
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass(frozen=True, slots=True)
class TextRead:
    """One page of a text file. Line numbers are 1-based and inclusive; None when unknown
    (a `tail` that did not reach the start of the file cannot know absolute numbers)."""

    text: str
    start_line: int | None
    end_line: int | None
    truncated: bool  # more lines exist beyond what was returned
    next_offset: int | None  # pass as `offset` to continue; None if there is nothing after
    total_bytes: int
    notice: str | None  # for the model: truncation, the encoding used, cut lines
    encoding: Encoding = "utf-8"  # how `text` was decoded from the page's bytes

    def render(self) -> str:
        """Text plus the notice on its own trailing line, as the server returns it."""
        if not self.notice:
            return self.text
        sep = "" if not self.text or self.text.endswith("\n") else "\n"
        return f"{self.text}{sep}\n[{self.notice}]"


class _Line(NamedTuple):
    data: bytes  # without the trailing newline
    newline: bool  # the line ended with b"\n"
    cut: bool  # longer than the cap; only the first `cap` bytes kept


def _human(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _iter_lines(fd: int, cap: int) -> Iterator[_Line]:
    """Lines from the start of `fd`; a line over `cap` bytes is cut (the rest is scanned past,
    never buffered), so memory stays O(cap + block)."""
    pos = 0
    pending = bytearray()
    cut = False
    while True:
        chunk = os.pread(fd, _BLOCK, pos)
        if not chunk:
            if cut:
                del pending[utf8_boundary(pending) :]
            if pending or cut:
                yield _Line(bytes(pending), False, cut)
            return
        pos += len(chunk)
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl
            room = cap - len(pending)
            if room > 0:
                pending += chunk[start : min(end, start + room)]
            if end - start > max(room, 0):
                cut = True
            if nl < 0:
                break
            if cut:  # never end a cut line inside a UTF-8 sequence
                del pending[utf8_boundary(pending) :]
            yield _Line(bytes(pending), True, cut)
            pending.clear()
            cut = False
            start = nl + 1


def _decode(data: bytes) -> tuple[str, Encoding]:
    return decode(data)


def _check_count(name: str, value: int | None, minimum: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer")
    if value < minimum:
        raise InvalidInput(f"{name} must be >= {minimum} (lines are numbered from 1), got {value}")


def _refuse_binary(fd: int, shown: str, head: bytes | None = None) -> None:
    probe = os.pread(fd, _BINARY_PROBE, 0) if head is None else head[:_BINARY_PROBE]
    if b"\x00" in probe:
        utf16 = probe[:2] in _UTF16_BOMS
        hint = " (it may be UTF-16 text, which is not supported: convert it to UTF-8)" if utf16 else ""
        raise InvalidInput(
            f"{shown} looks like a binary file (NUL bytes in its first 8 KiB){hint}; "
            "use read_media_file for images and audio, or get_file_info for metadata"
        )


def read_text_file(
    allowed: AllowedDirectories,
    path: str,
    head: int | None = None,
    tail: int | None = None,
    offset: int | None = None,
    limit: int | None = None,
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> TextRead:
    """Read a text file: UTF-8, or windows-1252 when a page is not valid UTF-8 (the notice says so).

    head=N: first N lines. tail=N: last N lines (read backwards from the end). offset/limit:
    line paging, offset is 1-based like editors (offset=1 is the first line), limit defaults
    to `max_lines`. With none of them, at most `max_lines` lines / `max_bytes` bytes are
    returned and the notice says how to get the next page. `max_bytes` caps every mode.
    """
    _check_count("head", head, 1)
    _check_count("tail", tail, 1)
    _check_count("offset", offset, 1)
    _check_count("limit", limit, 1)
    if head is not None and tail is not None:
        raise InvalidInput("pass either head or tail, not both")
    if (head is not None or tail is not None) and (offset is not None or limit is not None):
        raise InvalidInput("head/tail cannot be combined with offset/limit")
    fd, real = open_to_read(allowed, path)
    shown = quote_path(real)
    try:
        size = os.fstat(fd).st_size
        if tail is None and (offset or 1) == 1 and size <= max_bytes:
            whole = _read_small_whole(fd, size, head or limit or max_lines, shown)
            if whole is not None:
                return whole
        _refuse_binary(fd, shown)
        if tail is not None:
            return _read_tail(fd, tail, max_bytes, size)
        if head is not None:
            return _read_forward(fd, 1, head, max_bytes, size, paging=False)
        return _read_forward(fd, offset or 1, limit or max_lines, max_bytes, size, paging=True)
    finally:
        os.close(fd)


def _read_small_whole(fd: int, size: int, count: int, shown: str) -> TextRead | None:
    """The common case (a small file that fits in one page) in one read, without a line loop.

    Returns None when the page would be cut short; the streaming reader then handles it.
    """
    data = os.pread(fd, size + 1, 0)
    if len(data) > size:  # the file grew since fstat: let the streaming reader decide
        return None
    if b"\x00" in data[:_BINARY_PROBE]:
        _refuse_binary(fd, shown, data)
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    if lines > count:
        return None
    text, encoding = _decode(data)
    notice = "; ".join(_notes(encoding, [])) or None
    return TextRead(text, 1 if lines else None, lines or None, False, None, size, notice, encoding)


NOT_UTF8 = (
    "the file is not valid UTF-8: shown decoded as windows-1252, one character per byte, nothing "
    "replaced; edit_file writes it back in windows-1252, keeping the bytes it does not change"
)


def _notes(encoding: Encoding, cut_lines: list[int]) -> list[str]:
    notes = []
    if encoding != "utf-8":
        notes.append(NOT_UTF8)
    if cut_lines:
        which = ", ".join(str(n) for n in cut_lines[:5]) + (", ..." if len(cut_lines) > 5 else "")
        notes.append(f"line(s) {which} were longer than the byte cap and were cut")
    return notes


def _past_end(offset: int, lines: int, size: int) -> TextRead:
    return TextRead(
        text="",
        start_line=None,
        end_line=None,
        truncated=False,
        next_offset=None,
        total_bytes=size,
        notice=f"offset {offset} is past the end of the file, which has {lines} line(s)",
    )


def _line_start(fd: int, offset: int, size: int) -> tuple[int | None, int]:
    """(byte position where line `offset` starts, or None past the end; lines skipped), found
    by counting newlines a block at a time in C (`bytes.count`), never line by line in Python."""
    wanted = offset - 1  # newlines to skip
    if wanted == 0:
        return 0, 0
    pos = seen = 0
    last = b"\n"
    step = _BLOCK  # doubling: a near offset reads little, a far one few big blocks
    while pos < size:
        block = os.pread(fd, step, pos)
        step = min(step * 2, _SKIP_BLOCK)
        if not block:
            break
        in_block = block.count(b"\n")
        if seen + in_block >= wanted:
            at = -1
            for _ in range(wanted - seen):
                at = block.find(b"\n", at + 1)
            return pos + at + 1, wanted
        seen += in_block
        pos += len(block)
        last = block[-1:]
    lines = seen + (1 if size and last != b"\n" else 0)  # a last line without a newline
    return (size, lines) if lines == wanted else (None, lines)


def _read_forward(fd: int, offset: int, count: int, max_bytes: int, size: int, *, paging: bool) -> TextRead:
    """A page of up to `count` lines / `max_bytes` bytes from line `offset`, with one `pread` of
    the page and C-level splitting. A first line longer than the byte cap needs cutting: that
    rare page goes through the line-by-line reader."""
    start_pos, skipped = _line_start(fd, offset, size)
    if start_pos is None:
        return _past_end(offset, skipped, size)
    data = os.pread(fd, max_bytes + 1, start_pos)
    at_eof = start_pos + len(data) >= size
    parts = data.split(b"\n", count)  # complete lines are followed by a newline within `data`
    complete = len(parts) - 1
    used = taken = 0
    byte_capped = more = False
    for i in range(min(complete, count)):
        cost = len(parts[i]) + 1
        if taken and used + cost > max_bytes:
            byte_capped = more = True
            break
        used += cost
        taken += 1
    end_byte = used  # the page's bytes are data[:end_byte]
    if not more:
        if taken == count:
            more = start_pos + used < size
        else:
            rest = parts[taken] if taken < len(parts) else b""
            if at_eof and taken == complete:
                if rest:  # the last line of the file, without a newline
                    if taken and used + len(rest) + 1 > max_bytes:
                        byte_capped = more = True
                    else:
                        taken += 1
                        end_byte = used + len(rest)
            elif taken == 0:
                return _read_forward_streaming(fd, offset, count, max_bytes, size, paging=paging)
            else:
                byte_capped = more = True  # the next line does not fit in what is left
    text, encoding = _decode(data[:end_byte])
    return _forward_page(text, encoding, offset, taken, count, max_bytes, size, more, byte_capped, [], paging)


def _forward_page(
    text: str,
    encoding: Encoding,
    offset: int,
    taken: int,
    count: int,
    max_bytes: int,
    size: int,
    more: bool,
    byte_capped: bool,
    cut_lines: list[int],
    paging: bool,
) -> TextRead:
    start = offset if taken else None
    end = offset + taken - 1 if taken else None
    # head=N that simply stops at N lines is not "truncated"; a byte-capped head is.
    truncated = more and (paging or byte_capped)
    next_offset = (end or offset - 1) + 1 if truncated else None
    notes = []
    if truncated:
        page = count if paging else count - taken  # a capped head: the rest of the head
        why = f"; output cap of {_human(max_bytes)} reached" if byte_capped else ""
        notes.append(
            f"Showing lines {start}-{end} of a {_human(size)} file (truncated{why}); "
            f"call read_text_file with offset={next_offset}, limit={page} for more"
        )
    notes += _notes(encoding, cut_lines)
    return TextRead(text, start, end, truncated, next_offset, size, "; ".join(notes) or None, encoding)


def _read_forward_streaming(
    fd: int, offset: int, count: int, max_bytes: int, size: int, *, paging: bool
) -> TextRead:
    """Line by line, cutting lines longer than the byte cap while scanning (memory stays bounded
    whatever a line's length)."""
    lines = _iter_lines(fd, max_bytes)
    lineno = 0
    for _ in range(offset - 1):  # skip, streaming: nothing is kept
        if next(lines, None) is None:
            break
        lineno += 1
    if lineno < offset - 1:
        return _past_end(offset, lineno, size)
    taken: list[_Line] = []
    used = 0
    cut_lines: list[int] = []
    byte_capped = False
    for line in lines:
        if len(taken) >= count:
            more = True  # one line past the page: more exists
            break
        cost = len(line.data) + 1
        if taken and used + cost > max_bytes:
            byte_capped = True
            more = True
            break
        taken.append(line)
        used += cost
        if line.cut:
            cut_lines.append(offset + len(taken) - 1)
    else:
        more = False
    text, encoding = _decode(
        b"\n".join(line.data for line in taken) + (b"\n" if taken and taken[-1].newline else b"")
    )
    return _forward_page(
        text, encoding, offset, len(taken), count, max_bytes, size, more, byte_capped, cut_lines, paging
    )


def _read_tail(fd: int, count: int, max_bytes: int, size: int) -> TextRead:
    """Last `count` lines, reading blocks backwards: at most ~max_bytes + one block is read."""
    chunks: list[bytes] = []
    pos = size
    newlines = 0
    collected = 0
    ends_with_nl = size > 0 and os.pread(fd, 1, size - 1) == b"\n"
    # We need count+1 line starts; the file's final newline terminates the last line rather
    # than starting a new one, so it does not count.
    needed = count + (1 if ends_with_nl else 0)
    while pos > 0 and newlines < needed and collected <= max_bytes:
        step = min(_BLOCK, pos)
        pos -= step
        chunk = os.pread(fd, step, pos)
        chunks.append(chunk)
        newlines += chunk.count(b"\n")
        collected += len(chunk)
    data = b"".join(reversed(chunks))
    reached_start = pos == 0
    parts = data.split(b"\n") if data else []
    if ends_with_nl:
        parts.pop()  # the empty string after the final newline
    if not reached_start:
        parts.pop(0)  # partial first line (or, if capped, an arbitrary cut)
    more_before = not reached_start or len(parts) > count
    parts = parts[-count:] if parts else []
    cut = False
    # Byte cap: drop the oldest lines; keep at least the last one (its end, if over the cap).
    used = sum(len(p) + 1 for p in parts)
    while len(parts) > 1 and used > max_bytes:
        used -= len(parts.pop(0)) + 1
        more_before = True
    if parts and len(parts[0]) > max_bytes:
        parts[0] = _from_char_start(parts[0][-max_bytes:])
        cut = True
    if not parts and not reached_start and data:
        parts, cut = [_from_char_start(data[-max_bytes:].rstrip(b"\n"))], True  # one gigantic last line
    text, encoding = _decode(b"\n".join(parts) + (b"\n" if parts and ends_with_nl else b""))
    start = end = None
    if reached_start and not more_before:
        start, end = (1, len(parts)) if parts else (None, None)
    elif reached_start:
        total = data.count(b"\n") + (0 if ends_with_nl or not data else 1)
        start, end = total - len(parts) + 1, total
    notes = []
    if more_before and len(parts) < count:
        notes.append(f"showing the last {len(parts)} line(s) only: output cap of {_human(max_bytes)} reached")
    if cut:
        notes.append("the last line is longer than the byte cap; only its end is shown")
    notes += _notes(encoding, [])
    return TextRead(text, start, end, False, None, size, "; ".join(notes) or None, encoding)


def _from_char_start(data: bytes) -> bytes:
    """`data` without UTF-8 continuation bytes at its start (the end of a cut-off character)."""
    skip = 0
    while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
        skip += 1
    return data[skip:]


class MediaRead(NamedTuple):
    data: bytes
    mime_type: str


def read_media_file(
    allowed: AllowedDirectories, path: str, *, max_bytes: int = DEFAULT_MAX_MEDIA_BYTES
) -> MediaRead:
    """An image or audio file as `(bytes, mime_type)`. The type comes from magic numbers when
    recognisable, else from the extension; a file whose extension claims a checkable type
    (png, jpeg, ...) but whose content does not match is refused."""
    fd, real = open_to_read(allowed, path)
    shown = quote_path(real)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise LimitExceeded(
                f"{shown} is {_human(size)}; read_media_file is limited to {_human(max_bytes)} per file"
            )
        by_name = guess_mime_type(real)
        sniffed = sniff_mime_type(os.pread(fd, 1024, 0))
        mime = sniffed or by_name
        if sniffed is None and by_name in SNIFFABLE:
            raise InvalidInput(f"{shown} has a {by_name} extension but its content is not {by_name}")
        if mime is None or not mime.startswith(("image/", "audio/")):
            raise InvalidInput(
                f"{shown} is not an image or audio file ({mime or 'unknown type'}); "
                "use read_text_file for text"
            )
        buf = bytearray()
        while len(buf) <= max_bytes:  # the file may grow while we read: stop at the cap
            chunk = os.pread(fd, min(1024 * 1024, max_bytes + 1 - len(buf)), len(buf))
            if not chunk:
                break
            buf += chunk
        if len(buf) > max_bytes:
            raise LimitExceeded(f"{shown} grew past the {_human(max_bytes)} limit while being read")
        return MediaRead(bytes(buf), mime)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class FileReadResult:
    path: str  # as the caller gave it, in the shown (quoted where needed) form
    text: str | None  # rendered text (with any notice) on success
    error: str | None  # the error message on failure; exactly one of text/error is set
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class MultiRead:
    results: list[FileReadResult]
    notice: str | None

    def render(self) -> str:
        """The reference's layout: `path:` and the text, or `path: Error - why`, between `---`."""
        parts = [
            f"{r.path}:\n{r.text}" if r.error is None else f"{r.path}: Error - {r.error}"
            for r in self.results
        ]
        if self.notice:
            parts.append(self.notice)
        return "\n---\n".join(parts)


def read_multiple_files(
    allowed: AllowedDirectories,
    paths: Sequence[str],
    *,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_lines: int = DEFAULT_MAX_LINES,
) -> MultiRead:
    """Read several text files; each gets its own success or error, so one failure does not
    sink the rest. Output across all files is capped at `max_total_bytes`: later files are
    reported as skipped once the budget is spent."""
    if isinstance(paths, str):
        raise InvalidInput("paths must be a list of paths, not a single string")
    results: list[FileReadResult] = []
    budget = max_total_bytes
    skipped = 0
    for given in paths:
        p = quote_path(unquote_path(given)) if isinstance(given, str) else given
        if budget <= 0:
            skipped += 1
            results.append(
                FileReadResult(
                    p, None, f"not read: the total output cap of {_human(max_total_bytes)} was reached"
                )
            )
            continue
        try:
            page = read_text_file(
                allowed, given, max_lines=max_lines, max_bytes=min(max_bytes_per_file, budget)
            )
        except BatteriesError as exc:
            results.append(FileReadResult(p, None, str(exc)))
            continue
        rendered = page.render()
        budget -= len(rendered) if rendered.isascii() else len(rendered.encode("utf-8"))
        results.append(FileReadResult(p, rendered, None, page.truncated))
    notice = None
    if skipped:
        notice = (
            f"{skipped} file(s) not read: total output cap of {_human(max_total_bytes)} reached; "
            "read them with separate calls"
        )
    return MultiRead(results, notice)
