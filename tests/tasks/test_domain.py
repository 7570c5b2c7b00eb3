"""The task store on both engines, without MCP: every operation's behaviour and its refusals."""

from __future__ import annotations

import random
from datetime import date, timedelta

import pytest
from mcp_batteries.errors import AccessDenied, InvalidInput, LimitExceeded, NotFound
from mcp_tasks.access import Actor
from mcp_tasks.models import NewTask
from mcp_tasks.reads import Filters
from mcp_tasks.schema import READINESS, refresh_tree_keys
from mcp_tasks.store import TaskStore
from mcp_tasks.writes import Conflict

pytestmark = pytest.mark.anyio

ME = Actor("local:me", "me")
YOU = Actor("local:you", "you")


def day(offset: int) -> str:
    return (date.today() + timedelta(days=offset)).isoformat()


async def test_add_task_goes_to_the_inbox_with_every_field(store: TaskStore) -> None:
    task = await store.add_task(
        ME, "Write docs", description="the README", priority="high", tags=["Docs", "#x"]
    )
    assert (task.id, task.list, task.status, task.priority, task.version) == ("1", "inbox", "todo", "high", 1)
    assert task.tags == ["docs", "x"] and task.completed is False and task.updated_by == "local:me"
    lists = await store.list_lists(ME)
    assert [i.name for i in lists.lists] == ["inbox"] and lists.lists[0].open == 1


async def test_add_tasks_nests_subtasks_and_links_dependencies_by_key(store: TaskStore) -> None:
    plan = [
        NewTask(
            title="Build", key="build", subtasks=[NewTask(title="API", subtasks=[NewTask(title="Auth")])]
        ),
        NewTask(title="Ship", depends_on=["build"], due=day(3)),
    ]
    added = await store.add_tasks(ME, plan)
    assert added.created == 4 and added.columns == ["id", "key", "title", "parent"]
    assert added.rows == [["1", "build", "Build", None], ["2", None, "API", "1"], ["3", None, "Auth", "2"],
                          ["4", None, "Ship", None]]  # fmt: skip
    auth = await store.get_task(ME, 3)
    assert [a.id for a in auth.ancestors] == ["1", "2"]
    ship = await store.get_task(ME, "#4")
    assert [d.id for d in ship.dependencies] == ["1"] and ship.blocked
    assert [d.id for d in (await store.get_task(ME, 1)).dependents] == ["4"]


async def test_add_tasks_is_all_or_nothing(store: TaskStore) -> None:
    with pytest.raises(NotFound, match="depends_on names no task 99"):
        await store.add_tasks(ME, [NewTask(title="a"), NewTask(title="b", depends_on=[99])])
    with pytest.raises(InvalidInput, match="cycle"):
        await store.add_tasks(
            ME, [NewTask(title="a", key="a", depends_on=["b"]), NewTask(title="b", key="b", depends_on=["a"])]
        )
    with pytest.raises(InvalidInput, match=r"tasks\[1\]\.subtasks\[0\]: title must be one line"):
        await store.add_tasks(
            ME, [NewTask(title="ok"), NewTask(title="ok", subtasks=[NewTask(title="two\nlines")])]
        )
    assert (await store.list_tasks(ME, Filters())).total == 0


async def test_a_batch_of_5000_tasks_in_one_dependency_chain_is_created_and_its_cycle_refused(
    store: TaskStore,
) -> None:
    # Each task waits on the next one: the deepest order for a depth-first cycle check (it recursed
    # once per link and failed at ~1,000).
    size = 5000

    def chain(closed: bool) -> list[NewTask]:
        return [
            NewTask(
                title=f"step {i}",
                key=f"s{i}",
                depends_on=[f"s{(i + 1) % size}"] if closed or i + 1 < size else [],
            )
            for i in range(size)
        ]

    with pytest.raises(
        InvalidInput, match=r"form a cycle: s0 -> s1 -> .* \(5000 tasks in all\) .* -> s4999 -> s0$"
    ):
        await store.add_tasks(ME, chain(closed=True))
    added = await store.add_tasks(ME, chain(closed=False))
    assert added.created == size
    first = await store.get_task(ME, added.rows[0][0])  # ids: the refused batch used some up
    assert [d.id for d in first.dependencies] == [added.rows[1][0]] and first.blocked
    with pytest.raises(LimitExceeded, match="at most 5000 tasks"):
        await store.add_tasks(ME, [NewTask(title=f"t{i}") for i in range(size + 1)])


