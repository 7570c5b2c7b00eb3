"""edit_file: targeted text replacements with a unified diff, a superset of the reference tool.

``apply_edits`` is pure (text in, text and diff out); ``edit_file`` reads, calls it, and writes
through the caller's atomic writer. Edits apply in order, each to the previous one's result, and
all-or-nothing: any failing edit raises before anything is written.

Matching, per edit:
1. Exact: ``oldText`` (with its line endings adapted to the file's) must occur exactly once, or
   ``replaceAll`` must be set.
2. Otherwise whitespace-tolerant: whole lines are compared with leading/trailing whitespace
   stripped. The matched lines are replaced and ``newText`` is re-indented to the file's
   indentation, keeping its lines' relative indentation.
The file's line endings (even mixed ones: untouched bytes stay untouched), its trailing-newline
state and a UTF-8 BOM are preserved, and so is its encoding: a file that is not UTF-8 is edited as
windows-1252 (as read_text_file shows it, see ``encoding``) and written back in windows-1252.
"""

from __future__ import annotations

import difflib
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcp_batteries.errors import InvalidInput, LimitExceeded, NotFound
from mcp_batteries.safety import AllowedDirectories, open_for_read

from mcp_filesystem.access import quote_path, resolve
from mcp_filesystem.encoding import Encoding, decode

BOM = "\ufeff"
MAX_EDIT_FILE_BYTES = 10 * 1024 * 1024
_INDENT = re.compile(r"[ \t]*")
_LINE = re.compile(r"[^\n]*\n|[^\n]+")  # lines with their "\n" / "\r\n" kept; a last line may lack one


@dataclass(frozen=True)
class Edit:
    oldText: str
    newText: str
    replaceAll: bool = False

    @classmethod
    def coerce(cls, obj: Edit | Mapping[str, Any]) -> Edit:
        """Accept the tool's JSON objects as they arrive from the server layer."""
        if isinstance(obj, Edit):
            return obj
        try:
            return cls(str(obj["oldText"]), str(obj["newText"]), bool(obj.get("replaceAll", False)))
        except (KeyError, TypeError, AttributeError):
            raise InvalidInput(
                "Each edit needs 'oldText' and 'newText' strings (and optionally 'replaceAll')."
            ) from None


@dataclass(frozen=True)
class EditResult:
    new_text: str  # the whole new file content (BOM included if the original had one)
    diff: str  # unified diff with a/ b/ headers; "" when nothing changed
    changed: bool
    replacements: list[int]  # occurrences replaced, per edit
    notes: list[str]  # what the model should know: fuzzy matches, replaceAll counts, no-ops
    text: str  # the tool's answer: the diff in a ``` fence (as the reference does), then notes


