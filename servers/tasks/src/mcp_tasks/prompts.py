"""The prompts' text: a summary of the tasks, a plan for a goal, a stand-up since a time."""

from __future__ import annotations

from collections import Counter

from mcp_tasks.models import NextTask
from mcp_tasks.reads import HistoryEntry, Summary
from mcp_tasks.render import list_line, next_task


def task_summary(s: Summary, list_ref: str | None) -> str:
    # Same statistics, in the same order, as the classic demo's task_summary prompt.
    scope = f"list {list_ref}" if list_ref else "all lists"
    lines = [
        f"You are a productivity assistant. Here is the current state of the user's tasks ({scope}):",
        "",
        "Task statistics:",
        f"- Total tasks: {s.total}",
        f"- Completed: {s.done}",
        f"- Pending: {s.open} ({s.in_progress} in progress, {s.blocked} blocked)",
        f"- High priority (not completed): {s.high_open}",
        f"- Overdue: {s.overdue}",
    ]
    if s.cancelled:
        lines.append(f"- Cancelled: {s.cancelled}")
    if s.lists:
        lines += ["", "Lists:"] + [f"- {list_line(info)}" for info in s.lists[:50]]
    lines += [
        "",
        "Give a brief analysis of progress and advice on managing these tasks. The tools list_tasks, "
        "get_task and next_task show the details; read the resource tasks://list for every task as JSON.",
    ]
    return "\n".join(lines)


def plan_goal(goal: str, list_ref: str | None) -> str:
    target = f"list={list_ref!r}" if list_ref else "a list (create_list first if the goal deserves its own)"
    return (
        f"Plan this goal as tasks:\n\n{goal}\n\n"
        "1. Read what exists first: list_lists, and list_tasks on the list you will use, so you do not "
        "duplicate tasks that are already there.\n"
        "2. Break the goal into concrete tasks a person or agent can finish in one sitting; group them "
        "under a few top-level tasks with subtasks (nest as deep as it helps).\n"
        "3. Give each task a short imperative title, a description with what 'done' means, a priority "
        "(low, medium, high) and a due date (YYYY-MM-DD) when one is known. Tag them when it helps.\n"
        "4. Where one task must wait for another, give the earlier one a key and list that key in the "
        "later one's depends_on (ids of existing tasks work too). Avoid cycles.\n"
        f"5. Create everything with ONE add_tasks call into {target}: the batch is created whole or not "
        "at all.\n"
        "6. Then call next_task and say which task to start with and why."
    )


def standup(
    since: str,
    history: list[HistoryEntry],
    truncated: bool,
    summary: Summary,
    upcoming: NextTask,
    list_ref: str | None,
) -> str:
    scope = f" in list {list_ref}" if list_ref else ""
    lines = [f"Write a short stand-up update{scope} covering what changed since {since}.", ""]
    if not history:
        lines.append("Nothing changed in that time.")
    else:
        kinds = Counter(e.kind for e in history)
        done = [e for e in history if e.kind == "status" and e.detail.endswith("-> done")]
        lines.append(
            f"Changes ({len(history)}): "
            + ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in sorted(kinds.items()))
            + (" (older changes were cut; only the most recent are listed)" if truncated else "")
        )
        if done:
            lines += ["", "Completed:"] + [f"- {e.task} {e.title} ({e.actor}, {e.at})" for e in done[:50]]
        lines += ["", "All changes, oldest first:"]
        for e in history[-200:]:
            what = f"{e.task} {e.title}" if e.task else e.title or e.list
            lines.append(
                f"- {e.at} {e.actor}: {e.kind.replace('_', ' ')} {what}"
                + (f" ({e.detail})" if e.detail else "")
            )
    lines += [
        "",
        f"Now: {summary.open} open ({summary.in_progress} in progress, {summary.blocked} blocked), "
        f"{summary.overdue} overdue, {summary.done} done.",
        "",
        next_task(upcoming),
        "",
        "Summarise as: done since then, in progress, blocked (and what would unblock it), next up. "
        "Keep it to a few lines per person.",
    ]
    return "\n".join(lines)
