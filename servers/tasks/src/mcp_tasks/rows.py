"""Reading rows: visibility, list resolution, and tasks with their tags and dependencies."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from mcp_batteries.errors import InvalidInput, NotFound
from mcp_batteries.safety import quote_name

from mcp_tasks import validate
from mcp_tasks.access import Actor, list_key, split_list_key
from mcp_tasks.backend import Tx, in_list
from mcp_tasks.models import ListInfo, Priority, Status, StatusCounts, Task, TaskRef

#: SQLite accepts up to 32,766 parameters; PostgreSQL 65,535. Batches stay well below both.
CHUNK = 900


@dataclass(frozen=True)
class ListRow:
    id: int
    workspace: str
    name: str
    title: str
    description: str
    archived: bool
    created_at: str
    updated_at: str
    updated_by: str
    version: int

    @property
    def key(self) -> str:
        return list_key(self.workspace, self.name)


LIST_COLUMNS = (
    "l.id, l.workspace, l.name, l.title, l.description, l.archived, l.created_at, l.updated_at, "
    "l.updated_by, l.version"
)


def list_row(row: Any) -> ListRow:
    return ListRow(
        int(row["id"]), str(row["workspace"]), str(row["name"]), str(row["title"]), str(row["description"]),
        bool(row["archived"]), str(row["created_at"]), str(row["updated_at"]), str(row["updated_by"]),
        int(row["version"]),
    )  # fmt: skip


@dataclass(frozen=True)
class TaskRow:
    """A task's own columns plus where it lives."""

    id: int
    list_id: int
    parent_id: int | None
    position: int
    title: str
    description: str
    status: Status
    priority: Priority
    due: str | None
    created_at: str
    created_by: str
    updated_at: str
    updated_by: str
    version: int
    workspace: str
    list_name: str
    archived: bool
    tree_key: str = ""

    @property
    def depth(self) -> int:
        return self.tree_key.count("/")

    @property
    def list_key(self) -> str:
        return list_key(self.workspace, self.list_name)

    def ref(self) -> TaskRef:
        return TaskRef(
            id=str(self.id), title=self.title, status=self.status, priority=self.priority, due=self.due
        )  # type: ignore[arg-type]


TASK_FIELDS = (
    "t.id, t.list_id, t.parent_id, t.position, t.title, t.description, t.status, t.priority, "
    "t.due, t.created_at, t.created_by, t.updated_at, t.updated_by, t.version, "
    "l.workspace, l.name AS list_name, l.archived, t.tree_key"
)
TASK_FROM = "FROM tasks t JOIN task_lists l ON l.id = t.list_id"
TASK_SELECT = f"SELECT {TASK_FIELDS} {TASK_FROM}"


def task_row(row: Any) -> TaskRow:
    return TaskRow(
        int(row["id"]), int(row["list_id"]), None if row["parent_id"] is None else int(row["parent_id"]),
        int(row["position"]), str(row["title"]), str(row["description"]), cast(Status, row["status"]),
        cast(Priority, row["priority"]), row["due"], str(row["created_at"]), str(row["created_by"]),
        str(row["updated_at"]), str(row["updated_by"]), int(row["version"]), str(row["workspace"]),
        str(row["list_name"]), bool(row["archived"]), str(row["tree_key"]),
    )  # fmt: skip


def visible(actor: Actor, alias: str = "l") -> tuple[str, list[Any]]:
    """A WHERE condition limiting `alias` (a task_lists row) to the actor's workspaces."""
    if actor.workspaces is None:
        return "1 = 1", []
    if not actor.workspaces:
        return "1 = 0", []
    spaces = sorted(actor.workspaces)
    return f"{alias}.workspace IN {in_list(spaces)}", list(spaces)


