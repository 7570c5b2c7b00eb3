"""Long tool calls as tasks (`io.modelcontextprotocol/tasks`, SEP-2663), through real clients in both eras."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
import httpx2
import pytest
from mcp import MCPError
from mcp.client.context import ClientRequestContext
from mcp.server.mcpserver import Context, Elicit, Resolve
from mcp.types import (
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    Request,
    Result,
    TextContent,
)
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.tasks_extension import EXTENSION_ID
from mcp_batteries.errors import UpstreamError
from mcp_batteries.testing import (
    MCP_POST_HEADERS,
    CreatedTask,
    cancel_task,
    connect,
    connect_http,
    get_task,
    serve_http_in_process,
    start_call,
    tasks_extension,
    update_task,
    wait_task,
)
from pydantic import BaseModel

from ..conftest import DemoSettings

pytestmark = pytest.mark.anyio


class Go(BaseModel):
    go: bool


def ask_first() -> Elicit[Go]:
    return Elicit("Go ahead?", Go)


def build(**settings: Any) -> BatteriesServer:
    server = BatteriesServer(DemoSettings(task_after=0.2, **settings), instructions="long work")

    @server.tool(title="Crunch", read_only=True, task_support="optional")
    async def crunch(seconds: float, ctx: Context) -> str:
        """Works for `seconds`, reporting progress."""
        for step in range(3):
            await ctx.report_progress(step, 3, f"step {step}")
            await anyio.sleep(seconds / 3)
        return f"crunched for {seconds:g}s"

    @server.tool(title="Ask while working", read_only=True, task_support="optional")
    async def careful(ctx: Context) -> str:
        """Asks the user something in the middle of its work."""
        answer = await ctx.elicit("Keep going?", Go)
        return "went on" if answer.action == "accept" and answer.data.go else "stopped"

    @server.tool(title="Ask, then work", read_only=True, task_support="optional")
    async def confirmed(go: Annotated[Go, Resolve(ask_first)]) -> str:
        """Asks before the work starts (a Resolve parameter), then works."""
        await anyio.sleep(0.5)
        return f"go={go.go}"

    @server.tool(title="Fails", read_only=True, task_support="optional")
    async def broken(kind: str) -> str:
        """Fails the way `kind` says, after a while."""
        await anyio.sleep(0.3)
        if kind == "domain":
            raise UpstreamError("the remote refused")
        if kind == "protocol":
            raise MCPError(-32603, "the server lost its footing", data={"where": "here"})
        raise RuntimeError("an internal detail")

    @server.tool(title="Only as a task", read_only=True, task_support="required")
    async def background() -> str:
        """Runs only as a task."""
        return "in the background"

    @server.tool(title="Quick", read_only=True)
    async def quick() -> str:
        """Never a task."""
        return "quick"

    return server


def text(result: CallToolResult | dict[str, Any]) -> str:
    if isinstance(result, dict):
        result = CallToolResult.model_validate(result)
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def accept_go(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"go": True})


async def test_a_client_that_declares_tasks_gets_a_task_it_polls_to_the_result() -> None:
    async with connect(build().mcp, "modern", extensions=[tasks_extension()]) as client:
        assert EXTENSION_ID in (client.server_capabilities.extensions or {})
        created = await start_call(client, "crunch", {"seconds": 1.5})
        assert isinstance(created, CreatedTask) and created.status == "working"
        assert created.poll_interval_ms == 1000 and created.ttl_ms and created.ttl_ms > 3_600_000 - 1
        polled = await get_task(client, created.task_id)  # the task exists once it is announced
        assert polled.status == "working" and polled.result is None
        done = await wait_task(client, created.task_id)
        assert done.status == "completed" and text(done.result or {}) == "crunched for 1.5s"
        assert done.result is not None and done.result["isError"] is False


async def test_progress_becomes_the_tasks_status_message() -> None:
    async with connect(build().mcp, "modern", extensions=[tasks_extension()]) as client:
        created = await start_call(client, "crunch", {"seconds": 3})
        assert isinstance(created, CreatedTask)
        with anyio.fail_after(10):
            while True:  # polling is how a client follows a task
                state = await get_task(client, created.task_id)
                if (state.status_message or "").startswith("step 2"):
                    break
                await anyio.sleep(0.05)
        await cancel_task(client, created.task_id)


async def test_a_quick_call_is_answered_in_its_request_even_for_a_client_that_supports_tasks() -> None:
    async with connect(build().mcp, "modern", extensions=[tasks_extension()]) as client:
        result = await start_call(client, "crunch", {"seconds": 0})
        assert isinstance(result, CallToolResult) and text(result) == "crunched for 0s"


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_client_without_the_extension_gets_the_result_and_progress_in_the_request(era: Any) -> None:
    # A handshake-era client gets no task even when it declares the extension: SEP-2663 defines it
    # for 2026-07-28 only.
    extensions = [tasks_extension()] if era == "legacy" else []
    async with connect(build().mcp, era, extensions=extensions) as client:
        progress: list[str | None] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        result = await client.call_tool("crunch", {"seconds": 0.9}, progress_callback=on_progress)
        assert text(result) == "crunched for 0.9s" and progress == ["step 0", "step 1", "step 2"]
        with pytest.raises(MCPError) as refused:
            await get_task(client, "anything")
        assert refused.value.error.code == (-32021 if era == "modern" else -32601)


async def test_a_client_that_declares_tasks_follows_them_without_knowing() -> None:
    async with connect(build().mcp, "modern", extensions=[tasks_extension()]) as client:
        assert text(await client.call_tool("crunch", {"seconds": 1})) == "crunched for 1s"


async def test_tasks_methods_refuse_unknown_ids_and_the_removed_methods_are_not_served() -> None:
    async with connect(build().mcp, "modern", extensions=[tasks_extension()]) as client:
        for act in (get_task, cancel_task):
            with pytest.raises(MCPError) as unknown:
                await act(client, "no-such-task")
            assert unknown.value.error.code == -32602
        with pytest.raises(MCPError) as unknown:
            await update_task(client, "no-such-task", {})
        assert unknown.value.error.code == -32602
        for method in ("tasks/result", "tasks/list"):
            with pytest.raises(MCPError) as removed:
                await client.session.send_request(
                    _raw(method, {"taskId": "x"} if method == "tasks/result" else {}), Result
                )
            assert removed.value.error.code == -32601


class _Raw(Request[dict[str, Any], str]):
    """Any method, for the ones no SDK type names."""


def _raw(method: str, params: dict[str, Any]) -> _Raw:
    return _Raw(method=method, params=params)


async def test_a_question_asked_while_working_waits_for_tasks_update() -> None:
    async with connect(
        build().mcp, "modern", extensions=[tasks_extension()], elicitation_callback=accept_go
    ) as client:
        created = await start_call(client, "careful", {})
        assert isinstance(created, CreatedTask)
        asking = await wait_task(client, created.task_id, until=frozenset({"input_required"}))
        [(key, request)] = (asking.input_requests or {}).items()
        assert request["method"] == "elicitation/create" and request["params"]["message"] == "Keep going?"
        await update_task(client, created.task_id, {key: {"action": "accept", "content": {"go": True}}})
        done = await wait_task(client, created.task_id)
        assert done.status == "completed" and text(done.result or {}) == "went on"


async def test_a_task_cannot_ask_what_the_client_cannot_answer() -> None:
    async with connect(build().mcp, "modern", extensions=[tasks_extension()]) as client:  # no elicitation
        with pytest.raises(MCPError) as refused:
            await start_call(client, "careful", {})
        assert refused.value.error.code == -32021
        assert refused.value.error.data == {"requiredCapabilities": {"elicitation": {}}}


async def test_questions_before_the_work_are_settled_in_the_request_before_any_task_exists() -> None:
    async with connect(
        build().mcp, "modern", extensions=[tasks_extension()], elicitation_callback=accept_go
    ) as client:
        first = await client.session.call_tool("confirmed", {}, allow_input_required=True, allow_claimed=True)
        assert isinstance(first, InputRequiredResult)  # asked in the request: no task yet
        [key] = first.input_requests or {}
        answer = ElicitResult(action="accept", content={"go": True})
        created = await start_call(
            client, "confirmed", {}, input_responses={key: answer}, request_state=first.request_state
        )
        assert isinstance(created, CreatedTask)
        assert text((await wait_task(client, created.task_id)).result or {}) == "go=True"


async def test_tool_errors_complete_the_task_and_protocol_errors_fail_it() -> None:
    async with connect(build().mcp, "modern", extensions=[tasks_extension()]) as client:
        started = {
            kind: await start_call(client, "broken", {"kind": kind})
            for kind in ("domain", "crash", "protocol")
        }
        ended = {}
        for kind, created in started.items():
            assert isinstance(created, CreatedTask)
            ended[kind] = await wait_task(client, created.task_id)
        for kind, message in (("domain", "the remote refused"), ("crash", "Error executing tool broken")):
            result = ended[kind].result
            assert ended[kind].status == "completed" and result is not None and result["isError"] is True
            assert text(result) == message if kind == "crash" else message in text(result)
        failed = ended["protocol"]
        assert failed.status == "failed" and failed.result is None
        assert failed.error == {
            "code": -32603,
            "message": "the server lost its footing",
            "data": {"where": "here"},
        }
        assert failed.status_message == "the server lost its footing"


async def test_cancel_stops_a_task_and_is_idempotent() -> None:
    async with connect(build().mcp, "modern", extensions=[tasks_extension()]) as client:
        created = await start_call(client, "crunch", {"seconds": 60})
        assert isinstance(created, CreatedTask)
        ack = await cancel_task(client, created.task_id)
        assert set(ack.model_dump(exclude_none=True)) <= {"meta"}  # an empty ack, no task envelope
        assert (await wait_task(client, created.task_id)).status == "cancelled"
        await cancel_task(client, created.task_id)
        assert (await get_task(client, created.task_id)).status == "cancelled"


async def test_a_tool_that_runs_only_as_a_task_refuses_other_clients() -> None:
    async with connect(build().mcp, "modern") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("background", {})
        assert refused.value.error.code == -32021
        assert refused.value.error.data == {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}


async def test_tools_that_are_not_long_never_become_tasks() -> None:
    async with connect(build().mcp, "modern", extensions=[tasks_extension()]) as client:
        assert isinstance(await start_call(client, "quick", {}), CallToolResult)


async def test_no_tasks_turns_the_extension_off() -> None:
    async with connect(build(tasks=False).mcp, "modern", extensions=[tasks_extension()]) as client:
        assert EXTENSION_ID not in (client.server_capabilities.extensions or {})
        result = await start_call(client, "crunch", {"seconds": 0.5})
        assert isinstance(result, CallToolResult) and text(result) == "crunched for 0.5s"
        with pytest.raises(MCPError) as missing:
            await get_task(client, "x")
        assert missing.value.error.code == -32601


async def test_over_http_the_mcp_name_header_must_name_the_task() -> None:
    async with (
        serve_http_in_process(build()) as (url, _app),
        connect_http(url, "modern", extensions=[tasks_extension()]) as client,
    ):
        created = await start_call(client, "crunch", {"seconds": 30})
        assert isinstance(created, CreatedTask)
        assert (await get_task(client, created.task_id)).status == "working"  # the SDK sends Mcp-Name
        body = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tasks/get",
            "params": {
                "taskId": created.task_id,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION_ID: {}}},
                },
            },
        }
        headers = {**MCP_POST_HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get"}
        async with httpx2.AsyncClient() as http:
            wrong = await http.post(url, json=body, headers={**headers, "Mcp-Name": "another-task"})
            missing = await http.post(url, json=body, headers=headers)
        for answer in (wrong, missing):
            assert answer.status_code == 400 and answer.json()["error"]["code"] == -32020
        await cancel_task(client, created.task_id)
