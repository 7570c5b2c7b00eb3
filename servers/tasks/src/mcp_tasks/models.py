"""The shapes tools take and return; their JSON Schemas are what clients see.

Every tool's structured output is one of these models. Small bounded pages carry objects
(`Task`, `ListInfo`); big listings are columnar (`columns` + `rows`), so a client validating the
output schema does not walk a per-row object schema for thousands of rows.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Status = Literal["todo", "in_progress", "blocked", "done", "cancelled"]
Priority = Literal["low", "medium", "high"]

STATUSES: tuple[Status, ...] = ("todo", "in_progress", "blocked", "done", "cancelled")
OPEN_STATUSES: tuple[Status, ...] = ("todo", "in_progress", "blocked")
CLOSED_STATUSES: tuple[Status, ...] = ("done", "cancelled")
PRIORITIES: tuple[Priority, ...] = ("low", "medium", "high")
PRIORITY_RANK: dict[str, int] = {"low": 0, "medium": 1, "high": 2}

# Models with a field named `list` cannot spell `list[...]` in later annotations (the field
# shadows the builtin inside the class body), so they use these.
Strings = list[str]
Table = list[list[Any]]


class Task(BaseModel):
    """One task. `completed` is true when status is done (the classic demo's field)."""

    id: str = Field(description="Short stable id (a number as text); pass it as task_id.")
    list: str = Field(description="The list (project) it belongs to.")
    title: str
    description: str
    status: Status
    priority: Priority
    due: str | None = Field(description="Due date, YYYY-MM-DD.")
    tags: Strings
    parent: str | None = Field(description="Parent task id; null for a top-level task.")
    depends_on: Strings = Field(description="Ids of tasks this one is blocked by until they close.")
    completed: bool
    created_at: str
    created_by: str
    updated_at: str
    updated_by: str = Field(description="Who changed it last.")
    version: int = Field(description="Grows by one with every change; pass as expected_version.")


class TaskRef(BaseModel):
    """A task named in passing: a subtask, a dependency, an alternative."""

    id: str
    title: str
    status: Status
    priority: Priority
    due: str | None = None


class TaskDetail(BaseModel):
    """A task with its place in the tree and in the dependency graph."""

    task: Task
    ancestors: list[TaskRef] = Field(description="From the top-level task down to the parent.")
    subtasks: list[TaskRef] = Field(description="Direct subtasks in order (at most 200).")
    subtask_count: int
    open_subtasks: int
    dependencies: list[TaskRef] = Field(description="Tasks this one waits on.")
    dependents: list[TaskRef] = Field(description="Tasks waiting on this one.")
    blocked: bool = Field(description="True when status is blocked or a dependency is still open.")


class StatusCounts(BaseModel):
    todo: int = 0
    in_progress: int = 0
    blocked: int = 0
    done: int = 0
    cancelled: int = 0


class ListInfo(BaseModel):
    """A list (project). `name` is how tools and URIs refer to it."""

    name: str = Field(description="The list's reference: its name, or workspace:name outside 'default'.")
    workspace: str
    title: str
    description: str
    archived: bool
    counts: StatusCounts
    open: int
    total: int
    created_at: str
    updated_at: str
    updated_by: str
    version: int


class ListsPage(BaseModel):
    lists: list[ListInfo]
    total: int
    next_offset: int | None = Field(
        description="Pass as offset for the next page; null when this is the last."
    )
    hint: str


TASK_COLUMNS = [
    "id", "list", "title", "status", "priority", "due", "tags", "parent", "depends_on", "depth",
    "version", "updated_at",
]  # fmt: skip


class TaskPage(BaseModel):
    """A page of tasks as a table: one row per task, cells in `columns` order."""

    columns: list[str] = Field(description="Cell names: " + ", ".join(TASK_COLUMNS) + ".")
    rows: list[list[Any]]
    total: int = Field(description="Tasks matching the filters, on all pages.")
    offset: int
    next_offset: int | None = Field(
        description="Pass as offset for the next page; null when this is the last."
    )
    hint: str = Field(description="What to call next.")


class AddedTasks(BaseModel):
    """Tasks created by add_tasks, in depth-first order, as a table (id, key, title, parent)."""

    list: str
    created: int
    columns: Strings
    rows: Table


class Changed(BaseModel):
    """The result of a change: the task as it is now, and what else the change touched."""

    task: Task
    also_changed: list[str] = Field(
        description="Ids of other tasks the change touched (e.g. closed subtasks)."
    )


class Deleted(BaseModel):
    deleted: list[str] = Field(description="Ids of every task deleted (the task and any subtasks).")
    unblocked: list[str] = Field(description="Ids of tasks that no longer depend on a deleted task.")


class NextTask(BaseModel):
    """The task to work on next, and why."""

    task: Task | None
    reason: str
    candidates: int = Field(
        description="Open, unblocked tasks without open subtasks that were considered (counted up to 1001)."
    )
    alternatives: list[TaskRef] = Field(description="The next best few, in order.")


class NewTask(BaseModel):
    """A task to create in add_tasks; subtasks nest up to 90 levels in one call."""

    title: str = Field(description="One line.")
    description: str = ""
    priority: Priority = "medium"
    status: Status = "todo"
    due: str | None = Field(default=None, description="YYYY-MM-DD.")
    tags: list[str] = Field(default_factory=list)
    key: str | None = Field(
        default=None,
        description="A name for this task that depends_on of other tasks in the same batch may use.",
    )
    depends_on: list[str | int] = Field(
        default_factory=list, description="Ids of existing tasks, or keys of tasks in this batch."
    )
    subtasks: list[NewTask] = Field(default_factory=list)
