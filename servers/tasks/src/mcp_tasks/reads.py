"""Every read: one task, pages of tasks, the next task, lists, resources, history."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal

from mcp_batteries.errors import InvalidInput

from mcp_tasks import ranking, schema, uris, validate
from mcp_tasks import rows as R
from mcp_tasks.access import Actor, list_key
from mcp_tasks.backend import Tx, in_list
from mcp_tasks.models import (
    CLOSED_STATUSES,
    OPEN_STATUSES,
    TASK_COLUMNS,
    ListInfo,
    ListsPage,
    NextTask,
    Task,
    TaskDetail,
    TaskPage,
)

Sort = Literal["tree", "priority", "due", "created", "updated", "title"]
SORTS: tuple[str, ...] = ("tree", "priority", "due", "created", "updated", "title")
MAX_SUBTASKS_SHOWN = 200

LIST_ORDER = "l.workspace <> 'default', l.workspace, l.name"
_PRIORITY_ORDER = "CASE t.priority WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END"
_ORDERS: dict[str, str] = {
    # tree_key (see schema.refresh_tree_keys) orders a list as a tree: lists in name order, each
    # read in order from the index (list_id, tree_key), so no page needs a sort.
    "tree": "l.workspace, l.name, t.tree_key, t.id",
    "priority": f"{_PRIORITY_ORDER}, t.due IS NULL, t.due, t.id",
    "due": f"t.due IS NULL, t.due, {_PRIORITY_ORDER}, t.id",
    "created": "t.id",
    "updated": "t.updated_at DESC, t.id DESC",
    "title": "lower(t.title), t.id",
}


@dataclass(frozen=True)
class Filters:
    list_ref: str | None = None
    status: Sequence[str] = ()
    priority: Sequence[str] = ()
    tag: str | None = None
    due_before: str | None = None
    due_after: str | None = None
    parent: str | int | None = None
    text: str | None = None


async def _scope(tx: Tx, actor: Actor, list_ref: str | None) -> tuple[str, list[Any]]:
    """Tasks of the named list (archived or not), else of every visible list not archived."""
    if list_ref is not None and str(list_ref).strip():
        found = await R.resolve_list(tx, actor, list_ref)
        return "l.id = ?", [found.id]
    where, args = R.visible(actor)
    return f"l.archived = 0 AND {where}", args


def _statuses(values: Sequence[str]) -> list[str]:
    chosen: list[str] = []
    for value in values:
        text = str(value).strip().lower()
        if text == "open":
            chosen.extend(OPEN_STATUSES)
        elif text == "closed":
            chosen.extend(CLOSED_STATUSES)
        else:
            chosen.append(validate.status(text))
    return sorted(set(chosen))


async def _where(tx: Tx, actor: Actor, f: Filters) -> tuple[str, list[Any]]:
    scope, args = await _scope(tx, actor, f.list_ref)
    parts = [scope]
    if f.list_ref is not None and str(f.list_ref).strip():
        parts.append("t.list_id = ?")  # lets the planners use the (list_id, ...) indexes directly
        args.append(args[0])
    if f.status:
        statuses = _statuses(f.status)
        parts.append(f"t.status IN {in_list(statuses)}")
        args.extend(statuses)
    if f.priority:
        priorities = sorted({validate.priority(p) for p in f.priority})
        parts.append(f"t.priority IN {in_list(priorities)}")
        args.extend(priorities)
    if f.tag is not None and str(f.tag).strip():
        parts.append("EXISTS (SELECT 1 FROM task_tags g WHERE g.task_id = t.id AND g.tag = ?)")
        args.append(validate.tags([f.tag])[0])
    before = validate.due_bound(f.due_before, "due_before")
    after = validate.due_bound(f.due_after, "due_after")
    if before is not None:
        parts.append("t.due IS NOT NULL AND t.due <= ?")
        args.append(before)
    if after is not None:
        parts.append("t.due IS NOT NULL AND t.due >= ?")
        args.append(after)
    if f.parent is not None:
        if str(f.parent).strip().lower() in ("", "0", "none", "null"):
            parts.append("t.parent_id IS NULL")
        else:
            parts.append("t.parent_id = ?")
            args.append(validate.task_id(f.parent, "parent"))
    if f.text is not None and str(f.text).strip():
        needle = str(f.text).strip().lower()
        if len(needle) > 200:
            raise InvalidInput("text: search for at most 200 characters")
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        parts.append("(lower(t.title) LIKE ? ESCAPE '\\' OR lower(t.description) LIKE ? ESCAPE '\\')")
        args.extend([f"%{escaped}%", f"%{escaped}%"])
    return " AND ".join(parts), args


async def list_tasks(
    tx: Tx, actor: Actor, f: Filters, *, sort: str = "tree", offset: int = 0, limit: int = 50
) -> TaskPage:
    if sort not in SORTS:
        raise InvalidInput(f"sort must be one of {', '.join(SORTS)} (got {sort!r})")
    where, args = await _where(tx, actor, f)
    total = int(
        await tx.fetchval(
            f"SELECT count(*) FROM tasks t JOIN task_lists l ON l.id = t.list_id WHERE {where}", *args
        )
        or 0
    )
    order = _ORDERS[sort]
    page = [
        R.task_row(r)
        for r in await tx.fetch(
            f"{R.TASK_SELECT} WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?", *args, limit, offset
        )
    ]
    depth = {row.id: row.depth for row in page} if sort == "tree" else {}
    tasks = await R.full_tasks(tx, page)
    rows = [
        [t.id, t.list, t.title, t.status, t.priority, t.due, t.tags, t.parent, t.depends_on,
         depth.get(int(t.id)), t.version, t.updated_at]
        for t in tasks
    ]  # fmt: skip
    more = offset + len(rows) < total
    next_offset = offset + len(rows) if more else None
    if not total:
        hint = "No task matches. Widen the filters, or add_task / add_tasks to create some."
    elif more:
        hint = (
            f"Rows {offset + 1}-{offset + len(rows)} of {total}. Call list_tasks again with the same "
            f"filters and offset={next_offset} for more; get_task(task_id) shows one task in full."
        )
    else:
        hint = f"All {total} matching task(s) shown. get_task(task_id) shows one in full."
    return TaskPage(
        columns=list(TASK_COLUMNS), rows=rows, total=total, offset=offset, next_offset=next_offset, hint=hint
    )


async def get_task(tx: Tx, actor: Actor, task_id: int) -> TaskDetail:
    row = await R.get_task_row(tx, actor, task_id)
    task = (await R.full_tasks(tx, [row]))[0]
    above = await R.ancestors(tx, row.id)
    children = await R.task_rows(tx, "t.parent_id = ?", [row.id], order="t.position, t.id")
    deps = (await R.dependencies_of(tx, [row.id])).get(row.id, [])
    waiting = (await R.dependents_of(tx, [row.id])).get(row.id, [])
    related = {r.id: r for r in await _rows_by_id(tx, [*deps, *waiting])}
    dependencies = [related[d].ref() for d in deps if d in related]
    return TaskDetail(
        task=task,
        ancestors=[a.ref() for a in above],
        subtasks=[c.ref() for c in children[:MAX_SUBTASKS_SHOWN]],
        subtask_count=len(children),
        open_subtasks=sum(c.status in OPEN_STATUSES for c in children),
        dependencies=dependencies,
        dependents=[related[d].ref() for d in waiting if d in related],
        blocked=row.status == "blocked" or any(d.status in OPEN_STATUSES for d in dependencies),
    )


async def _rows_by_id(tx: Tx, ids: Sequence[int]) -> list[R.TaskRow]:
    unique = sorted(set(ids))
    found: list[R.TaskRow] = []
    for part in R.chunks(unique):
        found.extend(await R.task_rows(tx, f"t.id IN {in_list(part)}", part))
    return found


async def list_lists(
    tx: Tx, actor: Actor, *, include_archived: bool = False, offset: int = 0, limit: int = 100
) -> ListsPage:
    where, args = R.visible(actor)
    if not include_archived:
        where += " AND l.archived = 0"
    total = int(await tx.fetchval(f"SELECT count(*) FROM task_lists l WHERE {where}", *args) or 0)
    found = [
        R.list_row(r)
        for r in await tx.fetch(
            f"SELECT {R.LIST_COLUMNS} FROM task_lists l WHERE {where} ORDER BY {LIST_ORDER} LIMIT ? OFFSET ?",
            *args,
            limit,
            offset,
        )
    ]
    infos = await R.list_infos(tx, found)
    more = offset + len(infos) < total
    if not total:
        hint = (
            "No lists yet. add_task puts tasks in 'inbox' (created on first use); create_list makes others."
        )
    elif more:
        shown = f"{offset + 1}-{offset + len(infos)}"
        hint = f"Lists {shown} of {total}; call list_lists with offset={offset + len(infos)} for more."
    else:
        hint = "Use a list's name as list= in add_task, list_tasks and next_task."
    return ListsPage(lists=infos, total=total, next_offset=offset + len(infos) if more else None, hint=hint)


# -- next task -----------------------------------------------------------------------------------
async def next_task(
    tx: Tx, actor: Actor, *, list_ref: str | None = None, tag: str | None = None, today: date | None = None
) -> NextTask:
    """The most important open task that nothing blocks (see ranking.py for the order)."""
    day = today or date.today()
    soon = day + timedelta(days=ranking.SOON_DAYS)
    scope, scope_args = await _scope(tx, actor, list_ref)
    lists = [
        int(r["id"]) for r in await tx.fetch(f"SELECT l.id FROM task_lists l WHERE {scope}", *scope_args)
    ]
    if not lists:
        return NextTask(task=None, reason=ranking.nothing_ready(0, 0, 0), candidates=0, alternatives=[])
    extra, args = "", list[Any](lists)
    if tag is not None and str(tag).strip():
        extra = " AND EXISTS (SELECT 1 FROM task_tags g WHERE g.task_id = t.id AND g.tag = ?)"
        args.append(validate.tags([tag])[0])
    # Readiness counters (kept by every write, see schema.READINESS) and three indexes make this
    # cheap at any size: the urgent ones through the due-date index (few), then the rest read in
    # ranking order from the rank index until enough are found (no sort of all candidates).
    ready = f"{schema.READY} AND list_id IN {in_list(lists)}{extra}"
    wanted = 1 + ranking.ALTERNATIVES
    sqlite = tx.dialect == "sqlite"  # SQLite's planner would rather scan and sort: name the index
    found = await tx.fetch(
        f"SELECT id, open_dependents FROM tasks t{' INDEXED BY tasks_ready_due' if sqlite else ''}"
        f" WHERE {ready} AND due IS NOT NULL AND due <= ?"
        f" ORDER BY CASE WHEN due < ? THEN 0 ELSE 1 END, {schema.RANK} LIMIT ?",
        *args, soon.isoformat(), day.isoformat(), wanted,
    )  # fmt: skip
    if len(found) < wanted:
        found += await tx.fetch(
            f"SELECT id, open_dependents FROM tasks t{' INDEXED BY tasks_ready_rank' if sqlite else ''}"
            f" WHERE {ready} AND (due IS NULL OR due > ?)"
            f" ORDER BY {schema.RANK} LIMIT ?",
            *args, soon.isoformat(), wanted - len(found),
        )  # fmt: skip
    # Counted up to a bound, so the cost does not grow with the number of ready tasks.
    counted = f"SELECT count(*) FROM (SELECT 1 FROM tasks t WHERE {ready} LIMIT ?) AS ready"
    candidates = int(await tx.fetchval(counted, *args, ranking.COUNT_UP_TO + 1) or 0) if found else 0
    if not found:
        counts = await tx.fetchrow(
            "SELECT sum(CASE WHEN t.status = 'blocked' THEN 1 ELSE 0 END) AS marked,"
            " sum(CASE WHEN t.status <> 'blocked' AND t.open_deps > 0 THEN 1 ELSE 0 END) AS waiting,"
            " sum(CASE WHEN t.status <> 'blocked' AND t.open_deps = 0 AND t.open_children > 0"
            " THEN 1 ELSE 0 END)"
            " AS parents FROM tasks t"
            f" WHERE t.status IN ('todo', 'in_progress', 'blocked') AND t.list_id IN {in_list(lists)}{extra}",
            *args,
        )  # fmt: skip
        marked, waiting, parents = (
            int((counts[k] if counts else 0) or 0) for k in ("marked", "waiting", "parents")
        )
        return NextTask(
            task=None, reason=ranking.nothing_ready(marked, waiting, parents), candidates=0, alternatives=[]
        )
    ids = [int(r["id"]) for r in found]
    unblocks = {int(r["id"]): int(r["open_dependents"]) for r in found}
    by_id = {r.id: r for r in await _rows_by_id(tx, ids)}
    best = by_id[ids[0]]
    task = (await R.full_tasks(tx, [best]))[0]
    waiting_on_it = (await R.dependents_of(tx, [best.id])).get(best.id, [])
    reason = ranking.explain(
        best, today=day, candidates=candidates, unblocks=unblocks[best.id],
        waiting=waiting_on_it, runner_up=by_id[ids[1]] if len(ids) > 1 else None,
    )  # fmt: skip
    return NextTask(
        task=task,
        reason=reason,
        candidates=candidates,
        alternatives=[by_id[i].ref() for i in ids[1:]],
    )


# -- resources -----------------------------------------------------------------------------------
async def all_tasks(tx: Tx, actor: Actor, *, limit: int) -> list[Task]:
    """Every visible task of lists not archived, oldest first (the classic `tasks://list`)."""
    where, args = R.visible(actor)
    found = await R.task_rows(tx, f"l.archived = 0 AND {where}", args, limit=limit)
    return await R.full_tasks(tx, found)


async def all_lists(tx: Tx, actor: Actor) -> list[ListInfo]:
    where, args = R.visible(actor)
    found = [
        R.list_row(r)
        for r in await tx.fetch(
            f"SELECT {R.LIST_COLUMNS} FROM task_lists l WHERE {where} ORDER BY {LIST_ORDER}",
            *args,
        )
    ]
    return await R.list_infos(tx, found)


@dataclass(frozen=True)
class ListView:
    info: ListInfo
    tasks: list[Task]
    depth: dict[str, int]
    truncated: bool

    def to_json(self) -> str:
        return json.dumps(
            {
                "list": self.info.model_dump(mode="json"),
                "tasks": [
                    {**t.model_dump(mode="json"), "depth": self.depth.get(t.id, 0)} for t in self.tasks
                ],
                "truncated": self.truncated,
            },
            ensure_ascii=False,
            indent=1,
        )


async def list_view(tx: Tx, actor: Actor, ref: str, *, limit: int) -> ListView:
    found = await R.resolve_list(tx, actor, ref)
    info = await R.list_info(tx, found)
    page = await list_tasks(tx, actor, Filters(list_ref=found.key), sort="tree", limit=limit)
    by_id = {t.id: t for t in await R.full_tasks(tx, await _rows_by_id(tx, [int(r[0]) for r in page.rows]))}
    tasks = [by_id[str(r[0])] for r in page.rows]
    depth = {str(r[0]): int(r[9] or 0) for r in page.rows}
    return ListView(info=info, tasks=tasks, depth=depth, truncated=page.next_offset is not None)


@dataclass(frozen=True)
class ResourceEntry:
    uri: str
    name: str
    title: str
    mime_type: str
    description: str | None = None


async def resource_entries(
    tx: Tx, actor: Actor, *, offset: int, limit: int
) -> tuple[list[ResourceEntry], bool]:
    """Concrete resources for resources/list: each list, then each task (lists not archived)."""
    where, args = R.visible(actor)
    lists = [
        R.list_row(r)
        for r in await tx.fetch(
            f"SELECT {R.LIST_COLUMNS} FROM task_lists l WHERE l.archived = 0 AND {where}"
            " ORDER BY l.workspace, l.name",
            *args,
        )
    ]
    entries: list[ResourceEntry] = []
    for row in lists[offset : offset + limit]:
        about = f"List {row.key} with its tasks in order (JSON); add /markdown for a checklist"
        entries.append(
            ResourceEntry(uris.list_uris(row.key)[0], f"list {row.key}", row.title, "application/json", about)
        )
    task_offset = max(0, offset - len(lists))
    room = limit - len(entries)
    found = await tx.fetch(
        "SELECT t.id, t.title, t.status, l.workspace, l.name"
        " FROM tasks t JOIN task_lists l ON l.id = t.list_id"
        f" WHERE l.archived = 0 AND {where} ORDER BY t.id LIMIT ? OFFSET ?",
        *args, room + 1, task_offset,
    )  # fmt: skip
    for r in found[:room]:
        where_it_is = f"[{r['status']}] in {list_key(str(r['workspace']), str(r['name']))}"
        uri = uris.task_uris(int(r["id"]))[0]
        entries.append(
            ResourceEntry(uri, f"task {r['id']}", str(r["title"]), "application/json", where_it_is)
        )
    return entries, len(found) > room


async def complete_lists(tx: Tx, actor: Actor, prefix: str, limit: int = 100) -> list[str]:
    where, args = R.visible(actor)
    keys = [
        list_key(str(r["workspace"]), str(r["name"]))
        for r in await tx.fetch(
            f"SELECT l.workspace, l.name FROM task_lists l WHERE l.archived = 0 AND {where}", *args
        )
    ]
    return sorted(k for k in keys if k.startswith(prefix))[: limit + 1]


async def complete_tasks(tx: Tx, actor: Actor, prefix: str, limit: int = 100) -> list[str]:
    digits = prefix.strip().lstrip("#")
    if digits and not digits.isdigit():
        return []
    where, args = R.visible(actor)
    found = await tx.fetch(
        f"SELECT t.id FROM tasks t JOIN task_lists l ON l.id = t.list_id WHERE l.archived = 0 AND {where}"
        " AND CAST(t.id AS TEXT) LIKE ? ORDER BY t.status IN ('done', 'cancelled'), t.id DESC LIMIT ?",
        *args, f"{digits}%", limit + 1,
    )  # fmt: skip
    return [str(r["id"]) for r in found]


# -- summaries for prompts -----------------------------------------------------------------------
@dataclass(frozen=True)
class Summary:
    total: int
    done: int
    cancelled: int
    open: int
    in_progress: int
    blocked: int
    high_open: int
    overdue: int
    lists: list[ListInfo]


async def summary(tx: Tx, actor: Actor, list_ref: str | None, *, today: date | None = None) -> Summary:
    day = (today or date.today()).isoformat()
    scope, args = await _scope(tx, actor, list_ref)
    row = await tx.fetchrow(
        "SELECT count(*) AS total,"
        " sum(CASE WHEN t.status = 'done' THEN 1 ELSE 0 END) AS done,"
        " sum(CASE WHEN t.status = 'cancelled' THEN 1 ELSE 0 END) AS cancelled,"
        " sum(CASE WHEN t.status = 'in_progress' THEN 1 ELSE 0 END) AS in_progress,"
        " sum(CASE WHEN t.status = 'blocked' THEN 1 ELSE 0 END) AS blocked,"
        " sum(CASE WHEN t.priority = 'high' AND t.status IN ('todo', 'in_progress', 'blocked')"
        " THEN 1 ELSE 0 END) AS high_open,"
        " sum(CASE WHEN t.due IS NOT NULL AND t.due < ? AND t.status IN ('todo', 'in_progress', 'blocked')"
        " THEN 1 ELSE 0 END) AS overdue"
        f" FROM tasks t JOIN task_lists l ON l.id = t.list_id WHERE {scope}",
        day, *args,
    )  # fmt: skip
    values = {k: int((row[k] if row is not None else 0) or 0) for k in
              ("total", "done", "cancelled", "in_progress", "blocked", "high_open", "overdue")}  # fmt: skip
    if list_ref:
        lists = [await R.list_info(tx, await R.resolve_list(tx, actor, list_ref))]
    else:
        lists = [i for i in await all_lists(tx, actor) if not i.archived]
    return Summary(open=values["total"] - values["done"] - values["cancelled"], lists=lists, **values)


@dataclass(frozen=True)
class HistoryEntry:
    at: str
    actor: str
    kind: str
    list: str
    task: str | None
    title: str
    detail: str


async def history(
    tx: Tx, actor: Actor, since_iso: str, list_ref: str | None, *, limit: int = 500
) -> tuple[list[HistoryEntry], bool]:
    """Changes since a time in the actor's workspaces (newest last), and whether more were cut."""
    where, args = R.visible(actor, alias="c")
    key = (await R.resolve_list(tx, actor, list_ref)).key if list_ref else None
    found = await tx.fetch(
        f"SELECT c.at, c.actor, c.events FROM task_changes c WHERE c.at >= ? AND {where}"
        " ORDER BY c.seq DESC LIMIT ?",
        since_iso, *args, limit + 1,
    )  # fmt: skip
    entries: list[HistoryEntry] = []
    for r in reversed(found[:limit]):
        try:
            events = json.loads(r["events"])
        except ValueError:
            continue
        for e in events:
            if key is not None and e.get("list") != key:
                continue
            entries.append(
                HistoryEntry(
                    at=str(r["at"]),
                    actor=str(r["actor"]),
                    kind=str(e.get("kind", "")),
                    list=str(e.get("list", "")),
                    task=e.get("task"),
                    title=str(e.get("title", "")),
                    detail=str(e.get("detail", "")),
                )
            )
    return entries, len(found) > limit
