"""What a destructive git call would lose, in the words its user is asked to confirm.

- `git_restore` (staged=false) discards uncommitted changes: the files, with the lines lost;
- `git_stash` drop deletes a stash: its description and the files it holds;
- `git_push` with force_with_lease overwrites a remote branch: the commits there that the local
  branch does not have (as the remote-tracking branch knows them, which is what the lease checks).

None means nothing would be lost (no local change to discard, a push that only adds commits), or
the call will fail anyway and say why (a stash that does not exist); then nothing is asked.
`git_reset` only unstages (the working tree keeps every change), and no tool deletes branches or
tags, so they ask nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from mcp_batteries.safety import quote_name

from mcp_git.changes import _paths
from mcp_git.checks import branch_name, resolve_commit
from mcp_git.runner import Git

__all__ = ["MAX_NAMED", "describe_force_push", "describe_restore", "describe_stash_drop"]

#: Files or commits named one by one in a question; the rest are counted.
MAX_NAMED = 20


def _lines(raw: bytes) -> list[str]:
    return [os.fsdecode(line) for line in raw.split(b"\n") if line.strip()]


def _numstat(lines: Sequence[str]) -> tuple[list[str], int, int]:
    """`git diff --numstat` lines -> ("path (+a -d)" items, total added, total deleted)."""
    named: list[str] = []
    added = deleted = 0
    for line in lines:
        plus, minus, path = [*line.split("\t", 2), "", ""][:3]
        if plus == "-":
            named.append(f"{path} (binary)")
            continue
        added += int(plus or 0)
        deleted += int(minus or 0)
        named.append(f"{path} (+{plus} -{minus})")
    return named, added, deleted


def _listed(items: Sequence[str], noun: str) -> list[str]:
    shown = [f"  {item}" for item in items[:MAX_NAMED]]
    if len(items) > MAX_NAMED:
        shown.append(f"  ... and {len(items) - MAX_NAMED} more {noun}")
    return shown


def describe_restore(
    git: Git, paths: Sequence[str], *, staged: bool, source: str | None = None
) -> str | None:
    """What `git_restore(paths, staged=False, source)` would discard from the working tree."""
    if staged:
        return None  # unstaging keeps the working tree as it is
    relative = _paths(git, paths, "paths to restore")
    against = [resolve_commit(git, source, "source")] if source else []
    diff = git.run(["diff", "--numstat", *against, "--", *relative])
    named, added, deleted = _numstat(_lines(diff.stdout))
    if not named:
        return None
    origin = f"the commit {source}" if source else "the index"
    files = f"{len(named)} file{'s' if len(named) != 1 else ''}"
    lines = [
        f"discard the uncommitted changes to {files} in {git.repository.shown} (+{added} -{deleted} lines), "
        f"restoring them from {origin}:",
        *_listed(named, "files"),
    ]
    return "\n".join(lines)


def describe_stash_drop(git: Git, action: str, index: int) -> str | None:
    """What `git_stash(action="drop", index)` would delete: the stash and the changes it holds."""
    if action != "drop" or index < 0:
        return None
    ref = f"refs/stash@{{{index}}}"
    found = git.run(["rev-parse", "--verify", "--quiet", ref], check=False)
    if found.returncode != 0:
        return None
    commit = found.stdout.strip().decode("ascii")
    subject = os.fsdecode(git.run(["log", "-1", "--format=%s", commit]).stdout.strip())
    changed = git.run(["diff", "--numstat", f"{commit}^1", commit])
    named, added, deleted = _numstat(_lines(changed.stdout))
    files = f"{len(named)} file{'s' if len(named) != 1 else ''}"
    lines = [
        f"delete stash@{{{index}}} ({subject!r}) of {git.repository.shown}, with its changes to {files} "
        f"(+{added} -{deleted} lines):",
        *_listed(named, "files"),
    ]
    return "\n".join(lines)


def describe_force_push(git: Git, remote: str, branch: str | None, *, force_with_lease: bool) -> str | None:
    """What `git_push(remote, branch, force_with_lease=True)` would overwrite on the remote: the
    commits of the remote branch (as last fetched) that the local branch does not have."""
    if not force_with_lease:
        return None
    if branch:
        name = branch_name(branch)
    else:
        current = git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], check=False)
        if current.returncode != 0:
            return None  # the push refuses a detached HEAD itself
        name = current.stdout.strip().decode("utf-8", "surrogateescape")
    tracking = f"refs/remotes/{remote}/{name}"
    known = git.run(["rev-parse", "--verify", "--quiet", tracking], check=False)
    if known.returncode != 0:
        return (
            f"force-push the branch {quote_name(name)} to {quote_name(remote)}, overwriting what is there "
            "(this repository has no remote-tracking branch for it, so which commits would be lost "
            "cannot be said; fetch first to see them)"
        )
    lost = _lines(git.run(["log", "--format=%h %s", f"refs/heads/{name}..{tracking}"]).stdout)
    if not lost:
        return None  # the remote branch is contained in the local one: only commits are added
    commits = f"{len(lost)} commit{'s' if len(lost) != 1 else ''}"
    lines = [
        f"force-push the branch {quote_name(name)} to {quote_name(remote)}, removing {commits} from the "
        "remote branch that the local branch does not have:",
        *_listed(lost, "commits"),
    ]
    return "\n".join(lines)
