"""`git status`, from one `git status --porcelain -z --branch`: structured entries and the
long-format text the reference server returns (`On branch main`, `Changes to be committed:` ...).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from mcp_git.models import StatusResult
from mcp_git.runner import Git
from mcp_git.text import name

__all__ = ["DEFAULT_STATUS_LIMIT", "Status", "read_status", "render_status", "status_fingerprint"]

DEFAULT_STATUS_LIMIT = 200
_OBJECT_ID = re.compile(rb"^[0-9a-f]{40}([0-9a-f]{24})?$")
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
    unborn: bool = False
    #: Changed paths in all pages (`entries` may hold only one page of them).
    total: int = 0


def _parse_branch_header(status: Status, header: bytes) -> None:
    """`## main...origin/main [ahead 1, behind 2]`, `## HEAD (no branch)`, `## No commits yet on main`."""
    if header.startswith(b"No commits yet on ") or header.startswith(b"Initial commit on "):
        status.branch = name(header.split(b" on ", 1)[1])
        status.unborn = True
        return
    if header.startswith(b"HEAD (no branch)"):
        return
    branch, dots, rest = header.partition(b"...")
    status.branch = name(branch)
    if not dots:
        return
    upstream, _, counts = rest.partition(b" [")
    status.upstream = name(upstream)
    if counts.startswith(b"gone"):
        return
    status.ahead = status.behind = 0
    for part in counts.rstrip(b"]").split(b", "):
        word, _, number = part.partition(b" ")
        if word == b"ahead" and number.isdigit():
            status.ahead = int(number)
        elif word == b"behind" and number.isdigit():
            status.behind = int(number)


def parse_status(raw: bytes, offset: int = 0, limit: int | None = None) -> Status:
    """`git status --porcelain -z --branch` (version 1: the fastest form git prints).

    Every changed path is counted (`total`); only those of the page offset..offset+limit are
    decoded into `entries`, so a huge status costs little more than git's own work.
    """
    status = Status()
    end = None if limit is None else offset + limit
    records = raw.split(b"\x00")
    count = len(records)
    index = 0
    total = 0
    entries = status.entries
    while index < count:
        record = records[index]
        index += 1
        if len(record) < 4:
            continue
        code = record[:2]
        if code == b"##":
            _parse_branch_header(status, record[3:])
            continue
        if code == b"!!":
            continue
        renamed = code[0] in b"RC" or code[1] in b"RC"
        wanted = total >= offset and (end is None or total < end)
        total += 1
        if not wanted:
            index += renamed
            continue
        path = name(record[3:])
        if code == b"??":
            entries.append(Entry(path, None, "untracked", untracked=True))
            continue
        text_code = code.decode("ascii", "replace")
        conflict = _CONFLICTS.get(text_code)
        if conflict is not None:
            entries.append(Entry(path, "unmerged", conflict, conflict=conflict))
            continue
        entry = Entry(path, _WORDS.get(text_code[0]), _WORDS.get(text_code[1]))
        if renamed:
            entry.original = name(records[index]) if index < count else None
            index += 1
        entries.append(entry)
    status.total = total
    return status


_STATUS_ARGS = ["status", "--porcelain", "-z", "--branch"]


def read_status(git: Git, offset: int = 0, limit: int | None = None) -> Status:
    status = parse_status(git.run(_STATUS_ARGS).stdout, offset, limit)
    status.head = None if status.unborn else read_head(git)
    return status


def status_fingerprint(git: Git) -> bytes:
    """What the status resource shows, for change detection (the raw porcelain output)."""
    return git.run(_STATUS_ARGS, quiet=True).stdout + (read_head(git) or "").encode()


def read_head(git: Git) -> str | None:
    """The commit HEAD points at, read from the git directory (one process less per status);
    `git rev-parse` when the refs are stored in a way this does not read (e.g. reftable)."""
    repository = git.repository
    try:
        head = (repository.git_dir / "HEAD").read_bytes().strip()
        if not head.startswith(b"ref: "):
            return head.decode("ascii") if _OBJECT_ID.match(head) else _rev_parse_head(git)
        ref = head[5:]
        if not ref.startswith(b"refs/") or b".." in ref or b"\x00" in ref:
            return _rev_parse_head(git)
        loose = repository.common_dir / os.fsdecode(ref)
        if loose.is_file():
            value = loose.read_bytes().strip()
            return value.decode("ascii") if _OBJECT_ID.match(value) else _rev_parse_head(git)
        packed = repository.common_dir / "packed-refs"
        if packed.is_file():
            for line in packed.read_bytes().splitlines():
                oid, _, packed_name = line.partition(b" ")
                if packed_name == ref and _OBJECT_ID.match(oid):
                    return oid.decode("ascii")
        return _rev_parse_head(git)
    except OSError:
        return _rev_parse_head(git)


def _rev_parse_head(git: Git) -> str | None:
    result = git.run(["rev-parse", "--verify", "--quiet", "HEAD"], check=False)
    return result.stdout.strip().decode("ascii") or None


_CODES = {word: code for code, word in _WORDS.items()}


def _code(word: str | None) -> str:
    return _CODES.get(word or "", "M")


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
    if not status.total:
        lines += ["", "nothing to commit, working tree clean" if status.head else "nothing to commit"]
    if omitted:
        lines += ["", omitted]
    return "\n".join(lines) + "\n"


def _commits(n: int) -> str:
    return f"{n} commit" if n == 1 else f"{n} commits"


def status_page(git: Git, offset: int, limit: int) -> tuple[str, StatusResult]:
    """The reply: text (reference shape) and structured result, for entries offset..offset+limit."""
    status = read_status(git, offset, limit)
    page = status.entries
    total = status.total
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
        clean=not total,
        columns=COLUMNS,
        rows=[[e.path, e.staged, e.unstaged, e.original] for e in page],
        total=total,
        offset=offset,
        next_offset=next_offset,
        next_page=hint,
    )
    return text, result
