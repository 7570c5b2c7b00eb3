"""Long tool calls as tasks: the `io.modelcontextprotocol/tasks` extension (SEP-2663).

A tool registered with `task_support="optional"` may run long (a fetch, a push, a search over a
huge tree). When a client declares the extension in a request's capabilities (2026-07-28 only:
the extension is not defined for handshake-era connections, SEP-2663's compatibility table), the
call starts in the server's `TaskStore` (`mcp_batteries._work.tasks`); if it is still working
`task_after` seconds into its own work, or stops to ask its caller something, the client gets a
`CreateTaskResult` (`resultType: "task"`) and follows the task with `tasks/get` (status, the
questions it waits on, then the inlined result or error), answers with `tasks/update` and stops
it with `tasks/cancel`. Anything quicker is answered in the request as before, and so is every
call from a client that did not declare the extension (with progress notifications as before):
the extension only ever adds a way to wait.

Questions asked before the work starts (`Resolve` parameters, answered through
`InputRequiredResult` rounds) are settled in the request, before any task exists, as SEP-2663
asks. While a call is a task, its progress becomes the task's `statusMessage` and what it asks
the client (elicitation, sampling, roots) becomes the task's `inputRequests`.

Every `tasks/*` request is refused with -32021 unless it declares the extension, checks its
`Mcp-Name` header against `taskId` over HTTP (-32020), and sees only its own caller's tasks.
`tasks/result` and `tasks/list` (the 2025-11-25 experimental methods) are not served (-32601).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal, cast

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp.types import (
    CLIENT_CAPABILITIES_META_KEY,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolRequestParams,
    InputRequiredResult,
    RequestParams,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from mcp_batteries._core.identity import current_caller
from mcp_batteries._work.tasks import Run, TaskStore, TaskView
from mcp_batteries.errors import NotFound

__all__ = ["EXTENSION_ID", "TaskSupport", "TasksExtension"]

logger = logging.getLogger(__name__)

EXTENSION_ID = "io.modelcontextprotocol/tasks"

#: Whether a tool's calls may become tasks (the 2025-11-25 `execution.taskSupport` vocabulary):
#: never, when the client supports tasks, or only as a task (refused to other clients).
TaskSupport = Literal["forbidden", "optional", "required"]

#: Which client capability each question a task may ask needs.
_CAPABILITY_FOR = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class TaskParams(RequestParams):
    """`tasks/get` and `tasks/cancel`."""

    task_id: str


class UpdateTaskParams(TaskParams):
    """`tasks/update`: answers to the task's outstanding `inputRequests`, by key."""

    input_responses: dict[str, Any]


def _missing_extension() -> MCPError:
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"this tool runs only as a task: declare the {EXTENSION_ID!r} extension in the request's "
        "client capabilities (a 2026-07-28 client)",
        data={"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
    )


def _request_capabilities(ctx: ServerRequestContext[Any, Any]) -> Mapping[str, Any]:
    """The capabilities this request declared: its own envelope's (2026-07-28), else the session's."""
    meta = ctx.meta or {}
    declared = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, Mapping) else None
    if isinstance(declared, Mapping):
        return cast(Mapping[str, Any], declared)
    capabilities = ctx.session.client_capabilities
    return capabilities.model_dump(by_alias=True, exclude_none=True) if capabilities is not None else {}


def declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request may be answered with a task: a 2026-07-28 request declaring the extension."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    extensions = _request_capabilities(ctx).get("extensions")
    return isinstance(extensions, Mapping) and EXTENSION_ID in extensions


def _timestamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _task_fields(view: TaskView) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "taskId": view.id,
        "status": view.status,
        "createdAt": _timestamp(view.created_at),
        "lastUpdatedAt": _timestamp(view.updated_at),
        "ttlMs": view.ttl_ms,
        "pollIntervalMs": view.poll_interval_ms,
    }
    if view.status_message:
        fields["statusMessage"] = view.status_message
    return fields


