"""Who is acting, and which workspaces they may see.

Every list belongs to one workspace. A caller whose identity names workspaces (a tokens-file
user, an OAuth token with workspace claims) sees and changes only lists in those workspaces; a
task is reachable only through its list, so guessing a task id from elsewhere finds nothing
(the answer is "not found", exactly as for an id that never existed). The local user (stdio,
unauthenticated loopback HTTP) and a static-token caller are unrestricted.

A list is referred to by its key: its name in the workspace `default`, or `workspace:name`
elsewhere. Keys are the same in every process, so they are what URIs carry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_batteries.errors import AccessDenied

DEFAULT_WORKSPACE = "default"
DEFAULT_LIST = "inbox"


@dataclass(frozen=True)
class Actor:
    """The caller as the domain sees it (built from `mcp_batteries.server.Caller`)."""

    subject: str
    name: str
    workspaces: frozenset[str] | None = None
    can_write: bool = True

    @classmethod
    def from_caller(cls, caller: Any) -> Actor:
        return cls(
            subject=str(caller.subject),
            name=str(caller.name),
            workspaces=None if caller.workspaces is None else frozenset(caller.workspaces),
            can_write=bool(caller.can_write),
        )

    def may_use(self, workspace: str) -> bool:
        return self.workspaces is None or workspace in self.workspaces

    @property
    def home_workspace(self) -> str:
        """Where lists go when the caller names no workspace."""
        if self.workspaces is None or DEFAULT_WORKSPACE in self.workspaces:
            return DEFAULT_WORKSPACE
        if not self.workspaces:
            raise AccessDenied("your identity grants no workspace, so there are no lists you may use")
        return sorted(self.workspaces)[0]

    def check_write(self) -> None:
        if not self.can_write:
            raise AccessDenied("your identity may read tasks but not change them")


LOCAL = Actor(subject="local", name="local")


def list_key(workspace: str, name: str) -> str:
    return name if workspace == DEFAULT_WORKSPACE else f"{workspace}:{name}"


def split_list_key(key: str) -> tuple[str | None, str]:
    """(workspace or None when unqualified, name)."""
    workspace, sep, name = key.rpartition(":")
    return (workspace, name) if sep else (None, key)
