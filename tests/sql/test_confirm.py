"""Confirmation before destruction on mcp-sql (`execute`), as a subprocess through the SDK's
`Client` in both eras, over stdio and HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, InputRequiredResult
from mcp_batteries.testing import (
    ERAS,
    CreatedTask,
    Era,
    connect,
    connect_http,
    http_server,
    start_call,
    stdio_params,
    tasks_extension,
    wait_task,
)

pytestmark = pytest.mark.anyio

SCRIPT = "mcp-batteries-sql"
ORIGINAL = [(1, "alice"), (2, "bob"), (3, "carol")]


def text(result: Any) -> str:
    return str(result.content[0].text)


def answering(action: str, asked: list[str]) -> Any:
    async def callback(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)  # type: ignore[arg-type]

    return callback


@pytest.mark.parametrize("era", ERAS)
async def test_a_delete_names_its_rows_and_runs_on_accept(
    sqlite_file: Path, sqlite_rows: Any, era: Era
) -> None:
    asked: list[str] = []
    params = stdio_params(SCRIPT, str(sqlite_file), "--allow-write")
    async with connect(params, era, elicitation_callback=answering("accept", asked)) as c:
        result = await c.call_tool("execute", {"statements": ["DELETE FROM t WHERE id > ?"], "params": [1]})
    assert not result.is_error, text(result)
    assert sqlite_rows(sqlite_file) == ORIGINAL[:1]
    (question,) = asked
    assert "delete rows from t (id > ?): 2 rows deleted in the database" in question


@pytest.mark.parametrize("era", ERAS)
async def test_a_declined_drop_keeps_the_table_over_http(
    sqlite_file: Path, sqlite_rows: Any, era: Era
) -> None:
    asked: list[str] = []
    async with (
        http_server(SCRIPT, str(sqlite_file), "--allow-write") as running,
        connect_http(running.url, era, elicitation_callback=answering("decline", asked)) as c,
    ):
        result = await c.call_tool("execute", {"statements": ["DROP TABLE t"]})
        assert not result.is_error and text(result).startswith("Nothing was changed: the user declined.")
        assert result.structured_content == {"statements": [], "transaction": True, "committed": False}
        # Statements that destroy nothing ask nothing.
        added = await c.call_tool("execute", {"statements": ["INSERT INTO t VALUES (4, 'dave')"]})
        assert not added.is_error
    assert len(asked) == 1 and "drop the table t with its data: 3 rows in the table" in asked[0]
    assert sqlite_rows(sqlite_file) == [*ORIGINAL, (4, "dave")]


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_cannot_be_asked_is_refused_under_destructive(
    sqlite_file: Path, sqlite_rows: Any, era: Era
) -> None:
    params = stdio_params(SCRIPT, str(sqlite_file), "--allow-write", "--confirm", "destructive")
    async with connect(params, era) as c:
        refused = await c.call_tool("execute", {"statements": ["DELETE FROM t"]})
    assert refused.is_error and "--confirm" in text(refused) and "3 rows deleted" in text(refused)
    assert sqlite_rows(sqlite_file) == ORIGINAL


async def test_an_altered_state_is_refused(sqlite_file: Path, sqlite_rows: Any) -> None:
    params = stdio_params(SCRIPT, str(sqlite_file), "--allow-write")
    arguments = {"statements": ["DELETE FROM t"]}
    async with connect(params, "modern", elicitation_callback=answering("accept", [])) as c:
        first = await c.session.call_tool("execute", arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult) and first.request_state
        (key,) = first.input_requests
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await c.session.call_tool(
                "execute",
                arguments,
                input_responses={key: ElicitResult(action="accept", content={"confirm": True})},
                request_state="v1." + first.request_state[3:][::-1],
            )
    assert sqlite_rows(sqlite_file) == ORIGINAL


async def test_a_client_following_tasks_confirms_in_the_request_before_the_task_exists(
    sqlite_file: Path, sqlite_rows: Any
) -> None:
    """docs/long-work.md: questions asked before the work are settled in the request; the task
    that follows runs only what was agreed."""
    params = stdio_params(SCRIPT, str(sqlite_file), "--allow-write", "--task-after", "0")
    arguments = {"statements": ["DELETE FROM t WHERE id = 3"]}
    async with connect(
        params, "modern", elicitation_callback=answering("accept", []), extensions=[tasks_extension()]
    ) as c:
        first = await c.session.call_tool("execute", arguments, allow_input_required=True, allow_claimed=True)
        assert isinstance(first, InputRequiredResult)
        (key,) = first.input_requests
        assert sqlite_rows(sqlite_file) == ORIGINAL
        created = await start_call(
            c,
            "execute",
            arguments,
            input_responses={key: ElicitResult(action="accept", content={"confirm": True})},
            request_state=first.request_state,
        )
        assert isinstance(created, CreatedTask)
        state = await wait_task(c, created.task_id)
        assert state.status == "completed", state
    assert sqlite_rows(sqlite_file) == ORIGINAL[:2]


@pytest.mark.parametrize("era", ERAS)
async def test_postgresql_counts_with_its_own_placeholders_and_a_decline_keeps_the_rows(
    pg_admin: Any, era: Era
) -> None:
    asked: list[str] = []
    params = stdio_params(SCRIPT, pg_admin.env.dsn, "--allow-write")
    async with connect(params, era, elicitation_callback=answering("decline", asked)) as c:
        kept = await c.call_tool(
            "execute",
            {
                "statements": ["DELETE FROM t WHERE id >= $1", "ALTER TABLE t DROP COLUMN name"],
                "params": [[2], []],
            },
        )
        assert not kept.is_error and text(kept).startswith("Nothing was changed: the user declined.")
    assert await pg_admin.rows() == ORIGINAL
    (question,) = asked
    assert "  delete rows from t (id >= $1): 2 rows deleted" in question
    assert "  alter the table t, dropping column name (its values are lost)" in question


async def test_mysql_drop_names_its_rows_and_runs_on_accept(my_admin: Any) -> None:
    asked: list[str] = []
    params = stdio_params(SCRIPT, my_admin.env.url, "--allow-write")
    async with connect(params, "modern", elicitation_callback=answering("accept", asked)) as c:
        done = await c.call_tool("execute", {"statements": ["TRUNCATE TABLE t"]})
        assert not done.is_error, text(done)
    assert await my_admin.rows() == []
    (question,) = asked
    assert "empty the table t (TRUNCATE): 3 rows in the table in the database main" in question