def detailed_task(view: TaskView) -> dict[str, Any]:
    """`tasks/get`'s answer: the task, with what its status carries (questions, result, error)."""
    fields = _task_fields(view)
    if view.status == "input_required":
        fields["inputRequests"] = dict(view.input_requests)
    elif view.status == "completed" and view.result is not None:
        fields["result"] = dict(view.result)
    elif view.status == "failed" and view.error is not None:
        fields["error"] = dict(view.error)
    return {"resultType": "complete", **fields}


class _ToolOutcome:
    """How a finished tool call is kept in its task (`TaskStore`'s `Renderer`)."""

    def __init__(self, tool: str) -> None:
        self.tool = tool

    def result(self, value: Any) -> dict[str, Any]:
        if isinstance(value, InputRequiredResult):
            # Questions belong before the work starts; a task cannot carry a new round.
            raise MCPError(INTERNAL_ERROR, f"{self.tool} asked for input after it became a task")
        if isinstance(value, BaseModel):
            return value.model_dump(by_alias=True, mode="json", exclude_none=True)
        if isinstance(value, dict):
            return cast(dict[str, Any], value)
        raise TypeError(f"{self.tool} returned {type(value).__name__}, not a tool result")

    def error(self, failure: Exception) -> dict[str, Any]:
        if isinstance(failure, MCPError):
            error = failure.error
            rendered: dict[str, Any] = {"code": error.code, "message": error.message}
            if error.data is not None:
                rendered["data"] = error.data
            return rendered
        logger.error("task for %s failed", self.tool, exc_info=failure)
        return {
            "code": INTERNAL_ERROR,
            "message": f"Internal error while running {self.tool}; the server's log has the details",
        }

    def oversize(self, size: int, limit: int) -> dict[str, Any]:
        text = (
            f"{self.tool} finished, but its result ({size:,} bytes) is larger than the {limit:,} bytes a "
            "task keeps; call it again with narrower arguments (a page, a path, a limit)"
        )
        return {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": True}


class _TaskSession:
    """The request's session as a call running in a task sees it.

    Until the call becomes a task, progress also reaches the request's own stream; afterwards
    that stream is gone, so progress is kept as the task's status message, notifications tied
    to the request are dropped, and requests to the client become the task's input requests.
    """

    def __init__(
        self, inner: ServerSession, store: TaskStore, run: Run, capabilities: Mapping[str, Any]
    ) -> None:
        self._inner = inner
        self._store = store
        self._run = run
        self._capabilities = capabilities

    def __getattr__(self, name: str) -> Any:
        # The session's own methods run with this view as `self`, so whatever they send
        # (`elicit_form`, `create_message`, `list_roots` all end in `send_request`) comes here.
        method = getattr(type(self._inner), name, None)
        if inspect.isfunction(method):
            return method.__get__(self)
        return getattr(self._inner, name)

    @property
    def can_send_request(self) -> bool:
        return True

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        shown = f"{progress:g}" + (f"/{total:g}" if total is not None else "")
        self._store.report(self._run, f"{message} ({shown})" if message else shown)
        if not self._run.task.published:
            await self._while_in_request(self._inner.report_progress(progress, total, message))

    async def send_notification(self, notification: Any, related_request_id: Any = None) -> None:
        if not self._run.task.published:
            await self._while_in_request(self._inner.send_notification(notification, related_request_id))

    async def _while_in_request(self, send: Awaitable[None]) -> None:
        # The request may be answered (the call became a task) while this is on its way: its
        # stream is then gone, which must not end the work.
        try:
            await send
        except Exception as exc:
            logger.debug("a notification for a call that became a task was dropped: %r", exc)

    async def send_request(self, request: Any, result_type: type[Any], *_: Any, **__: Any) -> Any:
        wire: dict[str, Any] = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        method = str(wire.get("method"))
        needed = _CAPABILITY_FOR.get(method)
        if needed is not None and needed not in self._capabilities:
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"the task needs to send {method}, but the client did not declare {needed!r}",
                data={"requiredCapabilities": {needed: {}}},
            )
        answer = await self._store.ask(self._run, wire)
        try:
            return result_type.model_validate(answer, by_name=False)
        except ValidationError as exc:
            raise MCPError(INVALID_PARAMS, f"the answer to the task's {method} is not valid") from exc