def nested(levels: int) -> NewTask:
    task = NewTask(title=f"level {levels}")
    for level in reversed(range(levels)):
        task = NewTask(title=f"level {level}", subtasks=[task])
    return task


async def test_subtasks_nest_90_levels_per_call_and_deeper_through_parent(store: TaskStore) -> None:
    added = await store.add_tasks(ME, [nested(90)])
    assert added.created == 91
    with pytest.raises(
        LimitExceeded, match=r"at most 90 levels deep in one add_tasks call .* parent is the deepest"
    ):
        await store.add_tasks(ME, [nested(91)])
    deeper = await store.add_tasks(ME, [nested(30)], parent=added.rows[-1][0])
    deepest = await store.get_task(ME, deeper.rows[-1][0])
    assert len(deepest.ancestors) == 121


@pytest.mark.parametrize("huge", [2**63, 2**64, 2**53, "9223372036854775808", "#99999999999999999999"])
async def test_ids_past_what_json_carries_exactly_are_refused_on_every_engine(
    store: TaskStore, huge: int | str
) -> None:
    exists = (await store.add_task(ME, "exists")).id
    calls = [
        lambda: store.get_task(ME, huge),
        lambda: store.add_task(ME, "x", parent=huge),
        lambda: store.add_task(ME, "x", depends_on=[huge]),
        lambda: store.update_task(ME, exists, add_dependencies=[huge]),
        lambda: store.move_task(ME, exists, after=huge),
        lambda: store.add_tasks(ME, [NewTask(title="x", depends_on=[huge])]),
        lambda: store.list_tasks(ME, Filters(parent=huge)),
    ]
    for call in calls:
        with pytest.raises(InvalidInput, match=r"task ids are|neither a task id"):
            await call()


async def test_offsets_past_what_json_carries_exactly_are_refused_on_every_engine(store: TaskStore) -> None:
    for offset in (2**63, 2**53, -1):
        with pytest.raises(InvalidInput, match="offset must be an integer from 0 to 9,007,199,254,740,991"):
            await store.list_tasks(ME, Filters(), offset=offset)
        with pytest.raises(InvalidInput, match="offset must be"):
            await store.list_lists(ME, offset=offset)
        with pytest.raises(InvalidInput, match="offset must be"):
            await store.resource_entries(ME, offset=offset, limit=10)
    assert (await store.list_tasks(ME, Filters(), offset=2**53 - 1)).rows == []


@pytest.mark.parametrize(
    "since", ["0001-01-01", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "9999-12-31", "99999w"]
)
async def test_history_since_the_ends_of_time_answers(store: TaskStore, since: str) -> None:
    await store.add_task(ME, "report")
    history, _ = await store.history(ME, since)
    assert [e.kind for e in history] == ([] if since.startswith("9999-") else ["list_created", "created"])


async def test_dependencies_refuse_cycles_self_and_parents(store: TaskStore) -> None:
    await store.add_tasks(ME, [NewTask(title="a", subtasks=[NewTask(title="a1")])])
    await store.add_task(ME, "b", depends_on=[1])
    with pytest.raises(InvalidInput, match="cycle"):
        await store.update_task(ME, 1, add_dependencies=[3])
    with pytest.raises(InvalidInput, match="itself"):
        await store.update_task(ME, 1, add_dependencies=[1])
    with pytest.raises(InvalidInput, match="one of its parents"):
        await store.update_task(ME, 2, add_dependencies=[1])
    changed = await store.update_task(ME, 3, remove_dependencies=[1])
    assert changed.task.depends_on == [] and changed.task.version == 2


