"""Long work that outlives its request: tasks a caller polls, answers, cancels and reads later.

A call that may run long is started here, in the store's task group rather than the request's,
so it can go on after the request has been answered. The request waits while the call checks its
arguments and asks its up-front questions, then for `promote_after` seconds of the call's own work
(`announce_work_started` marks where that work begins). If the call has ended by then, the request
answers with its outcome as it always did; otherwise the call becomes a *task*: published under an
unguessable id, and the request answers with the task's first state. A call that needs its
caller's input while it works (a question, in the middle of the work) becomes a task at once.

Everything is bounded, because a task's result is kept for a caller who may never come back:

- per caller: at most `per_owner` tasks, running or kept (a caller's long calls beyond that run
  as ordinary calls, answered in their own request);
- bytes: each admitted call reserves `result_bytes` of the store's `store_bytes` until it ends,
  then holds exactly its result's size (a result beyond `result_bytes` is replaced by a short
  explanation); when the store is full, long calls run as ordinary calls;
- time: a finished task is kept `ttl_s` seconds after it ended, then forgotten.

Nothing is evicted before its time: a bound refuses new tasks, it never drops a kept one.

Tasks belong to their owner (the caller's stable subject): any other caller asking for one gets
the same "no such task" as for an id that never existed, so ids reveal nothing. Tasks live in
memory; they end with the process.

The store knows nothing of MCP: the extension that speaks the protocol
(`mcp_batteries._core.tasks_extension`) passes a `Renderer` that turns a call's value or exception
into the JSON kept as the task's result or error.
"""

from __future__ import annotations

import functools
import inspect
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, cast

import anyio
import anyio.abc
import anyio.from_thread

from mcp_batteries.errors import NotFound

__all__ = [
    "TERMINAL",
    "Renderer",
    "Run",
    "Task",
    "TaskLimits",
    "TaskStatus",
    "TaskStore",
    "TaskView",
    "announce_work_started",
    "announcing",
]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[TaskStatus] = frozenset({"completed", "failed", "cancelled"})

MIB = 1024 * 1024
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class TaskLimits:
    """The store's bounds (see the module docstring for why each exists)."""

    #: Seconds of the call's own work before it becomes a task (0: as soon as the work starts).
    promote_after: float = 1.0
    #: Seconds a finished task's result stays readable.
    ttl_s: float = 3600.0
    #: Tasks (running or kept) per caller.
    per_owner: int = 32
    #: Bytes one task's result may take (as JSON); a bigger one is replaced by an explanation.
    result_bytes: int = 16 * MIB
    #: Bytes all results and reservations together may take.
    store_bytes: int = 256 * MIB
    #: How often a caller is asked to poll.
    poll_interval_ms: int = 1000

    def __post_init__(self) -> None:
        if self.promote_after < 0 or self.ttl_s <= 0 or self.per_owner < 1:
            raise ValueError("promote_after >= 0, ttl_s > 0 and per_owner >= 1")
        if not 0 < self.result_bytes <= self.store_bytes or self.poll_interval_ms < 1:
            raise ValueError("0 < result_bytes <= store_bytes and poll_interval_ms >= 1")


class Renderer(Protocol):
    """How a call's outcome is kept (the protocol's JSON for a result and an error)."""

    def result(self, value: Any) -> dict[str, Any]:
        """The JSON kept for a call that returned `value`; raising makes the task fail instead."""
        ...

    def error(self, failure: Exception) -> dict[str, Any]:
        """The JSON kept for a call that raised `failure`."""
        ...

    def oversize(self, size: int, limit: int) -> dict[str, Any]:
        """The result kept in place of one of `size` bytes, more than `limit`."""
        ...


@dataclass(frozen=True)
class TaskView:
    """A task's state at one moment: what a poll answers."""

    id: str
    status: TaskStatus
    status_message: str | None
    created_at: float
    updated_at: float
    #: Milliseconds from creation the task is kept (changes once: when the task ends).
    ttl_ms: int
    poll_interval_ms: int
    #: Outstanding questions for the caller, by key (only while `input_required`).
    input_requests: Mapping[str, Any]
    result: Mapping[str, Any] | None
    error: Mapping[str, Any] | None


@dataclass(eq=False)
class Task:
    """One call's record: owned by one caller, published once it outlives its request."""

    id: str
    owner: str
    created_at: float
    updated_at: float
    status: TaskStatus = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: When a finished task is forgotten.
    expires_at: float | None = None
    published: bool = False
    cancel_requested: bool = False
    #: Outstanding questions (key -> request) and their waiters; keys are never reused.
    pending: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    waiters: dict[str, anyio.Event] = field(default_factory=dict)
    asked: int = 0
    #: Bytes this task holds of the store's budget (a reservation, then its result's size).
    held_bytes: int = 0


