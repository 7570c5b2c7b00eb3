"""The watch service: debounced batches for files and trees, atomic saves, vanishing paths."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import anyio
import anyio.from_thread
import pytest
from mcp_batteries._live.watch import ChangeBatch, WatchService, WatchTarget, has_more_directories
from watchfiles import Change

pytestmark = pytest.mark.anyio


def open_inotify_instances() -> int:
    """Inotify instances this process holds (Linux), counted from its open file descriptors."""
    if not os.path.isdir("/proc/self/fd"):
        return 0  # not Linux: there is no inotify to run out of
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            continue  # closed while we looked
    return count


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
        await watch.add(WatchTarget.file(target))
        target.write_text("2")
        await seen.wait_for(Change.modified, target)


async def test_an_atomic_save_is_reported_and_watching_continues(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("1")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.add(WatchTarget.file(target))
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
        await watch.add(WatchTarget.file(target))
        target.unlink()
        await seen.wait_for(Change.deleted, target)
        target.write_text("back")
        await seen.wait_for(Change.added, target)


async def test_other_files_in_the_same_directory_are_not_reported(tmp_path: Path) -> None:
    target, other = tmp_path / "f.txt", tmp_path / "g.txt"
    target.write_text("1")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.add(WatchTarget.file(target))
        other.write_text("noise")
        target.write_text("2")
        await seen.wait_for(Change.modified, target)
    assert all(p != str(other) for b in seen.batches for _, p in b)


async def test_a_tree_reports_files_added_deep_inside(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.add(WatchTarget.tree(tmp_path))
        (deep / "new.txt").write_text("x")
        await seen.wait_for(Change.added, deep / "new.txt")
        (tmp_path / "c").mkdir()
        await seen.wait_for(Change.added, tmp_path / "c")


async def test_no_watcher_runs_without_targets_and_it_stops_when_they_go(tmp_path: Path) -> None:
    async with WatchService(Batches()) as watch:
        assert not watch.running
        await watch.add(WatchTarget.file(tmp_path / "x"))
        assert watch.running
        await watch.remove(WatchTarget.file(tmp_path / "x"))
        assert not watch.running


async def test_a_watched_directory_that_vanishes_is_reported_and_rewatched(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    target = sub / "f.txt"
    target.write_text("1")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.add(WatchTarget.file(target))
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
        await watch.add(WatchTarget.file(target))
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
        await watch.add(WatchTarget.dir(tmp_path))
        (deep / "hidden-deep.txt").write_text("x")
        (tmp_path / "top.txt").write_text("x")
        await seen.wait_for(Change.added, tmp_path / "top.txt")
    assert all(p != str(deep / "hidden-deep.txt") for b in seen.batches for _, p in b)


async def test_a_watcher_that_cannot_start_is_retried_with_backoff_not_in_a_busy_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcp_batteries._live.watch as watch_module

    attempts: list[float] = []

    enough = anyio.Event()

    def refusing_rust_notify(*args: object, **kwargs: object) -> object:
        attempts.append(time.monotonic())  # called in an anyio worker thread
        if len(attempts) == 6:
            anyio.from_thread.run_sync(enough.set)
        raise OSError("OS file watch limit reached")

    monkeypatch.setattr(watch_module, "RustNotify", refusing_rust_notify)
    async with WatchService(Batches()) as watch:
        await watch.add(WatchTarget.tree(tmp_path))
        with anyio.fail_after(10):
            await enough.wait()
        await watch.remove(WatchTarget.tree(tmp_path))
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert gaps[-1] > gaps[0] * 4  # each failure doubles the wait


async def test_a_file_in_a_directory_that_does_not_exist_yet_is_seen_when_it_appears(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "f.txt"
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.add(WatchTarget.file(target))
        target.parent.mkdir(parents=True)
        target.write_text("born")
        await seen.wait_for(None, target)


async def test_subscribing_in_a_watched_directory_starts_no_new_watcher(tmp_path: Path) -> None:
    files = [tmp_path / f"f{i}.txt" for i in range(2000)]
    async with WatchService(Batches()) as watch:
        for file in files:
            await watch.add(WatchTarget.file(file))
        assert watch.starts == 1
        for file in files[1:]:
            await watch.remove(WatchTarget.file(file))
        assert watch.starts == 1


async def test_many_directories_are_watched_by_few_watchers(tmp_path: Path) -> None:
    dirs = [tmp_path / f"d{i}" for i in range(300)]
    for d in dirs:
        d.mkdir()
    seen = Batches()
    most_os_watches = 0
    async with WatchService(seen) as watch:
        for d in dirs:
            await watch.add(WatchTarget.file(d / "f.txt"))
            most_os_watches = max(most_os_watches, open_inotify_instances())
        assert len(watch.watched_roots) == 300
        assert watch.starts < 300 * 3  # a log-structured merge, not a rebuild per directory
        # Retired watchers give their OS watch back at once: a burst of merges must not pile up
        # inotify instances towards the per-user limit (128 by default).
        assert most_os_watches <= 32, most_os_watches
        for d in (dirs[0], dirs[150], dirs[-1]):
            (d / "f.txt").write_text("x")
            await seen.wait_for(None, d / "f.txt")


async def test_a_change_under_a_tree_and_a_file_target_is_reported_once(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.txt"
    target.parent.mkdir()
    target.write_text("0")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.add(WatchTarget.file(target))
        await watch.add(WatchTarget.tree(tmp_path))
        target.write_text("1")
        await seen.wait_for(Change.modified, target)
        (tmp_path / "marker").write_text("")
        await seen.wait_for(None, tmp_path / "marker")
    reports = [b for b in seen.batches if any(p == str(target) for _, p in b)]
    assert len(reports) == 1


async def test_a_name_that_is_not_utf8_resets_the_watcher_instead_of_killing_it(tmp_path: Path) -> None:
    # watchfiles cannot decode such a path and fails on it until restarted.
    target = tmp_path / "f.txt"
    target.write_text("0")
    seen = Batches()
    async with WatchService(seen) as watch:
        await watch.add(WatchTarget.tree(tmp_path))
        await watch.add(WatchTarget.file(target))
        (Path(os.fsdecode(bytes(tmp_path) + b"/bad\xff.txt"))).write_text("x")
        await seen.wait_for(None, target)  # reported as possibly changed
        seen.batches.clear()
        target.write_text("1")
        await seen.wait_for(Change.modified, target)  # and watching goes on


def test_a_tree_is_judged_by_its_directories_and_links_are_not_followed(tmp_path: Path) -> None:
    for name in ("a/b", "a/c", "d"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "a" / "file.txt").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)
    assert has_more_directories(tmp_path, 3)  # a, a/b, a/c, d
    assert not has_more_directories(tmp_path, 4)


def test_paths_reported_in_a_roots_canonical_spelling_map_back_to_the_root_as_given(tmp_path: Path) -> None:
    # FSEvents (macOS) reports /private/var/... for a root watched as /var/...: the watch service
    # maps the canonical spelling back, so targets registered in the given spelling still match.
    from mcp_batteries._live.watch import as_given, canonical_aliases

    (tmp_path / "private" / "var").mkdir(parents=True)
    (tmp_path / "var").symlink_to(tmp_path / "private" / "var")
    given = tmp_path / "var"
    aliases = canonical_aliases(frozenset({given, tmp_path / "private"}))
    assert aliases == {str(tmp_path / "private" / "var"): str(given)}
    real = str(tmp_path / "private" / "var")
    assert as_given(real + "/folders/x.txt", aliases) == str(given / "folders" / "x.txt")
    assert as_given(real, aliases) == str(given)
    assert as_given(real + "-other/x", aliases) == real + "-other/x"  # not inside: as reported
    assert as_given("/elsewhere/x", aliases) == "/elsewhere/x"
