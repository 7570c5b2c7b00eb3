"""Every change to lists and tasks. Each function runs inside one write transaction.

The pattern, in every function: find the workspace (a task's workspace never changes), take the
workspace's write lock, read again under the lock, check `expected_version`, change only the
fields asked for, bump `version`, and describe what was touched in the `ChangeSet`. Nothing is
read before the lock and written after it without being read again, so no update is lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, LimitExceeded, NotFound

from mcp_tasks import rows as R
from mcp_tasks import schema, validate
from mcp_tasks.access import DEFAULT_LIST, Actor
from mcp_tasks.backend import Tx, in_list
from mcp_tasks.changes import ChangeSet
from mcp_tasks.models import (
    CLOSED_STATUSES,
    OPEN_STATUSES,
    AddedTasks,
    Changed,
    Deleted,
    ListInfo,
    NewTask,
    Status,
    Task,
)

#: Space left between sibling positions, so most moves renumber nothing.
GAP = 1024
MAX_BATCH = 5000
#: Levels of subtasks below a top-level task in one add_tasks call. A JSON-RPC message nests at
#: most 201 levels (the SDK's parser; mcp_batteries._protocol.frames) and each level of subtasks costs two
#: (the list and the object): 98 levels arrive, 99 do not. A round bound below that says the same
#: in every era, with the way on; trees grow deeper through further calls with parent=.
MAX_DEPTH = 90


class Conflict(BatteriesError):
    """A conditional change found the task at another version: nothing was changed."""

    def __init__(self, current: Task, expected: int) -> None:
        self.current = current
        super().__init__(
            f"conflict: task {current.id} is at version {current.version}, not {expected} "
            f"(last changed by {current.updated_by} at {current.updated_at}); nothing was changed. "
            f"Current task: {current.model_dump_json()} "
            f"Merge your change into it and retry with expected_version={current.version}."
        )


@dataclass
class Work:
    """One write operation's context."""

    tx: Tx
    actor: Actor
    now: str
    changes: ChangeSet = field(default_factory=lambda: ChangeSet(workspace=""))

    async def lock(self, workspace: str) -> None:
        await self.tx.lock(workspace)
        self.changes.workspace = workspace


# -- lists ---------------------------------------------------------------------------------------
async def create_list(
    w: Work, name: str, title: str | None, description: str, workspace: str | None
) -> ListInfo:
    w.actor.check_write()
    space = validate.workspace(workspace) if workspace else w.actor.home_workspace
    if not w.actor.may_use(space):
        raise AccessDenied(
            f"you may not use workspace {space!r}; yours: {', '.join(sorted(w.actor.workspaces or ()))}"
        )
    clean = validate.list_name(name)
    shown = validate.title(title) if title else clean
    text = validate.description(description)
    await w.lock(space)
    if await R.find_list(w.tx, space, clean) is not None:
        raise InvalidInput(f"a list named {clean!r} already exists in workspace {space!r}")
    row = await _insert_list(w, space, clean, shown, text)
    return await R.list_info(w.tx, row)


async def _insert_list(w: Work, workspace: str, name: str, title: str, description: str) -> R.ListRow:
    await w.tx.execute(
        "INSERT INTO task_lists (workspace, name, title, description, archived, created_at, created_by,"
        " updated_at, updated_by, version) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, 1)",
        workspace, name, title, description, w.now, w.actor.subject, w.now, w.actor.subject,
    )  # fmt: skip
    row = await R.find_list(w.tx, workspace, name)
    assert row is not None
    w.changes.touch_list(row.key)
    w.changes.listing = True
    w.changes.event("list_created", list_key=row.key, title=title)
    return row


async def archive_list(w: Work, ref: str, archived: bool) -> ListInfo:
    w.actor.check_write()
    found = await R.resolve_list(w.tx, w.actor, ref)
    await w.lock(found.workspace)
    row = await R.find_list(w.tx, found.workspace, found.name)
    assert row is not None
    if row.archived != archived:
        await w.tx.execute(
            "UPDATE task_lists SET archived = ?, version = version + 1, updated_at = ?, updated_by = ?"
            " WHERE id = ?",
            int(archived), w.now, w.actor.subject, row.id,
        )  # fmt: skip
        w.changes.touch_list(row.key)
        w.changes.listing = True
        w.changes.event("list_archived" if archived else "list_unarchived", list_key=row.key, title=row.title)
        row = await R.find_list(w.tx, found.workspace, found.name)
        assert row is not None
    return await R.list_info(w.tx, row)