def chunks(values: Sequence[int], size: int = CHUNK) -> Iterable[Sequence[int]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


# -- lists -------------------------------------------------------------------------------------
async def find_list(tx: Tx, workspace: str, name: str) -> ListRow | None:
    row = await tx.fetchrow(
        f"SELECT {LIST_COLUMNS} FROM task_lists l WHERE l.workspace = ? AND l.name = ?", workspace, name
    )
    return None if row is None else list_row(row)


async def resolve_list(tx: Tx, actor: Actor, ref: str) -> ListRow:
    """The list `ref` names for this actor: `name` or `workspace:name`; NotFound when not theirs."""
    text = str(ref).strip()
    space, raw_name = split_list_key(text)
    name = validate.list_name(raw_name)
    if space is not None:
        if actor.may_use(space):
            found = await find_list(tx, space, name)
            if found is not None:
                return found
        raise NotFound(await _no_such_list(tx, actor, text))
    where, args = visible(actor)
    rows = [list_row(r) for r in await tx.fetch(
        f"SELECT {LIST_COLUMNS} FROM task_lists l WHERE l.name = ? AND {where} ORDER BY l.workspace",
        name, *args,
    )]  # fmt: skip
    if not rows:
        raise NotFound(await _no_such_list(tx, actor, text))
    if len(rows) == 1:
        return rows[0]
    home = [r for r in rows if r.workspace == actor.home_workspace]
    if home:
        return home[0]
    keys = ", ".join(r.key for r in rows)
    raise InvalidInput(f"several lists are named {name!r} ({keys}); name one as workspace:name")


async def _no_such_list(tx: Tx, actor: Actor, ref: str) -> str:
    where, args = visible(actor)
    rows = await tx.fetch(
        f"SELECT l.workspace, l.name FROM task_lists l WHERE l.archived = 0 AND {where} "
        "ORDER BY l.workspace, l.name LIMIT 21",
        *args,
    )
    keys = [list_key(str(r["workspace"]), str(r["name"])) for r in rows]
    known = ", ".join(keys[:20]) + (", ..." if len(keys) > 20 else "") if keys else "none yet"
    return f"no list {quote_name(ref)}; your lists: {known} (create_list makes one, list_lists shows all)"


async def list_infos(tx: Tx, lists: Sequence[ListRow]) -> list[ListInfo]:
    """Lists with their task counts by status."""
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    ids = [row.id for row in lists]
    for part in chunks(ids):
        for r in await tx.fetch(
            "SELECT list_id, status, count(*) AS n FROM tasks"
            f" WHERE list_id IN {in_list(part)} GROUP BY list_id, status",
            *part,
        ):
            counts[int(r["list_id"])][str(r["status"])] = int(r["n"])
    infos = []
    for row in lists:
        by_status = StatusCounts(**counts.get(row.id, {}))
        still_open = by_status.todo + by_status.in_progress + by_status.blocked
        total = sum(counts.get(row.id, {}).values())
        infos.append(
            ListInfo(
                name=row.key, workspace=row.workspace, title=row.title, description=row.description,
                archived=row.archived, counts=by_status, open=still_open,
                total=total, created_at=row.created_at, updated_at=row.updated_at, updated_by=row.updated_by,
                version=row.version,
            )
        )  # fmt: skip
    return infos


async def list_info(tx: Tx, row: ListRow) -> ListInfo:
    return (await list_infos(tx, [row]))[0]


# -- tasks -------------------------------------------------------------------------------------
async def get_task_row(tx: Tx, actor: Actor, task_id: int) -> TaskRow:
    """The task, if the actor may see it; otherwise NotFound (the same answer as for no task)."""
    row = await tx.fetchrow(TASK_SELECT + " WHERE t.id = ?", task_id)
    if row is None or not actor.may_use(str(row["workspace"])):
        raise NotFound(f"no task {task_id} (list_tasks shows the tasks you can see)")
    return task_row(row)


async def task_rows(
    tx: Tx, where: str, args: Sequence[Any], order: str = "t.id", limit: int | None = None
) -> list[TaskRow]:
    sql = f"{TASK_SELECT} WHERE {where} ORDER BY {order}"
    if limit is not None:
        sql += " LIMIT ?"
        args = [*args, limit]
    return [task_row(r) for r in await tx.fetch(sql, *args)]


async def tags_of(tx: Tx, ids: Sequence[int]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = defaultdict(list)
    for part in chunks(ids):
        for r in await tx.fetch(
            f"SELECT task_id, tag FROM task_tags WHERE task_id IN {in_list(part)} ORDER BY tag", *part
        ):
            found[int(r["task_id"])].append(str(r["tag"]))
    return found


async def dependencies_of(tx: Tx, ids: Sequence[int]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = defaultdict(list)
    for part in chunks(ids):
        for r in await tx.fetch(
            f"SELECT task_id, depends_on FROM task_deps WHERE task_id IN {in_list(part)} ORDER BY depends_on",
            *part,
        ):
            found[int(r["task_id"])].append(int(r["depends_on"]))
    return found


async def dependents_of(tx: Tx, ids: Sequence[int]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = defaultdict(list)
    for part in chunks(ids):
        for r in await tx.fetch(
            f"SELECT task_id, depends_on FROM task_deps WHERE depends_on IN {in_list(part)} ORDER BY task_id",
            *part,
        ):
            found[int(r["depends_on"])].append(int(r["task_id"]))
    return found


async def full_tasks(tx: Tx, rows: Sequence[TaskRow]) -> list[Task]:
    ids = [r.id for r in rows]
    tags = await tags_of(tx, ids)
    deps = await dependencies_of(tx, ids)
    return [to_task(r, tags.get(r.id, []), deps.get(r.id, [])) for r in rows]


def to_task(row: TaskRow, tags: list[str], depends_on: list[int]) -> Task:
    return Task(
        id=str(row.id),
        list=row.list_key,
        title=row.title,
        description=row.description,
        status=row.status,
        priority=row.priority,
        due=row.due,
        tags=tags,
        parent=None if row.parent_id is None else str(row.parent_id),
        depends_on=[str(d) for d in depends_on],
        completed=row.status == "done",
        created_at=row.created_at,
        created_by=row.created_by,
        updated_at=row.updated_at,
        updated_by=row.updated_by,
        version=row.version,
    )


async def one_task(tx: Tx, actor: Actor, task_id: int) -> Task:
    row = await get_task_row(tx, actor, task_id)
    return (await full_tasks(tx, [row]))[0]


async def descendants(tx: Tx, task_id: int) -> list[TaskRow]:
    """Every task below `task_id`, parents before children."""
    rows = await tx.fetch(
        "WITH RECURSIVE below(id, depth) AS ("
        " SELECT id, 1 FROM tasks WHERE parent_id = ?"
        " UNION ALL SELECT c.id, below.depth + 1 FROM tasks c JOIN below ON c.parent_id = below.id)"
        f" {TASK_SELECT} JOIN below ON below.id = t.id ORDER BY below.depth, t.position",
        task_id,
    )
    return [task_row(r) for r in rows]


async def ancestors(tx: Tx, task_id: int) -> list[TaskRow]:
    """The chain of parents from the top-level task down to the direct parent."""
    rows = await tx.fetch(
        "WITH RECURSIVE above(id, depth) AS ("
        " SELECT parent_id, 1 FROM tasks WHERE id = ? AND parent_id IS NOT NULL"
        " UNION ALL SELECT p.parent_id, above.depth + 1 FROM tasks p JOIN above ON p.id = above.id"
        " WHERE p.parent_id IS NOT NULL)"
        f" {TASK_SELECT} JOIN above ON above.id = t.id ORDER BY above.depth DESC",
        task_id,
    )
    return [task_row(r) for r in rows]