class TasksExtension(Extension):
    """Serves `tasks/get`, `tasks/update` and `tasks/cancel`, and turns long tool calls into tasks."""

    identifier = EXTENSION_ID

    def __init__(self, store: TaskStore, tools: Mapping[str, TaskSupport]) -> None:
        self.store = store
        #: Tool name -> its task support (only tools that may become tasks are listed).
        self.task_tools = tools

    def methods(self) -> Sequence[MethodBinding]:
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskParams, self._get, protocol_versions=modern),
            MethodBinding("tasks/update", UpdateTaskParams, self._update, protocol_versions=modern),
            MethodBinding("tasks/cancel", TaskParams, self._cancel, protocol_versions=modern),
        )

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        support = self.task_tools.get(params.name, "forbidden")
        if support == "forbidden":
            return await call_next(ctx)
        if not declares_tasks(ctx):
            if support == "required":
                raise _missing_extension()
            return await call_next(ctx)
        task = self.store.admit(current_caller().subject)
        if task is None:
            # Past a bound (or the store is not running): an ordinary call, answered here.
            return await call_next(ctx)
        run: Run | None = None

        async def work() -> HandlerResult:
            assert run is not None
            session = _TaskSession(ctx.session, self.store, run, _request_capabilities(ctx))
            return await call_next(replace(ctx, session=cast(ServerSession, session)))

        run = self.store.start(task, work, _ToolOutcome(params.name))
        try:
            await run.settled.wait()
        except anyio.get_cancelled_exc_class():
            # The request was cancelled (or its client left) before the call became a task.
            if not run.task.published:
                self.store.abandon(run)
            raise
        if run.finished.is_set():
            if run.failure is not None:
                raise run.failure
            if run.cancelled:
                raise MCPError(INTERNAL_ERROR, f"{params.name} was stopped: the server is shutting down")
            return cast(HandlerResult, run.value)
        return {"resultType": "task", **_task_fields(self.store.publish(run))}

    # -- tasks/* ---------------------------------------------------------------------------------
    def _caller(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> str:
        """The subject whose tasks this request may see, once it passed the extension's checks."""
        require_client_extension(ctx, EXTENSION_ID)
        headers = getattr(ctx.request, "headers", None)
        if headers is not None and decode_header_value(headers.get(MCP_NAME_HEADER)) != params.task_id:
            # SEP-2663: tasks/* carry the task id in Mcp-Name so routers can find the task's replica.
            raise MCPError(HEADER_MISMATCH, f"the {MCP_NAME_HEADER} header must equal params.taskId")
        return current_caller().subject

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        owner = self._caller(ctx, params)
        try:
            return detailed_task(self.store.get(owner, params.task_id))
        except NotFound as exc:
            raise MCPError(INVALID_PARAMS, f"Failed to retrieve task: {exc}") from exc

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams) -> dict[str, Any]:
        owner = self._caller(ctx, params)
        try:
            self.store.answer(owner, params.task_id, params.input_responses)
        except NotFound as exc:
            raise MCPError(INVALID_PARAMS, f"Failed to update task: {exc}") from exc
        return {"resultType": "complete"}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        owner = self._caller(ctx, params)
        try:
            self.store.cancel(owner, params.task_id)
        except NotFound as exc:
            raise MCPError(INVALID_PARAMS, f"Failed to cancel task: {exc}") from exc
        return {"resultType": "complete"}
