"""Branches, tags, stashes and remotes: listings, and the changes that only move refs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

from mcp_batteries.errors import InvalidInput, NotFound
from mcp_batteries.safety import quote_name, redact_url

from mcp_git.checks import branch_name, resolve_commit, resolve_object, tag_name, worktree_path
from mcp_git.models import Branch, BranchResult, Remote, RemoteResult, Stash, StashResult, Tag, TagResult
from mcp_git.runner import Git
from mcp_git.text import MAX_NAME, clip, free_text, name

__all__ = [
    "checkout",
    "create_branch",
    "create_tag",
    "list_branches",
    "list_remotes",
    "list_stashes",
    "list_tags",
    "ref_exists",
    "stash_action",
]

BranchType = Literal["local", "remote", "all"]


def ref_exists(git: Git, full_name: str) -> bool:
    return git.run(["show-ref", "--verify", "--quiet", full_name], check=False).returncode == 0


# -- branches ----------------------------------------------------------------------------------


def list_branches(
    git: Git,
    branch_type: BranchType = "local",
    *,
    contains: str | None = None,
    not_contains: str | None = None,
    offset: int = 0,
    limit: int = 200,
) -> tuple[str, BranchResult]:
    if branch_type not in ("local", "remote", "all"):
        raise InvalidInput(f"branch_type must be 'local', 'remote' or 'all', got {branch_type!r}")
    args = ["for-each-ref", "--format=%(HEAD)%00%(refname)%00%(objectname)%00%(upstream:short)%00%(symref)"]
    if contains:
        args.append(f"--contains={resolve_commit(git, contains, 'contains')}")
    if not_contains:
        args.append(f"--no-contains={resolve_commit(git, not_contains, 'not_contains')}")
    if branch_type in ("local", "all"):
        args.append("refs/heads/")
    if branch_type in ("remote", "all"):
        args.append("refs/remotes/")
    branches: list[Branch] = []
    for record in git.run(args).stdout.split(b"\n"):
        if not record:
            continue
        head, refname, oid, upstream, symref = (record.split(b"\x00") + [b""] * 5)[:5]
        local = refname.startswith(b"refs/heads/")
        short = refname[len(b"refs/heads/") :] if local else refname[len(b"refs/remotes/") :]
        target = symref[len(b"refs/remotes/") :] if symref.startswith(b"refs/remotes/") else symref
        branches.append(
            Branch(
                name=name(short),
                kind="local" if local else "remote",
                commit=oid.decode("ascii", "replace") or None,
                current=head == b"*",
                upstream=name(upstream) if upstream else None,
                points_to=name(target) if target else None,
            )
        )
    current = next((b.name for b in branches if b.current), None)
    detached = None
    if branch_type != "remote" and current is None:
        head_sha = git.run(["rev-parse", "--verify", "--quiet", "HEAD"], check=False).stdout.strip()
        symbolic = git.run(["symbolic-ref", "--quiet", "HEAD"], check=False).returncode == 0
        if head_sha and not symbolic:
            detached = head_sha.decode("ascii")[:7]
    page = branches[offset : offset + limit]
    next_offset = offset + len(page) if offset + len(page) < len(branches) else None
    hint = f"more branches: call git_branch with offset={next_offset}" if next_offset is not None else None
    lines = [f"* (HEAD detached at {detached})"] if detached and offset == 0 else []
    for b in page:
        shown = b.name if b.kind == "local" or branch_type == "remote" else f"remotes/{b.name}"
        arrow = f" -> {b.points_to}" if b.points_to else ""
        lines.append(f"{'*' if b.current else ' '} {shown}{arrow}")
    text = "\n".join(lines)
    if hint:
        text += f"\n[{hint}]"
    return text, BranchResult(
        repository=git.repository.key,
        current=current,
        branches=page,
        offset=offset,
        next_offset=next_offset,
        next_page=hint,
    )


def create_branch(git: Git, new_name: str, base: str | None = None) -> str:
    branch = branch_name(new_name)
    if ref_exists(git, f"refs/heads/{branch}"):
        raise InvalidInput(
            f"Cannot create branch {quote_name(branch)!r}: refs/heads/{quote_name(branch)} already exists"
        )
    if base:
        oid = resolve_commit(git, base, "base_branch")
        base_shown = base
    else:
        oid = resolve_commit(git, "HEAD", "HEAD")
        current = git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], check=False)
        base_shown = name(current.stdout.strip()) if current.returncode == 0 else f"HEAD ({oid[:7]})"
    git.run(["branch", "--no-track", "--", branch, oid], writes=True)
    return f"Created branch '{quote_name(branch)}' from '{base_shown}'"


def checkout(git: Git, target: str) -> str:
    """Switch to a local branch; any other revision detaches HEAD (as `git checkout` does)."""
    text = target.strip()
    local = None
    try:
        candidate = branch_name(text)
        if ref_exists(git, f"refs/heads/{candidate}"):
            local = candidate
    except InvalidInput:
        local = None
    if local is not None:
        git.run(["checkout", "--quiet", "--no-recurse-submodules", local, "--"], writes=True)
        return f"Switched to branch '{quote_name(local)}'"
    try:
        oid = resolve_commit(git, text, "branch_name")
    except NotFound:
        remote = git.run(["for-each-ref", "--format=%(refname:short)", f"refs/remotes/*/{text}"], check=False)
        hint = ""
        if remote.stdout.strip():
            first = name(remote.stdout.split(b"\n")[0])
            hint = (
                f" A remote branch {first} exists: to work on it, call git_create_branch with "
                f"branch_name={quote_name(text)!r} and base_branch={first!r}, then git_checkout."
            )
        raise NotFound(
            f"{quote_name(text)} is not a branch, tag or commit in {git.repository.key}.{hint}"
        ) from None
    git.run(["checkout", "--quiet", "--no-recurse-submodules", "--detach", oid, "--"], writes=True)
    return f"HEAD is now detached at {oid[:7]}"


# -- tags --------------------------------------------------------------------------------------


def list_tags(
    git: Git, *, offset: int = 0, limit: int = 200, message: str | None = None
) -> tuple[str, TagResult]:
    fmt = "--format=%(refname)%00%(objecttype)%00%(objectname)%00%(*objectname)%00%(contents:subject)"
    tags: list[Tag] = []
    for record in git.run(["for-each-ref", fmt, "refs/tags/"]).stdout.split(b"\n"):
        if not record:
            continue
        refname, kind, oid, peeled, subject = (record.split(b"\x00") + [b""] * 5)[:5]
        annotated = kind == b"tag"
        tags.append(
            Tag(
                name=name(refname[len(b"refs/tags/") :]),
                commit=(peeled if annotated else oid).decode("ascii", "replace") or None,
                annotated=annotated,
                subject=clip(
                    subject, MAX_NAME, rest=f"the whole message: git_show revision={name(refname[10:])}"
                )
                if annotated and subject
                else None,
            )
        )
    page = tags[offset : offset + limit]
    next_offset = offset + len(page) if offset + len(page) < len(tags) else None
    hint = f"more tags: call git_tag with offset={next_offset}" if next_offset is not None else None
    lines = [message] if message else []
    lines += [f"{t.name}{'  ' + t.subject if t.subject else ''}" for t in page]
    if not tags and not message:
        lines.append("No tags.")
    text = "\n".join(lines) + (f"\n[{hint}]" if hint else "")
    return text, TagResult(
        repository=git.repository.key,
        message=message,
        tags=page,
        offset=offset,
        next_offset=next_offset,
        next_page=hint,
    )


def create_tag(git: Git, new_name: str, revision: str | None, message: str | None) -> tuple[str, TagResult]:
    tag = tag_name(new_name)
    if ref_exists(git, f"refs/tags/{tag}"):
        raise InvalidInput(f"tag {quote_name(tag)} already exists (tags are never moved by this server)")
    oid = resolve_object(git, revision or "HEAD", "revision")
    if message:
        identity = git.identity_config("create an annotated tag")
        git.run(
            ["tag", "-a", "--file=-", "--", tag, oid],
            input=message.encode("utf-8", "surrogateescape"),
            writes=True,
            config=identity,
        )
        done = f"Created annotated tag '{quote_name(tag)}' at {oid[:7]}"
    else:
        git.run(["tag", "--", tag, oid], writes=True)
        done = f"Created lightweight tag '{quote_name(tag)}' at {oid[:7]}"
    _, listing = list_tags(git, limit=100_000)
    created = [t for t in listing.tags if t.name == quote_name(tag)]
    return done, TagResult(
        repository=git.repository.key, message=done, tags=created, offset=0, next_offset=None
    )


# -- stashes -----------------------------------------------------------------------------------


def list_stashes(git: Git, message: str | None = None, limit: int = 100) -> tuple[str, StashResult]:
    raw = git.run(["stash", "list", "-z", "--format=%H%x00%gs"], check=False).stdout
    fields = raw.split(b"\x00")
    stashes: list[Stash] = []
    for start in range(0, len(fields) - 1, 2):
        commit, description = fields[start : start + 2]
        index = len(stashes)
        stashes.append(
            Stash(
                index=index,
                name=f"stash@{{{index}}}",
                commit=commit.strip().decode("ascii", "replace"),
                description=clip(
                    description, MAX_NAME, rest=f"the whole message: git_show revision=stash@{{{index}}}"
                ),
            )
        )
    shown = stashes[:limit]
    hint = f"{len(stashes) - limit} older stashes not shown" if len(stashes) > limit else None
    lines = [message] if message else []
    lines += [f"{s.name}: {s.description}" for s in shown]
    if not stashes and not message:
        lines.append("No stashes.")
    text = "\n".join(lines) + (f"\n[{hint}]" if hint else "")
    return text, StashResult(repository=git.repository.key, message=message, stashes=shown, next_page=hint)


def stash_action(
    git: Git,
    action: str,
    *,
    message: str | None = None,
    index: int = 0,
    include_untracked: bool = False,
    paths: Sequence[str] = (),
) -> tuple[str, StashResult]:
    if action == "list":
        return list_stashes(git)
    if action == "push":
        identity = git.identity_config("stash changes")
        args = ["stash", "push", "--quiet"]
        if include_untracked:
            args.append("--include-untracked")
        if message:
            if "\x00" in message:
                raise InvalidInput("message contains a NUL byte")
            args.append(f"--message={message}")
        args.append("--")
        args += [worktree_path(git.repository, p) for p in paths]
        before = _stash_top(git)
        git.run(args, writes=True, config=identity)
        done = (
            "Saved working directory and index state as stash@{0}"
            if _stash_top(git) != before
            else ("No local changes to save")
        )
        return list_stashes(git, done)
    if action in ("apply", "pop", "drop"):
        if index < 0:
            raise InvalidInput("index counts from 0 (stash@{0} is the newest)")
        selector = f"stash@{{{index}}}"
        if git.run(["rev-parse", "--verify", "--quiet", f"refs/stash@{{{index}}}"], check=False).returncode:
            raise NotFound(f"{selector} does not exist (git_stash with action='list' shows the stashes)")
        args = ["stash", action, "--quiet", selector]
        git.run(args, writes=True)
        verb = {"apply": "Applied", "pop": "Applied and dropped", "drop": "Dropped"}[action]
        return list_stashes(git, f"{verb} {selector}")
    raise InvalidInput(f"action must be push, list, apply, pop or drop, got {action!r}")


def _stash_top(git: Git) -> bytes:
    return git.run(["rev-parse", "--verify", "--quiet", "refs/stash"], check=False).stdout.strip()


# -- remotes -----------------------------------------------------------------------------------


def remote_names(git: Git) -> list[str]:
    return [os.fsdecode(n) for n in git.run(["remote"]).stdout.split(b"\n") if n]


def list_remotes(git: Git) -> tuple[str, RemoteResult]:
    remotes: list[Remote] = []
    for remote in remote_names(git):
        fetch = _urls(git, remote, push=False)
        push = _urls(git, remote, push=True)
        remotes.append(Remote(name=quote_name(remote), fetch_urls=fetch, push_urls=push))
    lines = []
    for r in remotes:
        lines += [f"{r.name}\t{u} (fetch)" for u in r.fetch_urls]
        lines += [f"{r.name}\t{u} (push)" for u in r.push_urls]
    return "\n".join(lines) or "No remotes.", RemoteResult(repository=git.repository.key, remotes=remotes)


def _urls(git: Git, remote: str, *, push: bool) -> list[str]:
    args = ["remote", "get-url", "--all"] + (["--push"] if push else []) + ["--", remote]
    result = git.run(args, check=False)
    return [clip(redact_url(free_text(u)), MAX_NAME) for u in result.stdout.split(b"\n") if u]


def effective_urls(git: Git, remote: str) -> list[str]:
    """Every URL git would contact for `remote` (fetch and push, insteadOf applied), unredacted."""
    urls: list[str] = []
    for push in (False, True):
        args = ["remote", "get-url", "--all"] + (["--push"] if push else []) + ["--", remote]
        urls += [os.fsdecode(u) for u in git.run(args).stdout.split(b"\n") if u]
    return list(dict.fromkeys(urls))