def _line_no(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _places(line_numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in line_numbers[:10])
    return shown + (", …" if len(line_numbers) > 10 else "")


def _ambiguous(index: int, count: int, lines: list[int], how: str) -> InvalidInput:
    return InvalidInput(
        f"Edit {index}: oldText matches {count} places{how} (lines {_places(lines)}); add more "
        "surrounding context to make it unique, or set replaceAll=true to replace every one. "
        "No changes were written."
    )


def _quote(s: str, limit: int = 200) -> str:
    return repr(s if len(s) <= limit else s[:limit] + "…")


def _not_found(index: int, old: str, content: str, path: str) -> NotFound:
    first = next((ln for ln in old.split("\n") if ln.strip()), old.split("\n")[0])
    msg = f"Edit {index}: oldText was not found in {path}, not even ignoring whitespace. "
    msg += f"Its first line is {_quote(first)}. "
    stripped = [ln.strip() for ln in content.split("\n")]
    if first.strip() and len(stripped) <= 50_000:
        close = difflib.get_close_matches(first.strip(), stripped, n=1, cutoff=0.6)
        if close:
            msg += f"The most similar line is line {stripped.index(close[0]) + 1}: {_quote(close[0])}. "
    if index > 1:
        msg += "Edits apply in order, so earlier edits in this call may have changed the text. "
    return NotFound(msg + "Re-read the file and copy oldText exactly. No changes were written.")


def _find_all(haystack: str, needle: str) -> list[int]:
    found, start = [], haystack.find(needle)
    while start != -1:
        found.append(start)
        start = haystack.find(needle, start + len(needle))
    return found


def _width(indent: str) -> int:
    return sum(4 if c == "\t" else 1 for c in indent)


def _reindent(new_lines: list[str], old_lines: list[str], window: list[str]) -> list[str]:
    """Re-base ``newText``'s lines onto the indentation of the matched file lines.

    The shift comes from comparing oldText's indentation with the file's, line by line. Lines
    after the first decide it when there are any, because the usual slip is a first line copied
    without its indentation; a first newText line indented like oldText's first line takes the
    file's first-line indentation directly.
    """
    pairs = [
        (j, _INDENT.match(o).group(), _INDENT.match(f).group())  # type: ignore[union-attr]
        for j, (o, f) in enumerate(zip(old_lines, window, strict=True))
        if o.strip()
    ]
    if not pairs:
        return new_lines
    later = [p for p in pairs if p[0] > 0] or pairs
    shifts = Counter(_width(f) - _width(o) for _, o, f in later)
    shift = max(shifts, key=lambda s: shifts[s])  # Counter keeps first-seen order for ties
    _, ref_old, ref_file = next(p for p in later if _width(p[2]) - _width(p[1]) == shift)
    first_j, first_old, first_file = pairs[0]
    out = []
    for k, line in enumerate(new_lines):
        if not line.strip():
            out.append("")
            continue
        ind = _INDENT.match(line).group()  # type: ignore[union-attr]
        body = line[len(ind) :]
        if k == 0 and first_j == 0 and ind == first_old:
            out.append(first_file + body)
        elif ind.startswith(ref_old):
            out.append(ref_file + ind[len(ref_old) :] + body)
        else:
            w = max(0, _width(ind) + shift)
            out.append(("\t" * (w // 4) + " " * (w % 4) if ref_file.startswith("\t") else " " * w) + body)
    return out


def _fuzzy(
    content: str, old: str, new: str, eol: str, replace_all: bool, index: int
) -> tuple[str, int, list[str]]:
    """Whitespace-tolerant line matching; returns (content, replacements, matched line spans)."""
    old_lines = old.split("\n")
    if len(old_lines) > 1 and old_lines[-1] == "":
        old_lines.pop()  # a trailing newline in oldText just means "whole lines"
    target = [ln.strip() for ln in old_lines]
    if not any(target):
        return content, 0, []
    lines = _LINE.findall(content)
    stripped = [ln.strip() for ln in lines]
    k = len(target)
    starts: list[int] = []
    i = 0
    while i <= len(lines) - k:
        if stripped[i] == target[0] and stripped[i : i + k] == target:
            starts.append(i)
            i += k
        else:
            i += 1
    if not starts:
        return content, 0, []
    if len(starts) > 1 and not replace_all:
        raise _ambiguous(index, len(starts), [s + 1 for s in starts], " when whitespace is ignored")
    new_lines = new.split("\n")
    if new_lines and new_lines[-1] == "":
        new_lines.pop()
    for s in reversed(starts):
        window = [ln.rstrip("\r\n") for ln in lines[s : s + k]]
        last_end = lines[s + k - 1][len(lines[s + k - 1].rstrip("\r\n")) :]
        body = _reindent(new_lines, old_lines, window)
        replacement = [ln + eol for ln in body[:-1]] + ([body[-1] + last_end] if body else [])
        lines[s : s + k] = replacement
    spans = [f"{s + 1}-{s + k}" if k > 1 else str(s + 1) for s in starts]
    return "".join(lines), len(starts), spans


def _dominant_eol(content: str) -> str:
    crlf = content.count("\r\n")
    return "\r\n" if crlf and crlf >= content.count("\n") - crlf else "\n"


def _apply_one(content: str, edit: Edit, index: int, path: str, notes: list[str]) -> tuple[str, int]:
    if not edit.oldText:
        raise InvalidInput(
            f"Edit {index}: oldText is empty. Give the exact text to replace; to add text, include a "
            "neighbouring line in oldText and in newText. No changes were written."
        )
    old = edit.oldText.replace("\r\n", "\n")
    new = edit.newText.replace("\r\n", "\n")
    if old == new:
        notes.append(f"Edit {index} changes nothing: its newText is identical to its oldText.")
    eol = _dominant_eol(content)
    # Try the file's own line ending first, then the other, so mixed files still match exactly.
    for ending in dict.fromkeys([eol, "\n", "\r\n"]):
        needle = old.replace("\n", ending)
        hits = _find_all(content, needle)
        if not hits:
            continue
        if len(hits) > 1 and not edit.replaceAll:
            raise _ambiguous(index, len(hits), [_line_no(content, h) for h in hits], "")
        replacement = new.replace("\n", ending)
        if edit.replaceAll:
            content = content.replace(needle, replacement)
            if len(hits) > 1:
                notes.append(f"Edit {index} replaced {len(hits)} occurrences (replaceAll).")
        else:
            content = content[: hits[0]] + replacement + content[hits[0] + len(needle) :]
        return content, len(hits)
    content, count, where = _fuzzy(content, old, new, eol, edit.replaceAll, index)
    if not count:
        raise _not_found(index, old, content, path)
    notes.append(
        f"Edit {index} matched line(s) {', '.join(where[:10])} only after ignoring whitespace "
        "differences; newText was re-indented to match the file."
    )
    return content, count


def unified_diff(original: str, modified: str, path: str) -> str:
    """difflib's unified diff of the LF-normalized texts, 3 lines of context, with a/ b/ headers."""
    a = original.removeprefix(BOM).replace("\r\n", "\n").splitlines(keepends=True)
    b = modified.removeprefix(BOM).replace("\r\n", "\n").splitlines(keepends=True)
    name = path.lstrip("/")
    out = []
    for line in difflib.unified_diff(a, b, fromfile=f"a/{name}", tofile=f"b/{name}", n=3):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def fence(diff: str) -> str:
    """Wrap in a ```diff fence long enough not to collide with backticks in the content."""
    ticks = 3
    while "`" * ticks in diff:
        ticks += 1
    return f"{'`' * ticks}diff\n{diff}{'`' * ticks}\n\n"


def apply_edits(original: str, edits: Sequence[Edit | Mapping[str, Any]], path: str = "file") -> EditResult:
    """Apply ``edits`` in order to ``original``; raise InvalidInput/NotFound if any cannot apply."""
    if not edits:
        raise InvalidInput("edits is empty; give at least one {oldText, newText} pair.")
    parsed = [Edit.coerce(e) for e in edits]
    bom = BOM if original.startswith(BOM) else ""
    content = original[len(bom) :]
    notes: list[str] = []
    counts = []
    for index, edit in enumerate(parsed, start=1):
        content, count = _apply_one(content, edit, index, path, notes)
        counts.append(count)
    new_text = bom + content
    changed = new_text != original
    diff = unified_diff(original, new_text, path) if changed else ""
    if changed:
        text = fence(diff) + "\n".join(notes)
    else:
        text = "\n".join([f"No changes: the edits leave {path} exactly as it was.", *notes])
    return EditResult(new_text, diff, changed, counts, notes, text.rstrip("\n") + "\n" if notes else text)


def edit_file(
    path: Path,
    edits: Sequence[Edit | Mapping[str, Any]],
    dryRun: bool = False,
    *,
    write_atomic: Callable[[Path, str, Encoding], None],
    display_path: str | None = None,
    max_bytes: int = MAX_EDIT_FILE_BYTES,
    read_bytes: Callable[[Path, int], bytes] | None = None,
) -> EditResult:
    """Edit the (already validated) text file ``path``; with ``dryRun`` only report the diff.

    ``write_atomic(path, text, encoding)`` must write ``text`` in ``encoding`` *without* newline
    translation (line endings are already the file's own) and replace the file atomically. It is
    not called for a dry run or when the edits change nothing. ``read_bytes(path, max_bytes)`` may
    replace the plain read (the server passes one that re-verifies the path at open time).
    """
    shown = display_path or str(path)
    try:
        raw = (read_bytes or _read_plain)(path, max_bytes)
    except FileNotFoundError:
        raise NotFound(f"File not found: {shown}. To create a file use write_file.") from None
    except IsADirectoryError:
        raise InvalidInput(f"{shown} is a directory; edit_file edits text files.") from None
    if len(raw) > max_bytes:
        raise LimitExceeded(
            f"{shown} is over {max_bytes:,} bytes, the most edit_file handles. Use write_file to "
            "replace it entirely."
        )
    if b"\x00" in raw[:8192]:
        raise InvalidInput(
            f"{shown} looks like a binary file (NUL bytes in its first 8 KiB); edit_file edits text files."
        )
    original, encoding = decode(raw)
    result = apply_edits(original, edits, shown)
    if encoding != "utf-8":
        note = (
            "The file is not UTF-8: it was edited as windows-1252 and is written back in "
            "windows-1252, so the bytes outside the edits are unchanged."
        )
        result = replace(
            result, notes=[*result.notes, note], text=result.text.rstrip("\n") + "\n" + note + "\n"
        )
    if dryRun:
        note = "Dry run: the file was not changed."
        text = result.text.rstrip("\n") + "\n" + note + "\n" if result.changed else result.text
        return replace(result, notes=[*result.notes, note], text=text)
    if result.changed:
        write_atomic(path, result.new_text, encoding)
    return result


def _read_plain(path: Path, max_bytes: int) -> bytes:
    with path.open("rb") as f:
        return f.read(max_bytes + 1)  # one byte over tells "too large" without reading it all


def edit_file_in(
    allowed: AllowedDirectories, path: str, edits: Sequence[Mapping[str, Any]], dryRun: bool = False
) -> str:
    """The tool: resolve the caller's path (quoted forms accepted, containment checked), read
    through ``open_for_read`` (re-verified, no symlink swaps) and write through
    ``writing.write_file`` (atomic, keeps the file's mode)."""
    from mcp_filesystem import writing  # here, so the pure functions above import nothing heavy

    real = resolve(allowed, path)

    def read(target: Path, max_bytes: int) -> bytes:
        fd = open_for_read(target, allowed)
        with os.fdopen(fd, "rb") as f:
            return f.read(max_bytes + 1)

    def write(target: Path, text: str, encoding: Encoding) -> None:
        writing.write_file(allowed, target, text, encoding)

    return edit_file(
        real, edits, dryRun, write_atomic=write, display_path=quote_path(real), read_bytes=read
    ).text
