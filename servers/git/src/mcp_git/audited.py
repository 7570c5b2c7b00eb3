"""What a changing git tool did, for the audit trail (`note_change`, docs/deploy.md#audit-trail).

`recorded(git, report, fn, ...)` runs `fn(git, ...)` between two readings of the repository's
refs (HEAD, branches, tags, remote-tracking branches) and reports each difference, even when `fn`
failed half-way (a pull that stopped at a conflict may still have moved refs):

    {"action": "commit", "repository": "app", "branch": "main", "commit": "<new id>", "parent": "<old id>"}
    {"action": "update_branch", "repository": "app", "branch": "main", "from": "<id>", "to": "<id>"}
    {"action": "create_branch" | "delete_branch", "repository": "app", "branch": "topic", "commit": "<id>"}
    {"action": "switch", "repository": "app", "from": "main", "to": "topic"}   (a commit id when detached)
    {"action": "create_tag" | "delete_tag" | "move_tag", "repository": "app", "tag": "v1", ...}
    {"action": "update_remote_branch", "repository": "app", "ref": "origin/main", "from": ..., "to": ...}

A branch that moved by exactly one commit whose parent was its old tip and that no other ref
points at is a `commit` (what `git_commit` does); any other move is an `update_branch` (a pull,
a merge). What the tools know themselves (files staged or restored, what was pushed where)
they report through the `report` they are given (`changes.add`, `changes.restore`,
`network.push`...). Reading the refs costs two git commands before and after: the server calls
this only for an audited call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp_batteries.errors import BatteriesError

from mcp_git.runner import Git

__all__ = ["MAX_REPORTED_REFS", "RefState", "Report", "recorded", "ref_changes", "ref_state"]

T = TypeVar("T")

#: `report(**what)`: `mcp_batteries.server.note_change`, or nothing.
Report = Callable[..., None]

#: A fetch that brings thousands of branches is summed up past this many refs.
MAX_REPORTED_REFS = 100

_NAMESPACES = ("refs/heads/", "refs/tags/", "refs/remotes/")


def ignore(**_what: Any) -> None:
    """The `report` of a call nobody audits."""


@dataclass(frozen=True)
class RefState:
    #: "refs/heads/<branch>" when HEAD is on a branch, else the commit id ("" before the first).
    head: str
    #: ref name -> object id, for branches, tags and remote-tracking branches.
    refs: dict[str, str]


def ref_state(git: Git) -> RefState:
    symbolic = git.run(["symbolic-ref", "--quiet", "HEAD"], check=False)
    if symbolic.returncode == 0:
        head = symbolic.stdout.strip().decode("utf-8", "surrogateescape")
    else:
        found = git.run(["rev-parse", "--verify", "--quiet", "HEAD"], check=False)
        head = found.stdout.strip().decode("ascii", "replace")
    listed = git.run(["for-each-ref", "--format=%(objectname) %(refname)", *_NAMESPACES], check=False)
    refs: dict[str, str] = {}
    for line in listed.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, _, name = line.partition(" ")
        if name and not name.endswith("/HEAD"):
            refs[name] = oid
    return RefState(head, refs)


def _parent(git: Git, oid: str) -> str | None:
    found = git.run(["rev-parse", "--verify", "--quiet", f"{oid}^1"], check=False)
    return found.stdout.strip().decode("ascii", "replace") if found.returncode == 0 else None


def _only_here(oid: str | None, name: str, before: RefState, after: RefState) -> bool:
    """No other ref points at `oid`, before or after: a commit made here, not one fetched."""
    return not any(o == oid for n, o in [*before.refs.items(), *after.refs.items()] if n != name)


def _short(ref: str) -> str:
    for prefix in _NAMESPACES:
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


def ref_changes(git: Git, before: RefState, after: RefState) -> list[dict[str, Any]]:
    """The differences between two readings, in the shapes of the module docstring."""
    repository = git.repository.key
    changes: list[dict[str, Any]] = []
    names = sorted(set(before.refs) | set(after.refs))
    moved = [n for n in names if before.refs.get(n) != after.refs.get(n)]
    for name in moved[:MAX_REPORTED_REFS]:
        old, new = before.refs.get(name), after.refs.get(name)
        short = _short(name)
        if name.startswith("refs/remotes/"):
            changes.append(
                {
                    "action": "update_remote_branch",
                    "repository": repository,
                    "ref": short,
                    "from": old,
                    "to": new,
                }
            )
            continue
        kind, key = ("branch", "branch") if name.startswith("refs/heads/") else ("tag", "tag")
        if old is None and kind == "branch" and name == before.head == after.head:
            # The first commit on an unborn branch.
            changes.append(
                {"action": "commit", "repository": repository, "branch": short, "commit": new, "parent": None}
            )
        elif old is None:
            changes.append({"action": f"create_{kind}", "repository": repository, key: short, "commit": new})
        elif new is None:
            changes.append({"action": f"delete_{kind}", "repository": repository, key: short, "commit": old})
        elif kind == "branch" and _only_here(new, name, before, after) and _parent(git, new) == old:
            changes.append(
                {"action": "commit", "repository": repository, "branch": short, "commit": new, "parent": old}
            )
        else:
            action = "update_branch" if kind == "branch" else "move_tag"
            changes.append({"action": action, "repository": repository, key: short, "from": old, "to": new})
    if len(moved) > MAX_REPORTED_REFS:
        changes.append(
            {"action": "more_refs", "repository": repository, "count": len(moved) - MAX_REPORTED_REFS}
        )
    if before.head != after.head:
        if after.head.startswith("refs/heads/") or before.head.startswith("refs/heads/"):
            changes.append(
                {
                    "action": "switch",
                    "repository": repository,
                    "from": _short(before.head),
                    "to": _short(after.head),
                }
            )
        elif not (before.head == "" and after.head):
            # Detached HEAD moved (a commit on it): the first commit on an unborn branch shows above.
            moved_head = {"from": before.head, "to": after.head}
            changes.append({"action": "move_head", "repository": repository, **moved_head})
    return changes


def recorded(git: Git, report: Report, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(git, *args, **kwargs)`, reporting the refs it created, moved, deleted or switched."""
    before = ref_state(git)
    try:
        return fn(git, *args, **kwargs)
    finally:
        try:
            after = ref_state(git)
        except BatteriesError:  # cancelled, or the repository went away: nothing more to say
            after = None
        if after is not None:
            for change in ref_changes(git, before, after):
                report(**change)