async def test_a_conditional_update_against_a_newer_version_is_a_conflict_that_shows_the_task(
    store: TaskStore,
) -> None:
    task = await store.add_task(ME, "draft")
    await store.update_task(YOU, task.id, title="draft v2", expected_version=1)
    with pytest.raises(Conflict) as raised:
        await store.update_task(ME, task.id, title="mine", expected_version=1)
    assert raised.value.current.title == "draft v2" and raised.value.current.version == 2
    assert '"title":"draft v2"' in str(raised.value) and "expected_version=2" in str(raised.value)
    assert (await store.get_task(ME, task.id)).task.title == "draft v2"


async def test_unconditional_updates_of_different_fields_both_apply(store: TaskStore) -> None:
    task = await store.add_task(ME, "t", tags=["a"])
    await store.update_task(ME, task.id, priority="high", add_tags=["b"])
    await store.update_task(YOU, task.id, due=day(1), add_tags=["c"])
    got = (await store.get_task(ME, task.id)).task
    assert (got.priority, got.due, got.tags, got.version, got.updated_by) == (
        "high",
        day(1),
        ["a", "b", "c"],
        3,
        "local:you",
    )
    same = await store.update_task(ME, task.id, priority="high")
    assert same.task.version == 3  # nothing changed, so no new version
    cleared = await store.update_task(ME, task.id, due="", tags=[])
    assert cleared.task.due is None and cleared.task.tags == []


async def test_closing_a_parent_with_open_subtasks_needs_include_subtasks(store: TaskStore) -> None:
    await store.add_tasks(
        ME, [NewTask(title="p", subtasks=[NewTask(title="c1"), NewTask(title="c2", status="done")])]
    )
    with pytest.raises(InvalidInput, match=r"1 open subtask\(s\): 2 'c1'.*include_subtasks=true"):
        await store.set_status(ME, 1, "done")
    with pytest.raises(InvalidInput, match="open subtask"):
        await store.update_task(ME, 1, status="cancelled")
    done = await store.set_status(ME, 1, "done", include_subtasks=True)
    assert done.task.completed and done.also_changed == ["2"]
    assert (await store.get_task(ME, 2)).task.status == "done"
    again = await store.set_status(ME, 1, "done")
    assert again.task.version == done.task.version  # completing twice changes nothing


async def test_delete_takes_subtasks_only_when_asked_and_frees_dependents(store: TaskStore) -> None:
    await store.add_tasks(
        ME, [NewTask(title="p", key="p", subtasks=[NewTask(title="c")]), NewTask(title="w", depends_on=["p"])]
    )
    with pytest.raises(InvalidInput, match="include_subtasks=true"):
        await store.delete_task(ME, 1)
    gone = await store.delete_task(ME, 1, include_subtasks=True)
    assert gone.deleted == ["1", "2"] and gone.unblocked == ["3"]
    waiting = await store.get_task(ME, 3)
    assert waiting.task.depends_on == [] and waiting.task.version == 2
    with pytest.raises(NotFound):
        await store.get_task(ME, 2)
    fresh = await store.add_task(ME, "new")
    assert fresh.id == "4"  # ids are never reused


async def test_move_reorders_reparents_and_carries_subtasks_to_another_list(store: TaskStore) -> None:
    await store.add_tasks(ME, [NewTask(title=t) for t in ("a", "b", "c")])
    await store.move_task(ME, 3, position="first")
    await store.move_task(ME, 1, before=2)
    order = (await store.list_tasks(ME, Filters())).rows
    assert [r[2] for r in order] == ["c", "a", "b"]
    for _ in range(12):  # squeeze into the same gap until the group is renumbered
        await store.move_task(ME, 2, after=3)
        await store.move_task(ME, 2, before=1)
    assert [r[2] for r in (await store.list_tasks(ME, Filters())).rows] == ["c", "b", "a"]
    await store.move_task(ME, 2, parent=3)
    await store.create_list(ME, "later")
    moved = await store.move_task(ME, 3, list_ref="later")
    assert moved.task.list == "later" and moved.also_changed == ["2"]
    assert (await store.get_task(ME, 2)).task.list == "later"
    with pytest.raises(InvalidInput, match="under itself"):
        await store.move_task(ME, 3, parent=2)
    top = await store.move_task(ME, 2, parent="")
    assert top.task.parent is None
    with pytest.raises(InvalidInput, match="nothing to do"):
        await store.move_task(ME, 2)


