"""Fetch, pull and push (offered only with `--allow-network`).

Before git contacts anything, every URL it could use is checked (`checks.check_remote_url`):
the remote's fetch and push URLs as git resolves them, the URL given directly with every
`insteadOf`/`pushInsteadOf` rewrite the configuration holds, and the URLs of a partial clone's
promisor remotes. Transport helpers (`ext::`, `fd::`) are refused, and git's own protocol
allow-list excludes them too (`hardening.ALLOWED_PROTOCOLS`); a local repository must lie inside
the allowed areas, on the path git will really use (percent-decoded, `~` expanded).

A local repository on the other end is inspected like ours (`runner.inspect_local_remote`: its
object stores, links and includes must stay inside the allowed areas, its configuration is
neutralised) and its `receive-pack` or `upload-pack` is started by a command line naming those
overrides and the static ones (hooks off), since git clears our own configuration for it.
Every operation runs without a terminal (nothing can prompt), with askpass disabled and the
server's network timeout. Pull is fast-forward only unless asked; push never forces unless
`force_with_lease` is asked.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from mcp_batteries.errors import InvalidInput, NotFound
from mcp_batteries.safety import quote_name, quote_path, redact_text, redact_url, unquote_name

from mcp_git.audited import Report, ignore
from mcp_git.checks import branch_name, check_remote_url, remote_name, rewritten_urls
from mcp_git.hardening import STATIC_CONFIG, config_arguments, promisor_remotes, split_key
from mcp_git.refs import effective_urls, remote_names
from mcp_git.repository import transport_git_dir
from mcp_git.runner import Git, GitResult, inspect_local_remote
from mcp_git.text import free_text

__all__ = ["fetch", "pull", "push"]

_URLISH = re.compile(r"[:/]")
_STATIC_PAIRS: list[tuple[str, str | None]] = [
    (key, value) for key, _, value in (item.partition("=") for item in STATIC_CONFIG)
]


def _target(git: Git, remote: str | None, areas: Sequence[Path]) -> tuple[str, list[str]]:
    """(what to pass git as the remote, the local repositories among the URLs it could use)."""
    given = unquote_name((remote or "origin").strip())
    configured = remote_names(git)
    entries = git.inspection().entries
    if given in configured:
        urls = effective_urls(git, remote_name(given))
    elif _URLISH.search(given):
        check_remote_url(given, areas, git.repository.worktree)  # before git sees it: no option
        # As git resolves it: insteadOf rewrites, and a legacy .git/remotes or .git/branches
        # file of that name (`host:path` is a valid remote nickname).
        resolved = git.run(["ls-remote", "--get-url", given]).stdout.strip()
        urls = [*rewritten_urls(given, entries), os.fsdecode(resolved)]
    else:
        known = ", ".join(quote_name(n) for n in configured) or "none"
        raise NotFound(
            f"no remote named {quote_name(given)} (configured remotes: {known}); pass a name or a URL"
        )
    for entry in entries:
        # The remote's settings in includes inactive today (they could become active), and those
        # of a remote named like the URL given (git uses its pushurl for that URL).
        section, subsection, variable = split_key(entry.key)
        if section == "remote" and subsection == given and variable in ("url", "pushurl") and entry.value:
            urls += rewritten_urls(entry.value, entries)
    for promisor in promisor_remotes(entries):  # a partial clone fetches from these on its own
        if promisor in configured:
            urls += effective_urls(git, promisor)
    local: list[str] = []
    for url in dict.fromkeys(u for u in urls if u):
        path = check_remote_url(url, areas, git.repository.worktree)
        if path is not None:
            local.append(path)
    return given, local


def _pack_program(
    git: Git, local: list[str], areas: Sequence[Path], command: str
) -> tuple[str, dict[str, str]]:
    """The `--upload-pack` / `--receive-pack` program, always named on the command line: git
    reads `remote.<name>.uploadpack`/`receivepack` first-value-wins, so a repository's own
    setting would beat any `-c`. For a local repository it is `git -c ... {command}` with that
    repository's neutralisation and the static configuration (git clears ours for it)."""
    if not local:
        return f"git-{command}", {}
    pairs: list[tuple[str, str | None]] = []
    for path in local:
        found = transport_git_dir(path)
        if found is None:
            if command == "upload-pack" and os.path.isfile(path):
                continue  # a bundle: read by git itself, no upload-pack runs
            raise NotFound(f"remote {quote_path(path)} is not a git repository")
        pairs += inspect_local_remote(*found, git.policy, areas).overrides
    arguments, env = config_arguments(
        [*dict.fromkeys(pairs), *_STATIC_PAIRS], prefix="MCP_GIT_REMOTE_CONFIG_"
    )
    return " ".join(shlex.quote(part) for part in ["git", *arguments, command]), env


