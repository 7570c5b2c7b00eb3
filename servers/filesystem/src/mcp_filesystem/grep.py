"""grep: search file contents under a directory, ripgrep-style output, bounded in size and time.

Speed: each file is read once and one compiled pattern runs over the whole text; line numbers are
computed only for matches (counting newlines since the previous match), which is far faster than
a per-line loop. Binary files (NUL in the first 8 KiB) and files over ``max_file_bytes`` are
skipped and counted. Symlinks are never followed, and a file is read only if it is still the file
the walk listed (see ``walker``).

Time: a user's regular expression runs on the ``regex`` engine, which releases the GIL while it
matches (the server keeps answering) and takes a timeout: a pattern that backtracks
catastrophically (``(a|a)+$``) fails after ``REGEX_TIMEOUT_S`` on one file with an error that
says so, instead of running for minutes. Literal searches use ``re`` on an escaped pattern, which
cannot backtrack. Cancellation is checked between files and between matches.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex  # type: ignore[import-untyped]  # no stubs in the workspace; used through `Any`
from mcp_batteries.errors import InvalidInput, LimitExceeded
from mcp_batteries.safety import AllowedDirectories, open_for_read
from mcp_batteries.work import NEVER, CancelToken

from mcp_filesystem.access import quote_path, resolve
from mcp_filesystem.encoding import decode
from mcp_filesystem.fastscan import TOO_LARGE, read_fd_capped
from mcp_filesystem.fastscan import prefilter as make_prefilter
from mcp_filesystem.patterns import compile_glob
from mcp_filesystem.walker import FILE, Progress, Walker, check_offset

MAX_FILE_BYTES = 10 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
MAX_LINE_CHARS = 300
MAX_CONTEXT_LINES = 20
REGEX_TIMEOUT_S = 2.0  # per file: far above what a sane pattern needs on a 10 MB file


@dataclass(frozen=True)
class GrepMatch:
    file: str  # relative to the search root ("/"-separated); the file's name if the root is a file
    line: int  # 1-based
    text: str  # the matching line, shortened around the match if very long
    before: list[str] = field(default_factory=list)  # up to context_lines lines before
    after: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GrepResult:
    matches: list[GrepMatch]
    files_scanned: int
    files_skipped_binary: int
    files_skipped_large: int
    truncated: bool
    text: str


class _Matcher:
    """One compiled pattern; `search` bounds a user regex's time per file and honours cancel."""

    def __init__(self, pattern: str, is_regex: bool, case_sensitive: bool, timeout: float) -> None:
        if not pattern:
            raise InvalidInput("pattern must not be empty.")
        self.pattern = pattern
        self.timeout = timeout
        self.is_regex = is_regex
        if is_regex:
            flags = regex.MULTILINE | regex.V0 | (0 if case_sensitive else regex.IGNORECASE)
            try:
                self._compiled: Any = regex.compile(pattern, flags)
            except (regex.error, ValueError, OverflowError, RecursionError) as exc:
                raise InvalidInput(
                    f"Invalid regular expression {pattern!r}: {exc}. Fix the pattern, or set "
                    "is_regex=false to search for the text literally."
                ) from None
        else:
            self._compiled = re.compile(
                re.escape(pattern), re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
            )
        self._deadline = 0.0
        self._file = ""

    def start_file(self, shown: str) -> None:
        self._deadline = time.monotonic() + self.timeout
        self._file = shown

    def search(self, text: str, pos: int) -> Any:
        if not self.is_regex:
            return self._compiled.search(text, pos)
        try:
            return self._compiled.search(text, pos, timeout=max(self._deadline - time.monotonic(), 0.001))
        except TimeoutError:
            raise LimitExceeded(
                f"The regular expression {self.pattern!r} ran for more than {self.timeout:g} s on "
                f"{self._file} without finishing: it probably backtracks catastrophically (nested "
                "or overlapping repetition such as (a+)+ or (a|a)*). Simplify it, anchor it, or "
                "search for a literal part with is_regex=false."
            ) from None


