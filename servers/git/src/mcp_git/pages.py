"""Paging git's text output (patches, file contents) without holding more than one page.

git writes; we read its stdout a chunk at a time, skip to the first wanted line by counting
newlines (no per-line Python work), keep at most one page, and stop git as soon as we know
whether more follows. A 2,000-file `git show` therefore costs one page of Python work however
big the commit is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp_batteries.errors import InvalidInput

from mcp_git.runner import Git
from mcp_git.text import cut_note, patch_text

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_LINES", "TextPage", "read_text_page"]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 200 * 1024


@dataclass(frozen=True)
class TextPage:
    text: str
    first_line: int
    last_line: int
    more: bool

    @property
    def empty(self) -> bool:
        return not self.text

    def footer(self, next_call: Callable[[int], str]) -> str:
        """The paging note to append to a reply ('' when the page holds everything)."""
        if not self.more and self.first_line <= 1:
            return ""
        if not self.more:
            return f"\n[lines {self.first_line}-{self.last_line}; this is the last page]"
        return (
            f"\n[lines {self.first_line}-{self.last_line} shown; more follows: "
            f"{next_call(self.last_line + 1)}]"
        )


def read_text_page(
    git: Git,
    args: Sequence[str],
    *,
    offset: int = 1,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    ok: Sequence[int] = (0,),
    render: Callable[[bytes], str] = patch_text,
    cut_rest: str = "",
) -> TextPage:
    """Lines `offset`.. of git's output (1-based), at most `max_lines` lines / `max_bytes` bytes.

    A line longer than `max_bytes` (the last one too, newline or not) is cut there with a note
    (`text.cut_note`, naming `cut_rest`: where the whole line is); only its head is ever held.
    """
    if offset < 1:
        raise InvalidInput("offset is the first line to show, counted from 1")
    to_skip = offset - 1
    kept: list[bytes] = []
    kept_bytes = 0
    more = False
    complete = True

    def keep(line: bytes, length: int) -> bool:
        """Add a line (`line`: its head, `length`: its real length); False once the page is full."""
        nonlocal kept_bytes
        if length > max_bytes:
            line = line[:max_bytes] + cut_note(length, max_bytes, cut_rest).encode()
        if len(kept) >= max_lines or (kept_bytes + len(line) + 1 > max_bytes and kept):
            return False
        kept.append(line)
        kept_bytes += len(line) + 1
        return True

    carry = b""  # the head (at most max_bytes + 1 bytes) of the line still being read
    carry_length = 0  # its real length so far
    with git.stream(args) as output:
        for chunk in output.chunks():
            if to_skip:
                newlines = chunk.count(b"\n")
                if newlines < to_skip:
                    to_skip -= newlines
                    continue
                start = -1
                for _ in range(to_skip):
                    start = chunk.index(b"\n", start + 1)
                chunk = chunk[start + 1 :]
                to_skip = 0
            lines = chunk.split(b"\n")
            tail = lines.pop()
            for index, line in enumerate(lines):
                length = len(line)
                if index == 0 and carry_length:
                    length += carry_length
                    line = carry + line[: max(0, max_bytes + 1 - len(carry))]
                    carry, carry_length = b"", 0
                if not keep(line, length):
                    more = True
                    break
            if more:
                complete = False
                break
            if tail:
                carry += tail[: max(0, max_bytes + 1 - len(carry))]
                carry_length += len(tail)
        else:
            if carry_length and not keep(carry, carry_length):
                more = True
        if complete:
            output.check(ok)
    if to_skip and offset > 1:
        raise InvalidInput(f"offset {offset} is beyond the end of the output ({offset - 1 - to_skip} lines)")
    text = render(b"\n".join(kept)) if kept else ""
    return TextPage(text=text, first_line=offset, last_line=offset + len(kept) - 1, more=more)
