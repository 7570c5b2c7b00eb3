"""mcp-tasks: registers tools, resources, prompts and completions; the work is in the domain modules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    Completion,
    PromptReference,
    Resource,
    ResourceTemplateReference,
    TextContent,
)
from mcp_batteries.errors import BatteriesError
from mcp_batteries.server import (
    BatteriesServer,
    CacheHint,
    Consent,
    current_caller,
    cursor_offset,
    note_change,
)
from pydantic import BaseModel, Field

from mcp_tasks import live, losses, prompts, render, uris
from mcp_tasks.access import Actor
from mcp_tasks.config import TasksSettings
from mcp_tasks.models import (
    AddedTasks,
    Changed,
    Deleted,
    ListInfo,
    ListsPage,
    NewTask,
    NextTask,
    Priority,
    Status,
    Task,
    TaskDetail,
    TaskPage,
)
from mcp_tasks.reads import Filters
from mcp_tasks.service import TasksService

RESOURCE_PAGE = 100

INSTRUCTIONS = """Task lists shared by agents and people. Tasks live in lists (projects); ids are short
numbers. Start with next_task (what to do now, and why) or list_tasks; add_task / add_tasks create
(add_tasks takes a whole nested plan in one call), update_task / set_status / complete_task /
move_task / delete_task change. Every task has a version: pass expected_version to change it only if
nobody else did meanwhile (a conflict error then shows the current task). Resources (subscribe to hear
changes made by anyone): tasks://list (all tasks, JSON), tasks://lists, tasks://lists/{list},
tasks://tasks/{task_id}, each also as .../markdown."""

TaskId = Annotated[str | int, Field(description="The task's id, e.g. 42 (as list_tasks shows it).")]
ListRef = Annotated[
    str | None,
    Field(description="List name (or workspace:name); default: your inbox (list_lists shows all)."),
]
ExpectedVersion = Annotated[
    int | None,
    Field(description="Change the task only if it is still at this version (from a read); else a conflict."),
]
IncludeSubtasks = Annotated[
    bool, Field(description="Also apply to open subtasks (required when it has any).")
]