async def test_next_task_puts_overdue_then_priority_then_what_unblocks_most(store: TaskStore) -> None:
    await store.add_tasks(ME, [
        NewTask(title="low someday", priority="low"),
        NewTask(title="high", priority="high", key="h"),
        NewTask(title="waits on high", priority="high", depends_on=["h"]),
        NewTask(title="high marked blocked", priority="high", status="blocked"),
        NewTask(title="parent", priority="high", subtasks=[NewTask(title="child", priority="low")]),
        NewTask(title="low overdue", priority="low", due=day(-2)),
    ])  # fmt: skip
    first = await store.next_task(ME)
    assert first.task is not None and first.task.title == "low overdue"
    assert "overdue since" in first.reason and "2 days" in first.reason
    await store.set_status(ME, first.task.id, "done")
    second = await store.next_task(ME)
    assert second.task is not None and second.task.title == "high"
    assert "unblocks 1 open task(s) (3)" in second.reason and "high priority" in second.reason
    assert second.candidates == 3  # high, child, low someday: not the waiting, blocked or parent tasks
    assert [a.title for a in second.alternatives] == ["low someday", "child"]
    tagged = await store.next_task(ME, tag="nope")
    assert tagged.task is None


async def test_next_task_says_why_nothing_is_ready(store: TaskStore) -> None:
    assert "no tasks yet" in (await store.next_task(ME)).reason
    await store.add_tasks(
        ME, [NewTask(title="a", key="a", status="blocked"), NewTask(title="b", depends_on=["a"])]
    )
    empty = await store.next_task(ME)
    assert (
        empty.task is None
        and "1 wait on dependencies" in empty.reason
        and "1 have status blocked" in empty.reason
    )


async def test_list_tasks_filters_sorts_and_pages(store: TaskStore) -> None:
    await store.add_tasks(ME, [
        NewTask(title=f"task {i}", priority=("low", "medium", "high")[i % 3], due=day(i),
                tags=["even"] if i % 2 == 0 else [], description="needle" if i == 7 else "")
        for i in range(12)
    ])  # fmt: skip
    first = await store.list_tasks(ME, Filters(), limit=5)
    assert first.total == 12 and len(first.rows) == 5 and first.next_offset == 5 and "offset=5" in first.hint
    last = await store.list_tasks(ME, Filters(), offset=10, limit=5)
    assert last.next_offset is None and len(last.rows) == 2
    high = await store.list_tasks(ME, Filters(priority=["high"]), sort="due")
    assert [r[2] for r in high.rows] == ["task 2", "task 5", "task 8", "task 11"]
    assert (await store.list_tasks(ME, Filters(tag="even"))).total == 6
    assert [r[2] for r in (await store.list_tasks(ME, Filters(text="NEEDLE"))).rows] == ["task 7"]
    window = await store.list_tasks(ME, Filters(due_after=day(3), due_before=day(4)))
    assert [r[2] for r in window.rows] == ["task 3", "task 4"]
    await store.set_status(ME, 1, "done")
    assert (await store.list_tasks(ME, Filters(status=["closed"]))).total == 1
    assert (await store.list_tasks(ME, Filters(status=["open"]))).total == 11
    with pytest.raises(InvalidInput, match="sort must be one of"):
        await store.list_tasks(ME, Filters(), sort="random")


async def test_archived_lists_leave_listings_but_stay_readable(store: TaskStore) -> None:
    await store.create_list(ME, "old", title="Old project")
    await store.add_task(ME, "finished thing", list_ref="old")
    archived = await store.archive_list(ME, "old")
    assert archived.archived and archived.total == 1
    assert (await store.list_tasks(ME, Filters())).total == 0
    assert (await store.list_tasks(ME, Filters(list_ref="old"))).total == 1
    assert [i.name for i in (await store.list_lists(ME)).lists] == []
    with pytest.raises(InvalidInput, match="archived"):
        await store.update_task(ME, 1, title="x")
    await store.archive_list(ME, "old", archived=False)
    assert (await store.list_tasks(ME, Filters())).total == 1


