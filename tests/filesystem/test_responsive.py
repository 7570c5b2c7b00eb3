"""CPU-bound work never freezes the server: hostile regular expressions are bounded, walks and
searches stop when cancelled, and `ping` is answered throughout (issue 15, item 2).

Before: grep with is_regex and `(a+)+$` over 27 `a`s and `!` ran for 17 s on the event loop's
thread pool holding the GIL; no ping was answered and `notifications/cancelled` changed nothing.
"""

from __future__ import annotations

import threading
import time
import warnings
from pathlib import Path

import anyio
import pytest
from mcp import MCPDeprecationWarning
from mcp_batteries.errors import LimitExceeded
from mcp_batteries.safety import AllowedDirectories
from mcp_batteries.testing import connect, stdio_params
from mcp_batteries.work import Cancelled, CancelToken, run_cancellable
from mcp_filesystem import grep, walking

HOSTILE = "(a|a)+$"  # exponential on a backtracking engine, `regex` included
ISSUE_PATTERN = "(a+)+$"  # the issue's reproduction: `regex` needs no time for it at all


@pytest.fixture
def evil(tmp_path: Path) -> Path:
    (tmp_path / "evil.txt").write_text("a" * 27 + "!\n")
    return tmp_path


def test_the_issues_pattern_answers_at_once(evil: Path) -> None:
    started = time.monotonic()
    result = grep.grep(AllowedDirectories([evil]), ".", ISSUE_PATTERN, is_regex=True)
    assert result.matches == [] and time.monotonic() - started < 1.0


def test_a_catastrophic_pattern_stops_at_the_time_limit_with_a_clear_error(evil: Path) -> None:
    (evil / "evil.txt").write_text("a" * 40 + "!\n")
    started = time.monotonic()
    with pytest.raises(LimitExceeded, match="backtracks catastrophically") as caught:
        grep.grep(AllowedDirectories([evil]), ".", HOSTILE, is_regex=True, regex_timeout=0.5)
    # Far below what 40 characters cost without the limit (hours), and far above the 0.5 s
    # limit, so a loaded machine cannot make it fail.
    assert time.monotonic() - started < 30.0
    assert "evil.txt" in str(caught.value) and "0.5 s" in str(caught.value)


def test_grep_checks_cancellation_between_files(tmp_path: Path) -> None:
    for i in range(50):
        (tmp_path / f"f{i:02}.txt").write_text("needle\n")
    token = CancelToken()
    searched: list[str] = []

    def progress(done: int, where: str) -> None:  # never reached: 50 entries < one progress step
        searched.append(where)

    original = grep._search_text

    def counting(*args: object, **kwargs: object) -> list[grep.GrepMatch]:
        searched.append("file")
        token.cancel()  # cancelled while the first file is being searched
        return original(*args, **kwargs)  # type: ignore[arg-type]

    grep._search_text = counting  # type: ignore[assignment]
    try:
        with pytest.raises(Cancelled):
            grep.grep(AllowedDirectories([tmp_path]), ".", "needle", cancel=token, progress=progress)
    finally:
        grep._search_text = original  # type: ignore[assignment]
    assert searched == ["file"]


def test_walks_check_cancellation_between_directories(tmp_path: Path) -> None:
    for d in range(30):
        (tmp_path / f"d{d:02}").mkdir()
        for f in range(40):
            (tmp_path / f"d{d:02}" / f"f{f}").write_text("")
    allowed = AllowedDirectories([tmp_path])
    for walk in (walking.directory_tree, walking.search_files):
        token = CancelToken()
        seen: list[int] = []

        def progress(done: int, where: str, token: CancelToken = token, seen: list[int] = seen) -> None:
            seen.append(done)
            token.cancel()

        args = (allowed, ".", "*.nothing") if walk is walking.search_files else (allowed, ".")
        with pytest.raises(Cancelled):
            walk(*args, cancel=token, progress=progress)  # type: ignore[operator]
        assert seen == [500], walk.__name__  # stopped before the next directory


@pytest.mark.anyio
async def test_a_cancelled_call_returns_once_its_thread_has_stopped() -> None:
    units_done: list[int] = []
    finished = threading.Event()

    def work(token: CancelToken) -> None:
        try:
            for unit in range(1000):  # 10 s if never cancelled
                token.check()
                time.sleep(0.01)
                units_done.append(unit)
        finally:
            finished.set()

    started = time.monotonic()
    with anyio.move_on_after(0.2):
        await run_cancellable(work)
    assert finished.is_set(), "the worker thread still runs after the call returned"
    assert time.monotonic() - started < 5.0 and len(units_done) < 100


async def _ping_while(client: object, call: object) -> tuple[float, object]:
    """Send pings one after another while `call` runs; the worst ping latency and its result."""
    worst = 0.0
    outcome: list[object] = []

    async def run_call() -> None:
        outcome.append(await call)  # type: ignore[misc]

    async with anyio.create_task_group() as group:
        group.start_soon(run_call)
        while not outcome:
            sent = time.monotonic()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.send_ping()  # type: ignore[attr-defined]
            worst = max(worst, time.monotonic() - sent)
            await anyio.lowlevel.checkpoint()
    return worst, outcome[0]


@pytest.mark.anyio
async def test_pings_are_answered_while_a_hostile_regex_runs_over_stdio(evil: Path) -> None:
    (evil / "evil.txt").write_text("a" * 40 + "!\n")
    async with connect(stdio_params("mcp-batteries-filesystem", str(evil)), "legacy") as client:
        await client.list_tools()
        with anyio.fail_after(20):
            worst, result = await _ping_while(
                client, client.call_tool("grep", {"path": ".", "pattern": HOSTILE, "is_regex": True})
            )
        assert result.is_error and "backtracks catastrophically" in result.content[0].text  # type: ignore[attr-defined]
        assert worst < 0.5, f"a ping waited {worst:.3f} s"
        print(f"worst ping latency during a hostile regex: {worst * 1000:.1f} ms")
        fast = await client.call_tool("grep", {"path": ".", "pattern": ISSUE_PATTERN, "is_regex": True})
        assert not fast.is_error and "No matches" in fast.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_cancelling_a_hostile_search_leaves_the_server_answering(evil: Path) -> None:
    (evil / "evil.txt").write_text("a" * 40 + "!\n")
    async with connect(stdio_params("mcp-batteries-filesystem", str(evil)), "legacy") as client:
        await client.list_tools()
        started = time.monotonic()
        with anyio.move_on_after(0.3):  # the SDK sends notifications/cancelled for the call
            await client.call_tool("grep", {"path": ".", "pattern": HOSTILE, "is_regex": True})
        assert time.monotonic() - started < 1.0
        with anyio.fail_after(5):
            listed = await client.call_tool("list_directory", {"path": "."})
        assert "evil.txt" in listed.content[0].text  # type: ignore[union-attr]