def reply(model: BaseModel, text: str) -> CallToolResult:
    """Complete structured content plus a compact text rendering of the same data."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=model.model_dump(mode="json")
    )


def actor() -> Actor:
    return Actor.from_caller(current_caller())


@contextmanager
def prompt_arguments() -> Iterator[None]:
    # The SDK reports any exception from a prompt as "Error rendering prompt NAME"; a bad argument
    # must say what was wrong (JSON-RPC -32602, as for tools and resources).
    try:
        yield
    except BatteriesError as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc


def build_server(settings: TasksSettings) -> BatteriesServer:
    service = TasksService(settings)
    service.report = note_change

    async def check_subscription(session: Any, uri: str) -> None:
        await service.store.check_readable(actor(), uri)

    server = BatteriesServer(
        settings,
        title="Tasks",
        instructions=INSTRUCTIONS
        + f"\nStorage: {service.where}."
        + (" Read-only: no tool changes tasks." if settings.read_only else ""),
        subscriptions=check_subscription,
    )
    server.service(service.running)
    live.TasksLive(server, service)

    # -- tools: creating -----------------------------------------------------------------------
    @server.tool(title="Add a task", read_only=False)
    async def add_task(
        title: Annotated[str, Field(description="What to do, in one line.")],
        description: Annotated[str, Field(description="Details: what done means, links, notes.")] = "",
        priority: Annotated[Priority, Field(description="low, medium or high.")] = "medium",
        list: ListRef = None,
        parent: Annotated[str | int | None, Field(description="Make it a subtask of this task id.")] = None,
        due: Annotated[str | None, Field(description="Due date, YYYY-MM-DD.")] = None,
        tags: Annotated[
            list[str] | None, Field(description="Words to filter by, e.g. ['bug', 'docs'].")
        ] = None,
        depends_on: Annotated[
            list[str | int] | None,
            Field(description="Ids of tasks that must close before this one can start."),
        ] = None,
    ) -> Annotated[CallToolResult, Task]:
        """Add one task (to your inbox unless list= names another) and return it with its id.
        For several tasks, or a plan with subtasks and dependencies, use add_tasks (one call, all or
        nothing)."""
        task = await service.store.add_task(
            actor(), title, description=description, priority=priority, list_ref=list, parent=parent,
            due=due, tags=tags or (), depends_on=depends_on or (),
        )  # fmt: skip
        return reply(task, render.added(task))

    @server.tool(title="Add many tasks (a nested plan)", read_only=False)
    async def add_tasks(
        tasks: Annotated[
            list[NewTask],
            Field(
                min_length=1,
                description="Tasks to create; each may nest subtasks and name a key for depends_on.",
            ),
        ],
        list: ListRef = None,
        parent: Annotated[
            str | int | None, Field(description="Put the top-level tasks under this task id.")
        ] = None,
    ) -> Annotated[CallToolResult, AddedTasks]:
        """Create a batch of tasks in one transaction: all of them or none (at most 5000). Subtasks
        nest up to 90 levels per call (go deeper with a second call whose parent= is the deepest
        task). Dependencies between new tasks use keys: give a task key='design' and
        another depends_on=['design']; existing tasks are named by id. Returns each new id (a table:
        id, key, title, parent)."""
        result = await service.store.add_tasks(actor(), tasks, list_ref=list, parent=parent)
        return reply(result, render.added_batch(result))

    @server.tool(title="Create a list", read_only=False)
    async def create_list(
        name: Annotated[str, Field(description="Short name used to refer to it, e.g. website-launch.")],
        title: Annotated[str | None, Field(description="Display title (default: the name).")] = None,
        description: str = "",
        workspace: Annotated[
            str | None, Field(description="Workspace it belongs to (only if you may use several).")
        ] = None,
    ) -> Annotated[CallToolResult, ListInfo]:
        """Create a list (a project) to hold tasks. Tasks go to the 'inbox' list unless you name one."""
        info = await service.store.create_list(
            actor(), name, title=title, description=description, workspace=workspace
        )
        return reply(info, "Created list " + render.list_line(info))

    # -- tools: reading ------------------------------------------------------------------------
    @server.tool(title="Get a task", read_only=True)
    async def get_task(task_id: TaskId) -> Annotated[CallToolResult, TaskDetail]:
        """One task in full: fields, version, parents, subtasks, what it waits on and what waits on it."""
        found = await service.store.get_task(actor(), task_id)
        return reply(found, render.detail(found))

    @server.tool(title="List tasks", read_only=True, paging="call it again with a smaller limit, then offset")
    async def list_tasks(
        list: Annotated[
            str | None, Field(description="Only this list (default: every list not archived).")
        ] = None,
        status: Annotated[
            list[Status | Literal["open", "closed"]] | None,
            Field(
                description=(
                    "Only these statuses; 'open' = todo, in_progress, blocked; 'closed' = done, cancelled."
                )
            ),
        ] = None,
        priority: Annotated[list[Priority] | None, Field(description="Only these priorities.")] = None,
        tag: Annotated[str | None, Field(description="Only tasks with this tag.")] = None,
        due_before: Annotated[
            str | None, Field(description="Due on or before this date (YYYY-MM-DD).")
        ] = None,
        due_after: Annotated[str | None, Field(description="Due on or after this date (YYYY-MM-DD).")] = None,
        parent: Annotated[
            str | int | None,
            Field(description="Only direct subtasks of this task id; '' for top-level tasks."),
        ] = None,
        text: Annotated[str | None, Field(description="Words in the title or description.")] = None,
        sort: Annotated[
            Literal["tree", "priority", "due", "created", "updated", "title"],
            Field(description="tree = list order with subtasks under their parent (depth column)."),
        ] = "tree",
        offset: Annotated[
            int, Field(ge=0, description="Skip this many (next_offset of the previous page).")
        ] = 0,
        limit: Annotated[int | None, Field(ge=1, le=500, description="Tasks per page (default 50).")] = None,
    ) -> Annotated[CallToolResult, TaskPage]:
        """Find tasks by list, status, priority, tag, due dates, parent or text; sorted and paged.
        The result is a table (columns + rows); when next_offset is set, call again with it. Use
        get_task for descriptions and subtasks, next_task to pick what to do."""
        found = await service.store.list_tasks(
            actor(),
            Filters(list_ref=list, status=status or (), priority=priority or (), tag=tag,
                    due_before=due_before, due_after=due_after, parent=parent, text=text),
            sort=sort, offset=offset, limit=limit,
        )  # fmt: skip
        return reply(found, render.page(found))

    @server.tool(title="What to do next", read_only=True)
    async def next_task(
        list: Annotated[str | None, Field(description="Only this list (default: every list).")] = None,
        tag: Annotated[str | None, Field(description="Only tasks with this tag.")] = None,
    ) -> Annotated[CallToolResult, NextTask]:
        """The most important task that can start now, and why: open, nothing it depends on still
        open, no open subtasks; overdue and soon-due first, then priority, then work in progress and
        tasks that unblock others. Also names the next few."""
        found = await service.store.next_task(actor(), list_ref=list, tag=tag)
        return reply(found, render.next_task(found))

    @server.tool(title="List the lists", read_only=True)
    async def list_lists(
        include_archived: bool = False,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int | None, Field(ge=1, le=500)] = None,
    ) -> Annotated[CallToolResult, ListsPage]:
        """Your lists (projects) with task counts by status. Archived lists only when asked."""
        found = await service.store.list_lists(
            actor(), include_archived=include_archived, offset=offset, limit=limit
        )
        return reply(found, render.lists(found))

    # -- tools: changing -----------------------------------------------------------------------
    @server.tool(title="Update a task", read_only=False, idempotent=True)
    async def update_task(
        task_id: TaskId,
        expected_version: ExpectedVersion = None,
        title: str | None = None,
        description: str | None = None,
        priority: Priority | None = None,
        status: Status | None = None,
        due: Annotated[str | None, Field(description="YYYY-MM-DD; '' removes the due date.")] = None,
        tags: Annotated[list[str] | None, Field(description="Replace all tags.")] = None,
        add_tags: list[str] | None = None,
        remove_tags: list[str] | None = None,
        depends_on: Annotated[list[str | int] | None, Field(description="Replace all dependencies.")] = None,
        add_dependencies: list[str | int] | None = None,
        remove_dependencies: list[str | int] | None = None,
    ) -> Annotated[CallToolResult, Changed]:
        """Change any fields of a task; fields you leave out stay as they are, so two clients changing
        different fields both succeed. With expected_version the change applies only if the task is
        still at that version; otherwise you get a conflict error carrying the current task. Closing a
        task with open subtasks is refused here: use complete_task / set_status with include_subtasks."""
        result = await service.store.update_task(
            actor(), task_id, expected_version=expected_version, title=title, description=description,
            priority=priority, status=status, due=due, tags=tags, add_tags=add_tags or (),
            remove_tags=remove_tags or (), depends_on=depends_on, add_dependencies=add_dependencies or (),
            remove_dependencies=remove_dependencies or (),
        )  # fmt: skip
        return reply(result, render.changed(result))

    @server.tool(title="Set a task's status", read_only=False, idempotent=True)
    async def set_status(
        task_id: TaskId,
        status: Annotated[Status, Field(description="todo, in_progress, blocked, done or cancelled.")],
        include_subtasks: IncludeSubtasks = False,
        expected_version: ExpectedVersion = None,
    ) -> Annotated[CallToolResult, Changed]:
        """Move a task through todo -> in_progress -> done (or blocked, cancelled). Closing (done,
        cancelled) a task that has open subtasks is refused unless include_subtasks=true."""
        result = await service.store.set_status(
            actor(), task_id, status, include_subtasks=include_subtasks, expected_version=expected_version
        )
        return reply(result, render.changed(result, f"set to {status}"))

    @server.tool(title="Complete a task", read_only=False, idempotent=True)
    async def complete_task(
        task_id: TaskId, include_subtasks: IncludeSubtasks = False, expected_version: ExpectedVersion = None
    ) -> Annotated[CallToolResult, Changed]:
        """Mark a task done (the same as set_status done). A task with open subtasks is refused unless
        include_subtasks=true, which completes them too. Then call next_task."""
        result = await service.store.set_status(
            actor(), task_id, "done", include_subtasks=include_subtasks, expected_version=expected_version
        )
        return reply(result, render.changed(result, "completed"))

    @server.tool(title="Move a task", read_only=False)
    async def move_task(
        task_id: TaskId,
        parent: Annotated[
            str | int | None, Field(description="New parent task id; '' makes it a top-level task.")
        ] = None,
        list: Annotated[str | None, Field(description="Move it (with its subtasks) to this list.")] = None,
        before: Annotated[str | int | None, Field(description="Place it just before this sibling.")] = None,
        after: Annotated[str | int | None, Field(description="Place it just after this sibling.")] = None,
        position: Annotated[
            Literal["first", "last"] | None, Field(description="First or last among its siblings.")
        ] = None,
        expected_version: ExpectedVersion = None,
    ) -> Annotated[CallToolResult, Changed]:
        """Reorder a task among its siblings, give it another parent, or move it to another list (its
        subtasks come along). Give one of before / after / position to choose the place."""
        result = await service.store.move_task(
            actor(), task_id, parent=parent, list_ref=list, before=before, after=after, position=position,
            expected_version=expected_version,
        )  # fmt: skip
        return reply(result, render.changed(result, "moved"))

    async def deleted(task_id: str | int, include_subtasks: bool) -> str | None:
        caller = actor()

        async def fetch(number: str) -> TaskDetail:
            return await service.store.get_task(caller, number)

        return await losses.describe_deletion(fetch, task_id, include_subtasks=include_subtasks)

    @server.tool(title="Delete a task", read_only=False, destructive=True, confirm=deleted)
    async def delete_task(
        task_id: TaskId,
        consent: Consent,
        include_subtasks: Annotated[
            bool, Field(description="Also delete its subtasks (required when it has any).")
        ] = False,
        expected_version: ExpectedVersion = None,
    ) -> Annotated[CallToolResult, Deleted]:
        """Delete a task for good (there is no undo; set_status cancelled keeps it). A task with
        subtasks is refused unless include_subtasks=true. Tasks that depended on it no longer wait.
        The user may first be asked, with every task that would be deleted named."""
        if not consent.go_ahead:
            return reply(Deleted(deleted=[], unblocked=[]), consent.refusal)
        result = await service.store.delete_task(
            actor(), task_id, include_subtasks=include_subtasks, expected_version=expected_version
        )
        return reply(result, render.deleted(result))

    @server.tool(title="Archive a list", read_only=False, idempotent=True)
    async def archive_list(
        list: Annotated[str, Field(description="The list's name.")],
        archived: Annotated[bool, Field(description="false brings an archived list back.")] = True,
    ) -> Annotated[CallToolResult, ListInfo]:
        """Archive a finished list: its tasks leave list_tasks, next_task and tasks://list but stay
        readable by naming the list. archived=false restores it."""
        info = await service.store.archive_list(actor(), list, archived=archived)
        return reply(info, ("Archived " if info.archived else "Restored ") + render.list_line(info))

    # -- resources -----------------------------------------------------------------------------
    @server.resource(
        uris.ALL_TASKS, name="tasks", title="All tasks", mime_type="application/json",
        description="Every task you can see (lists not archived) as a JSON array, oldest first.",
    )  # fmt: skip
    async def all_tasks_resource() -> str:
        tasks = await service.store.all_tasks(actor())
        return json.dumps([t.model_dump(mode="json") for t in tasks], ensure_ascii=False, indent=1)

    @server.resource(
        uris.ALL_LISTS, name="lists", title="Lists", mime_type="application/json",
        description="Your lists with task counts by status (JSON).",
    )  # fmt: skip
    async def all_lists_resource() -> str:
        lists = await service.store.all_lists(actor())
        return json.dumps([i.model_dump(mode="json") for i in lists], ensure_ascii=False, indent=1)

    @server.resource(
        uris.LIST_TEMPLATE, name="list", title="A list", mime_type="application/json",
        description="One list and its tasks in order, subtasks under their parents (JSON with depth).",
    )  # fmt: skip
    async def list_resource(list: str) -> str:
        return (await service.store.list_view(actor(), list)).to_json()

    @server.resource(
        uris.LIST_MARKDOWN_TEMPLATE, name="list-markdown", title="A list as a checklist",
        mime_type="text/markdown",
        description="One list as a Markdown checklist.",
    )  # fmt: skip
    async def list_markdown_resource(list: str) -> str:
        return render.markdown_list(await service.store.list_view(actor(), list))

    @server.resource(
        uris.TASK_TEMPLATE, name="task", title="A task", mime_type="application/json",
        description="One task with parents, subtasks and dependencies (JSON).",
    )  # fmt: skip
    async def task_resource(task_id: str) -> str:
        return (await service.store.get_task(actor(), task_id)).model_dump_json(indent=1)

    @server.resource(
        uris.TASK_MARKDOWN_TEMPLATE, name="task-markdown", title="A task in Markdown",
        mime_type="text/markdown",
        description="One task as Markdown.",
    )  # fmt: skip
    async def task_markdown_resource(task_id: str) -> str:
        return render.markdown_task(await service.store.get_task(actor(), task_id))

    async def list_task_resources(session: Any, cursor: str | None) -> tuple[list[Resource], str | None]:
        start = cursor_offset(cursor)
        entries, more = await service.store.resource_entries(actor(), offset=start, limit=RESOURCE_PAGE)
        found = [
            Resource(uri=e.uri, name=e.name, title=e.title, mime_type=e.mime_type, description=e.description)
            for e in entries
        ]
        return found, str(start + RESOURCE_PAGE) if more else None

    # Lists and tasks are per caller (private) and change with every write, the model's own
    # included: never reuse a read.
    per_caller = CacheHint(ttl_ms=0, scope="private")
    server.list_resources_with(list_task_resources, cache=per_caller)
    server.cache(r"tasks://.*", per_caller)

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        if not isinstance(ref, ResourceTemplateReference | PromptReference):
            return None
        prefix = argument.value or ""
        if argument.name == "list":
            values = await service.store.complete_lists(actor(), prefix)
        elif argument.name == "task_id" and isinstance(ref, ResourceTemplateReference):
            values = await service.store.complete_tasks(actor(), prefix)
        else:
            return None
        return Completion(values=values[:100], has_more=len(values) > 100)

    # -- prompts -------------------------------------------------------------------------------
    @server.prompt(title="Summarise the tasks")
    async def task_summary(list: str | None = None) -> str:
        """Statistics of the tasks (total, completed, pending, high priority) and a request for advice."""
        with prompt_arguments():
            return prompts.task_summary(await service.store.summary(actor(), list), list)

    @server.prompt(title="Plan a goal as tasks")
    async def plan_goal(goal: str, list: str | None = None) -> str:
        """Break a goal into nested tasks with dependencies and create them with one add_tasks call."""
        return prompts.plan_goal(goal, list)

    @server.prompt(title="Stand-up: what changed")
    async def standup(since: str = "24h", list: str | None = None) -> str:
        """What changed since a time (24h, 3d, 2026-11-20, yesterday), what is in progress, blocked, next."""
        who = actor()
        with prompt_arguments():
            history, truncated = await service.store.history(who, since, list)
            return prompts.standup(
                since, history, truncated, await service.store.summary(who, list),
                await service.store.next_task(who, list_ref=list), list,
            )  # fmt: skip

    return server
