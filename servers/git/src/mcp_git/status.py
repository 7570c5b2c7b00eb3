"""`git status`, from one `git status --porcelain=v2 -z --branch`: structured entries and the
long-format text the reference server returns (`On branch main`, `Changes to be committed:` ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_git.models import StatusResult
from mcp_git.runner import Git
from mcp_git.text import name

__all__ = ["DEFAULT_STATUS_LIMIT", "Status", "read_status", "render_status", "status_fingerprint"]

DEFAULT_STATUS_LIMIT = 500
COLUMNS = ["path", "staged", "unstaged", "original_path"]

_WORDS = {
    "M": "modified",
    "T": "type changed",
    "A": "added",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
}
_LABELS = {
    "M": "modified:   ",
    "T": "typechange: ",
    "A": "new file:   ",
    "D": "deleted:    ",
    "R": "renamed:    ",
    "C": "copied:     ",
}
_CONFLICTS = {
    "DD": "both deleted",
    "AU": "added by us",
    "UD": "deleted by them",
    "UA": "added by them",
    "DU": "deleted by us",
    "AA": "both added",
    "UU": "both modified",
}


@dataclass
class Entry:
    path: str
    staged: str | None
    unstaged: str | None
    original: str | None = None
    conflict: str | None = None
    untracked: bool = False


@dataclass
class Status:
    head: str | None = None
    branch: str | None = None
    upstream: str | None = None
    ahead: int | None = None
    behind: int | None = None
    entries: list[Entry] = field(default_factory=list)


def parse_status(raw: bytes) -> Status:
    status = Status()
    records = raw.split(b"\x00")
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        if not record:
            continue
        kind = record[:1]
        if kind == b"#":
            key, _, value = record[2:].partition(b" ")
            if key == b"branch.oid":
                status.head = None if value == b"(initial)" else value.decode("ascii", "replace")
            elif key == b"branch.head":
                status.branch = None if value == b"(detached)" else name(value)
            elif key == b"branch.upstream":
                status.upstream = name(value)
            elif key == b"branch.ab":
                ahead, _, behind = value.partition(b" ")
                status.ahead, status.behind = int(ahead[1:]), int(behind[1:])
        elif kind == b"1":
            fields = record.split(b" ", 8)
            status.entries.append(_changed(fields[1].decode(), name(fields[8])))
        elif kind == b"2":
            fields = record.split(b" ", 9)
            original = records[index] if index < len(records) else b""
            index += 1
            entry = _changed(fields[1].decode(), name(fields[9]))
            entry.original = name(original)
            status.entries.append(entry)
        elif kind == b"u":
            fields = record.split(b" ", 10)
            code = fields[1].decode()
            conflict = _CONFLICTS.get(code, "unmerged")
            status.entries.append(Entry(name(fields[10]), "unmerged", conflict, conflict=conflict))
        elif kind == b"?":
            status.entries.append(Entry(name(record[2:]), None, "untracked", untracked=True))
    return status


def _changed(xy: str, path: str) -> Entry:
    return Entry(path, _WORDS.get(xy[0]), _WORDS.get(xy[1]))


def read_status(git: Git) -> Status:
    result = git.run(["status", "--porcelain=v2", "-z", "--branch"])
    return parse_status(result.stdout)


def status_fingerprint(git: Git) -> bytes:
    """What the status resource shows, for change detection (the raw porcelain output)."""
    return git.run(["status", "--porcelain=v2", "-z", "--branch"]).stdout


def _code(word: str | None) -> str:
    for code, known in _WORDS.items():
        if known == word:
            return code
    return "M"


def render_status(status: Status, entries: list[Entry], omitted: str = "") -> str:
    """git's long format (without its hints), for the entries of one page."""
    lines: list[str] = []
    if status.branch is not None:
        lines.append(f"On branch {status.branch}")
    elif status.head is not None:
        lines.append(f"HEAD detached at {status.head[:7]}")
    if status.head is None:
        lines += ["", "No commits yet"]
    elif status.upstream is not None and status.ahead is not None and status.behind is not None:
        up = status.upstream
        if status.ahead and status.behind:
            lines.append(
                f"Your branch and '{up}' have diverged,\nand have {status.ahead} and {status.behind} "
                "different commits each, respectively."
            )
        elif status.ahead:
            lines.append(f"Your branch is ahead of '{up}' by {_commits(status.ahead)}.")
        elif status.behind:
            lines.append(f"Your branch is behind '{up}' by {_commits(status.behind)}.")
        else:
            lines.append(f"Your branch is up to date with '{up}'.")
    staged = [e for e in entries if e.staged and not e.conflict]
    conflicts = [e for e in entries if e.conflict]
    unstaged = [e for e in entries if e.unstaged and not e.conflict and not e.untracked]
    untracked = [e for e in entries if e.untracked]
    if staged:
        lines += ["", "Changes to be committed:"]
        for e in staged:
            target = (
                f"{e.original} -> {e.path}" if e.original and e.staged in ("renamed", "copied") else e.path
            )
            lines.append(f"\t{_LABELS[_code(e.staged)]}{target}")
    if conflicts:
        lines += ["", "Unmerged paths:"]
        lines += [f"\t{e.conflict}:   {e.path}" for e in conflicts]
    if unstaged:
        lines += ["", "Changes not staged for commit:"]
        lines += [f"\t{_LABELS[_code(e.unstaged)]}{e.path}" for e in unstaged]
    if untracked:
        lines += ["", "Untracked files:"]
        lines += [f"\t{e.path}" for e in untracked]
    if not status.entries:
        lines += ["", "nothing to commit, working tree clean" if status.head else "nothing to commit"]
    if omitted:
        lines += ["", omitted]
    return "\n".join(lines) + "\n"


def _commits(n: int) -> str:
    return f"{n} commit" if n == 1 else f"{n} commits"


def status_page(git: Git, offset: int, limit: int) -> tuple[str, StatusResult]:
    """The reply: text (reference shape) and structured result, for entries offset..offset+limit."""
    status = read_status(git)
    page = status.entries[offset : offset + limit]
    total = len(status.entries)
    next_offset = offset + len(page) if offset + len(page) < total else None
    hint = (
        f"{total - next_offset} more changed paths: call git_status with offset={next_offset}"
        if next_offset is not None
        else None
    )
    text = "Repository status:\n" + render_status(status, page, hint or "")
    result = StatusResult(
        repository=git.repository.key,
        branch=status.branch,
        head=status.head,
        upstream=status.upstream,
        ahead=status.ahead,
        behind=status.behind,
        clean=not status.entries,
        columns=COLUMNS,
        rows=[[e.path, e.staged, e.unstaged, e.original] for e in page],
        total=total,
        offset=offset,
        next_offset=next_offset,
        next_page=hint,
    )
    return text, result