async def writable_list(w: Work, ref: str | None) -> R.ListRow:
    """Lock the workspace of the list `ref` names (default: the actor's inbox, created on first use)."""
    if ref is None or not str(ref).strip():
        space = w.actor.home_workspace
        await w.lock(space)
        row = await R.find_list(w.tx, space, DEFAULT_LIST)
        if row is None:
            row = await _insert_list(w, space, DEFAULT_LIST, "Inbox", "")
    else:
        found = await R.resolve_list(w.tx, w.actor, ref)
        await w.lock(found.workspace)
        again = await R.find_list(w.tx, found.workspace, found.name)
        assert again is not None
        row = again
    _check_not_archived(row)
    return row


def _check_not_archived(row: R.ListRow) -> None:
    if row.archived:
        raise InvalidInput(
            f"list {row.key!r} is archived; unarchive it first with archive_list(list, archived=false)"
        )


async def _locked_task(w: Work, task_id: int, expected_version: int | None) -> R.TaskRow:
    """The task re-read under its workspace's lock, its version checked, its list writable."""
    w.actor.check_write()
    first = await R.get_task_row(w.tx, w.actor, task_id)
    await w.lock(first.workspace)
    row = await R.get_task_row(w.tx, w.actor, task_id)
    if expected_version is not None and row.version != expected_version:
        raise Conflict(await R.one_task(w.tx, w.actor, task_id), expected_version)
    if row.archived:
        raise InvalidInput(
            f"task {task_id} is in the archived list {row.list_key!r}; unarchive it first with "
            "archive_list(list, archived=false)"
        )
    return row


# -- creating tasks ------------------------------------------------------------------------------
@dataclass
class _Planned:
    where: str
    parent_index: int | None
    depth: int
    title: str
    description: str
    priority: str
    status: str
    due: str | None
    tags: list[str]
    key: str | None
    depends_on: list[str | int]


