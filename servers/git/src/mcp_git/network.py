"""Fetch, pull and push (offered only with `--allow-network`).

Before git contacts anything, every URL it would use is checked (`checks.check_remote_url`):
the remote's fetch and push URLs as git resolves them (`insteadOf` rewriting applied), or the
URL given directly. Transport helpers (`ext::`, `fd::`) are refused, and git's own protocol
allow-list excludes them too (`hardening.ALLOWED_PROTOCOLS`); a local repository must lie inside
the allowed areas. Pushing into a local repository runs its receive-pack with hooks disabled.
Every operation runs without a terminal (nothing can prompt), with askpass disabled and the
server's network timeout. Pull is fast-forward only unless asked; push never forces unless
`force_with_lease` is asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from mcp_batteries.errors import InvalidInput, NotFound
from mcp_batteries.names import quote_name, unquote_name
from mcp_batteries.redact import redact_text, redact_url

from mcp_git.checks import branch_name, check_remote_url, remote_name
from mcp_git.refs import effective_urls, remote_names
from mcp_git.runner import Git, GitResult
from mcp_git.text import free_text

__all__ = ["fetch", "pull", "push"]

# Always given on the command line: git takes the FIRST remote.<name>.uploadpack/receivepack
# value, so a repository's own setting would beat a `-c` override; the option beats both.
_UPLOAD_PACK = "--upload-pack=git-upload-pack"
_RECEIVE_PACK = "--receive-pack=git-receive-pack"
_LOCAL_RECEIVE_PACK = "--receive-pack=git -c core.hooksPath=/dev/null receive-pack"
_URLISH = re.compile(r"[:/]")


def _target(git: Git, remote: str | None, areas: Sequence[Path]) -> tuple[str, bool]:
    """(what to pass git as the remote, whether any URL is a local repository)."""
    given = unquote_name((remote or "origin").strip())
    configured = remote_names(git)
    if given in configured:
        urls = effective_urls(git, remote_name(given))
        argument = given
    elif _URLISH.search(given):
        urls = [given]
        argument = given
    else:
        known = ", ".join(quote_name(n) for n in configured) or "none"
        raise NotFound(
            f"no remote named {quote_name(given)} (configured remotes: {known}); pass a name or a URL"
        )
    local = False
    for url in urls:
        check_remote_url(url, areas, git.repository.worktree)
        local = local or _is_local(url)
    return argument, local


def _is_local(url: str) -> bool:
    if "://" in url:
        return url.lower().startswith("file://")
    head = url.split("/", 1)[0]
    return url.startswith("/") or ":" not in head  # else user@host:path (ssh)


def _report(verb: str, remote: str, result: GitResult) -> str:
    output = (free_text(result.stderr) + free_text(result.stdout)).strip()
    lines = [redact_text(line) for line in output.splitlines() if not line.startswith("hint:")]
    return f"{verb} {redact_url(remote)}" + (":\n" + "\n".join(lines) if lines else "")


def fetch(
    git: Git, areas: Sequence[Path], remote: str | None = None, branch: str | None = None, prune: bool = False
) -> str:
    argument, _ = _target(git, remote, areas)
    args = ["fetch", _UPLOAD_PACK]
    if prune:
        args.append("--prune")
    args.append(argument)
    if branch:
        args.append(branch_name(branch))
    return _report("Fetched from", argument, git.run(args, writes=True, network=True))


def pull(
    git: Git,
    areas: Sequence[Path],
    remote: str | None = None,
    branch: str | None = None,
    ff_only: bool = True,
) -> str:
    argument, _ = _target(git, remote, areas)
    args = ["pull", _UPLOAD_PACK, "--no-rebase", "--no-recurse-submodules"]
    config: list[str] = []
    if ff_only:
        args.append("--ff-only")
    else:
        args.append("--no-edit")
        config = git.identity_config("merge the pulled changes")
    args.append(argument)
    if branch:
        args.append(branch_name(branch))
    return _report("Pulled from", argument, git.run(args, writes=True, network=True, config=config))


def push(
    git: Git,
    areas: Sequence[Path],
    remote: str | None = None,
    branch: str | None = None,
    *,
    set_upstream: bool = False,
    force_with_lease: bool = False,
    tags: bool = False,
) -> str:
    argument, local = _target(git, remote, areas)
    if branch:
        name = branch_name(branch)
    else:
        current = git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], check=False)
        if current.returncode != 0:
            raise InvalidInput("HEAD is detached: name the branch to push (branch=...)")
        name = current.stdout.strip().decode("utf-8", "surrogateescape")
    args = ["push", _LOCAL_RECEIVE_PACK if local else _RECEIVE_PACK]
    if set_upstream:
        args.append("--set-upstream")
    if force_with_lease:
        args.append(f"--force-with-lease=refs/heads/{name}")
    if tags:
        args.append("--follow-tags")
    args += [argument, f"refs/heads/{name}:refs/heads/{name}"]
    return _report("Pushed to", argument, git.run(args, writes=True, network=True))
