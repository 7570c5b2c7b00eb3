"""The task store: calls that outlive their request, kept per caller and bounded (no MCP here)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp_batteries._work.tasks import Run, TaskLimits, TaskStore, TaskView, announce_work_started, announcing
from mcp_batteries.errors import NotFound

pytestmark = pytest.mark.anyio


class Outcomes:
    """A renderer that keeps values as {"value": ...} and failures as their message."""

    def result(self, value: Any) -> dict[str, Any]:
        return {"value": value}

    def error(self, failure: Exception) -> dict[str, Any]:
        return {"code": -1, "message": str(failure)}

    def oversize(self, size: int, limit: int) -> dict[str, Any]:
        return {"too_big": size, "limit": limit}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def running(limits: TaskLimits | None = None, clock: Clock | None = None) -> AsyncIterator[TaskStore]:
    store = TaskStore(limits or TaskLimits(promote_after=0), clock=clock or Clock())
    async with store.running():
        yield store


async def become_task(
    store: TaskStore, owner: str, work: Callable[[], Awaitable[Any]]
) -> tuple[Run, TaskView]:
    task = store.admit(owner)
    assert task is not None
    run = store.start(task, work, Outcomes())
    with anyio.fail_after(5):
        await run.settled.wait()
    assert not run.finished.is_set(), "the call ended before it became a task"
    return run, store.publish(run)


async def until(store: TaskStore, owner: str, task_id: str, *statuses: str) -> TaskView:
    with anyio.fail_after(5):
        while True:  # polling is how a caller follows a task
            view = store.get(owner, task_id)
            if view.status in statuses:
                return view
            await anyio.sleep(0.01)


def working(seconds: float = 30, value: Any = "done") -> Callable[[], Awaitable[Any]]:
    @announcing
    async def work() -> Any:
        await anyio.sleep(seconds)
        return value

    return work


async def test_a_call_that_ends_before_its_work_is_due_is_answered_in_its_request() -> None:
    async with running(TaskLimits(promote_after=10)) as store:
        task = store.admit("alice")
        assert task is not None
        run = store.start(task, working(0, "quick"), Outcomes())
        with anyio.fail_after(5):
            await run.settled.wait()
        assert run.finished.is_set() and run.value == "quick"
        with pytest.raises(NotFound):
            store.get("alice", task.id)  # never published, and forgotten


async def test_checks_before_the_work_starts_never_make_a_task() -> None:
    async with running(TaskLimits(promote_after=0)) as store:
        task = store.admit("alice")
        assert task is not None

        async def asks_first() -> str:  # e.g. a Resolve round: no announce_work_started yet
            await anyio.sleep(0.2)
            return "questions"

        run = store.start(task, asks_first, Outcomes())
        with anyio.fail_after(5):
            await run.settled.wait()
        assert run.finished.is_set() and run.value == "questions"


async def test_a_long_call_becomes_a_task_its_owner_polls_to_the_result() -> None:
    async with running() as store:
        _, first = await become_task(store, "alice", working(0.2, "the answer"))
        assert first.status == "working" and len(first.id) >= 32
        done = await until(store, "alice", first.id, "completed")
        assert done.result == {"value": "the answer"}
        assert done.error is None and done.input_requests == {}


async def test_another_caller_cannot_see_answer_or_cancel_the_task() -> None:
    async with running() as store:
        _, view = await become_task(store, "alice", working())
        for act in (
            lambda: store.get("bob", view.id),
            lambda: store.cancel("bob", view.id),
            lambda: store.answer("bob", view.id, {}),
        ):
            with pytest.raises(NotFound) as refused:
                act()
            assert "never existed, has expired, or is not yours" in str(refused.value)
        with pytest.raises(NotFound) as unknown:
            store.get("alice", "no-such-id")
        assert str(unknown.value).split(":", 1)[1] == str(refused.value).split(":", 1)[1]
        assert store.get("alice", view.id).status == "working"


async def test_cancel_stops_the_work_and_a_cancel_after_the_end_changes_nothing() -> None:
    async with running() as store:
        _, view = await become_task(store, "alice", working())
        store.cancel("alice", view.id)
        assert (await until(store, "alice", view.id, "cancelled", "completed")).status == "cancelled"
        _, quick = await become_task(store, "alice", working(0.05))
        await until(store, "alice", quick.id, "completed")
        store.cancel("alice", quick.id)
        assert store.get("alice", quick.id).status == "completed"


async def test_a_failure_is_kept_as_the_error_and_its_message() -> None:
    async with running() as store:

        @announcing
        async def fails() -> None:
            await anyio.sleep(0.05)
            raise RuntimeError("the remote hung up")

        _, view = await become_task(store, "alice", fails)
        failed = await until(store, "alice", view.id, "failed")
        assert failed.error == {"code": -1, "message": "the remote hung up"}
        assert failed.status_message == "the remote hung up" and failed.result is None


async def test_questions_wait_for_answers_and_unknown_keys_are_ignored() -> None:
    async with running() as store:
        holder: list[Run] = []

        @announcing
        async def asks_twice() -> list[Any]:
            answers: list[Any] = []

            async def ask(question: str) -> None:
                answers.append(await store.ask(holder[0], {"q": question}))

            async with anyio.create_task_group() as group:
                group.start_soon(ask, "one")
                group.start_soon(ask, "two")
            return sorted(answers)

        task = store.admit("alice")
        assert task is not None
        run = store.start(task, asks_twice, Outcomes())
        holder.append(run)
        with anyio.fail_after(5):
            await run.settled.wait()
        view = store.publish(run)
        asking = await until(store, "alice", view.id, "input_required")
        while len(asking.input_requests) < 2:
            await anyio.sleep(0.01)
            asking = store.get("alice", view.id)
        first, second = sorted(asking.input_requests)
        store.answer("alice", view.id, {first: "A", "never-asked": "x"})
        still = store.get("alice", view.id)
        assert still.status == "input_required" and list(still.input_requests) == [second]
        store.answer("alice", view.id, {first: "again", second: "B"})  # `first` was answered
        assert (await until(store, "alice", view.id, "completed")).result == {"value": ["A", "B"]}


async def test_a_question_makes_the_call_a_task_at_once() -> None:
    async with running(TaskLimits(promote_after=60)) as store:
        holder: list[Run] = []

        @announcing
        async def asks() -> Any:
            return await store.ask(holder[0], {"q": "sure?"})

        task = store.admit("alice")
        assert task is not None
        holder.append(store.start(task, asks, Outcomes()))
        with anyio.fail_after(5):
            await holder[0].settled.wait()
        assert not holder[0].finished.is_set()


async def test_each_caller_has_a_bounded_number_of_tasks() -> None:
    async with running(TaskLimits(promote_after=0, per_owner=2)) as store:
        await become_task(store, "alice", working())
        await become_task(store, "alice", working())
        assert store.admit("alice") is None  # this call runs in its request instead
        assert store.admit("bob") is not None


async def test_results_are_bounded_in_bytes_and_the_store_in_reservations() -> None:
    limits = TaskLimits(promote_after=0, result_bytes=1000, store_bytes=2100)
    async with running(limits) as store:
        _, big = await become_task(store, "alice", working(0.05, "x" * 5000))
        kept = await until(store, "alice", big.id, "completed")
        assert kept.result == {"too_big": len('{"value":"' + "x" * 5000 + '"}'), "limit": 1000}
        await become_task(store, "bob", working())
        await become_task(store, "carol", working())  # 2 x 1000 reserved, plus the small result
        assert store.admit("dave") is None


async def test_finished_tasks_are_forgotten_after_their_ttl_and_never_before() -> None:
    clock = Clock()
    async with running(TaskLimits(promote_after=0, ttl_s=60), clock) as store:
        _, view = await become_task(store, "alice", working(0.05))
        done = await until(store, "alice", view.id, "completed")
        clock.now += 59
        assert store.get("alice", view.id).ttl_ms == done.ttl_ms
        clock.now += 2
        with pytest.raises(NotFound):
            store.get("alice", view.id)


async def test_a_running_task_never_expires_and_its_ttl_stays_ahead() -> None:
    clock = Clock()
    async with running(TaskLimits(promote_after=0, ttl_s=60), clock) as store:
        _, view = await become_task(store, "alice", working())
        clock.now += 3600
        again = store.get("alice", view.id)
        assert again.status == "working" and again.ttl_ms > 3600 * 1000


async def test_the_work_can_announce_its_start_from_a_worker_thread() -> None:
    async with running() as store:

        async def in_a_thread() -> str:
            def blocking() -> str:
                announce_work_started()
                import time

                time.sleep(0.3)
                return "threaded"

            return await anyio.to_thread.run_sync(blocking)

        _, view = await become_task(store, "alice", in_a_thread)
        assert (await until(store, "alice", view.id, "completed")).result == {"value": "threaded"}


async def test_closing_the_store_stops_running_work_and_admits_nothing() -> None:
    store = TaskStore(TaskLimits(promote_after=0), clock=Clock())
    async with store.running():
        _, view = await become_task(store, "alice", working())
    assert store.admit("alice") is None
    assert store.get("alice", view.id).status == "cancelled"


def test_limits_refuse_nonsense() -> None:
    for bad in (
        {"promote_after": -1},
        {"ttl_s": 0},
        {"per_owner": 0},
        {"result_bytes": 10, "store_bytes": 5},
        {"poll_interval_ms": 0},
    ):
        with pytest.raises(ValueError):
            TaskLimits(**bad)
