"""Compact text for tool results (hosts that show only `content`) and the Markdown views."""

from __future__ import annotations

from typing import Any

from mcp_tasks.models import (
    AddedTasks,
    Changed,
    Deleted,
    ListInfo,
    ListsPage,
    NextTask,
    Task,
    TaskDetail,
    TaskPage,
    TaskRef,
)
from mcp_tasks.reads import ListView

_BOX = {"todo": " ", "in_progress": "~", "blocked": "!", "done": "x", "cancelled": "-"}


def _flags(status: str, priority: str, due: str | None, tags: list[str] | None = None) -> str:
    parts = [status, priority]
    if due:
        parts.append(f"due {due}")
    text = ", ".join(parts)
    if tags:
        text += " " + " ".join(f"#{t}" for t in tags)
    return text


def task_line(task: Task, depth: int = 0) -> str:
    line = f"{'  ' * depth}{task.id} {task.title} ({_flags(task.status, task.priority, task.due, task.tags)})"
    if task.depends_on:
        line += f" after {', '.join(task.depends_on)}"
    return line


def ref_line(ref: TaskRef) -> str:
    return f"{ref.id} {ref.title} ({_flags(ref.status, ref.priority, ref.due)})"


def added(task: Task) -> str:
    # The classic demo answered with a sentence naming the title and priority; so do we.
    return (
        f"Task '{task.title}' added with priority {task.priority}: id {task.id} in list {task.list} "
        f"(status {task.status}, version {task.version})."
    )


def changed(result: Changed, verb: str = "updated") -> str:
    t = result.task
    text = f"Task {t.id} {verb}: {task_line(t)}; version {t.version}, by {t.updated_by}."
    if result.also_changed:
        text += f" Also changed: {', '.join(result.also_changed)}."
    return text


def deleted(result: Deleted) -> str:
    text = f"Deleted {len(result.deleted)} task(s): {', '.join(result.deleted)}."
    if result.unblocked:
        text += f" No longer waiting on them: {', '.join(result.unblocked)}."
    return text


def added_batch(result: AddedTasks) -> str:
    lines = [f"Added {result.created} task(s) to list {result.list}:"]
    shown = result.rows[:50]
    for task_id, key, title, parent in shown:
        extra = f" (key {key})" if key else ""
        extra += f" under {parent}" if parent else ""
        lines.append(f"  {task_id} {title}{extra}")
    if len(result.rows) > len(shown):
        lines.append(f"  ... and {len(result.rows) - len(shown)} more (all ids are in the structured result)")
    return "\n".join(lines)


def detail(d: TaskDetail) -> str:
    t = d.task
    lines = [
        f"Task {t.id}: {t.title}",
        f"  list {t.list}; {_flags(t.status, t.priority, t.due, t.tags)}; version {t.version}",
    ]
    lines.append(f"  created {t.created_at} by {t.created_by}; updated {t.updated_at} by {t.updated_by}")
    if d.ancestors:
        lines.append("  under: " + " > ".join(f"{a.id} {a.title}" for a in d.ancestors))
    if d.blocked:
        lines.append("  BLOCKED" + (" (status)" if t.status == "blocked" else " (an open dependency)"))
    if t.description:
        lines.append("  description:")
        lines.extend("    " + line for line in t.description.splitlines())
    if d.subtasks:
        lines.append(f"  subtasks ({d.open_subtasks} open of {d.subtask_count}):")
        lines.extend("    " + ref_line(s) for s in d.subtasks)
        if d.subtask_count > len(d.subtasks):
            lines.append(f"    ... list_tasks(parent={t.id}) shows all {d.subtask_count}")
    if d.dependencies:
        lines.append("  waits on:")
        lines.extend("    " + ref_line(s) for s in d.dependencies)
    if d.dependents:
        lines.append("  blocks:")
        lines.extend("    " + ref_line(s) for s in d.dependents)
    return "\n".join(lines)


def page(p: TaskPage) -> str:
    lines = []
    for values in p.rows:
        cell: dict[str, Any] = dict(zip(p.columns, values, strict=True))
        flags = _flags(cell["status"], cell["priority"], cell["due"], cell["tags"])
        line = f"{'  ' * (cell['depth'] or 0)}{cell['id']} {cell['title']} ({flags}) [{cell['list']}]"
        if cell["depends_on"]:
            line += f" after {', '.join(cell['depends_on'])}"
        lines.append(line)
    lines.append(p.hint)
    return "\n".join(lines)


def list_line(info: ListInfo) -> str:
    c = info.counts
    state = " (archived)" if info.archived else ""
    return (
        f"{info.name}{state}: {info.title} - {info.open} open "
        f"({c.in_progress} in progress, {c.blocked} blocked), "
        f"{c.done} done, {c.cancelled} cancelled"
    )


def lists(p: ListsPage) -> str:
    return "\n".join([*(list_line(i) for i in p.lists), p.hint])


def next_task(n: NextTask) -> str:
    if n.task is None:
        return n.reason
    text = f"Next: {task_line(n.task)} in list {n.task.list}.\nWhy: {n.reason}"
    if n.alternatives:
        text += "\nThen: " + "; ".join(ref_line(a) for a in n.alternatives)
    return text


# -- Markdown views --------------------------------------------------------------------------------
def markdown_list(view: ListView) -> str:
    info = view.info
    lines = [f"# {info.title}", "", f"List `{info.name}`: {list_line(info).split(': ', 1)[1]}", ""]
    if info.description:
        lines += [info.description, ""]
    for task in view.tasks:
        depth = view.depth.get(task.id, 0)
        meta = [task.priority] + ([f"due {task.due}"] if task.due else []) + [f"#{t}" for t in task.tags]
        if task.depends_on:
            meta.append("after " + ", ".join(task.depends_on))
        status = (
            f" *{task.status.replace('_', ' ')}*"
            if task.status in ("in_progress", "blocked", "cancelled")
            else ""
        )
        lines.append(
            f"{'  ' * depth}- [{_BOX[task.status]}] **{task.id}** {task.title}{status} ({', '.join(meta)})"
        )
    if not view.tasks:
        lines.append("_No tasks yet._")
    if view.truncated:
        lines += ["", "_(More tasks than one view shows: list_tasks pages through all of them.)_"]
    return "\n".join(lines) + "\n"


def markdown_task(d: TaskDetail) -> str:
    t = d.task
    lines = [f"# {t.id}. {t.title}", ""]
    lines.append(
        f"- **Status:** {t.status.replace('_', ' ')}"
        + (" (blocked)" if d.blocked and t.status != "blocked" else "")
    )
    lines.append(f"- **Priority:** {t.priority}")
    if t.due:
        lines.append(f"- **Due:** {t.due}")
    if t.tags:
        lines.append("- **Tags:** " + ", ".join(f"#{tag}" for tag in t.tags))
    lines.append(f"- **List:** {t.list}")
    if d.ancestors:
        lines.append("- **Under:** " + " > ".join(f"{a.id}. {a.title}" for a in d.ancestors))
    lines.append(f"- **Updated:** {t.updated_at} by {t.updated_by} (version {t.version})")
    if t.description:
        lines += ["", t.description]
    for heading, refs in (("Subtasks", d.subtasks), ("Waits on", d.dependencies), ("Blocks", d.dependents)):
        if refs:
            lines += ["", f"## {heading}", ""]
            lines += [f"- [{_BOX[r.status]}] **{r.id}** {r.title} ({r.priority})" for r in refs]
    return "\n".join(lines) + "\n"