async def test_workspaces_keep_callers_apart_even_when_ids_are_guessed(store: TaskStore) -> None:
    alice = Actor("tokens-file:alice", "alice", frozenset({"team-a"}))
    bob = Actor("tokens-file:bob", "bob", frozenset({"team-b"}))
    secret = await store.add_task(alice, "alice's secret", tags=["s"])
    assert secret.list == "team-a:inbox"
    await store.add_task(bob, "bob's task")
    assert [r[2] for r in (await store.list_tasks(bob, Filters())).rows] == ["bob's task"]
    for attempt in (
        store.get_task(bob, secret.id),
        store.update_task(bob, secret.id, title="pwned"),
        store.set_status(bob, secret.id, "done"),
        store.move_task(bob, secret.id, position="first"),
        store.delete_task(bob, secret.id),
        store.add_task(bob, "x", depends_on=[secret.id]),
        store.add_task(bob, "x", parent=secret.id),
        store.list_tasks(bob, Filters(list_ref="team-a:inbox")),
        store.can_see_task(bob, secret.id),
    ):
        with pytest.raises(NotFound):
            await attempt
    with pytest.raises(AccessDenied):
        await store.create_list(bob, "intrude", workspace="team-a")
    assert "alice" not in str([t.title for t in await store.all_tasks(bob)])
    assert await store.complete_tasks(bob, "") == ["2"]
    assert await store.complete_lists(bob, "") == ["team-b:inbox"]
    history, _ = await store.history(bob, "1h")
    assert all("alice" not in e.title for e in history) and history
    got = await store.get_task(alice, secret.id)
    assert got.task.title == "alice's secret" and got.task.updated_by == "tokens-file:alice"
    assert (await store.summary(bob)).total == 1
    everyone = await store.list_tasks(ME, Filters())  # the local user is unrestricted
    assert everyone.total == 2


async def test_a_read_only_store_and_a_read_only_identity_change_nothing(backend: object) -> None:
    store = TaskStore(backend, read_only=True)  # type: ignore[arg-type]
    with pytest.raises(AccessDenied, match="read-only"):
        await store.add_task(ME, "x")
    writer = TaskStore(backend)  # type: ignore[arg-type]
    reader = Actor("oauth:r", "r", None, can_write=False)
    with pytest.raises(AccessDenied, match="may read"):
        await writer.add_task(reader, "x")
    assert (await writer.list_tasks(reader, Filters())).total == 0


async def test_history_lists_changes_since_a_time(store: TaskStore) -> None:
    task = await store.add_task(ME, "report")
    await store.set_status(YOU, task.id, "in_progress")
    await store.set_status(YOU, task.id, "done")
    history, truncated = await store.history(ME, "10m")
    assert not truncated
    assert [(e.kind, e.actor) for e in history][-3:] == [
        ("created", "local:me"),
        ("status", "local:you"),
        ("status", "local:you"),
    ]
    assert history[-1].detail == "status: in_progress -> done"
    assert (await store.history(ME, "2999-01-01"))[0] == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.add_task(ME, "two\nlines"), "title must be one line"),
        (lambda s: s.add_task(ME, " "), "title must not be empty"),
        (lambda s: s.add_task(ME, "x", due="next week"), "due must be a date"),
        (lambda s: s.add_task(ME, "x", tags=["two words"]), "tag 'two words' is not allowed"),
        (lambda s: s.add_task(ME, "x", priority="urgent"), "priority must be one of low, medium, high"),
        (lambda s: s.add_task(ME, "x", list_ref="Bad Name!"), "list name 'Bad Name!' is not allowed"),
        (lambda s: s.get_task(ME, "abc"), "task ids are numbers"),
        (lambda s: s.get_task(ME, 0), "positive"),
        (lambda s: s.create_list(ME, "x", workspace="a:b"), "workspace 'a:b' is not allowed"),
        (lambda s: s.add_task(ME, "x", list_ref="nope"), "no list nope; your lists"),
        (lambda s: s.add_tasks(ME, [NewTask(title="x", key="k"), NewTask(title="y", key="k")]), "used twice"),
    ],
)
async def test_bad_input_gets_an_error_that_says_what_is_allowed(
    store: TaskStore, call: object, message: str
) -> None:
    with pytest.raises((InvalidInput, NotFound, LimitExceeded), match=message):
        await call(store)  # type: ignore[operator]