def _report(verb: str, remote: str, result: GitResult) -> str:
    output = (free_text(result.stderr) + free_text(result.stdout)).strip()
    lines = [redact_text(line) for line in output.splitlines() if not line.startswith("hint:")]
    return f"{verb} {redact_url(remote)}" + (":\n" + "\n".join(lines) if lines else "")


def fetch(
    git: Git, areas: Sequence[Path], remote: str | None = None, branch: str | None = None, prune: bool = False
) -> str:
    argument, local = _target(git, remote, areas)
    program, env = _pack_program(git, local, areas, "upload-pack")
    args = ["fetch", f"--upload-pack={program}"]
    if prune:
        args.append("--prune")
    args.append(argument)
    if branch:
        args.append(branch_name(branch))
    return _report("Fetched from", argument, git.run(args, writes=True, network=True, env=env))


def pull(
    git: Git,
    areas: Sequence[Path],
    remote: str | None = None,
    branch: str | None = None,
    ff_only: bool = True,
) -> str:
    argument, local = _target(git, remote, areas)
    program, env = _pack_program(git, local, areas, "upload-pack")
    args = ["pull", f"--upload-pack={program}", "--no-rebase", "--no-recurse-submodules"]
    config: list[str] = []
    if ff_only:
        args.append("--ff-only")
    else:
        args.append("--no-edit")
        config = git.identity_config("merge the pulled changes")
    args.append(argument)
    if branch:
        args.append(branch_name(branch))
    result = git.run(args, writes=True, network=True, config=config, env=env)
    return _report("Pulled from", argument, result)


def push(
    git: Git,
    areas: Sequence[Path],
    remote: str | None = None,
    branch: str | None = None,
    *,
    set_upstream: bool = False,
    force_with_lease: bool = False,
    tags: bool = False,
    report: Report = ignore,
) -> str:
    argument, local = _target(git, remote, areas)
    if branch:
        name = branch_name(branch)
    else:
        current = git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], check=False)
        if current.returncode != 0:
            raise InvalidInput("HEAD is detached: name the branch to push (branch=...)")
        name = current.stdout.strip().decode("utf-8", "surrogateescape")
    program, env = _pack_program(git, local, areas, "receive-pack")
    args = ["push", f"--receive-pack={program}"]
    if set_upstream:
        args.append("--set-upstream")
    if force_with_lease:
        args.append(f"--force-with-lease=refs/heads/{name}")
    if tags:
        args.append("--follow-tags")
    refspec = f"refs/heads/{name}:refs/heads/{name}"
    args += [argument, refspec]
    done = _report("Pushed to", argument, git.run(args, writes=True, network=True, env=env))
    pushed = git.run(["rev-parse", "--verify", "--quiet", f"refs/heads/{name}"], check=False)
    report(
        action="push",
        repository=git.repository.key,
        remote=redact_url(argument),
        refs=[refspec],
        commit=pushed.stdout.strip().decode("ascii", "replace") or None,
        force_with_lease=force_with_lease,
        follow_tags=tags,
    )
    return done