def _flatten(items: Sequence[NewTask]) -> list[_Planned]:
    planned: list[_Planned] = []

    def visit(item: NewTask, where: str, parent_index: int | None, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise LimitExceeded(
                f"{where}: subtasks nest at most {MAX_DEPTH} levels deep in one add_tasks call (a message "
                "nests at most 200 levels); create the deeper levels with another add_tasks call whose "
                "parent is the deepest task created here"
            )
        if len(planned) >= MAX_BATCH:
            raise LimitExceeded(f"at most {MAX_BATCH} tasks per add_tasks call; split the batch")
        try:
            entry = _Planned(
                where, parent_index, depth, validate.title(item.title),
                validate.description(item.description),
                validate.priority(item.priority), validate.status(item.status), validate.due(item.due),
                validate.tags(item.tags), item.key.strip() if item.key and item.key.strip() else None,
                list(item.depends_on),
            )  # fmt: skip
        except BatteriesError as exc:
            raise type(exc)(f"{where}: {exc}") from exc
        if len(entry.depends_on) > validate.MAX_DEPENDENCIES:
            raise LimitExceeded(f"{where}: at most {validate.MAX_DEPENDENCIES} dependencies per task")
        planned.append(entry)
        me = len(planned) - 1
        for i, child in enumerate(item.subtasks):
            visit(child, f"{where}.subtasks[{i}]", me, depth + 1)

    for i, item in enumerate(items):
        visit(item, f"tasks[{i}]", None, 0)
    return planned


async def add_tasks(
    w: Work, items: Sequence[NewTask], list_ref: str | None, parent: str | int | None
) -> tuple[AddedTasks, list[int]]:
    """Create a batch (with subtasks and dependencies) in one transaction."""
    w.actor.check_write()
    if not items:
        raise InvalidInput("tasks is empty: give at least one task")
    planned = _flatten(items)
    keys: dict[str, int] = {}
    for index, entry in enumerate(planned):
        if entry.key is not None:
            if entry.key in keys:
                raise InvalidInput(f"{entry.where}: key {entry.key!r} is used twice in this batch")
            keys[entry.key] = index

    parent_row: R.TaskRow | None = None
    if parent is not None and str(parent).strip():
        parent_id = validate.task_id(parent, "parent")
        first = await R.get_task_row(w.tx, w.actor, parent_id)
        await w.lock(first.workspace)
        parent_row = await R.get_task_row(w.tx, w.actor, parent_id)
        target = await R.find_list(w.tx, parent_row.workspace, parent_row.list_name)
        assert target is not None
        if list_ref and (await R.resolve_list(w.tx, w.actor, list_ref)).id != target.id:
            raise InvalidInput(
                f"parent {parent_id} is in list {target.key!r}; subtasks live in their parent's list"
            )
        _check_not_archived(target)
    else:
        target = await writable_list(w, list_ref)

    ids = await w.tx.allocate_task_ids(len(planned))
    edges = await _batch_dependencies(w, planned, keys, ids)

    # Positions: new top-level tasks go after their existing siblings, subtasks in given order.
    base = await _end_position(w.tx, target.id, None if parent_row is None else parent_row.id)
    counters: dict[int | None, int] = {}
    rows: list[tuple[Any, ...]] = []
    for index, entry in enumerate(planned):
        slot = counters.get(entry.parent_index, 0) + 1
        counters[entry.parent_index] = slot
        position = (base if entry.parent_index is None else 0) + GAP * slot
        parent_id_value = (
            (parent_row.id if parent_row else None) if entry.parent_index is None else ids[entry.parent_index]
        )
        rows.append((
            ids[index], target.id, parent_id_value, position, entry.title, entry.description, entry.status,
            entry.priority, entry.due, w.now, w.actor.subject, w.now, w.actor.subject,
        ))  # fmt: skip
    await w.tx.executemany(
        "INSERT INTO tasks (id, list_id, parent_id, position, title, description, status, priority, due,"
        " created_at, created_by, updated_at, updated_by, version)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
        rows,
    )
    tag_rows = [(ids[i], tag) for i, entry in enumerate(planned) for tag in entry.tags]
    if tag_rows:
        await w.tx.executemany("INSERT INTO task_tags (task_id, tag) VALUES (?, ?)", tag_rows)
    if edges:
        await w.tx.executemany("INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)", sorted(edges))
    tops = [ids[i] for i, entry in enumerate(planned) if entry.parent_index is None]
    for part in R.chunks(tops):
        await w.tx.execute(schema.refresh_tree_keys(w.tx.dialect, f"t.id IN {in_list(part)}"), *part)

    w.changes.touch_list(target.key)
    w.changes.listing = True
    w.changes.tasks.update(ids)
    if parent_row is not None:
        w.changes.touch_task(parent_row.id)
        for above in await R.ancestors(w.tx, parent_row.id):
            w.changes.touch_task(above.id)
    for _, depends_on in edges:
        if depends_on not in ids:
            w.changes.touch_task(depends_on)
    for index, entry in enumerate(planned):
        w.changes.event(
            "created", task=ids[index], title=entry.title, list_key=target.key, detail=entry.status
        )

    index_of_key = {index: key for key, index in keys.items()}
    table = [
        [str(ids[i]), index_of_key.get(i), entry.title,
         str(rows[i][2]) if rows[i][2] is not None else None]
        for i, entry in enumerate(planned)
    ]  # fmt: skip
    result = AddedTasks(
        list=target.key, created=len(ids), columns=["id", "key", "title", "parent"], rows=table
    )
    return result, ids


async def _batch_dependencies(
    w: Work, planned: list[_Planned], keys: dict[str, int], ids: list[int]
) -> set[tuple[int, int]]:
    edges: set[tuple[int, int]] = set()
    external: dict[int, list[str]] = {}
    local_edges: dict[int, set[int]] = {}
    for index, entry in enumerate(planned):
        for dep in entry.depends_on:
            if isinstance(dep, str) and dep.strip() in keys:
                other = keys[dep.strip()]
                if other == index:
                    raise InvalidInput(f"{entry.where}: a task cannot depend on itself")
                local_edges.setdefault(index, set()).add(other)
                edges.add((ids[index], ids[other]))
            else:
                try:
                    target = validate.task_id(dep, "depends_on")
                except InvalidInput:
                    raise InvalidInput(
                        f"{entry.where}: depends_on {dep!r} is neither a task id nor a key in this batch"
                    ) from None
                external.setdefault(target, []).append(entry.where)
                edges.add((ids[index], target))
    if external:
        wanted = sorted(external)
        found = {
            r.id: r
            for part in R.chunks(wanted)
            for r in await R.task_rows(w.tx, f"t.id IN {in_list(part)}", part)
        }
        for target, where in sorted(external.items()):
            row = found.get(target)
            if row is None or row.workspace != w.changes.workspace or not w.actor.may_use(row.workspace):
                raise NotFound(f"{where[0]}: depends_on names no task {target} in this workspace")
    _refuse_local_cycles(planned, local_edges)
    return edges


def _refuse_local_cycles(planned: list[_Planned], edges: dict[int, set[int]]) -> None:
    """Refuse a cycle among the batch's own dependencies, naming it.

    Iterative depth-first search with an explicit stack (a chain of 5,000 tasks is 5,000 levels
    deep: recursion would end in RecursionError): O(tasks + dependencies) time and memory.
    """
    state: dict[int, int] = {}  # 1 = on the current path, 2 = done
    parent: dict[int, int] = {}  # on the current path: how we got here
    for start in sorted(edges):
        if start in state:
            continue
        state[start] = 1
        stack: list[tuple[int, Iterator[int]]] = [(start, iter(sorted(edges.get(start, ()))))]
        while stack:
            node, successors = stack[-1]
            nxt = next(successors, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                continue
            if state.get(nxt) == 1:
                path = [node]  # back along the current path to nxt: the cycle, reversed
                while path[-1] != nxt:
                    path.append(parent[path[-1]])
                cycle = [planned[i].key or planned[i].title for i in [*reversed(path), nxt]]
                if len(cycle) > 12:  # a long chain closed on itself: its ends say enough
                    cycle = [*cycle[:10], f"... ({len(cycle) - 1} tasks in all) ...", *cycle[-2:]]
                raise InvalidInput(f"dependencies in this batch form a cycle: {' -> '.join(cycle)}")
            if nxt not in state:
                state[nxt] = 1
                parent[nxt] = node
                stack.append((nxt, iter(sorted(edges.get(nxt, ())))))


async def _end_position(tx: Tx, list_id: int, parent_id: int | None) -> int:
    where, args = _siblings(list_id, parent_id)
    value = await tx.fetchval(f"SELECT max(position) FROM tasks WHERE {where}", *args)
    return int(value or 0)


def _siblings(list_id: int, parent_id: int | None) -> tuple[str, list[Any]]:
    if parent_id is None:
        return "list_id = ? AND parent_id IS NULL", [list_id]
    return "parent_id = ?", [parent_id]


# -- changing tasks ------------------------------------------------------------------------------
async def update_task(
    w: Work,
    task_id: int,
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
    """Change the fields given (None = leave as is; due="" clears the due date)."""
    row = await _locked_task(w, task_id, expected_version)
    sets: dict[str, Any] = {}
    if title is not None and validate.title(title) != row.title:
        sets["title"] = validate.title(title)
    if description is not None and validate.description(description) != row.description:
        sets["description"] = validate.description(description)
    if priority is not None and validate.priority(priority) != row.priority:
        sets["priority"] = validate.priority(priority)
    if due is not None and validate.due(due) != row.due:
        sets["due"] = validate.due(due)
    if status is not None and validate.status(status) != row.status:
        new_status = validate.status(status)
        if new_status in CLOSED_STATUSES:
            await _refuse_open_subtasks(w, row, new_status)
        sets["status"] = new_status

    current_tags = (await R.tags_of(w.tx, [row.id])).get(row.id, [])
    wanted_tags = set(validate.tags(tags)) if tags is not None else set(current_tags)
    wanted_tags |= set(validate.tags(list(add_tags)))
    wanted_tags -= set(validate.tags(list(remove_tags)))
    tags_changed = wanted_tags != set(current_tags)
    if len(wanted_tags) > validate.MAX_TAGS:
        raise LimitExceeded(f"a task has at most {validate.MAX_TAGS} tags")

    current_deps = (await R.dependencies_of(w.tx, [row.id])).get(row.id, [])
    wanted_deps = (
        {validate.task_id(d, "depends_on") for d in depends_on}
        if depends_on is not None
        else set(current_deps)
    )
    wanted_deps |= {validate.task_id(d, "add_dependencies") for d in add_dependencies}
    wanted_deps -= {validate.task_id(d, "remove_dependencies") for d in remove_dependencies}
    added_deps = sorted(wanted_deps - set(current_deps))
    removed_deps = sorted(set(current_deps) - wanted_deps)
    if len(wanted_deps) > validate.MAX_DEPENDENCIES:
        raise LimitExceeded(f"a task has at most {validate.MAX_DEPENDENCIES} dependencies")
    if added_deps:
        await _check_new_dependencies(w, row, added_deps)

    if not sets and not tags_changed and not added_deps and not removed_deps:
        return Changed(task=await R.one_task(w.tx, w.actor, task_id), also_changed=[])

    await _bump(w, row, sets)
    if tags_changed:
        await w.tx.execute("DELETE FROM task_tags WHERE task_id = ?", row.id)
        if wanted_tags:
            await w.tx.executemany(
                "INSERT INTO task_tags (task_id, tag) VALUES (?, ?)",
                [(row.id, t) for t in sorted(wanted_tags)],
            )
    for target in removed_deps:
        await w.tx.execute("DELETE FROM task_deps WHERE task_id = ? AND depends_on = ?", row.id, target)
    if added_deps:
        await w.tx.executemany(
            "INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)", [(row.id, t) for t in added_deps]
        )

    summary_fields = set(sets) & {"title", "status", "priority", "due"}
    await _touch_task(w, row, related=bool(summary_fields))
    for target in [*added_deps, *removed_deps]:
        w.changes.touch_task(target)
    detail = ", ".join(
        [f"{k}: {getattr(row, k) or '-'} -> {v or '-'}" for k, v in sets.items() if k != "description"]
        + (["description"] if "description" in sets else [])
        + (["tags"] if tags_changed else [])
        + (["dependencies"] if added_deps or removed_deps else [])
    )
    kind = "status" if set(sets) == {"status"} else "updated"
    w.changes.event(
        kind,
        task=row.id,
        title=sets.get("title", row.title),
        list_key=row.list_key,
        detail=detail,
        status=sets.get("status"),
    )
    return Changed(task=await R.one_task(w.tx, w.actor, task_id), also_changed=[])


async def _bump(w: Work, row: R.TaskRow, sets: dict[str, Any]) -> None:
    """Write `sets` (possibly nothing) and a new version, guarded by the version read under lock."""
    assignments = "".join(f"{column} = ?, " for column in sets)
    changed = await w.tx.fetchval(
        f"UPDATE tasks SET {assignments}version = version + 1, updated_at = ?, updated_by = ?"
        " WHERE id = ? AND version = ? RETURNING version",
        *sets.values(), w.now, w.actor.subject, row.id, row.version,
    )  # fmt: skip
    if changed is None:  # impossible under the workspace lock; refuse rather than overwrite
        raise Conflict(await R.one_task(w.tx, w.actor, row.id), row.version)


async def _touch_task(w: Work, row: R.TaskRow, *, related: bool) -> None:
    """Mark the task's resources changed, and (when its summary changed) those that show it."""
    w.changes.touch_task(row.id, row.list_key)
    if row.parent_id is not None:
        w.changes.touch_task(row.parent_id)
    if related:
        for below in await R.descendants(w.tx, row.id):  # their ancestors show this task
            w.changes.touch_task(below.id)
        await _touch_graph(w, [row.id])


async def _touch_graph(w: Work, ids: list[int]) -> None:
    """Tasks that show these in their dependencies or dependents."""
    for found in (await R.dependents_of(w.tx, ids), await R.dependencies_of(w.tx, ids)):
        for others in found.values():
            for other in others:
                w.changes.touch_task(other)


async def _check_new_dependencies(w: Work, row: R.TaskRow, targets: list[int]) -> None:
    above = {a.id for a in await R.ancestors(w.tx, row.id)}
    for target in targets:
        if target == row.id:
            raise InvalidInput(f"task {row.id} cannot depend on itself")
        other = await R.task_rows(w.tx, "t.id = ?", [target])
        if not other or other[0].workspace != row.workspace or not w.actor.may_use(other[0].workspace):
            raise NotFound(f"depends_on names no task {target} in this workspace")
        if target in above:
            raise InvalidInput(
                f"task {row.id} cannot depend on {target}, one of its parents: the parent cannot close "
                "before its subtasks, so neither could ever start"
            )
        cycle = await w.tx.fetchval(
            "WITH RECURSIVE reach(id) AS (SELECT CAST(? AS BIGINT) UNION SELECT d.depends_on FROM task_deps d"
            " JOIN reach ON d.task_id = reach.id) SELECT count(*) FROM reach WHERE id = ?",
            target, row.id,
        )  # fmt: skip
        if cycle:
            raise InvalidInput(
                f"task {row.id} cannot depend on {target}: {target} already waits on {row.id} "
                "(directly or through other tasks), which would be a cycle"
            )


async def _refuse_open_subtasks(w: Work, row: R.TaskRow, status: str) -> list[R.TaskRow]:
    open_below = [d for d in await R.descendants(w.tx, row.id) if d.status in OPEN_STATUSES]
    if open_below:
        shown = ", ".join(f"{d.id} {d.title!r}" for d in open_below[:5]) + (
            ", ..." if len(open_below) > 5 else ""
        )
        raise InvalidInput(
            f"task {row.id} has {len(open_below)} open subtask(s): {shown}. Close them first, or pass "
            f"include_subtasks=true to set them to {status} as well"
        )
    return open_below


async def set_status(
    w: Work, task_id: int, status: str, *, include_subtasks: bool = False, expected_version: int | None = None
) -> Changed:
    row = await _locked_task(w, task_id, expected_version)
    new_status: Status = validate.status(status)
    also: list[R.TaskRow] = []
    if new_status in CLOSED_STATUSES:
        open_below = [d for d in await R.descendants(w.tx, row.id) if d.status in OPEN_STATUSES]
        if open_below and not include_subtasks:
            await _refuse_open_subtasks(w, row, new_status)
        also = open_below
    if new_status == row.status and not also:
        return Changed(task=await R.one_task(w.tx, w.actor, task_id), also_changed=[])
    if new_status != row.status:
        await _bump(w, row, {"status": new_status})
    for part in R.chunks([d.id for d in also]):
        await w.tx.execute(
            "UPDATE tasks SET status = ?, version = version + 1, updated_at = ?, updated_by = ?"
            f" WHERE id IN {in_list(part)}",
            new_status, w.now, w.actor.subject, *part,
        )  # fmt: skip
    await _touch_task(w, row, related=True)
    await _touch_graph(w, [d.id for d in also])
    for below in also:
        w.changes.event("status", task=below.id, title=below.title, list_key=row.list_key,
                        detail=f"status: {below.status} -> {new_status}", status=new_status)  # fmt: skip
    if new_status != row.status:
        w.changes.event("status", task=row.id, title=row.title, list_key=row.list_key,
                        detail=f"status: {row.status} -> {new_status}", status=new_status)  # fmt: skip
    return Changed(task=await R.one_task(w.tx, w.actor, task_id), also_changed=[str(d.id) for d in also])


async def move_task(
    w: Work,
    task_id: int,
    *,
    parent: str | int | None = None,
    list_ref: str | None = None,
    before: str | int | None = None,
    after: str | int | None = None,
    position: str | None = None,
    expected_version: int | None = None,
) -> Changed:
    """Reorder among siblings, reparent (parent="" = top level), or move to another list with subtasks."""
    row = await _locked_task(w, task_id, expected_version)
    if sum(x is not None and str(x).strip() != "" for x in (before, after, position)) > 1:
        raise InvalidInput("give at most one of before, after and position")
    if position is not None and position not in ("first", "last"):
        raise InvalidInput("position must be 'first' or 'last' (or use before / after with a sibling's id)")

    anchor: R.TaskRow | None = None
    side = "before" if before is not None and str(before).strip() else "after"
    anchor_value = before if side == "before" else after
    if anchor_value is not None and str(anchor_value).strip():
        anchor_id = validate.task_id(anchor_value, side)
        if anchor_id == row.id:
            raise InvalidInput("a task cannot be placed before or after itself")
        anchor = await R.get_task_row(w.tx, w.actor, anchor_id)
        if anchor.workspace != row.workspace:
            raise NotFound(f"no task {anchor_id} in this workspace")

    # Where it goes: the anchor's group, else the parent named, else the list named, else stay.
    new_parent: R.TaskRow | None
    if anchor is not None:
        new_parent = (
            None if anchor.parent_id is None else await R.get_task_row(w.tx, w.actor, anchor.parent_id)
        )
        new_list = await R.find_list(w.tx, anchor.workspace, anchor.list_name)
    elif parent is not None and str(parent).strip() not in ("", "0", "none", "null"):
        new_parent = await R.get_task_row(w.tx, w.actor, validate.task_id(parent, "parent"))
        if new_parent.workspace != row.workspace:
            raise NotFound(f"no task {new_parent.id} in this workspace")
        new_list = await R.find_list(w.tx, new_parent.workspace, new_parent.list_name)
    elif parent is not None:
        new_parent = None
        new_list = (
            await R.resolve_list(w.tx, w.actor, list_ref)
            if list_ref
            else await R.find_list(w.tx, row.workspace, row.list_name)
        )
    elif list_ref:
        new_parent = None
        new_list = await R.resolve_list(w.tx, w.actor, list_ref)
    else:
        new_parent = None if row.parent_id is None else await R.get_task_row(w.tx, w.actor, row.parent_id)
        new_list = await R.find_list(w.tx, row.workspace, row.list_name)
        if position is None and anchor is None:
            raise InvalidInput("nothing to do: give parent, list, before, after or position")
    assert new_list is not None
    if new_list.workspace != row.workspace:
        raise InvalidInput("tasks move only between lists of the same workspace")
    _check_not_archived(new_list)
    if list_ref and (await R.resolve_list(w.tx, w.actor, list_ref)).id != new_list.id:
        raise InvalidInput(
            f"the new parent is in list {new_list.key!r}; subtasks live in their parent's list"
        )
    below = await R.descendants(w.tx, row.id)
    if new_parent is not None and (new_parent.id == row.id or new_parent.id in {d.id for d in below}):
        raise InvalidInput(f"task {row.id} cannot move under itself or one of its own subtasks")

    new_parent_id = None if new_parent is None else new_parent.id
    new_position, renumbered = await _place(w.tx, new_list.id, new_parent_id, row.id, anchor, side, position)
    sets: dict[str, Any] = {}
    if new_parent_id != row.parent_id:
        sets["parent_id"] = new_parent_id
    if new_list.id != row.list_id:
        sets["list_id"] = new_list.id
    sets["position"] = new_position
    await _bump(w, row, sets)
    moved_list = new_list.id != row.list_id
    for part in R.chunks([row.id, *renumbered]):
        await w.tx.execute(schema.refresh_tree_keys(w.tx.dialect, f"t.id IN {in_list(part)}"), *part)
    if moved_list:
        for part in R.chunks([d.id for d in below]):
            await w.tx.execute(
                "UPDATE tasks SET list_id = ?, version = version + 1, updated_at = ?, updated_by = ?"
                f" WHERE id IN {in_list(part)}",
                new_list.id, w.now, w.actor.subject, *part,
            )  # fmt: skip
    await _touch_task(w, row, related=moved_list or new_parent_id != row.parent_id)
    if new_parent_id is not None:
        w.changes.touch_task(new_parent_id)
    w.changes.touch_list(new_list.key)
    for d in below if moved_list else ():
        w.changes.touch_task(d.id)
    where = f"list {new_list.key}" + (
        f", under {new_parent_id}" if new_parent_id is not None else ", top level"
    )
    w.changes.event("moved", task=row.id, title=row.title, list_key=new_list.key, detail=where)
    return Changed(
        task=await R.one_task(w.tx, w.actor, task_id),
        also_changed=[str(d.id) for d in below] if moved_list else [],
    )


async def _place(
    tx: Tx,
    list_id: int,
    parent_id: int | None,
    moving: int,
    anchor: R.TaskRow | None,
    side: str,
    position: str | None,
) -> tuple[int, list[int]]:
    """A position for `moving` in the sibling group, renumbering the group when there is no gap
    (then also the ids of the siblings whose positions changed)."""
    where, args = _siblings(list_id, parent_id)
    siblings = [
        (int(r["id"]), int(r["position"]))
        for r in await tx.fetch(
            f"SELECT id, position FROM tasks WHERE {where} AND id <> ? ORDER BY position, id", *args, moving
        )
    ]
    if anchor is not None:
        at = next(i for i, (sid, _) in enumerate(siblings) if sid == anchor.id)
        index = at if side == "before" else at + 1
    elif position == "first":
        index = 0
    else:
        index = len(siblings)
    low = siblings[index - 1][1] if index > 0 else 0
    high = siblings[index][1] if index < len(siblings) else low + 2 * GAP
    if high - low >= 2:
        return (low + high) // 2, []
    # No room: renumber the group (order only; these tasks' own fields do not change).
    order = [sid for sid, _ in siblings]
    order.insert(index, moving)
    renumbered = [(GAP * (i + 1), sid) for i, sid in enumerate(order) if sid != moving]
    await tx.executemany("UPDATE tasks SET position = ? WHERE id = ?", renumbered)
    return GAP * (index + 1), [sid for _, sid in renumbered]


async def delete_task(
    w: Work, task_id: int, *, include_subtasks: bool = False, expected_version: int | None = None
) -> Deleted:
    row = await _locked_task(w, task_id, expected_version)
    below = await R.descendants(w.tx, row.id)
    if below and not include_subtasks:
        raise InvalidInput(
            f"task {row.id} has {len(below)} subtask(s); pass include_subtasks=true to delete them too, "
            "or move them elsewhere first (move_task)"
        )
    doomed = [row, *below]
    doomed_ids = [d.id for d in doomed]
    doomed_set = set(doomed_ids)
    dependents = await R.dependents_of(w.tx, doomed_ids)
    dependencies = await R.dependencies_of(w.tx, doomed_ids)
    unblocked = sorted({other for ids in dependents.values() for other in ids} - doomed_set)
    targets = sorted({other for ids in dependencies.values() for other in ids} - doomed_set)
    for part in R.chunks(unblocked):
        await w.tx.execute(
            "UPDATE tasks SET version = version + 1, updated_at = ?, updated_by = ?"
            f" WHERE id IN {in_list(part)}",
            w.now, w.actor.subject, *part,
        )  # fmt: skip
    for part in R.chunks(doomed_ids):
        await w.tx.execute(
            f"DELETE FROM task_deps WHERE task_id IN {in_list(part)} OR depends_on IN {in_list(part)}",
            *part,
            *part,
        )
        await w.tx.execute(f"DELETE FROM task_tags WHERE task_id IN {in_list(part)}", *part)
    # Children before parents, so no row ever points at a deleted parent.
    for part in R.chunks(list(reversed(doomed_ids))):
        await w.tx.execute(f"DELETE FROM tasks WHERE id IN {in_list(part)}", *part)
    w.changes.listing = True
    w.changes.touch_list(row.list_key)
    if row.parent_id is not None:
        w.changes.touch_task(row.parent_id)
    for d in doomed:
        w.changes.touch_task(d.id)
        w.changes.event("deleted", task=d.id, title=d.title, list_key=row.list_key)
    for other in [*unblocked, *targets]:
        w.changes.touch_task(other)
    return Deleted(deleted=[str(i) for i in doomed_ids], unblocked=[str(i) for i in unblocked])


async def record(w: Work, origin: str) -> int | None:
    """Store the change set in `task_changes` and announce it (PostgreSQL: NOTIFY at commit)."""
    if w.changes.empty:
        return None
    for part in R.chunks(sorted(w.changes.tasks)):
        await w.tx.execute(f"UPDATE tasks SET {schema.READINESS} WHERE id IN {in_list(part)}", *part)
    seq = await w.tx.fetchval(
        "INSERT INTO task_changes (at, workspace, actor, origin, uris, listing, events)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq",
        w.now, w.changes.workspace, w.actor.subject, origin, w.changes.uris_json(), int(w.changes.listing),
        w.changes.events_json(),
    )  # fmt: skip
    await w.tx.announce(json.dumps({"origin": origin, "seq": int(seq)}))
    return int(seq)