class _Rollback(Exception):
    pass


async def _counters_are_exact(store: TaskStore) -> None:
    """The stored readiness counters equal a from-scratch recomputation (then rolled back)."""
    query = "SELECT id, open_deps, open_children, open_dependents FROM tasks ORDER BY id"
    try:
        async with store.backend.write() as tx:
            kept = [tuple(r) for r in await tx.fetch(query)]
            await tx.execute("UPDATE tasks SET " + READINESS)
            fresh = [tuple(r) for r in await tx.fetch(query)]
            assert kept == fresh
            raise _Rollback
    except _Rollback:
        pass


async def test_readiness_counters_stay_exact_through_random_changes(store: TaskStore) -> None:
    # next_task trusts counters that every write keeps; any operation that forgot a neighbour
    # would leave one stale. Random operations, then a from-scratch comparison.
    rng = random.Random(7)
    await store.add_tasks(
        ME,
        [NewTask(title=f"t{i}", subtasks=[NewTask(title=f"t{i}.{j}") for j in range(2)]) for i in range(6)],
    )
    statuses = ["todo", "in_progress", "blocked", "done", "cancelled"]
    for step in range(60):
        ids = [int(r[0]) for r in (await store.list_tasks(ME, Filters(), limit=500)).rows]
        if not ids:
            break
        task, other = rng.choice(ids), rng.choice(ids)
        op = rng.randrange(6)
        try:
            if op == 0:
                await store.add_task(ME, f"new {step}", parent=task if rng.random() < 0.5 else None,
                                     depends_on=[other] if rng.random() < 0.5 else [])  # fmt: skip
            elif op == 1:
                await store.set_status(ME, task, rng.choice(statuses), include_subtasks=rng.random() < 0.5)
            elif op == 2:
                await store.update_task(ME, task, add_dependencies=[other])
            elif op == 3:
                await store.update_task(
                    ME, task, remove_dependencies=[other], status=rng.choice(statuses[:3])
                )
            elif op == 4:
                await store.move_task(ME, task, parent=other if rng.random() < 0.7 else "")
            else:
                await store.delete_task(ME, task, include_subtasks=rng.random() < 0.7)
        except (InvalidInput, NotFound):
            pass  # refused operations change nothing
        if step % 10 == 9:
            await _counters_are_exact(store)
    await _counters_are_exact(store)


async def test_tree_keys_stay_exact_through_moves_and_renumbering(store: TaskStore) -> None:
    # list_tasks pages in tree order by a materialised key; moves and renumbering must keep it.
    await store.add_tasks(
        ME,
        [NewTask(title=f"t{i}", subtasks=[NewTask(title=f"t{i}.{j}") for j in range(2)]) for i in range(4)],
    )
    rng = random.Random(3)
    for _ in range(30):
        ids = [int(r[0]) for r in (await store.list_tasks(ME, Filters(), limit=500)).rows]
        task, other = rng.choice(ids), rng.choice(ids)
        try:
            choice = rng.randrange(3)
            if choice == 0:
                await store.move_task(ME, task, before=other)
            elif choice == 1:
                await store.move_task(ME, task, parent=other)
            else:
                await store.move_task(ME, task, position=rng.choice(["first", "last"]))
        except InvalidInput:
            pass
    query = "SELECT id, tree_key FROM tasks ORDER BY id"
    try:
        async with store.backend.write() as tx:
            kept = [tuple(r) for r in await tx.fetch(query)]
            await tx.execute(refresh_tree_keys(tx.dialect, "t.parent_id IS NULL"))
            assert kept == [tuple(r) for r in await tx.fetch(query)]
            raise _Rollback
    except _Rollback:
        pass
    rows = (await store.list_tasks(ME, Filters(), limit=500)).rows
    seen: set[str] = set()
    for row in rows:  # tree order: every parent before its subtasks
        assert row[7] is None or row[7] in seen
        seen.add(row[0])