def _shorten(line: str, col: int, end: int) -> str:
    """Cut a long line to about MAX_LINE_CHARS around the match so minified files stay readable."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    width = max(MAX_LINE_CHARS, min(end - col, MAX_LINE_CHARS))
    start = max(0, min(col - MAX_LINE_CHARS // 3, len(line) - width))
    stop = start + width
    return ("…" if start > 0 else "") + line[start:stop] + ("…" if stop < len(line) else "")


def _line_text(text: str, start: int, end: int) -> str:
    line = text[start:end]
    return line[:-1] if line.endswith("\r") else line


def _search_text(
    text: str, rel: str, matcher: _Matcher, context: int, budget: int, cancel: CancelToken
) -> list[GrepMatch]:
    found: list[tuple[int, int, int, int, int]] = []  # line no, line start, line end, match start, end
    pos, line_no, counted_to = 0, 1, 0
    n = len(text)
    while pos <= n and len(found) < budget:
        cancel.check()
        m = matcher.search(text, pos)
        if m is None or (m.start() == n and n and text[-1] == "\n"):
            break  # (an empty match after the final newline is not a line)
        line_no += text.count("\n", counted_to, m.start())
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.start())
        if line_end == -1:
            line_end = n
        found.append((line_no, line_start, line_end, m.start(), m.end()))
        counted_to = m.start()
        pos = line_end + 1  # one hit per line, like grep
    if not found:
        return []
    lines = text.split("\n") if context else []
    out = []
    for ln, ls, le, ms, me in found:
        shown = _shorten(_line_text(text, ls, le), ms - ls, me - ls)
        before = after = []
        if context:
            before = [_clip(x) for x in lines[max(0, ln - 1 - context) : ln - 1]]
            after = [_clip(x) for x in lines[ln : ln + context]]
        out.append(GrepMatch(rel, ln, shown, before, after))
    return out


def _clip(line: str) -> str:
    line = line[:-1] if line.endswith("\r") else line
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"


def _render(matches: list[GrepMatch], context: int) -> list[str]:
    """grep/ripgrep layout: 'path:LINE:text' for matches, 'path-LINE-text' for context, '--' between
    groups. Overlapping context windows of nearby matches are merged, so no line is repeated."""
    if not context:
        return [f"{m.file}:{m.line}:{m.text}" for m in matches]
    out: list[str] = []
    last: tuple[str, int] | None = None  # (file, last line printed)
    for i, m in enumerate(matches):
        next_line = matches[i + 1].line if i + 1 < len(matches) and matches[i + 1].file == m.file else None
        first_before = m.line - len(m.before)
        if last is not None and (last[0] != m.file or first_before > last[1] + 1):
            out.append("--")
        start_from = last[1] + 1 if last is not None and last[0] == m.file else first_before
        for k, line in enumerate(m.before):
            ln = first_before + k
            if ln >= start_from:
                out.append(f"{m.file}-{ln}-{line}")
        out.append(f"{m.file}:{m.line}:{m.text}")
        printed = m.line
        for k, line in enumerate(m.after):
            ln = m.line + 1 + k
            if next_line is not None and ln >= next_line:
                break
            out.append(f"{m.file}-{ln}-{line}")
            printed = ln
        last = (m.file, printed)
    return out


def grep(
    allowed: AllowedDirectories,
    path: str,
    pattern: str,
    *,
    is_regex: bool = False,
    case_sensitive: bool = False,
    include: Sequence[str] = (),
    excludePatterns: Sequence[str] = (),
    context_lines: int = 0,
    max_matches: int = 100,
    respect_gitignore: bool = True,
    max_file_bytes: int = MAX_FILE_BYTES,
    regex_timeout: float = REGEX_TIMEOUT_S,
    offset: int = 0,
    progress: Progress | None = None,
    cancel: CancelToken = NEVER,
    tidy: bool = False,
) -> GrepResult:
    """Search the text of every file under ``path`` (or the single file ``path``).

    ``pattern`` is literal text unless ``is_regex`` (Python regular expression syntax, run by the
    ``regex`` engine with a per-file time limit; ``^``/``$`` per line). ``include``: globs for
    files to search, e.g. ``["*.py", "*.md"]``; a glob without ``/`` matches the file name, one
    with ``/`` the path relative to ``path``. ``excludePatterns`` as in the other tools. With
    ``respect_gitignore`` (default) .gitignore files at or below ``path`` and ``.git`` are
    skipped. Output lines are ``relative/path:LINE:text``; one hit per line. Files that are not
    UTF-8 are searched as windows-1252 (see ``encoding``).
    """
    matcher = _Matcher(pattern, is_regex, case_sensitive, regex_timeout)
    if not 0 <= context_lines <= MAX_CONTEXT_LINES:
        raise InvalidInput(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}.")
    if max_matches < 1:
        raise InvalidInput("max_matches must be at least 1.")
    check_offset(offset, "matches")
    name_globs = [compile_glob(g) for g in include if g and "/" not in g.strip("/")]
    path_globs = [compile_glob(g) for g in include if g and "/" in g.strip("/")]
    real = resolve(allowed, path)
    walker = None
    if real.is_dir():
        walker = Walker.open(
            allowed,
            real,
            excludePatterns,
            respect_gitignore=respect_gitignore,
            progress=progress,
            cancel=cancel,
            tidy=tidy,
        )

    def wanted(name: str, rel: str) -> bool:
        if not include:
            return True
        return any(g.match(name) for g in name_globs) or any(g.match(rel) for g in path_globs)

    def candidates() -> Iterator[tuple[int | None, str]]:
        """(open fd or None if unreadable, relative path) of each file to search."""
        if walker is None:
            # An explicitly named file is searched whatever its name; open_for_read re-checks it.
            yield open_for_read(real, allowed), real.name
            return
        for e in walker.walk():
            if e.kind == FILE and wanted(e.name, e.rel):
                cancel.check()
                yield walker.open_file(e), e.rel

    matches: list[GrepMatch] = []
    to_skip = offset
    scanned = binary = large = 0
    truncated = False
    prefilter = make_prefilter(pattern, is_regex, case_sensitive)
    for fd, rel in candidates():
        if fd is None:
            continue
        try:
            data = read_fd_capped(fd, max_file_bytes)
        finally:
            os.close(fd)
        if data is None:
            continue
        if data is TOO_LARGE:
            large += 1
            continue
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            binary += 1
            continue
        scanned += 1
        if prefilter is not None and not prefilter(data):
            continue  # cannot match: skip decoding and the regex
        shown = quote_path(rel)
        matcher.start_file(shown)
        budget = max_matches - len(matches)
        # Ask for one more than still fits: finding it proves the answer is incomplete.
        found = _search_text(decode(data)[0], shown, matcher, context_lines, to_skip + budget + 1, cancel)
        if to_skip:
            skipped_now = min(to_skip, len(found))
            found, to_skip = found[skipped_now:], to_skip - skipped_now
        if len(found) > budget:
            matches.extend(found[:budget])
            truncated = True
            break
        matches.extend(found)
    counts = _Counts(scanned, binary, large, max_file_bytes)
    text = _summarize(matches, real, counts, truncated, context_lines, max_matches, walker, offset)
    return GrepResult(matches, scanned, binary, large, truncated, text)


@dataclass(frozen=True)
class _Counts:
    scanned: int
    binary: int
    large: int
    max_file_bytes: int


def _summarize(
    matches: list[GrepMatch],
    root: Path,
    counts: _Counts,
    truncated: bool,
    context: int,
    max_matches: int,
    walker: Walker | None,
    offset: int = 0,
) -> str:
    none = "No matches found" if not offset else f"No matches after the first {offset:,}"
    lines = _render(matches, context) if matches else [none]
    files = len({m.file for m in matches})
    skipped = []
    if counts.binary:
        skipped.append(f"{counts.binary} binary")
    if counts.large:
        skipped.append(f"{counts.large} larger than {_human(counts.max_file_bytes)}")
    summary = f"{len(matches)} matches in {files} files; {counts.scanned} files searched"
    if skipped:
        summary += f", skipped {', '.join(skipped)}"
    base = root if walker is not None else root.parent
    lines += ["", f"[{summary}. Paths are relative to {quote_path(base)}.]"]
    if offset:
        summary_note = (
            f"[Matches {offset + 1:,}-{offset + len(matches):,}; the first {offset:,} were skipped.]"
        )
        lines.append(summary_note)
    if truncated:
        lines.append(
            f"[Stopped at max_matches={max_matches}; there are more. Call grep with "
            f"offset={offset + len(matches)} for the next matches, or narrow the search with a more "
            "specific pattern, include globs (e.g. '*.py'), excludePatterns, or a deeper path.]"
        )
    if walker is not None and walker.hit_visit_limit:
        lines.append("[The walk stopped at its entry limit; search a subdirectory for complete results.]")
    if walker is not None and walker.changed:
        lines.append(f"[{walker.changed} entries changed while being searched and were skipped.]")
    return "\n".join(lines)


def _human(n: int) -> str:
    return f"{n / (1024 * 1024):g} MB" if n >= 1024 * 1024 else f"{n:,} bytes"
