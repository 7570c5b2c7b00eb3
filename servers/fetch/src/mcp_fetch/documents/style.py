"""The building blocks every converter writes with, in Markdown or in plain text.

One place decides what a heading, a list item, a link, a table and a page marker look like, so
every format reads alike: Markdown with ATX headings, "-" bullets, pipe tables and `<!-- page N -->`
markers; plain text with the same lines minus the markup (tables tab-separated).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .model import Output

_SPACE = re.compile(r"[ \t\r\f\v]+")


def clean(text: str) -> str:
    """Runs of spaces and tabs as one space; NUL and other C0 controls (but newlines) dropped."""
    text = "".join(ch for ch in text if ch >= " " or ch == "\n")
    return _SPACE.sub(" ", text).strip()


class Style:
    def __init__(self, output: Output) -> None:
        self.markdown = output == "markdown"

    def heading(self, level: int, text: str) -> str:
        text = " ".join(text.split())
        if not self.markdown:
            return text
        return f"{'#' * max(1, min(level, 6))} {text}"

    def marker(self, unit: str, label: str) -> str:
        """The line that opens a page, slide or chapter (sheets and slides use headings instead)."""
        return f"<!-- {unit} {label} -->" if self.markdown else f"[{unit} {label}]"

    def bullet(self, text: str, level: int = 0, number: int | None = None) -> str:
        indent = "  " * max(0, min(level, 8))
        return f"{indent}{f'{number}.' if number is not None else '-'} {text}"

    def link(self, text: str, url: str) -> str:
        text = text.strip() or url
        if not url:
            return text
        if not self.markdown:
            return text if text == url else f"{text} ({url})"
        return f"[{text.replace('[', '(').replace(']', ')')}]({url.replace(' ', '%20').replace(')', '%29')})"

    def bold(self, text: str) -> str:
        return f"**{text}**" if self.markdown and text.strip() else text

    def quote(self, text: str) -> str:
        if not self.markdown:
            return text
        return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))

    def fence(self, text: str, language: str = "") -> str:
        if not self.markdown:
            return text
        ticks = "```"
        while ticks in text:
            ticks += "`"
        return f"{ticks}{language}\n{text.rstrip(chr(10))}\n{ticks}"

    def table(self, rows: Sequence[Sequence[str]], *, header: bool = True) -> str:
        """A pipe table (Markdown) or tab-separated lines (text); ragged rows are padded."""
        if not rows:
            return ""
        width = max(len(row) for row in rows)
        if not self.markdown:
            return "\n".join("\t".join(_cell_text(c) for c in row) for row in rows)
        lines = []
        body = list(rows)
        head = body.pop(0) if header else [""] * width
        lines.append(_pipe_row(head, width))
        lines.append("|" + "|".join(" --- " for _ in range(width)) + "|")
        lines.extend(_pipe_row(row, width) for row in body)
        return "\n".join(lines)


def _cell_text(value: str) -> str:
    return " ".join(value.split())


def _pipe_row(row: Sequence[str], width: int) -> str:
    cells = [_cell_text(c).replace("|", "\\|") for c in row] + [""] * (width - len(row))
    return "| " + " | ".join(cells) + " |"


def paragraphs(blocks: Sequence[str]) -> str:
    """Blocks separated by one blank line; empty blocks dropped."""
    return "\n\n".join(block.strip("\n") for block in blocks if block.strip())
