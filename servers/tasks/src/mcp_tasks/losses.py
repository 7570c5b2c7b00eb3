"""What `delete_task` would destroy, in the words its user is asked to confirm: the task (its
title, status and list) and, with include_subtasks, every task below it, plus the tasks that wait
on it and would stop waiting. None when the call will be refused anyway (the task does not exist
or is not the caller's to see, or it has subtasks and include_subtasks is false)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mcp_batteries.errors import BatteriesError

from mcp_tasks.models import TaskDetail, TaskRef

__all__ = ["MAX_NAMED", "describe_deletion"]

#: Tasks named one by one in a question (and fetched to find them); the rest are counted.
MAX_NAMED = 50

#: Reads one task as the caller sees it.
Fetch = Callable[[str], Awaitable[TaskDetail]]


def _line(task: TaskRef | TaskDetail) -> str:
    if isinstance(task, TaskDetail):
        return f"{task.task.id} {task.task.title!r} ({task.task.status})"
    return f"{task.id} {task.title!r}"


async def describe_deletion(fetch: Fetch, task_id: str | int, *, include_subtasks: bool) -> str | None:
    try:
        top = await fetch(str(task_id))
    except BatteriesError:
        return None  # the call itself says what is wrong
    if top.subtask_count and not include_subtasks:
        return None
    below: list[TaskDetail] = []
    pending = list(top.subtasks)
    while pending and len(below) < MAX_NAMED:
        try:
            child = await fetch(pending.pop(0).id)
        except BatteriesError:
            continue
        below.append(child)
        pending.extend(child.subtasks)
    counted = _count(top, below)
    task = top.task
    lines = [
        f"delete the task {task.id} {task.title!r} ({task.status}, list {task.list}, version {task.version}) "
        "for good" + (f", with the {counted} task{'s' if counted != 1 else ''} below it:" if counted else "")
    ]
    lines += [f"  {_line(child)}" for child in below]
    if counted > len(below):
        lines.append(f"  ... and {counted - len(below)} more")
    if top.dependents:
        waiting = ", ".join(_line(d) for d in top.dependents[:10])
        lines.append(f"Tasks waiting on it stop waiting: {waiting}")
    return "\n".join(lines)


def _count(top: TaskDetail, below: list[TaskDetail]) -> int:
    """Every task below `top`: those fetched, plus the direct subtasks of each that were not."""
    fetched = {child.task.id for child in below}
    total = len(below)
    for node in [top, *below]:
        total += sum(1 for ref in node.subtasks if ref.id not in fetched)
        total += max(0, node.subtask_count - len(node.subtasks))
    return total
