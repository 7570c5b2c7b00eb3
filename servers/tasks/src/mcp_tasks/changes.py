"""What one committed change touched: the resource URIs to notify, and events for the history.

A writing operation builds a `ChangeSet` as it goes; the store records it in `task_changes` in
the same transaction (so it commits with the change, or not at all). Other processes find the
URIs there: on SQLite after the file watcher fires, on PostgreSQL when the NOTIFY (sent in the
same transaction, with the row's sequence number) arrives. The stand-up prompt reads the events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcp_batteries.safety import redact_text

from mcp_tasks import uris

#: An audit entry's `detail` (the fields changed, old -> new) is cut to this many characters.
MAX_AUDIT_DETAIL = 300


@dataclass
class ChangeSet:
    workspace: str
    uris: set[str] = field(default_factory=set)
    #: Whether a resource appeared or vanished (a list or a task): resources/list_changed.
    listing: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)
    #: Every task whose own row or whose neighbours (parent, subtasks, dependencies) changed:
    #: their readiness counters are recomputed before the transaction commits.
    tasks: set[int] = field(default_factory=set)
    #: What the change did, for the audit trail (`note_change`): one entry per event, with ids.
    audited: list[dict[str, Any]] = field(default_factory=list)

    def touch_list(self, key: str) -> None:
        self.uris.update(uris.list_uris(key))
        self.uris.update((uris.ALL_TASKS, uris.ALL_LISTS))

    def touch_task(self, task_id: int, list_key: str | None = None) -> None:
        self.tasks.add(task_id)
        self.uris.update(uris.task_uris(task_id))
        if list_key is not None:
            self.touch_list(list_key)

    def event(
        self,
        kind: str,
        *,
        task: int | None = None,
        title: str = "",
        list_key: str = "",
        detail: str = "",
        status: str | None = None,
    ) -> None:
        """Record one event (`status`: the task's new status, for a status change)."""
        entry: dict[str, Any] = {"kind": kind, "list": list_key}
        if task is not None:
            entry["task"] = str(task)
        if title:
            entry["title"] = title
        if detail:
            entry["detail"] = detail
        self.events.append(entry)
        action = "completed" if kind == "status" and status == "done" else kind
        audited: dict[str, Any] = {"action": action, "workspace": self.workspace, "list": list_key}
        if task is not None:
            audited["task"] = str(task)
        if status is not None:
            audited["status"] = status
        if detail:
            audited["detail"] = redact_text(detail)[:MAX_AUDIT_DETAIL]
        self.audited.append(audited)

    @property
    def empty(self) -> bool:
        return not self.events

    def uris_json(self) -> str:
        return json.dumps(sorted(self.uris))

    def events_json(self) -> str:
        return json.dumps(self.events, ensure_ascii=False)


@dataclass(frozen=True)
class Recorded:
    """A change as another process reads it back from `task_changes`."""

    seq: int
    origin: str
    uris: frozenset[str]
    listing: bool


def recorded(row: Any) -> Recorded:
    try:
        found = frozenset(str(u) for u in json.loads(row["uris"]))
    except (ValueError, TypeError):
        found = frozenset()
    return Recorded(int(row["seq"]), str(row["origin"]), found, bool(row["listing"]))
