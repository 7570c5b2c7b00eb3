"""The tasks extension (`io.modelcontextprotocol/tasks`) from the client's side, for tests.

The SDK's `Client` knows no tasks; this declares the extension and claims its `resultType:
"task"` results (`tasks_extension()`), and sends `tasks/get`, `tasks/update` and `tasks/cancel`
with the `Mcp-Name` header SEP-2663 asks for:

    async with connect(target, "modern", extensions=[tasks_extension()]) as client:
        created = await start_call(client, "directory_tree", {"path": "."})   # CreatedTask or CallToolResult
        state = await wait_task(client, created.task_id)                       # polls until it ends
        state.result                                                          # the CallToolResult, as JSON

A client that calls `client.call_tool(...)` with the extension declared gets tasks resolved for
it (polled to the end, answered the way its callbacks would), as a host supporting tasks would.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import anyio
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.types import CallToolResult, ElicitResult, Request, RequestParams, Result

__all__ = [
    "EXTENSION_ID",
    "TERMINAL",
    "CreatedTask",
    "TaskState",
    "cancel_task",
    "get_task",
    "start_call",
    "tasks_extension",
    "update_task",
    "wait_task",
]

EXTENSION_ID = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: How often tests poll (the server's pollIntervalMs is for real clients; tests want speed).
TEST_POLL_S = 0.05


class CreatedTask(Result):
    """A `CreateTaskResult`: the call became a task."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class TaskState(Result):
    """A `tasks/get` answer (`DetailedTask`)."""

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class _TaskIdParams(RequestParams):
    task_id: str


class _UpdateParams(_TaskIdParams):
    input_responses: dict[str, Any]


class _GetTask(Request[_TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param: ClassVar[str | None] = "taskId"


class _UpdateTask(Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param: ClassVar[str | None] = "taskId"


class _CancelTask(Request[_TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param: ClassVar[str | None] = "taskId"


async def get_task(client: Client | ClientSession, task_id: str) -> TaskState:
    session = client.session if isinstance(client, Client) else client
    return await session.send_request(_GetTask(params=_TaskIdParams(task_id=task_id)), TaskState)


async def update_task(client: Client | ClientSession, task_id: str, responses: dict[str, Any]) -> Result:
    session = client.session if isinstance(client, Client) else client
    request = _UpdateTask(params=_UpdateParams(task_id=task_id, input_responses=responses))
    return await session.send_request(request, Result)


async def cancel_task(client: Client | ClientSession, task_id: str) -> Result:
    session = client.session if isinstance(client, Client) else client
    return await session.send_request(_CancelTask(params=_TaskIdParams(task_id=task_id)), Result)


async def wait_task(
    client: Client | ClientSession,
    task_id: str,
    until: frozenset[str] = TERMINAL,
    timeout: float = 30.0,
) -> TaskState:
    """Poll `tasks/get` until the task's status is one of `until` (by default: it ended)."""
    with anyio.fail_after(timeout):
        while True:
            state = await get_task(client, task_id)
            if state.status in until or state.status in TERMINAL:
                return state
            await anyio.sleep(TEST_POLL_S)


async def start_call(
    client: Client, name: str, arguments: dict[str, Any], **retry: Any
) -> CreatedTask | CallToolResult:
    """`tools/call`, returning the task the server made of it, or its ordinary result (`retry`:
    `input_responses` and `request_state` answering an `InputRequiredResult` round)."""
    result = await client.session.call_tool(name, arguments, allow_claimed=True, **retry)
    if isinstance(result, CreatedTask | CallToolResult):
        return result
    raise AssertionError(f"unexpected result for {name}: {result!r}")


async def _finish(created: CreatedTask, context: ClaimContext) -> CallToolResult:
    """Follow a task to its end as a cautious host would: decline every question it asks, return
    its result (a failed task raises)."""
    session = context.session
    answered: set[str] = set()
    while True:
        state = await wait_task(session, created.task_id, until=frozenset({"input_required"}), timeout=300)
        if state.status == "input_required":
            fresh = {k: v for k, v in (state.input_requests or {}).items() if k not in answered}
            answers = {key: ElicitResult(action="decline").model_dump(by_alias=True) for key in fresh}
            answered.update(fresh)
            await update_task(session, created.task_id, answers)
            await anyio.sleep(TEST_POLL_S)
            continue
        if state.status == "completed" and state.result is not None:
            return CallToolResult.model_validate(state.result)
        raise RuntimeError(
            f"task {created.task_id} ended {state.status}: {state.error or state.status_message}"
        )


class _TasksClient(ClientExtension):
    identifier = EXTENSION_ID

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=_finish)]


def tasks_extension() -> ClientExtension:
    """Declare the tasks extension on every request, and follow the tasks the server makes."""
    return _TasksClient()
