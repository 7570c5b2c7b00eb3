"""mcp-tasks through real clients: the classic demo's shapes, every tool and resource, both eras,
stdio and HTTP subprocesses, read-only mode, and this process's own changes heard live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import PromptReference, ResourceTemplateReference
from mcp_batteries.testing import (
    ERAS,
    Era,
    Notifications,
    connect,
    connect_http,
    http_server,
    stdio_params,
    write_private,
)
from mcp_tasks.config import TasksSettings
from mcp_tasks.server import build_server

from .conftest import FAST_START, hearing, updated

pytestmark = pytest.mark.anyio

READING = {"get_task", "list_tasks", "next_task", "list_lists"}
WRITING = {"add_task", "add_tasks", "update_task", "set_status", "complete_task", "move_task", "delete_task",
           "create_list", "archive_list"}  # fmt: skip

# The classic demo task server (a FastMCP "Personal Assistant" example, copied widely) as found in
# public code: `@mcp.tool() def add_task(title: str, description: str = "", priority: str = "medium")
# -> str` with priorities low/medium/high, answering a sentence that names the title and priority;
# `@mcp.resource("tasks://list")` returning `json.dumps(tasks)`, a JSON array of objects with these
# keys; and `@mcp.prompt() def task_summary() -> str` taking no arguments, whose text gives total,
# completed, pending and high-priority counts. Examples written for it must run unchanged.
DEMO_TASK_KEYS = {"id", "title", "description", "priority", "completed", "created_at"}
DEMO_PRIORITIES = ["low", "medium", "high"]


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def server_for(path: Path, **settings: Any) -> Any:
    return build_server(TasksSettings(db=path, **settings))


@pytest.mark.parametrize("era", ERAS)
async def test_examples_written_for_the_classic_demo_run_unchanged(db_path: Path, era: Era) -> None:
    async with connect(server_for(db_path).mcp, era) as c:
        schema = next(t for t in (await c.list_tools()).tools if t.name == "add_task").input_schema
        assert schema["required"] == ["title"]
        assert schema["properties"]["description"]["default"] == ""
        assert schema["properties"]["priority"]["default"] == "medium"
        assert schema["properties"]["priority"]["enum"] == DEMO_PRIORITIES

        # The demo's own example calls, as written for it:
        first = await c.call_tool(
            "add_task", {"title": "Learn MCP", "description": "Read the spec", "priority": "high"}
        )
        second = await c.call_tool("add_task", {"title": "Buy milk"})
        assert not first.is_error and "Learn MCP" in text(first) and "high" in text(first)
        assert "medium" in text(second)
        tasks = json.loads((await c.read_resource("tasks://list")).contents[0].text)
        assert isinstance(tasks, list) and [t["title"] for t in tasks] == ["Learn MCP", "Buy milk"]
        for task in tasks:
            assert task.keys() >= DEMO_TASK_KEYS
        assert (tasks[0]["description"], tasks[0]["priority"], tasks[0]["completed"]) == (
            "Read the spec",
            "high",
            False,
        )
        prompts = {p.name: p for p in (await c.list_prompts()).prompts}
        assert not any(a.required for a in prompts["task_summary"].arguments or [])
        summary = str((await c.get_prompt("task_summary")).messages[0].content.text)  # type: ignore[union-attr]
        for line in ("Total tasks: 2", "Completed: 0", "Pending: 2", "High priority (not completed): 1"):
            assert line in summary

        refused = await c.call_tool("add_task", {"title": "x", "priority": "urgent"})
        assert refused.is_error


@pytest.mark.parametrize("era", ERAS)
async def test_every_tool_answers_with_structured_content_and_compact_text(db_path: Path, era: Era) -> None:
    async with connect(server_for(db_path).mcp, era) as c:
        await exercise_every_tool(c)


async def exercise_every_tool(c: Client) -> None:
    tools = {t.name: t for t in (await c.list_tools()).tools}
    assert set(tools) == READING | WRITING
    for name, tool in tools.items():
        assert tool.output_schema is not None, name
        assert tool.annotations is not None and tool.annotations.read_only_hint == (name in READING), name
    assert tools["delete_task"].annotations.destructive_hint is True  # type: ignore[union-attr]

    async def call(tool: str, **args: Any) -> dict[str, Any]:
        result = await c.call_tool(tool, args)
        assert not result.is_error, f"{tool}: {text(result)}"
        assert result.structured_content is not None and text(result) and "{" not in text(result)[:1]
        return result.structured_content

    made = await call("create_list", name="launch", title="Website launch")
    assert made["name"] == "launch" and made["total"] == 0
    plan = await call(
        "add_tasks", list="launch",
        tasks=[{"title": "Build", "key": "b", "priority": "high",
                "subtasks": [{"title": "API"}, {"title": "UI"}]},
               {"title": "Announce", "depends_on": ["b"], "tags": ["comms"], "due": "2030-01-01"}],
    )  # fmt: skip
    assert plan["created"] == 4 and [r[0] for r in plan["rows"]] == ["1", "2", "3", "4"]
    one = await call("add_task", title="Inbox item", tags=["misc"])
    assert one["list"] == "inbox"
    detail = await call("get_task", task_id=1)
    assert [s["id"] for s in detail["subtasks"]] == ["2", "3"] and [
        d["id"] for d in detail["dependents"]
    ] == ["4"]
    page = await call("list_tasks", list="launch", limit=2)
    assert (
        page["total"] == 4
        and page["next_offset"] == 2
        and page["columns"][0] == "id"
        and len(page["rows"]) == 2
    )
    assert (await call("list_tasks", tag="comms", sort="due"))["rows"][0][2] == "Announce"
    nxt = await call("next_task", list="launch")
    assert nxt["task"]["title"] == "API" and "Chosen from" in nxt["reason"]
    changed = await call("update_task", task_id=2, expected_version=1, description="REST", add_tags=["api"])
    assert changed["task"]["version"] == 2 and changed["task"]["tags"] == ["api"]
    conflict = await c.call_tool("update_task", {"task_id": 2, "expected_version": 1, "title": "late"})
    assert conflict.is_error and "conflict" in text(conflict) and '"version":2' in text(conflict)
    status = await call("set_status", task_id=2, status="in_progress")
    assert status["task"]["status"] == "in_progress"
    refused = await c.call_tool("complete_task", {"task_id": 1})
    assert refused.is_error and "open subtask" in text(refused)
    done = await call("complete_task", task_id=1, include_subtasks=True)
    assert done["task"]["completed"] is True and sorted(done["also_changed"]) == ["2", "3"]
    moved = await call("move_task", task_id=5, list="launch", position="first")
    assert moved["task"]["list"] == "launch"
    lists = await call("list_lists")
    assert [i["name"] for i in lists["lists"]] == ["inbox", "launch"]
    gone = await call("delete_task", task_id=1, include_subtasks=True)
    assert gone["deleted"] == ["1", "2", "3"] and gone["unblocked"] == ["4"]
    archived = await call("archive_list", list="launch")
    assert archived["archived"] is True
    missing = await c.call_tool("get_task", {"task_id": 1})
    assert missing.is_error and "no task 1" in text(missing)


@pytest.mark.parametrize("era", ERAS)
async def test_resources_templates_completion_and_prompts(db_path: Path, era: Era) -> None:
    async with connect(server_for(db_path).mcp, era) as c:
        await exercise_resources_and_prompts(c)


async def exercise_resources_and_prompts(c: Client) -> None:
    """Resources, templates, completion and prompts, on whatever the database already holds."""
    await c.call_tool("create_list", {"name": "work"})
    added = await c.call_tool(
        "add_tasks", {"list": "work", "tasks": [{"title": "Parent", "subtasks": [{"title": "Child"}]}]}
    )
    parent, child = (row[0] for row in added.structured_content["rows"])  # type: ignore[index]
    templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
    assert templates == {"tasks://lists/{list}", "tasks://lists/{list}/markdown", "tasks://tasks/{task_id}",
                         "tasks://tasks/{task_id}/markdown"}  # fmt: skip
    listed = [str(r.uri) for r in (await c.list_resources()).resources]
    assert listed[:2] == ["tasks://list", "tasks://lists"]
    assert {"tasks://lists/work", f"tasks://tasks/{parent}", f"tasks://tasks/{child}"} <= set(listed)
    lists = json.loads((await c.read_resource("tasks://lists")).contents[0].text)
    assert "work" in [i["name"] for i in lists]
    work = json.loads((await c.read_resource("tasks://lists/work")).contents[0].text)
    assert [(t["title"], t["depth"]) for t in work["tasks"]] == [("Parent", 0), ("Child", 1)]
    checklist = (await c.read_resource("tasks://lists/work/markdown")).contents[0]
    assert checklist.mime_type == "text/markdown" and f"  - [ ] **{child}** Child" in checklist.text  # type: ignore[union-attr]
    task = json.loads((await c.read_resource(f"tasks://tasks/{child}")).contents[0].text)
    assert task["task"]["parent"] == parent and task["ancestors"][0]["title"] == "Parent"
    assert f"# {child}. Child" in (await c.read_resource(f"tasks://tasks/{child}/markdown")).contents[0].text  # type: ignore[union-attr]
    with pytest.raises(Exception, match="no task 9999"):
        await c.read_resource("tasks://tasks/9999")
    lists_done = await c.complete(
        ResourceTemplateReference(type="ref/resource", uri="tasks://lists/{list}"),
        {"name": "list", "value": "w"},
    )
    assert lists_done.completion.values == ["work"]
    ids = await c.complete(
        ResourceTemplateReference(type="ref/resource", uri="tasks://tasks/{task_id}"),
        {"name": "task_id", "value": ""},
    )
    assert ids.completion.values[:2] == [child, parent]  # open tasks first, newest first
    prompt_lists = await c.complete(
        PromptReference(type="ref/prompt", name="standup"), {"name": "list", "value": "w"}
    )
    assert prompt_lists.completion.values == ["work"]
    prompts = {p.name for p in (await c.list_prompts()).prompts}
    assert prompts == {"task_summary", "plan_goal", "standup"}
    plan = (await c.get_prompt("plan_goal", {"goal": "ship v2", "list": "work"})).messages[0].content
    assert "ship v2" in plan.text and "add_tasks" in plan.text  # type: ignore[union-attr]
    await c.call_tool("complete_task", {"task_id": child})
    standup = (await c.get_prompt("standup", {"since": "1h", "list": "work"})).messages[0].content.text  # type: ignore[union-attr]
    assert "Completed:" in standup and f"{child} Child" in standup and "Next:" in standup
    with pytest.raises(Exception, match="since must be"):
        await c.get_prompt("standup", {"since": "whenever"})


@pytest.mark.parametrize("era", ERAS)
async def test_read_only_offers_only_the_reading_tools(db_path: Path, era: Era) -> None:
    async with connect(server_for(db_path).mcp, era) as c:
        await c.call_tool("add_task", {"title": "kept"})
    async with connect(server_for(db_path, read_only=True).mcp, era) as c:
        assert {t.name for t in (await c.list_tools()).tools} == READING
        page = await c.call_tool("list_tasks", {})
        assert page.structured_content["rows"][0][2] == "kept"  # type: ignore[index]


@pytest.mark.parametrize("era", ERAS)
async def test_own_changes_are_heard_by_subscribers(db_path: Path, era: Era) -> None:
    heard = Notifications()
    async with connect(server_for(db_path).mcp, era, message_handler=heard) as c:
        await c.call_tool("add_task", {"title": "watched"})
        async with hearing(
            c, era, heard, ["tasks://tasks/1", "tasks://lists/inbox/markdown", "tasks://list"]
        ):
            await c.call_tool("update_task", {"task_id": 1, "priority": "high"})
            for uri in ("tasks://tasks/1", "tasks://lists/inbox/markdown", "tasks://list"):
                await heard.wait_method("notifications/resources/updated", uri)
            await c.call_tool("add_task", {"title": "appears"})
            await heard.wait_method("notifications/resources/list_changed")
        assert "tasks://tasks/2" not in updated(heard)  # nobody subscribed to it


@pytest.mark.parametrize("era", ERAS)
async def test_every_tool_and_resource_over_stdio(db_path: Path, era: Era) -> None:
    async with connect(stdio_params("mcp-batteries-tasks", "--db", str(db_path), env=FAST_START), era) as c:
        await exercise_every_tool(c)
        await exercise_resources_and_prompts(c)


@pytest.mark.parametrize("era", ERAS)
async def test_every_tool_and_resource_over_http(db_path: Path, era: Era) -> None:
    async with (
        http_server("mcp-batteries-tasks", "--db", str(db_path), env=FAST_START) as running,
        connect_http(running.url, era) as c,
    ):
        await exercise_every_tool(c)
        await exercise_resources_and_prompts(c)


async def test_two_users_of_a_tokens_file_never_see_each_others_workspace(
    db_path: Path, tmp_path: Path
) -> None:
    tokens = write_private(tmp_path / "tokens.toml", "")
    tokens.write_text(
        '[[tokens]]\nuser = "alice"\ntoken = "alice-token-0123456789"\nworkspaces = ["team-a"]\n\n'
        '[[tokens]]\nuser = "bob"\ntoken = "bob-token-0123456789ab"\nworkspaces = ["team-b"]\n\n'
        '[[tokens]]\nuser = "carol"\ntoken = "carol-token-0123456789"\nworkspaces = ["team-a"]\n'
        'scopes = ["mcp:read"]\n'
    )
    async with http_server("mcp-batteries-tasks", "--db", str(db_path), "--tokens-file", str(tokens),
                           env=FAST_START) as running:  # fmt: skip
        async with connect_http(running.url, "modern", token="alice-token-0123456789") as alice:
            secret = await alice.call_tool("add_task", {"title": "alice's plan", "tags": ["secret"]})
            assert secret.structured_content["list"] == "team-a:inbox"  # type: ignore[index]
            assert secret.structured_content["updated_by"] == "user:alice"  # type: ignore[index]
        secret_id = secret.structured_content["id"]  # type: ignore[index]
        for era in ERAS:
            async with connect_http(running.url, era, token="bob-token-0123456789ab") as bob:
                await bob.call_tool("add_task", {"title": f"bob's own ({era})"})
                for name, args in [
                    ("get_task", {"task_id": secret_id}),
                    ("update_task", {"task_id": secret_id, "title": "pwned"}),
                    ("complete_task", {"task_id": secret_id}),
                    ("delete_task", {"task_id": secret_id}),
                    ("add_task", {"title": "x", "depends_on": [secret_id]}),
                    ("list_tasks", {"list": "team-a:inbox"}),
                ]:
                    refused = await bob.call_tool(name, args)
                    assert refused.is_error and "alice" not in text(refused), name
                listed = await bob.call_tool("list_tasks", {})
                assert "alice" not in text(listed) and "bob's own" in text(listed)
                everything = json.loads((await bob.read_resource("tasks://list")).contents[0].text)  # type: ignore[union-attr]
                assert [t["list"] for t in everything] == ["team-b:inbox"] * len(everything)
                with pytest.raises(Exception, match=f"no task {secret_id}"):
                    await bob.read_resource(f"tasks://tasks/{secret_id}")
                visible = {str(r.uri) for r in (await bob.list_resources()).resources}
                assert (
                    f"tasks://tasks/{secret_id}" not in visible
                    and "tasks://lists/team-a:inbox" not in visible
                )
                guessed = await bob.complete(
                    ResourceTemplateReference(type="ref/resource", uri="tasks://tasks/{task_id}"),
                    {"name": "task_id", "value": secret_id},
                )
                assert guessed.completion.values == []
                with pytest.raises(Exception, match="no task"):
                    async with hearing(bob, era, Notifications(), [f"tasks://tasks/{secret_id}"]):
                        pass
        async with connect_http(running.url, "modern", token="carol-token-0123456789") as carol:
            assert {t.name for t in (await carol.list_tools()).tools} == READING
            seen = await carol.call_tool("get_task", {"task_id": secret_id})
            assert "alice's plan" in text(seen)
        with pytest.raises(BaseException) as refused:  # the client's task group wraps the error
            async with connect_http(running.url, "modern", token="not-a-known-token-at-all") as stranger:
                await stranger.list_tools()
        failure = refused.value
        assert "Unauthorized" in repr(
            failure.exceptions if isinstance(failure, BaseExceptionGroup) else failure
        )


@pytest.mark.parametrize("era", ERAS)
async def test_a_database_password_never_reaches_the_instructions(pg_tasks: str, era: Era) -> None:
    # Trust authentication accepts any password: the server really connects with these.
    url = pg_tasks.replace("postgres@", "postgres:hunter2-userinfo@", 1) + (
        "?password=hunter2-query&sslmode=disable"
    )
    async with connect(build_server(TasksSettings(database_url=url)).mcp, era) as c:
        added = await c.call_tool("add_task", {"title": "works"})
        instructions = c.instructions or ""
    assert not added.is_error, text(added)
    assert "PostgreSQL postgresql://***@127.0.0.1" in instructions
    assert "?password=***&sslmode=disable" in instructions
    assert "hunter2" not in instructions


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_settings(request: pytest.FixtureRequest, db_path: Path) -> TasksSettings:
    if request.param == "sqlite":
        return TasksSettings(db=db_path)
    return TasksSettings(database_url=request.getfixturevalue("pg_tasks"))


@pytest.mark.parametrize("era", ERAS)
async def test_integers_past_2_to_the_53_are_clear_errors_on_every_engine(
    engine_settings: TasksSettings, era: Era
) -> None:
    calls = [
        ("get_task", {"task_id": 2**63}),
        ("get_task", {"task_id": "9223372036854775808"}),
        ("add_task", {"title": "x", "parent": 2**63}),
        ("add_task", {"title": "x", "depends_on": [2**63]}),
        ("add_tasks", {"tasks": [{"title": "x", "depends_on": [2**64]}]}),
        ("update_task", {"task_id": 1, "add_dependencies": [2**63]}),
        ("move_task", {"task_id": 1, "after": 2**63}),
        ("list_tasks", {"offset": 2**63}),
        ("list_tasks", {"parent": -(2**63) - 1}),
        ("list_lists", {"offset": 2**63}),
    ]
    async with connect(build_server(engine_settings).mcp, era) as c:
        await c.call_tool("add_task", {"title": "exists"})
        for tool, arguments in calls:
            result = await c.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            message = text(result)
            assert "Error executing tool" not in message, (tool, arguments, message)
            assert "9007199254740991" in message or "task ids are" in message, (tool, arguments, message)
        with pytest.raises(Exception, match="task ids are"):
            await c.read_resource("tasks://tasks/99999999999999999999")


@pytest.mark.parametrize(
    "since", ["0001-01-01", "9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31", "99999w"]
)
async def test_the_standup_prompt_answers_for_any_date(engine_settings: TasksSettings, since: str) -> None:
    async with connect(build_server(engine_settings).mcp, "modern") as c:
        await c.call_tool("add_task", {"title": "report"})
        prompt = await c.get_prompt("standup", {"since": since})
    words = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert f"covering what changed since {since}" in words
    assert ("Nothing changed" in words) == since.startswith("9999-")


async def test_add_tasks_takes_a_5000_task_dependency_chain_and_nests_90_levels_over_stdio(
    db_path: Path,
) -> None:
    chain = [
        {"title": f"step {i}", "key": f"s{i}", "depends_on": [f"s{i + 1}"] if i < 4999 else []}
        for i in range(5000)
    ]

    def nested(levels: int) -> dict[str, Any]:
        task: dict[str, Any] = {"title": f"level {levels}"}
        for level in reversed(range(levels)):
            task = {"title": f"level {level}", "subtasks": [task]}
        return task

    params = stdio_params("mcp-batteries-tasks", "--db", str(db_path), env=FAST_START)
    async with connect(params, "legacy") as c:
        added = await c.call_tool("add_tasks", {"tasks": chain})
        assert not added.is_error and text(added).startswith("Added 5000 task(s)"), text(added)[:300]
        deep = await c.call_tool("add_tasks", {"tasks": [nested(90)]})
        assert not deep.is_error and text(deep).startswith("Added 91 task(s)")
        too_deep = await c.call_tool("add_tasks", {"tasks": [nested(91)]})
        assert too_deep.is_error and "another add_tasks call whose parent is the deepest task" in text(
            too_deep
        )
        # Past what one message can nest (201 levels), the transport says so, naming the argument.
        with pytest.raises(Exception, match="argument 'tasks' of tool 'add_tasks' nests deeper than 201"):
            await c.call_tool("add_tasks", {"tasks": [nested(100)]})
