"""The portable family on Linux: what it proves before each operation, and what it cannot.

It runs here with POSIX names (forced as on a platform without descriptor-relative opens); the
whole escape corpus of mcp-filesystem and mcp-git runs on it too (tests/filesystem/test_escapes.py,
tests/git). These tests swap things at the exact moment a check could be fooled."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries._platform import portable_files
from mcp_batteries._platform.portable_files import PortableFiles


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "allowed"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "public.txt").write_text("public\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "public.txt").write_text("SECRET\n")
    return root, outside


def loops(call: Callable[[], Any]) -> None:
    with pytest.raises(OSError) as caught:
        call()
    assert caught.value.errno in (errno.ELOOP, errno.ENOTDIR), caught.value


def swap_before_next_open(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run `swap` right before the portable family's next `os.open` (the race, made certain)."""
    real_open = os.open

    def racing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        monkeypatch.setattr(portable_files.os, "open", real_open)
        swap()
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(portable_files.os, "open", racing_open)


def test_a_link_is_never_opened_as_a_directory_or_a_file(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    (root / "door").symlink_to(outside)
    (root / "secret").symlink_to(outside / "public.txt")
    top = PortableFiles().open_root(str(root))
    loops(lambda: top.open_dir("door"))
    loops(lambda: top.open_file("secret"))
    loops(lambda: PortableFiles().open_root(str(root / "door")))


def test_a_directory_swapped_for_a_link_after_it_was_opened_is_refused(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    sub = PortableFiles().open_root(str(root)).open_dir("sub")
    (root / "sub").rename(root / "parked")
    (root / "sub").symlink_to(outside)
    for operation in (
        lambda: sub.lstat("public.txt"),
        lambda: sub.open_file("public.txt"),
        lambda: sub.create_file("new.txt", 0o600),
        lambda: sub.scandir(),
        lambda: sub.mkdir("d"),
        lambda: sub.unlink("public.txt"),
    ):
        loops(operation)
    assert sorted(p.name for p in outside.iterdir()) == ["public.txt"]


def test_a_file_swapped_for_a_link_between_the_check_and_the_open_is_not_read(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tree
    sub = PortableFiles().open_root(str(root)).open_dir("sub")

    def swap() -> None:
        (root / "sub" / "public.txt").unlink()
        (root / "sub" / "public.txt").symlink_to(outside / "public.txt")

    swap_before_next_open(monkeypatch, swap)
    loops(lambda: sub.open_file("public.txt"))  # identity: what was opened is not what was checked


def test_a_parent_swapped_and_restored_around_the_open_is_caught_by_identity(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tree
    sub = PortableFiles().open_root(str(root)).open_dir("sub")
    real_open = os.open

    def open_through_a_swapped_parent(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # The open itself goes outside (as if `sub` were a link at that instant), the check
        # before and after sees the real directory.
        return real_open(str(outside / "public.txt"), flags, *args, **kwargs)

    monkeypatch.setattr(portable_files.os, "open", open_through_a_swapped_parent)
    loops(lambda: sub.open_file("public.txt"))


def test_a_creation_racing_a_parent_swap_is_detected_but_may_leave_an_empty_file_outside(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The weaker guarantee of the portable family, stated in docs/platforms.md: the swap is
    # detected and nothing is written, but the empty file the open created stays where the link led.
    root, outside = tree
    sub = PortableFiles().open_root(str(root)).open_dir("sub")

    def swap() -> None:
        (root / "sub").rename(root / "parked")
        (root / "sub").symlink_to(outside)

    swap_before_next_open(monkeypatch, swap)
    loops(lambda: sub.create_file("new.txt", 0o600))
    assert (outside / "new.txt").read_bytes() == b""
    assert (outside / "public.txt").read_text() == "SECRET\n"


def test_renames_that_must_not_replace_do_not(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    top = PortableFiles().open_root(str(root))
    (root / "a").write_text("a")
    (root / "b").write_text("b")
    with pytest.raises(FileExistsError):
        top.rename_noreplace("a", top, "b")
    top.replace("a", top, "b")
    assert (root / "b").read_text() == "a"


def test_a_listed_entry_is_reopened_only_while_it_is_the_same(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    files = PortableFiles()
    st = os.stat(root / "sub" / "public.txt")
    identity = (st.st_dev, st.st_ino)
    fd = files.reopen_file(str(root / "sub" / "public.txt"), identity)
    assert fd is not None
    os.close(fd)
    (root / "sub" / "other.txt").write_text("another file\n")  # created while the first exists
    (root / "sub" / "other.txt").replace(root / "sub" / "public.txt")
    assert files.reopen_file(str(root / "sub" / "public.txt"), identity) is None
    sub = os.stat(root / "sub")
    assert files.reopen_directory(str(root / "sub"), (sub.st_dev, sub.st_ino)) is not None
    assert files.reopen_directory(str(root / "sub"), (sub.st_dev, sub.st_ino + 1)) is None
