"""`TaskStore`: every operation the server offers, each one transaction, with access checks.

Writes run in `backend.write()` (see backend.py for why no update is lost), record what they
touched in `task_changes` in the same transaction, and after the commit hand the change set to
`on_commit` (the server turns it into notifications for its own clients; other processes find
it in `task_changes`). Reads run in `backend.read()`, one snapshot each.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from mcp_batteries.errors import AccessDenied, InvalidInput

from mcp_tasks import reads, uris, validate, writes
from mcp_tasks import rows as R
from mcp_tasks.access import Actor
from mcp_tasks.backend import Backend, Tx
from mcp_tasks.changes import ChangeSet, Recorded, recorded
from mcp_tasks.models import (
    AddedTasks,
    Changed,
    Deleted,
    ListInfo,
    ListsPage,
    NewTask,
    NextTask,
    Task,
    TaskDetail,
    TaskPage,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")
CommitHook = Callable[[ChangeSet], Awaitable[None]]
#: `report(**what)` for each thing a committed change did (`mcp_batteries.server.note_change`).
Report = Callable[..., None]


def ignore(**_what: object) -> None:
    """The `report` of a store nobody audits."""


class TaskStore:
    def __init__(
        self,
        backend: Backend,
        *,
        read_only: bool = False,
        page_size: int = 50,
        max_page_size: int = 500,
        max_resource_tasks: int = 10_000,
        history_days: int = 30,
        origin: str | None = None,
    ) -> None:
        self.backend = backend
        self.read_only = read_only
        self.page_size = page_size
        self.max_page_size = max_page_size
        self.max_resource_tasks = max_resource_tasks
        self.history_days = history_days
        #: Identifies this process's changes in `task_changes`, so it does not notify them twice.
        self.origin = origin or uuid.uuid4().hex
        self.on_commit: CommitHook | None = None
        #: Told what each committed change did (tasks created, changed, completed, deleted), in
        #: the task of the call that made it: the audit trail's `changes`.
        self.report: Report = ignore

    # -- plumbing --------------------------------------------------------------------------------
    async def _write(self, actor: Actor, op: Callable[[writes.Work], Awaitable[T]]) -> T:
        if self.read_only:
            raise AccessDenied("this server is read-only (--read-only): no tool may change tasks")
        actor.check_write()
        async with self.backend.write() as tx:
            work = writes.Work(tx, actor, validate.now())
            result = await op(work)
            await writes.record(work, self.origin)
        for entry in work.changes.audited:
            self.report(**entry)
        if not work.changes.empty and self.on_commit is not None:
            try:
                await self.on_commit(work.changes)
            except Exception:  # the change is committed; a failed notification must not hide that
                logger.exception("notifying clients of a change failed")
        return result

    async def _read(self, fn: Callable[[Tx], Awaitable[T]]) -> T:
        async with self.backend.read() as tx:
            return await fn(tx)

    def _limit(self, limit: int | None) -> int:
        return max(1, min(limit or self.page_size, self.max_page_size))

    # -- lists -----------------------------------------------------------------------------------
    async def create_list(
        self,
        actor: Actor,
        name: str,
        *,
        title: str | None = None,
        description: str = "",
        workspace: str | None = None,
    ) -> ListInfo:
        return await self._write(actor, lambda w: writes.create_list(w, name, title, description, workspace))

    async def archive_list(self, actor: Actor, list_ref: str, *, archived: bool = True) -> ListInfo:
        return await self._write(actor, lambda w: writes.archive_list(w, list_ref, archived))

    async def list_lists(
        self, actor: Actor, *, include_archived: bool = False, offset: int = 0, limit: int | None = None
    ) -> ListsPage:
        return await self._read(
            lambda tx: reads.list_lists(
                tx,
                actor,
                include_archived=include_archived,
                offset=validate.offset(offset),
                limit=self._limit(limit),
            )
        )

    # -- tasks: writes ---------------------------------------------------------------------------
    async def add_task(
        self,
        actor: Actor,
        title: str,
        *,
        description: str = "",
        priority: str = "medium",
        status: str = "todo",
        list_ref: str | None = None,
        parent: str | int | None = None,
        due: str | None = None,
        tags: Sequence[str] = (),
        depends_on: Sequence[str | int] = (),
    ) -> Task:
        item = NewTask(
            title=validate.title(title), description=description, priority=validate.priority(priority),
            status=validate.status(status), due=due, tags=list(tags), depends_on=list(depends_on),
        )  # fmt: skip

        async def op(w: writes.Work) -> Task:
            _, ids = await writes.add_tasks(w, [item], list_ref, parent)
            return await R.one_task(w.tx, w.actor, ids[0])

        return await self._write(actor, op)

    async def add_tasks(
        self,
        actor: Actor,
        items: Sequence[NewTask],
        *,
        list_ref: str | None = None,
        parent: str | int | None = None,
    ) -> AddedTasks:
        async def op(w: writes.Work) -> AddedTasks:
            result, _ = await writes.add_tasks(w, items, list_ref, parent)
            return result

        return await self._write(actor, op)

    async def update_task(
        self,
        actor: Actor,
        task_id: str | int,
        *,
        expected_version: int | None = None,
        title: str | None = None,
        description: str | None = None,
        priority: str | None = None,
        status: str | None = None,
        due: str | None = None,
        tags: list[str] | None = None,
        add_tags: Sequence[str] = (),
        remove_tags: Sequence[str] = (),
        depends_on: Sequence[str | int] | None = None,
        add_dependencies: Sequence[str | int] = (),
        remove_dependencies: Sequence[str | int] = (),
    ) -> Changed:
        number = validate.task_id(task_id)
        return await self._write(
            actor,
            lambda w: writes.update_task(
                w, number, expected_version=expected_version, title=title, description=description,
                priority=priority, status=status, due=due, tags=tags, add_tags=add_tags,
                remove_tags=remove_tags, depends_on=depends_on, add_dependencies=add_dependencies,
                remove_dependencies=remove_dependencies,
            ),
        )  # fmt: skip

    async def set_status(
        self,
        actor: Actor,
        task_id: str | int,
        status: str,
        *,
        include_subtasks: bool = False,
        expected_version: int | None = None,
    ) -> Changed:
        number = validate.task_id(task_id)
        return await self._write(
            actor,
            lambda w: writes.set_status(
                w, number, status, include_subtasks=include_subtasks, expected_version=expected_version
            ),
        )

    async def move_task(
        self,
        actor: Actor,
        task_id: str | int,
        *,
        parent: str | int | None = None,
        list_ref: str | None = None,
        before: str | int | None = None,
        after: str | int | None = None,
        position: str | None = None,
        expected_version: int | None = None,
    ) -> Changed:
        number = validate.task_id(task_id)
        return await self._write(
            actor,
            lambda w: writes.move_task(
                w, number, parent=parent, list_ref=list_ref, before=before, after=after, position=position,
                expected_version=expected_version,
            ),
        )  # fmt: skip

    async def delete_task(
        self,
        actor: Actor,
        task_id: str | int,
        *,
        include_subtasks: bool = False,
        expected_version: int | None = None,
    ) -> Deleted:
        number = validate.task_id(task_id)
        return await self._write(
            actor,
            lambda w: writes.delete_task(
                w, number, include_subtasks=include_subtasks, expected_version=expected_version
            ),
        )

    # -- tasks: reads ----------------------------------------------------------------------------
    async def get_task(self, actor: Actor, task_id: str | int) -> TaskDetail:
        number = validate.task_id(task_id)
        return await self._read(lambda tx: reads.get_task(tx, actor, number))

    async def list_tasks(
        self,
        actor: Actor,
        filters: reads.Filters,
        *,
        sort: str = "tree",
        offset: int = 0,
        limit: int | None = None,
    ) -> TaskPage:
        return await self._read(
            lambda tx: reads.list_tasks(
                tx, actor, filters, sort=sort, offset=validate.offset(offset), limit=self._limit(limit)
            )
        )

    async def next_task(
        self, actor: Actor, *, list_ref: str | None = None, tag: str | None = None
    ) -> NextTask:
        return await self._read(lambda tx: reads.next_task(tx, actor, list_ref=list_ref, tag=tag))

    # -- resources, completion, prompts ----------------------------------------------------------
    async def all_tasks(self, actor: Actor) -> list[Task]:
        return await self._read(lambda tx: reads.all_tasks(tx, actor, limit=self.max_resource_tasks))

    async def all_lists(self, actor: Actor) -> list[ListInfo]:
        return await self._read(lambda tx: reads.all_lists(tx, actor))

    async def list_view(self, actor: Actor, list_ref: str) -> reads.ListView:
        return await self._read(
            lambda tx: reads.list_view(tx, actor, list_ref, limit=self.max_resource_tasks)
        )

    async def resource_entries(
        self, actor: Actor, *, offset: int, limit: int
    ) -> tuple[list[reads.ResourceEntry], bool]:
        start = validate.offset(offset)
        return await self._read(lambda tx: reads.resource_entries(tx, actor, offset=start, limit=limit))

    async def complete_lists(self, actor: Actor, prefix: str) -> list[str]:
        return await self._read(lambda tx: reads.complete_lists(tx, actor, prefix))

    async def complete_tasks(self, actor: Actor, prefix: str) -> list[str]:
        return await self._read(lambda tx: reads.complete_tasks(tx, actor, prefix))

    async def summary(self, actor: Actor, list_ref: str | None = None) -> reads.Summary:
        return await self._read(lambda tx: reads.summary(tx, actor, list_ref))

    async def history(
        self, actor: Actor, since: str, list_ref: str | None = None
    ) -> tuple[list[reads.HistoryEntry], bool]:
        since_iso = validate.since(since)
        return await self._read(lambda tx: reads.history(tx, actor, since_iso, list_ref))

    async def check_readable(self, actor: Actor, uri: str) -> None:
        """Raises unless `uri` is one of our resources and the actor may read it (subscriptions)."""
        parsed = uris.parse(uri)
        if parsed is None:
            raise InvalidInput(
                "subscribable URIs: tasks://list, tasks://lists, tasks://lists/{list}, "
                "tasks://tasks/{task_id} (each list and task also with /markdown)"
            )
        if parsed.kind == "list":
            await self.can_see_list(actor, parsed.key)
        elif parsed.kind == "task":
            await self.can_see_task(actor, parsed.task_id)

    async def can_see_list(self, actor: Actor, list_ref: str) -> None:
        """Raises NotFound unless the actor may read the list (subscription checks)."""
        await self._read(lambda tx: R.resolve_list(tx, actor, list_ref))

    async def can_see_task(self, actor: Actor, task_id: str | int) -> None:
        number = validate.task_id(task_id)
        await self._read(lambda tx: R.get_task_row(tx, actor, number))

    # -- change log (for other processes' notifications) ----------------------------------------
    async def latest_change(self) -> int:
        return await self._read(lambda tx: _latest(tx))

    async def changes_after(self, seq: int, *, limit: int = 1000) -> list[Recorded]:
        async def fetch(tx: Tx) -> list[Recorded]:
            found = await tx.fetch(
                "SELECT seq, origin, uris, listing FROM task_changes WHERE seq > ? ORDER BY seq LIMIT ?",
                seq,
                limit,
            )
            return [recorded(r) for r in found]

        return await self._read(fetch)

    async def change(self, seq: int) -> Recorded | None:
        async def fetch(tx: Tx) -> Recorded | None:
            row = await tx.fetchrow("SELECT seq, origin, uris, listing FROM task_changes WHERE seq = ?", seq)
            return None if row is None else recorded(row)

        return await self._read(fetch)

    async def prune_history(self) -> None:
        """Forget changes older than `history_days` (runs once at start)."""
        if self.read_only:
            return
        cutoff = (datetime.now(UTC) - timedelta(days=self.history_days)).isoformat(timespec="milliseconds")
        cutoff = cutoff.replace("+00:00", "Z")
        async with self.backend.write() as tx:
            await tx.execute("DELETE FROM task_changes WHERE at < ?", cutoff)


async def _latest(tx: Tx) -> int:
    return int(await tx.fetchval("SELECT coalesce(max(seq), 0) FROM task_changes") or 0)
