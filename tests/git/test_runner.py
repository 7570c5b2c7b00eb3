"""How git processes are started and stopped: sessions, process groups, deadlines (no MCP)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest
from mcp_git.deadlines import Deadlines
from mcp_git.runner import PROMPTLESS_READS, needs_session, spawn

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="sessions and process groups are POSIX")


def test_only_promptless_reads_run_outside_a_session_of_their_own() -> None:
    assert not needs_session(["status", "--porcelain"])
    assert not needs_session(["for-each-ref", "refs/heads/"])
    assert not needs_session(["config", "--list"])
    # A read that is not on the list, a write, anything that reaches a remote: a session.
    assert needs_session(["log", "-1"])
    assert needs_session(["commit", "-m", "x"])
    assert needs_session(["status"], writes=True)
    assert needs_session(["rev-parse", "HEAD"], network=True)
    assert needs_session(["fetch", "origin"], network=True)
    assert needs_session([])
    assert "fetch" not in PROMPTLESS_READS and "push" not in PROMPTLESS_READS


@posix_only
def test_a_session_child_has_no_terminal_and_a_read_gets_a_process_group(tmp_path: Path) -> None:
    env = dict(os.environ)
    in_session = spawn(["cat"], env, tmp_path, stdin=True)
    in_group = spawn(["cat"], env, tmp_path, stdin=True, session=False)
    try:
        # A new session: it leads it (so it has no controlling terminal) and its own group.
        assert os.getsid(in_session.pid) == in_session.pid
        assert os.getpgid(in_session.pid) == in_session.pid
        # A process group of its own (killed whole), in the server's session.
        assert os.getpgid(in_group.pid) == in_group.pid
        assert os.getsid(in_group.pid) == os.getsid(0)
    finally:
        for process in (in_session, in_group):
            process.kill()
            process.communicate()


def test_a_deadline_acts_once_it_passes_and_not_once_disarmed() -> None:
    deadlines = Deadlines()
    fired = threading.Event()
    disarmed_ran = threading.Event()
    key = deadlines.arm(0.05, disarmed_ran.set)
    deadlines.disarm(key)
    deadlines.arm(0.1, fired.set)
    assert fired.wait(10)
    assert not disarmed_ran.is_set()
    assert deadlines.pending() == 0


def test_an_earlier_deadline_armed_later_is_not_kept_waiting() -> None:
    deadlines = Deadlines()
    late = deadlines.arm(3600, lambda: None)
    soon = threading.Event()
    deadlines.arm(0.05, soon.set)
    assert soon.wait(10)  # the thread was sleeping until the hour-long deadline
    deadlines.disarm(late)


def test_disarmed_deadlines_do_not_pile_up() -> None:
    deadlines = Deadlines()
    for _ in range(5000):
        with deadlines.within(3600, lambda: None):
            pass
    assert deadlines.pending() == 0
    assert len(deadlines._heap) < 600  # compacted, not one entry per command ever run


def test_a_failing_action_does_not_stop_later_deadlines() -> None:
    deadlines = Deadlines()

    def fail() -> None:
        raise RuntimeError("boom")

    after = threading.Event()
    deadlines.arm(0.01, fail)
    deadlines.arm(0.05, after.set)
    assert after.wait(10)


@pytest.mark.anyio
async def test_a_call_cancelled_before_its_thread_starts_returns_and_never_runs() -> None:
    import anyio
    from mcp_git.runner import off_loop

    ran = threading.Event()
    with anyio.fail_after(10):  # a cancelled caller must not wait for a thread that never ran
        with anyio.CancelScope() as scope:
            scope.cancel()
            await off_loop(ran.set)
        assert scope.cancelled_caught
        await anyio.to_thread.run_sync(lambda: None)  # the pool has moved on
    assert not ran.is_set()


@pytest.mark.anyio
async def test_many_calls_cancelled_at_every_moment_all_return() -> None:
    import anyio
    from mcp_git.runner import off_loop

    def busy() -> None:
        for _ in range(20_000):
            pass

    with anyio.fail_after(30):
        for index in range(300):
            with anyio.move_on_after(index * 0.00001):
                await off_loop(busy)
