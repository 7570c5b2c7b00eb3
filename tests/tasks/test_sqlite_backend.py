"""The SQLite backend's connections: reads do not wait for each other."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp_tasks.database import open_backend
from mcp_tasks.sqlite_backend import READERS

pytestmark = pytest.mark.anyio


async def test_read_transactions_run_side_by_side(tmp_path: Path) -> None:
    backend = await open_backend(sqlite_path=tmp_path / "tasks.db")
    try:
        all_open = anyio.Event()
        opened = 0

        async def hold_a_read() -> None:
            nonlocal opened
            async with backend.read() as tx:
                assert await tx.fetchval("SELECT 1") == 1
                opened += 1
                if opened == READERS:
                    all_open.set()
                await all_open.wait()  # every read is open at once, or this never ends

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(READERS):
                    tg.start_soon(hold_a_read)
    finally:
        await backend.close()


async def test_a_read_beyond_the_readers_waits_for_one_and_then_runs(tmp_path: Path) -> None:
    backend = await open_backend(sqlite_path=tmp_path / "tasks.db")
    try:
        release = anyio.Event()
        held = 0
        all_held = anyio.Event()

        async def hold() -> None:
            nonlocal held
            async with backend.read():
                held += 1
                if held == READERS:
                    all_held.set()
                await release.wait()

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(READERS):
                    tg.start_soon(hold)
                await all_held.wait()
                with anyio.move_on_after(0.2) as waited:
                    async with backend.read():
                        pass
                assert waited.cancelled_caught  # no reader was free
                release.set()
            async with backend.read() as tx:
                assert await tx.fetchval("SELECT 2") == 2
    finally:
        await backend.close()
