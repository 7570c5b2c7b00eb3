"""The watch service: debounced batches for files and trees, atomic saves, vanishing paths."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp_batteries.watch import ChangeBatch, WatchService
from watchfiles import Change

pytestmark = pytest.mark.anyio


class Batches:
    def __init__(self) -> None:
        self.batches: list[ChangeBatch] = []
        self._event = anyio.Event()

    async def __call__(self, batch: ChangeBatch) -> None:
        self.batches.append(batch)
        self._event.set()
        self._event = anyio.Event()

    async def wait_for(self, change: Change | None, path: Path, timeout: float = 10) -> None:
        with anyio.fail_after(timeout):
            while not any(
                (change is None or c == change) and p == str(path) for b in self.batches for c, p in b
            ):
                await self._event.wait()


async def test_a_watched_file_change_is_reported(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("1")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.set_targets(files=[target])
        target.write_text("2")
        await seen.wait_for(Change.modified, target)


async def test_an_atomic_save_is_reported_and_watching_continues(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("1")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.set_targets(files=[target])
        for round_ in range(2):  # a second save proves the watch survived the rename
            temp = tmp_path / f".f.txt.swp{round_}"
            temp.write_text(f"saved {round_}")
            os.replace(temp, target)
            await seen.wait_for(None, target)
            seen.batches.clear()


async def test_delete_and_recreate_are_both_reported(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("1")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.set_targets(files=[target])
        target.unlink()
        await seen.wait_for(Change.deleted, target)
        target.write_text("back")
        await seen.wait_for(Change.added, target)


async def test_other_files_in_the_same_directory_are_not_reported(tmp_path: Path) -> None:
    target, other = tmp_path / "f.txt", tmp_path / "g.txt"
    target.write_text("1")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.set_targets(files=[target])
        other.write_text("noise")
        target.write_text("2")
        await seen.wait_for(Change.modified, target)
    assert all(p != str(other) for b in seen.batches for _, p in b)


async def test_a_tree_reports_files_added_deep_inside(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.set_targets(trees=[tmp_path])
        (deep / "new.txt").write_text("x")
        await seen.wait_for(Change.added, deep / "new.txt")
        (tmp_path / "c").mkdir()
        await seen.wait_for(Change.added, tmp_path / "c")


async def test_no_watcher_runs_without_targets_and_it_stops_when_they_go(tmp_path: Path) -> None:
    watch = WatchService(Batches())
    assert not watch.running
    await watch.set_targets(files=[tmp_path / "x"])
    assert watch.running
    await watch.set_targets()
    assert not watch.running


async def test_a_watched_directory_that_vanishes_is_reported_and_rewatched(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    target = sub / "f.txt"
    target.write_text("1")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.set_targets(files=[target])
        target.unlink()
        sub.rmdir()
        await seen.wait_for(Change.deleted, target)
        sub.mkdir()
        target.write_text("again")
        await seen.wait_for(Change.added, target)
        assert watch.running


async def test_a_storm_of_changes_arrives_as_few_coalesced_batches(tmp_path: Path) -> None:
    target = tmp_path / "hot.txt"
    target.write_text("0")
    seen = Batches()
    async with WatchService(seen, debounce_ms=300) as watch:
        await watch.set_targets(files=[target])
        for i in range(2000):
            target.write_text(str(i))
        (tmp_path / "done").write_text("")
        target.write_text("last")
        await seen.wait_for(Change.modified, target)
    # Each batch is a set of distinct (change, path) pairs: bounded by paths, not by events.
    assert all(len(b) <= 3 for b in seen.batches)
    assert len(seen.batches) < 100


async def test_a_flat_directory_reports_direct_entries_but_not_deeper_ones(tmp_path: Path) -> None:
    deep = tmp_path / "sub"
    deep.mkdir()
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.set_targets(dirs=[tmp_path])
        (deep / "hidden-deep.txt").write_text("x")
        (tmp_path / "top.txt").write_text("x")
        await seen.wait_for(Change.added, tmp_path / "top.txt")
    assert all(p != str(deep / "hidden-deep.txt") for b in seen.batches for _, p in b)


async def test_a_watcher_that_cannot_start_is_retried_with_backoff_not_in_a_busy_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcp_batteries.watch as watch_module

    attempts: list[float] = []
    enough = anyio.Event()

    def failing_awatch(*args: object, **kwargs: object) -> object:
        attempts.append(anyio.current_time())
        if len(attempts) >= 6:
            enough.set()

        async def fail() -> AsyncIterator[ChangeBatch]:
            raise OSError("OS file watch limit reached")
            yield set()  # pragma: no cover - makes this an async generator

        return fail()

    monkeypatch.setattr(watch_module, "awatch", failing_awatch)
    watch = WatchService(Batches())
    await watch.set_targets(trees=[tmp_path])
    with anyio.fail_after(10):
        await enough.wait()
    await watch.set_targets()
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert gaps[-1] > gaps[0] * 4  # each quick failure doubles the wait
