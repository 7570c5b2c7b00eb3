"""The POSIX family's own answers (Linux branch here; the macOS branch, `F_GETPATH`, is not run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp_batteries._platform import posix_files
from mcp_batteries._platform.posix_files import LINUX, PosixFiles


def test_the_kernels_realpath_agrees_with_os_path_realpath(tmp_path: Path) -> None:
    root = tmp_path / "allowed"
    (root / "sub").mkdir(parents=True)
    (root / "file.txt").write_text("x")
    (root / "sub" / "inner.txt").write_text("x")
    (root / "chain1").symlink_to("chain2")
    (root / "chain2").symlink_to("sub")
    (root / "up").symlink_to("sub/..")
    (root / os.fsdecode(b"odd\xff\nname")).write_text("x")
    files = PosixFiles()
    assert LINUX
    for given in [
        root / "file.txt",
        root / "chain1" / "inner.txt",
        root / "chain1" / ".." / "file.txt",  # `..` after a symlink: the kernel's rule
        root / "up" / "file.txt",
        root / "sub",
        root / os.fsdecode(b"odd\xff\nname"),
    ]:
        assert files.final_path(str(given)) == os.path.realpath(given), given
    assert files.final_path(str(root / "missing" / "x")) is None  # left to os.path.realpath


def test_a_directorys_canonical_spelling_is_its_real_path_on_linux(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    assert PosixFiles().canonical_directory(str(tmp_path / "link")) == str(tmp_path / "real")


def test_a_rename_that_must_not_replace_does_not_without_renameat2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(posix_files, "_renameat2", None)  # the macOS / old-kernel fallback
    (tmp_path / "a.txt").write_text("A")
    (tmp_path / "b.txt").write_text("B")
    with PosixFiles().open_root(str(tmp_path)) as directory:
        with pytest.raises(FileExistsError):
            directory.rename_noreplace("a.txt", directory, "b.txt")
        directory.rename_noreplace("a.txt", directory, "c.txt")
    assert (tmp_path / "b.txt").read_text() == "B" and (tmp_path / "c.txt").read_text() == "A"
