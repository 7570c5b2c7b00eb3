"""How next_task chooses, and the sentence that says why.

Candidates: open tasks (todo, in_progress) of lists not archived, whose dependencies are all
closed and which have no open subtask (a parent is done through its subtasks, so the leaf is
what to work on). They are ordered by, in turn:

1. urgency: overdue first, then due within `SOON_DAYS` days, then the rest;
2. priority: high, medium, low;
3. work already in progress before work not started;
4. how many open tasks wait on it (finishing it unblocks them);
5. earlier due date; then the oldest task.

The order is computed by the database (one indexed query; measured under 10 ms for 10,000
tasks); this module only explains the winner.
"""

from __future__ import annotations

from datetime import date
from typing import Protocol

SOON_DAYS = 2
ALTERNATIVES = 3
#: Ready tasks are counted up to this many (the count is for the explanation, not a statistic).
COUNT_UP_TO = 1000


class _Candidate(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def priority(self) -> str: ...
    @property
    def due(self) -> str | None: ...


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def urgency(due: str | None, today: date) -> tuple[int, str]:
    """(bucket, words): 0 overdue, 1 due soon, 2 otherwise."""
    if due is None:
        return 2, "no due date"
    delta = (date.fromisoformat(due) - today).days
    if delta < 0:
        return 0, f"overdue since {due} ({_days(-delta)})"
    if delta == 0:
        return 1, "due today"
    if delta <= SOON_DAYS:
        return 1, f"due {due} (in {_days(delta)})"
    return 2, f"due {due} (in {_days(delta)})"


def explain(
    best: _Candidate,
    *,
    today: date,
    candidates: int,
    unblocks: int,
    waiting: list[int],
    runner_up: _Candidate | None,
) -> str:
    bucket, due_words = urgency(best.due, today)
    reasons: list[str] = []
    if bucket < 2:
        reasons.append(due_words)
    reasons.append(f"{best.priority} priority")
    if best.status == "in_progress":
        reasons.append("already in progress")
    if unblocks:
        shown = ", ".join(str(w) for w in waiting[:5]) + (", ..." if len(waiting) > 5 else "")
        reasons.append(f"finishing it unblocks {unblocks} open task(s) ({shown})")
    if bucket == 2 and best.due is not None:
        reasons.append(due_words)
    text = (
        f"Task {best.id} {best.title!r}: " + "; ".join(reasons) + ". It is open, nothing it depends on is "
        f"still open, and it has no open subtasks. Chosen from {_count(candidates)} ready task(s)"
    )
    if runner_up is not None:
        text += f"; next would be {runner_up.id} {runner_up.title!r} ({runner_up.priority}"
        text += f", {urgency(runner_up.due, today)[1]})" if runner_up.due else ")"
    text += ". Order: overdue, due within 2 days, priority, in progress, unblocks most, due date, oldest."
    return text


def _count(candidates: int) -> str:
    return f"more than {COUNT_UP_TO:,}" if candidates > COUNT_UP_TO else str(candidates)


def nothing_ready(marked_blocked: int, waiting: int, parents: int) -> str:
    if not (marked_blocked or waiting or parents):
        return (
            "No open task: everything is done or cancelled (or there are no tasks yet). add_task creates one."
        )
    parts = []
    if waiting:
        parts.append(f"{waiting} wait on dependencies that are still open")
    if marked_blocked:
        parts.append(f"{marked_blocked} have status blocked")
    if parents:
        parts.append(f"{parents} wait on their open subtasks")
    return (
        "No task is ready to start: "
        + "; ".join(parts)
        + ". Look at them with list_tasks(status=['blocked']) "
        "or get_task, and unblock one (set_status, update_task remove_dependencies)."
    )
