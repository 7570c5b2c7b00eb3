"""Changing the index and the working tree: add, commit, reset, restore; and creating repositories."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from mcp_batteries.errors import InvalidInput
from mcp_batteries.safety import quote_path

from mcp_git.audited import MAX_REPORTED_REFS as MAX_REPORTED_PATHS
from mcp_git.audited import Report, ignore
from mcp_git.checks import branch_name, resolve_commit, worktree_path
from mcp_git.history import has_commits
from mcp_git.repository import is_bare_repository, is_repository
from mcp_git.runner import Git, Policy, run_outside_repository

__all__ = ["add", "commit", "init", "reset", "restore"]


def _paths(git: Git, paths: Sequence[str], what: str) -> list[str]:
    if not paths:
        raise InvalidInput(f"No {what} given. Pass one or more paths, or ['.'] for everything.")
    return [worktree_path(git.repository, p) for p in paths]


def _reported_paths(paths: Sequence[str]) -> dict[str, object]:
    shown: dict[str, object] = {"paths": list(paths[:MAX_REPORTED_PATHS])}
    if len(paths) > MAX_REPORTED_PATHS:
        shown["count"] = len(paths)
    return shown


def staged_paths(verbose: bytes) -> list[str]:
    """The paths `git add --verbose` names (`add 'path'`, `remove 'path'`)."""
    found = []
    for line in verbose.decode("utf-8", "surrogateescape").splitlines():
        verb, _, quoted = line.partition(" ")
        if verb in ("add", "remove") and len(quoted) >= 2 and quoted[0] == quoted[-1] == "'":
            found.append(quoted[1:-1])
    return found


def add(git: Git, files: Sequence[str], *, report: Report = ignore) -> str:
    relative = _paths(git, files, "files to stage")
    result = git.run(["add", "--verbose", "--", *relative], writes=True)
    staged = staged_paths(result.stdout)
    if staged:
        report(action="stage", repository=git.repository.key, **_reported_paths(staged))
    if not result.stdout.strip():
        # `git add` exits 0 when it stages nothing (e.g. '.' on a clean tree).
        return (
            "No changes were staged: the given paths had nothing new to stage. "
            "git_status shows what is modified or untracked."
        )
    return "Files staged successfully"


def _has_staged_changes(git: Git) -> bool:
    if git.run(["rev-parse", "--verify", "--quiet", "MERGE_HEAD"], check=False).returncode == 0:
        return True  # concluding a merge records it even when the index equals HEAD
    quiet = git.run(["diff", "--cached", "--quiet", "--no-ext-diff", "--no-textconv"], check=False)
    return quiet.returncode == 1


def commit(git: Git, message: str) -> str:
    if not message.strip():
        raise InvalidInput("The commit message is empty; describe the change.")
    if "\x00" in message:
        raise InvalidInput("The commit message contains a NUL byte.")
    identity = git.identity_config("commit")
    if not _has_staged_changes(git):
        raise InvalidInput(
            "No changes staged for commit. Use git_add to stage changes first; "
            "git_status shows what is currently staged."
        )
    git.run(
        ["commit", "--quiet", "--no-verify", "--file=-"],
        input=message.encode("utf-8", "surrogateescape"),
        writes=True,
        config=identity,
    )
    sha = git.run(["rev-parse", "HEAD"]).stdout.strip().decode("ascii")
    return f"Changes committed successfully with hash {sha}"


def reset(git: Git, *, report: Report = ignore) -> str:
    report(action="unstage_all", repository=git.repository.key)
    if has_commits(git):
        git.run(["reset", "--quiet"], writes=True)
    else:  # nothing to reset to before the first commit: empty the index instead
        git.run(["rm", "--cached", "-r", "--quiet", "--ignore-unmatch", "--", "."], writes=True)
    return "All staged changes reset"


def restore(
    git: Git, paths: Sequence[str], *, staged: bool, source: str | None = None, report: Report = ignore
) -> str:
    relative = _paths(git, paths, "paths to restore")
    args = ["restore", "--staged" if staged else "--worktree"]
    origin = resolve_commit(git, source, "source") if source else None
    if origin:
        args.append(f"--source={origin}")
    git.run([*args, "--", *relative], writes=True)
    report(
        action="unstage" if staged else "restore",
        repository=git.repository.key,
        **_reported_paths(relative),
        source=origin,
    )
    shown = ", ".join(quote_path(p) for p in relative[:10]) + (", ..." if len(relative) > 10 else "")
    if staged:
        return f"Unstaged {shown} (the working tree is unchanged)"
    origin = f" from {source}" if source else " from the index"
    return f"Restored {shown}{origin}: local changes there are discarded"


def init(policy: Policy, target: Path, *, initial_branch: str | None = None, bare: bool = False) -> str:
    """`git init` at `target` (already checked to be inside an allowed directory)."""
    if is_repository(target) or is_bare_repository(target):
        raise InvalidInput(f"{quote_path(target)} is already a git repository")
    if target.exists() and not target.is_dir():
        raise InvalidInput(f"{quote_path(target)} exists and is not a directory")
    args = ["init", "--quiet"]
    if bare:
        args.append("--bare")
    if initial_branch:
        args.append(f"--initial-branch={branch_name(initial_branch, 'initial_branch')}")
    os.makedirs(target, exist_ok=True)
    git_dir = target if bare else target / ".git"
    # Named explicitly so an inherited GIT_DIR cannot redirect the new repository.
    env = {"GIT_DIR": str(git_dir)} if bare else {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(target)}
    run_outside_repository(policy, target, [*args, "--", str(target)], env)
    kind = "bare repository" if bare else "repository"
    return f"Initialized empty {kind} in {quote_path(target)}"
