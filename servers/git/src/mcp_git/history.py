"""Reading history: log, diffs, show, blame, grep and reflog; every reply bounded and paged."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from itertools import islice

from mcp_batteries.errors import InvalidInput, NotFound, UpstreamError
from mcp_batteries.safety import quote_name

from mcp_git.checks import (
    ref_name_problem,
    resolve_commit,
    resolve_object,
    revision_text,
    tree_path,
    worktree_path,
)
from mcp_git.containment import check_tracked_paths
from mcp_git.hardening import NO_DRIVERS
from mcp_git.models import BlameResult, GrepResult, LogResult, ReflogResult
from mcp_git.pages import DEFAULT_MAX_BYTES, TextPage, read_text_page
from mcp_git.runner import Git, describe_failure
from mcp_git.text import MAX_FIELD, MAX_NAME, clip, clip_name, show_text
from mcp_git.uris import MAX_BLOB_BYTES, uri_for

__all__ = [
    "blame",
    "diff_page",
    "grep",
    "has_commits",
    "log",
    "reflog",
    "show_page",
]

#: A log reply stops growing past this much text (the rest is on the next page).
MAX_LOG_TEXT = 1024 * 1024
#: A commit message longer than this is cut (git_show pages through the whole commit).
MAX_MESSAGE = 64 * 1024
MAX_BLAME_LINES = 400
#: A blamed line longer than this is cut (git_show REV:PATH pages through the file).
MAX_BLAME_TEXT = 1000
MAX_GREP_TEXT = 400
LOG_COLUMNS = ["commit", "author", "email", "date", "message"]


def has_commits(git: Git) -> bool:
    return git.run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], check=False).returncode == 0


def _refuse_broken_head(git: Git) -> None:
    """When HEAD resolves to no commit: return if its branch has none yet (a new repository);
    raise if HEAD names a missing object, a non-commit or a broken ref (a damaged repository)."""
    named = git.run(["rev-parse", "--verify", "--quiet", "HEAD"], check=False)
    if named.returncode == 0:
        oid = named.stdout.strip().decode("ascii", "replace")
        raise UpstreamError(
            f"HEAD names {oid}, which is missing from {git.repository.key} or is not a commit: the "
            "repository is damaged (git fsck lists what is missing); git_reflog shows where HEAD was"
        )
    probe = git.run(["log", "-1", "--format=%H"], check=False)
    if b"does not have any commits yet" not in probe.stderr:
        raise UpstreamError(
            "HEAD cannot be read, the repository is damaged: " + describe_failure(["log"], probe)
        )


def _iso(date: str) -> str:
    # %aI is strict ISO 8601 ("2024-01-15T14:30:25+01:00"); the reference printed Python's
    # datetime ("2024-01-15 14:30:25+01:00").
    return date.replace("T", " ", 1)


def _filter(value: str | None, what: str) -> str | None:
    if value is None or value == "":
        return None
    if value.startswith("-"):
        raise InvalidInput(f"invalid {what} {value!r}: it cannot start with '-'")
    if "\x00" in value or "\n" in value:
        raise InvalidInput(f"invalid {what}: it contains a NUL byte or a line break")
    return value


def log(
    git: Git,
    *,
    max_count: int,
    skip: int = 0,
    start_timestamp: str | None = None,
    end_timestamp: str | None = None,
    author: str | None = None,
    message: str | None = None,
    revision: str | None = None,
    paths: Sequence[str] = (),
) -> tuple[str, LogResult]:
    args = ["log", "-z", "--format=%H%x00%an%x00%ae%x00%aI%x00%B", f"--max-count={max_count + 1}"]
    if skip:
        args.append(f"--skip={skip}")
    since = _filter(start_timestamp, "start_timestamp")
    until = _filter(end_timestamp, "end_timestamp")
    who = _filter(author, "author")
    grep = _filter(message, "message")
    if since:
        args.append(f"--since={since}")
    if until:
        args.append(f"--until={until}")
    if who:
        args.append(f"--author={who}")
    if grep:
        args.append(f"--grep={grep}")
    if who or grep:
        args += ["--regexp-ignore-case", "--fixed-strings"]
    if revision:
        args.append(resolve_commit(git, revision))
    elif not has_commits(git):
        _refuse_broken_head(git)
        empty = LogResult(
            repository=git.repository.key, columns=LOG_COLUMNS, rows=[], skip=skip, next_skip=None
        )
        return "Commit history:\n(no commits yet)", empty
    else:
        args.append("HEAD")
    args.append("--")
    args += [tree_path(p) for p in paths]
    rows: list[list[str | int | None]] = []
    entries: list[str] = []
    size = 0
    more = False
    with git.stream(args) as output:
        fields = output.bounded_records(b"\x00", MAX_MESSAGE)
        while len(commit_fields := list(islice(fields, 5))) == 5:
            if len(rows) >= max_count or size > MAX_LOG_TEXT:
                more = True
                break
            (commit, _), (who_raw, who_length), (email, email_length), (date, _), body = commit_fields
            sha = commit.lstrip(b"\n").decode("ascii", "replace")
            author_name = clip_name(who_raw, total=who_length)
            text = clip(
                body[0], MAX_MESSAGE, total=body[1], rest=f"the whole message: git_show revision={sha}"
            )
            shown_date = _iso(date.decode("ascii", "replace"))
            rows.append([sha, author_name, clip_name(email, total=email_length), shown_date, text])
            entry = f"Commit: {sha}\nAuthor: {author_name}\nDate: {shown_date}\nMessage: {text}\n"
            entries.append(entry)
            size += len(entry)
        if not more:
            output.check()
    next_skip = skip + len(rows) if more else None
    hint = f"more commits: call git_log with skip={next_skip} (and the same filters)" if more else None
    text = "Commit history:\n" + "\n".join(entries)
    if hint:
        text += f"\n[{hint}]"
    return text, LogResult(
        repository=git.repository.key,
        columns=LOG_COLUMNS,
        rows=rows,
        skip=skip,
        next_skip=next_skip,
        next_page=hint,
    )


def _diff_args(context_lines: int) -> list[str]:
    if not 0 <= context_lines <= 10_000:
        raise InvalidInput("context_lines must be between 0 and 10000")
    return ["diff", "--no-color", *NO_DRIVERS, f"--unified={context_lines}"]


def _target(git: Git, target: str) -> list[str]:
    """A diff target: one revision (diff against the working tree) or a range A..B / A...B."""
    text = revision_text(target, "target")
    for separator in ("...", ".."):
        if separator in text and ":" not in text:
            left, _, right = text.partition(separator)
            a = resolve_commit(git, left or "HEAD", "target")
            b = resolve_commit(git, right or "HEAD", "target")
            if separator == "...":
                base = git.run(["merge-base", a, b], ok=(0,)).stdout.strip().decode("ascii")
                return [base, b]
            return [a, b]
    return [resolve_object(git, text, "target")]


def diff_page(
    git: Git,
    *,
    staged: bool = False,
    target: str | None = None,
    context_lines: int = 3,
    paths: Sequence[str] = (),
    offset: int = 1,
    max_lines: int = 2000,
) -> TextPage:
    args = _diff_args(context_lines)
    if staged:
        args.append("--cached")
    if target is not None:
        args += _target(git, target)
    args.append("--")
    args += [tree_path(p) for p in paths]
    return read_text_page(git, args, offset=offset, max_lines=max_lines)


def show_page(git: Git, revision: str, *, offset: int = 1, max_lines: int = 2000) -> TextPage:
    """A commit (header and patch, as `git show` prints it), a tag, a file or a directory."""
    oid = resolve_object(git, revision)
    kind = git.run(["cat-file", "-t", oid]).stdout.strip()
    if kind == b"tree":
        listing = git.run(["ls-tree", "-z", oid]).stdout
        names = []
        for item in listing.split(b"\x00"):
            if not item:
                continue
            meta, _, path = item.partition(b"\t")
            shown = clip_name(path)
            names.append(shown + "/" if meta.split(b" ")[1] == b"tree" else shown)
        lines: list[str] = []
        size = 0
        for shown in names[offset - 1 : offset - 1 + max_lines]:
            if lines and size + len(shown) > DEFAULT_MAX_BYTES:
                break
            lines.append(shown)
            size += len(shown) + 1
        more = offset - 1 + len(lines) < len(names)
        return TextPage("\n".join(lines), offset, offset + len(lines) - 1, more)
    if kind == b"blob":
        header = git.run(["cat-file", "-s", oid]).stdout
        size = int(header.strip() or b"0")
        with git.stream(["cat-file", "blob", oid]) as output:
            head = b""
            for chunk in output.chunks():
                head += chunk
                if len(head) >= 8000:
                    break
        if b"\x00" in head[:8000]:
            return TextPage(f"(binary file, {size} bytes)", 1, 1, False)
        rest = f"the file has {size:,} bytes"
        at, colon, file = revision_text(revision).partition(":")
        if colon and size <= MAX_BLOB_BYTES:
            rest += f"; read it whole as the resource {uri_for(git.repository, 'blob', at or 'HEAD', file)}"
        return read_text_page(
            git, ["cat-file", "blob", oid], offset=offset, max_lines=max_lines, cut_rest=rest
        )
    args = ["show", "--no-color", *NO_DRIVERS, "--date=iso", "--format=medium", oid, "--"]
    return read_text_page(git, args, offset=offset, max_lines=max_lines, render=show_text)


# -- blame -------------------------------------------------------------------------------------


def blame(
    git: Git,
    path: str,
    *,
    revision: str | None = None,
    start_line: int = 1,
    end_line: int | None = None,
) -> tuple[str, BlameResult]:
    if start_line < 1 or (end_line is not None and end_line < start_line):
        raise InvalidInput("start_line counts from 1 and end_line must not be before it")
    if revision:
        oid = resolve_commit(git, revision)
        relative = tree_path(path)
        spec = [oid, "--", relative]
    else:
        relative = worktree_path(git.repository, path)
        spec = ["--", relative]
    last = end_line if end_line is not None else start_line + MAX_BLAME_LINES - 1
    last = min(last, start_line + MAX_BLAME_LINES - 1)
    wanted = last - start_line + 1
    rest = f"the whole line: git_show revision={revision}:{relative}" if revision else ""
    args = ["blame", "--porcelain", "--no-textconv", f"-L{start_line},+{wanted + 1}", *spec]
    with git.stream(args) as output:
        rows = _parse_blame(output.bounded_records(b"\n", MAX_FIELD), rest)
        result = output.result()
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "backslashreplace").strip()
        if "has only" in message:
            raise InvalidInput(
                f"start_line {start_line} is past the end of the file ({message.removeprefix('fatal: ')})"
            )
        if "no such path" in message or "does not exist" in message:
            raise NotFound(f"{quote_name(relative)}: no such file{' at ' + revision if revision else ''}")
        raise UpstreamError(f"git blame failed: {message}")
    more = len(rows) > wanted
    rows = rows[:wanted]
    capped = end_line is None or end_line > last
    next_start = last + 1 if more and capped else None
    hint = f"more lines: call git_blame with start_line={next_start}" if next_start is not None else None
    width = max((len(str(r[0])) for r in rows), default=1)
    lines = [
        f"{str(r[1])[:8]} ({str(r[2])[:20]:<20} {str(r[3])[:10]} {int(str(r[0])):>{width}}) {r[4]}"
        for r in rows
    ]
    text = "\n".join(lines) + (f"\n[{hint}]" if hint else "")
    return text, BlameResult(
        repository=git.repository.key,
        path=quote_name(relative),
        revision=revision,
        columns=["line", "commit", "author", "date", "text"],
        rows=rows,
        next_start_line=next_start,
        next_page=hint,
    )


def _parse_blame(records: Iterable[tuple[bytes, int]], rest: str) -> list[list[str | int | None]]:
    """`git blame --porcelain` as rows; `records`: its lines as (head, real length), so a huge
    line (or author name) is cut with a note (`rest`: where the whole line is)."""
    commits: dict[bytes, dict[bytes, tuple[bytes, int]]] = {}
    rows: list[list[str | int | None]] = []
    current: dict[bytes, tuple[bytes, int]] = {}
    sha = b""
    final_line = 0
    for line, length in records:
        if line.startswith(b"\t"):
            info = commits.setdefault(sha, current)
            when = info.get(b"author-time", (b"", 0))[0]
            date = datetime.fromtimestamp(int(when), tz=UTC).strftime("%Y-%m-%d") if when.isdigit() else None
            author, author_length = info.get(b"author", (b"", 0))
            rows.append(
                [
                    final_line,
                    sha.decode("ascii", "replace"),
                    clip_name(author, total=author_length),
                    date,
                    clip(line[1:], MAX_BLAME_TEXT, total=length - 1, rest=rest),
                ]
            )
            continue
        head, _, value = line.partition(b" ")
        if len(head) in (40, 64) and value and value.split(b" ")[0].isdigit():
            sha = head
            final_line = int(value.split(b" ")[1])
            current = commits.get(sha, {})
            if sha not in commits:
                commits[sha] = current
        elif head:
            current[head] = (value, length - len(head) - 1)
    return rows


# -- grep --------------------------------------------------------------------------------------


def grep(
    git: Git,
    pattern: str,
    *,
    revision: str | None = None,
    paths: Sequence[str] = (),
    ignore_case: bool = False,
    offset: int = 0,
    limit: int = 100,
) -> tuple[str, GrepResult]:
    if not pattern:
        raise InvalidInput("pattern is empty")
    if "\x00" in pattern or "\n" in pattern:
        raise InvalidInput("pattern must be one line without NUL bytes")
    args = ["grep", "-z", "-n", "--no-column", "-I", "--no-color", "--full-name", "-E"]
    if ignore_case:
        args.append("-i")
    args += ["-e", pattern]
    oid = resolve_commit(git, revision) if revision else None
    if oid:
        args.append(oid)
    pathspecs = [tree_path(p) for p in paths]
    args += ["--", *pathspecs]
    if oid is None:
        # git greps tracked files through a symbolic link to a directory (the same containment
        # as mcp-filesystem: nothing outside the working tree is read).
        tracked = git.run(["ls-files", "-z", "--", *pathspecs]).stdout.split(b"\x00")
        check_tracked_paths(git.repository.worktree, filter(None, tracked), "git_grep")
    prefix = (oid + ":").encode() if oid else b""
    rows: list[list[str | int | None]] = []
    seen = 0
    more = False
    with git.stream(args) as output:
        buffer = b""
        done = False
        for chunk in output.chunks():
            buffer += chunk
            while True:
                first = buffer.find(b"\x00")
                second = buffer.find(b"\x00", first + 1) if first >= 0 else -1
                end = buffer.find(b"\n", second + 1) if second >= 0 else -1
                if end < 0:
                    break
                path, number, text = buffer[:first], buffer[first + 1 : second], buffer[second + 1 : end]
                buffer = buffer[end + 1 :]
                if seen >= offset:
                    if len(rows) >= limit:
                        more = done = True
                        break
                    if prefix and path.startswith(prefix):
                        path = path[len(prefix) :]
                    rows.append([clip_name(path), int(number), clip(text, MAX_GREP_TEXT)])
                seen += 1
            if done:
                break
        if not done:
            output.check(ok=(0, 1))
    next_offset = offset + len(rows) if more else None
    hint = f"more matches: call git_grep with offset={next_offset}" if more else None
    lines = [f"{r[0]}:{r[1]}:{r[2]}" for r in rows]
    reply = "\n".join(lines) if lines else "No matches."
    if hint:
        reply += f"\n[{hint}]"
    return reply, GrepResult(
        repository=git.repository.key,
        revision=revision,
        columns=["path", "line", "text"],
        rows=rows,
        offset=offset,
        next_offset=next_offset,
        next_page=hint,
    )


# -- reflog ------------------------------------------------------------------------------------


def reflog(git: Git, ref: str = "HEAD", *, max_count: int = 30, skip: int = 0) -> tuple[str, ReflogResult]:
    name_ = ref.strip() or "HEAD"
    problem = ref_name_problem(name_)
    if problem is not None:
        raise InvalidInput(f"invalid ref {quote_name(name_)}: {problem}")
    candidates = (
        [name_]
        if name_ == "HEAD" or name_.startswith("refs/")
        else [f"refs/heads/{name_}", f"refs/remotes/{name_}"]
    )
    for full in candidates:
        if git.run(["reflog", "exists", full], check=False).returncode == 0:
            break
    else:
        raise NotFound(
            f"{quote_name(name_)} has no reflog in {git.repository.key} (try HEAD or a local branch)"
        )
    args = [
        "log",
        "-g",
        "-z",
        "--date=iso-strict",
        "--format=%gd%x00%H%x00%gs",
        f"--max-count={max_count + 1}",
        f"--skip={skip}",
        full,
        "--",
    ]
    fields = git.run(args).stdout.split(b"\x00")
    rows: list[list[str | int | None]] = []
    more = False
    size = 0
    for start in range(0, len(fields) - 2, 3):
        selector, commit, action = fields[start : start + 3]
        if len(rows) >= max_count or size > MAX_LOG_TEXT:
            more = True
            break
        raw_selector = os.fsdecode(selector.lstrip(b"\n"))
        date = raw_selector[raw_selector.find("@{") + 2 : -1] if "@{" in raw_selector else None
        index = skip + len(rows)
        rows.append(
            [
                f"{quote_name(name_)}@{{{index}}}",
                commit.decode("ascii", "replace"),
                date,
                clip(
                    action,
                    MAX_NAME,
                    rest=f"the whole message: git_show revision={commit.decode('ascii', 'replace')}",
                ),
            ]
        )
        size += len(str(rows[-1][3])) + 100
    next_skip = skip + len(rows) if more else None
    hint = f"older entries: call git_reflog with skip={next_skip}" if more else None
    text = "\n".join(f"{str(r[1])[:7]} {r[0]}: {r[3]}" for r in rows) or "(empty reflog)"
    if hint:
        text += f"\n[{hint}]"
    return text, ReflogResult(
        repository=git.repository.key,
        ref=quote_name(name_),
        columns=["selector", "commit", "date", "action"],
        rows=rows,
        skip=skip,
        next_skip=next_skip,
        next_page=hint,
    )