#: The run whose work is executing in this context (set in the run's own task; copied into the
#: tool's tasks and worker threads), so the tool's body can say when its own work starts.
_CURRENT_RUN: ContextVar[Run | None] = ContextVar("mcp_batteries_task_run", default=None)


def announce_work_started() -> None:
    """Called by a long tool at the top of its body: its up-front checks and questions are done.

    From then on the call may become a task. Outside a run (an ordinary call) it does nothing;
    it may be called from the event loop or from a worker thread.
    """
    run = _CURRENT_RUN.get()
    if run is None or run.work_started.is_set():
        return
    try:
        anyio.from_thread.run_sync(run.work_started.set)
    except RuntimeError:  # not in a worker thread: we are on the event loop
        run.work_started.set()


def announcing(fn: F) -> F:
    """`fn` (a tool function, async or not) calling `announce_work_started` as its body begins."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def announce_then_await(*args: Any, **kwargs: Any) -> Any:
            announce_work_started()
            return await fn(*args, **kwargs)

        return cast(F, announce_then_await)

    @functools.wraps(fn)
    def announce_then_call(*args: Any, **kwargs: Any) -> Any:
        announce_work_started()
        return fn(*args, **kwargs)

    return cast(F, announce_then_call)


@dataclass(eq=False)
class Run:
    """A call started in the store, awaited by the request that started it."""

    task: Task
    #: Set when the call has ended, or when it should become a task now.
    settled: anyio.Event = field(default_factory=anyio.Event)
    finished: anyio.Event = field(default_factory=anyio.Event)
    work_started: anyio.Event = field(default_factory=anyio.Event)
    value: Any = None
    failure: Exception | None = None
    cancelled: bool = False
    scope: anyio.CancelScope | None = None


class TaskStore:
    """Tasks by id, bounded per caller, in bytes and in time; runs their work in its task group."""

    def __init__(self, limits: TaskLimits | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.limits = limits or TaskLimits()
        self._clock = clock
        self._tasks: dict[str, Task] = {}
        self._held = 0
        self._runs: dict[str, Run] = {}
        self._group: anyio.abc.TaskGroup | None = None

    # -- the service ---------------------------------------------------------------------------
    @asynccontextmanager
    async def running(self) -> AsyncIterator[TaskStore]:
        """Run tasks for as long as this context is open; leaving it cancels every running call."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield self
            finally:
                self._group = None
                group.cancel_scope.cancel()

    # -- starting work -------------------------------------------------------------------------
    def admit(self, owner: str) -> Task | None:
        """A new (unpublished) task for `owner`, or None when a bound says this call runs inline."""
        if self._group is None:
            return None
        now = self._clock()
        self._forget_expired(now)
        if sum(1 for task in self._tasks.values() if task.owner == owner) >= self.limits.per_owner:
            return None
        if self._held + self.limits.result_bytes > self.limits.store_bytes:
            return None
        task = Task(id=secrets.token_urlsafe(24), owner=owner, created_at=now, updated_at=now)
        task.held_bytes = self.limits.result_bytes
        self._held += task.held_bytes
        self._tasks[task.id] = task
        return task

    def start(self, task: Task, work: Callable[[], Awaitable[Any]], renderer: Renderer) -> Run:
        """Start `work` for an admitted `task`; the caller awaits `run.settled`, then either
        answers with the outcome (`run.finished`) or publishes the task."""
        group = self._group
        if group is None:
            raise RuntimeError("the task store is not running")
        run = Run(task)
        group.start_soon(self._execute, run, work, renderer)
        group.start_soon(self._promote_when_due, run)
        return run

    def publish(self, run: Run) -> TaskView:
        """Make the call a task its owner can see; returns its first state."""
        run.task.published = True
        return self._view(run.task)

    def abandon(self, run: Run) -> None:
        """The request gave up before the call became a task (it was cancelled): stop the call."""
        run.task.cancel_requested = True
        if run.scope is not None:
            run.scope.cancel()

    # -- what the running call does ------------------------------------------------------------
    def report(self, run: Run, message: str) -> None:
        """The call's latest progress, shown as the task's status message."""
        task = run.task
        if task.status not in TERMINAL:
            task.status_message = message
            task.updated_at = self._clock()

    async def ask(self, run: Run, request: Any) -> Any:
        """Put a question to the caller and wait for the answer (the call becomes a task now)."""
        task = run.task
        task.asked += 1
        key = f"input-{task.asked}"
        waiter = anyio.Event()
        task.pending[key] = request
        task.waiters[key] = waiter
        self._set_status(task, "input_required")
        run.settled.set()
        try:
            await waiter.wait()
            return task.answers.pop(key)
        finally:
            task.pending.pop(key, None)
            task.waiters.pop(key, None)
            if not task.pending and task.status == "input_required":
                self._set_status(task, "working")

    # -- what the owner does -------------------------------------------------------------------
    def get(self, owner: str, task_id: str) -> TaskView:
        return self._view(self._owned(owner, task_id))

    def answer(self, owner: str, task_id: str, responses: Mapping[str, Any]) -> None:
        """Deliver answers to outstanding questions; keys not outstanding are ignored."""
        task = self._owned(owner, task_id)
        for key, response in responses.items():
            waiter = task.waiters.get(key)
            if waiter is not None and not waiter.is_set():
                task.answers[key] = response
                # Answered is no longer outstanding, from this moment on (not when the call resumes).
                task.pending.pop(key, None)
                waiter.set()
        if not task.pending and task.status == "input_required":
            self._set_status(task, "working")

    def cancel(self, owner: str, task_id: str) -> None:
        """Ask the call to stop; a task that already ended stays as it is."""
        task = self._owned(owner, task_id)
        if task.status in TERMINAL:
            return
        task.cancel_requested = True
        run = self._runs.get(task.id)
        if run is not None and run.scope is not None:
            run.scope.cancel()

    # -- internals -----------------------------------------------------------------------------
    def _owned(self, owner: str, task_id: str) -> Task:
        self._forget_expired(self._clock())
        task = self._tasks.get(task_id)
        if task is None or not task.published or task.owner != owner:
            # One answer for unknown, expired and someone else's: an id reveals nothing.
            raise NotFound(f"no task {task_id!r}: it never existed, has expired, or is not yours")
        return task

    async def _execute(self, run: Run, work: Callable[[], Awaitable[Any]], renderer: Renderer) -> None:
        _CURRENT_RUN.set(run)
        self._runs[run.task.id] = run
        closing = True
        try:
            with anyio.CancelScope() as scope:
                run.scope = scope
                if run.task.cancel_requested:
                    scope.cancel()
                try:
                    run.value = await work()
                except Exception as exc:
                    run.failure = exc
            run.cancelled = scope.cancelled_caught
            closing = False
        finally:
            # `closing`: cancelled from outside, the store is closing; nothing more will run.
            run.cancelled = run.cancelled or closing
            self._runs.pop(run.task.id, None)
            run.work_started.set()  # ends the promotion timer
            self._end(run, renderer)
            run.finished.set()
            run.settled.set()

    async def _promote_when_due(self, run: Run) -> None:
        await run.work_started.wait()
        if run.finished.is_set():
            return
        with anyio.move_on_after(self.limits.promote_after):
            await run.finished.wait()
        run.settled.set()

    def _end(self, run: Run, renderer: Renderer) -> None:
        task = run.task
        self._release(task)
        if not task.published:
            # Answered in its own request (or abandoned): no record to keep.
            self._tasks.pop(task.id, None)
            return
        if run.cancelled or task.cancel_requested:
            self._set_status(task, "cancelled")
        elif run.failure is not None:
            self._fail(task, renderer, run.failure)
        else:
            try:
                result = renderer.result(run.value)
            except Exception as exc:
                self._fail(task, renderer, exc)
            else:
                size = len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
                if size > self.limits.result_bytes:
                    result = renderer.oversize(size, self.limits.result_bytes)
                    size = len(json.dumps(result).encode())
                task.result = result
                self._hold(task, size)
                self._set_status(task, "completed")
        task.expires_at = self._clock() + self.limits.ttl_s

    def _fail(self, task: Task, renderer: Renderer, failure: Exception) -> None:
        task.error = renderer.error(failure)
        message = task.error.get("message")
        task.status_message = message if isinstance(message, str) else None
        self._hold(task, len(json.dumps(task.error).encode()))
        self._set_status(task, "failed")

    def _set_status(self, task: Task, status: TaskStatus) -> None:
        task.status = status
        task.updated_at = self._clock()

    def _hold(self, task: Task, size: int) -> None:
        task.held_bytes = size
        self._held += size

    def _release(self, task: Task) -> None:
        self._held -= task.held_bytes
        task.held_bytes = 0

    def _forget_expired(self, now: float) -> None:
        expired = [t for t in self._tasks.values() if t.expires_at is not None and t.expires_at <= now]
        for task in expired:
            self._release(task)
            del self._tasks[task.id]

    def _view(self, task: Task) -> TaskView:
        now = self._clock()
        if task.expires_at is not None:
            kept_s = task.expires_at - task.created_at
        else:
            # Still running: never expires before it ends, so the backstop stays ahead of it.
            kept_s = (now - task.created_at) + self.limits.ttl_s
        return TaskView(
            id=task.id,
            status=task.status,
            status_message=task.status_message,
            created_at=task.created_at,
            updated_at=task.updated_at,
            ttl_ms=max(1, round(kept_s * 1000)),
            poll_interval_ms=self.limits.poll_interval_ms,
            input_requests=dict(task.pending) if task.status == "input_required" else {},
            result=task.result,
            error=task.error,
        )
