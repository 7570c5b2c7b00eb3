"""grep: search file contents under a directory, ripgrep-style output, bounded.

Speed: each file is read once and one compiled regex runs over the whole text; line numbers are
computed only for matches (counting newlines since the previous match), which is far faster than
a per-line loop. Binary files (NUL in the first 8 KiB) and files over ``max_file_bytes`` are
skipped and counted. Symlinks are never followed (files are opened with O_NOFOLLOW too).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_batteries.errors import InvalidInput, NotFound

from mcp_filesystem.fastscan import TOO_LARGE, read_capped
from mcp_filesystem.fastscan import prefilter as make_prefilter
from mcp_filesystem.patterns import compile_glob
from mcp_filesystem.walker import FILE, Progress, Walker

MAX_FILE_BYTES = 10 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
MAX_LINE_CHARS = 300
MAX_CONTEXT_LINES = 20


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


def _compile(pattern: str, is_regex: bool, case_sensitive: bool) -> re.Pattern[str]:
    if not pattern:
        raise InvalidInput("pattern must not be empty.")
    flags = re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
    try:
        return re.compile(pattern if is_regex else re.escape(pattern), flags)
    except re.error as exc:
        raise InvalidInput(
            f"Invalid regular expression {pattern!r}: {exc}. Fix the pattern, or set is_regex=false "
            "to search for the text literally."
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


def _search_text(text: str, rel: str, regex: re.Pattern[str], context: int, budget: int) -> list[GrepMatch]:
    found: list[tuple[int, int, int, int, int]] = []  # line no, line start, line end, match start, end
    pos, line_no, counted_to = 0, 1, 0
    n = len(text)
    while pos <= n and len(found) < budget:
        m = regex.search(text, pos)
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
    path: Path,
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
    progress: Progress | None = None,
) -> GrepResult:
    """Search the text of every file under ``path`` (or the single file ``path``).

    ``pattern`` is literal text unless ``is_regex`` (Python ``re`` syntax, ``^``/``$`` per line).
    ``include``: globs for files to search, e.g. ``["*.py", "*.md"]``; a glob without ``/`` matches
    the file name, one with ``/`` the path relative to ``path``. ``excludePatterns`` as in the other
    tools. With ``respect_gitignore`` (default) .gitignore files at or below ``path`` and ``.git``
    are skipped. Output lines are ``relative/path:LINE:text``; one hit per line.
    """
    regex = _compile(pattern, is_regex, case_sensitive)
    if not 0 <= context_lines <= MAX_CONTEXT_LINES:
        raise InvalidInput(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}.")
    if max_matches < 1:
        raise InvalidInput("max_matches must be at least 1.")
    name_globs = [compile_glob(g) for g in include if g and "/" not in g.strip("/")]
    path_globs = [compile_glob(g) for g in include if g and "/" in g.strip("/")]
    if path.is_symlink() or not path.exists():
        raise NotFound(f"Nothing to search at {path}: it does not exist (or is a symlink).")
    walker = None
    if not path.is_file():
        walker = Walker.create(path, excludePatterns, respect_gitignore=respect_gitignore, progress=progress)

    def wanted(name: str, rel: str) -> bool:
        if not include:
            return True
        return any(g.match(name) for g in name_globs) or any(g.match(rel) for g in path_globs)

    def candidates() -> Iterator[tuple[str, str]]:
        """(absolute path, relative path) of each file to search."""
        if walker is None:
            yield str(path), path.name  # an explicitly named file is searched whatever its name
            return
        for e in walker.walk():
            if e.kind == FILE and wanted(e.name, e.rel):
                yield e.path, e.rel

    matches: list[GrepMatch] = []
    scanned = binary = large = 0
    truncated = False
    prefilter = make_prefilter(pattern, is_regex, case_sensitive)
    for abs_path, rel in candidates():
        data = read_capped(abs_path, max_file_bytes)
        if data is None:
            continue
        if data is TOO_LARGE:
            large += 1
            continue
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            binary += 1
            continue
        scanned += 1
        # Ask for one more than still fits: finding it proves the answer is incomplete.
        if prefilter is not None and not prefilter(data):
            continue  # cannot match: skip decoding and the regex
        budget = max_matches - len(matches)
        found = _search_text(data.decode("utf-8", "replace"), rel, regex, context_lines, budget + 1)
        if len(found) > budget:
            matches.extend(found[:budget])
            truncated = True
            break
        matches.extend(found)
    counts = _Counts(scanned, binary, large, max_file_bytes)
    text = _summarize(matches, path, counts, truncated, context_lines, max_matches, walker)
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
) -> str:
    lines = _render(matches, context) if matches else ["No matches found"]
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
    lines += ["", f"[{summary}. Paths are relative to {base}.]"]
    if truncated:
        lines.append(
            f"[Stopped at max_matches={max_matches}; there may be more. Narrow the search with a more "
            "specific pattern, include globs (e.g. '*.py'), excludePatterns, or a deeper path.]"
        )
    if walker is not None and walker.hit_visit_limit:
        lines.append("[The walk stopped at its entry limit; search a subdirectory for complete results.]")
    return "\n".join(lines)


def _human(n: int) -> str:
    return f"{n / (1024 * 1024):g} MB" if n >= 1024 * 1024 else f"{n:,} bytes"
