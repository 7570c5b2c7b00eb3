"""Confirmation before destruction on mcp-tasks (`delete_task`): what the user is asked
(`mcp_tasks.losses`), and the server as a subprocess through the SDK's `Client` in both eras,
over stdio and HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, InputRequiredResult
from mcp_batteries.errors import NotFound
from mcp_batteries.testing import ERAS, Era, connect, connect_http, http_server, stdio_params
from mcp_tasks import losses
from mcp_tasks.models import Task, TaskDetail, TaskRef

from .conftest import FAST_START

pytestmark = pytest.mark.anyio

SCRIPT = "mcp-batteries-tasks"


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def answering(action: str, asked: list[str]) -> Any:
    async def callback(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)  # type: ignore[arg-type]

    return callback


async def plan(c: Client) -> tuple[str, list[str]]:
    """A task "Release 2.0" with two subtasks, one with a subtask of its own, and a dependent."""

    async def add(title: str, **more: Any) -> str:
        result = await c.call_tool("add_task", {"title": title, **more})
        assert not result.is_error, text(result)
        return str(result.structured_content["id"])  # type: ignore[index]

    top = await add("Release 2.0")
    notes = await add("Write release notes", parent=top)
    tag = await add("Tag the release", parent=top)
    sign = await add("Sign the tag", parent=tag)
    await add("Announce", depends_on=[top])
    return top, [notes, tag, sign]


async def remaining(c: Client) -> set[str]:
    page: Any = (await c.call_tool("list_tasks", {})).structured_content
    title = page["columns"].index("title")
    return {row[title] for row in page["rows"]}


@pytest.mark.parametrize("era", ERAS)
async def test_deleting_a_task_names_every_task_below_and_a_decline_keeps_them(
    db_path: Path, era: Era
) -> None:
    asked: list[str] = []
    params = stdio_params(SCRIPT, "--db", str(db_path), env=FAST_START)
    async with connect(params, era, elicitation_callback=answering("decline", asked)) as c:
        top, _below = await plan(c)
        kept = await c.call_tool("delete_task", {"task_id": top, "include_subtasks": True})
        assert not kept.is_error and text(kept).startswith("Nothing was changed: the user declined.")
        assert kept.structured_content == {"deleted": [], "unblocked": []}
        assert "Sign the tag" in await remaining(c)
    (question,) = asked
    assert (
        f"delete the task {top} 'Release 2.0' (todo, list inbox, version 1) for good, with the 3 tasks"
        in question
    )
    for title in ("Write release notes", "Tag the release", "Sign the tag"):
        assert f"{title!r} (todo)" in question
    assert "Tasks waiting on it stop waiting:" in question and "'Announce'" in question


@pytest.mark.parametrize("era", ERAS)
async def test_an_accepted_deletion_over_http_deletes_exactly_what_was_named(db_path: Path, era: Era) -> None:
    asked: list[str] = []
    async with (
        http_server(SCRIPT, "--db", str(db_path), env=FAST_START) as running,
        connect_http(running.url, era, elicitation_callback=answering("accept", asked)) as c,
    ):
        top, below = await plan(c)
        done = await c.call_tool("delete_task", {"task_id": top, "include_subtasks": True})
        assert not done.is_error, text(done)
        assert sorted(done.structured_content["deleted"]) == sorted([top, *below])  # type: ignore[index]
        assert await remaining(c) == {"Announce"}
    assert len(asked) == 1


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_cannot_be_asked_is_refused_under_destructive(db_path: Path, era: Era) -> None:
    params = stdio_params(SCRIPT, "--db", str(db_path), "--confirm", "destructive", env=FAST_START)
    async with connect(params, era) as c:
        top, _below = await plan(c)
        refused = await c.call_tool("delete_task", {"task_id": top, "include_subtasks": True})
        assert refused.is_error and "--confirm" in text(refused) and "Release 2.0" in text(refused)
        assert "Release 2.0" in await remaining(c)


async def test_an_altered_state_is_refused(db_path: Path) -> None:
    params = stdio_params(SCRIPT, "--db", str(db_path), env=FAST_START)
    async with connect(params, "modern", elicitation_callback=answering("accept", [])) as c:
        top, _below = await plan(c)
        arguments = {"task_id": top, "include_subtasks": True}
        first = await c.session.call_tool("delete_task", arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult) and first.request_state
        (key,) = first.input_requests
        answer = {key: ElicitResult(action="accept", content={"confirm": True})}
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await c.session.call_tool(
                "delete_task", arguments, input_responses=answer, request_state=first.request_state[:-1]
            )
        assert "Release 2.0" in await remaining(c)


# -- what would be lost (domain, `mcp_tasks.losses`) --------------------------------------------
def detail(task_id: str, title: str, children: list[str], count: int | None = None) -> TaskDetail:
    task = Task(
        id=task_id, list="inbox", title=title, description="", status="todo", priority="medium", due=None,
        tags=[], parent=None, depends_on=[], completed=False, created_at="", created_by="", updated_at="",
        updated_by="", version=1,
    )  # fmt: skip
    refs = [TaskRef(id=c, title=f"task {c}", status="todo", priority="medium") for c in children]
    return TaskDetail(
        task=task, ancestors=[], subtasks=refs, subtask_count=len(children) if count is None else count,
        open_subtasks=len(children), dependencies=[], dependents=[], blocked=False,
    )  # fmt: skip


async def test_a_deep_tree_is_named_up_to_the_limit_and_counted_beyond() -> None:
    tree = {"1": detail("1", "root", [str(n) for n in range(2, 2 + losses.MAX_NAMED + 10)])}
    for n in range(2, 2 + losses.MAX_NAMED + 10):
        tree[str(n)] = detail(str(n), f"task {n}", [])

    async def fetch(task_id: str) -> TaskDetail:
        return tree[task_id]

    described = await losses.describe_deletion(fetch, "1", include_subtasks=True)
    assert described is not None
    lines = described.split("\n")
    assert lines[0] == (
        "delete the task 1 'root' (todo, list inbox, version 1) for good, "
        f"with the {losses.MAX_NAMED + 10} tasks below it:"
    )
    assert lines[-1] == "  ... and 10 more"
    assert await losses.describe_deletion(fetch, "1", include_subtasks=False) is None  # refused by the call


async def test_a_task_that_cannot_be_read_asks_nothing() -> None:
    async def fetch(task_id: str) -> TaskDetail:
        raise NotFound(f"task {task_id} not found")

    assert await losses.describe_deletion(fetch, "9", include_subtasks=True) is None
