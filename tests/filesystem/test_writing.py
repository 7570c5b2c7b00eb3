"""writing.py: atomic write_file, create_directory, move_file, copy_file, delete_path."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from mcp_batteries.errors import AccessDenied, InvalidInput, NotFound
from mcp_batteries.safety import AllowedDirectories
from mcp_filesystem.writing import (
    TEMP_PREFIX,
    copy_file,
    create_directory,
    delete_path,
    move_file,
    write_file,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "allowed"
    d.mkdir()
    return d


@pytest.fixture
def allowed(root: Path) -> AllowedDirectories:
    return AllowedDirectories([root])


def _no_temp_files(d: Path) -> bool:
    return not [p for p in d.rglob("*") if p.name.startswith(TEMP_PREFIX)]


# --- write_file --------------------------------------------------------------------------------


def test_write_creates_a_file_and_returns_bytes_written(allowed: AllowedDirectories, root: Path) -> None:
    assert write_file(allowed, "new.txt", "héllo\n") == len("héllo\n".encode())
    assert (root / "new.txt").read_text() == "héllo\n"
    assert _no_temp_files(root)


def test_write_replaces_atomically_with_a_new_inode(allowed: AllowedDirectories, root: Path) -> None:
    (root / "f.txt").write_text("old")
    before = (root / "f.txt").stat().st_ino
    write_file(allowed, "f.txt", "new")
    assert (root / "f.txt").read_text() == "new"
    assert (root / "f.txt").stat().st_ino != before  # renamed over, never truncated in place


def test_write_preserves_existing_permission_bits(allowed: AllowedDirectories, root: Path) -> None:
    (root / "script.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "script.sh", 0o751)
    write_file(allowed, "script.sh", "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE((root / "script.sh").stat().st_mode) == 0o751


def test_write_failure_leaves_original_and_no_temp_file(
    allowed: AllowedDirectories, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "f.txt").write_text("original")

    def boom(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(Exception, match="disk full"):
        write_file(allowed, "f.txt", "new content")
    assert (root / "f.txt").read_text() == "original"
    assert _no_temp_files(root)


def test_write_needs_an_existing_parent(allowed: AllowedDirectories) -> None:
    with pytest.raises(NotFound):
        write_file(allowed, "no/such/dir/f.txt", "x")


def test_write_onto_a_directory_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(InvalidInput, match="directory"):
        write_file(allowed, "d", "x")


def test_write_onto_a_fifo_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(InvalidInput, match="not a regular file"):
        write_file(allowed, "pipe", "x")


def test_write_through_symlink_inside_updates_the_target(allowed: AllowedDirectories, root: Path) -> None:
    (root / "real.txt").write_text("old")
    (root / "alias.txt").symlink_to("real.txt")
    write_file(allowed, "alias.txt", "new")
    assert (root / "alias.txt").is_symlink()
    assert (root / "real.txt").read_text() == "new"


def test_write_non_utf8_name_and_raw_bytes(allowed: AllowedDirectories, root: Path) -> None:
    name = os.fsdecode(b"\xe9t\xe9.bin")
    write_file(allowed, name, b"\x00\xff")
    with open(os.fsencode(root) + b"/\xe9t\xe9.bin", "rb") as f:
        assert f.read() == b"\x00\xff"


# --- create_directory --------------------------------------------------------------------------


def test_create_directory_is_mkdir_p(allowed: AllowedDirectories, root: Path) -> None:
    assert create_directory(allowed, "a/b/c") == root / "a" / "b" / "c"
    assert (root / "a" / "b" / "c").is_dir()
    create_directory(allowed, "a/b/c")  # existing is fine


def test_create_directory_over_a_file_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    (root / "f").write_text("x")
    with pytest.raises(InvalidInput):
        create_directory(allowed, "f/sub")


# --- move_file ---------------------------------------------------------------------------------


def test_move_renames_a_file(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text("A")
    (root / "d").mkdir()
    assert move_file(allowed, "a.txt", "d/b.txt") == root / "d" / "b.txt"
    assert (root / "d" / "b.txt").read_text() == "A" and not (root / "a.txt").exists()


def test_move_refuses_an_existing_destination(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text("A")
    (root / "b.txt").write_text("B")
    with pytest.raises(InvalidInput, match="already exists"):
        move_file(allowed, "a.txt", "b.txt")
    assert (root / "b.txt").read_text() == "B"


def test_move_a_directory_into_itself_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(InvalidInput, match="into itself"):
        move_file(allowed, "d", "d/inner")


def test_move_a_symlink_moves_the_link(allowed: AllowedDirectories, root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("O")
    (root / "link").symlink_to(tmp_path / "outside.txt")
    move_file(allowed, "link", "link2")
    assert (root / "link2").is_symlink() and (tmp_path / "outside.txt").read_text() == "O"


# --- copy_file ---------------------------------------------------------------------------------


def test_copy_a_file_keeps_content_and_mode(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.sh").write_text("echo\n")
    os.chmod(root / "a.sh", 0o750)
    result = copy_file(allowed, "a.sh", "b.sh")
    assert (result.files, result.bytes) == (1, 5)
    assert (root / "b.sh").read_text() == "echo\n"
    assert stat.S_IMODE((root / "b.sh").stat().st_mode) & 0o700 == 0o700


def test_copy_refuses_existing_destination_unless_overwrite(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a").write_text("A")
    (root / "b").write_text("B")
    with pytest.raises(InvalidInput, match="overwrite=True"):
        copy_file(allowed, "a", "b")
    copy_file(allowed, "a", "b", overwrite=True)
    assert (root / "b").read_text() == "A"


def test_copy_directory_needs_recursive(allowed: AllowedDirectories, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(InvalidInput, match="recursive=True"):
        copy_file(allowed, "d", "e")


def test_recursive_copy_copies_tree_and_skips_symlinks(
    allowed: AllowedDirectories, root: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret").write_text("SECRET")
    (root / "d" / "sub").mkdir(parents=True)
    (root / "d" / "a.txt").write_text("A")
    (root / "d" / "sub" / "b.txt").write_text("BB")
    (root / "d" / "out").symlink_to(tmp_path / "secret")
    (root / "d" / "in").symlink_to("a.txt")
    os.mkfifo(root / "d" / "pipe")
    result = copy_file(allowed, "d", "e", recursive=True)
    assert (root / "e" / "a.txt").read_text() == "A"
    assert (root / "e" / "sub" / "b.txt").read_text() == "BB"
    assert not (root / "e" / "out").exists() and not (root / "e" / "out").is_symlink()
    assert not (root / "e" / "in").exists()
    assert sorted(result.skipped) == ["in (symlink)", "out (symlink)", "pipe (special file)"]
    assert (result.files, result.directories, result.bytes) == (2, 2, 3)


def test_copy_a_directory_into_itself_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(InvalidInput, match="into itself"):
        copy_file(allowed, "d", "d/copy", recursive=True)


def test_copy_of_top_level_symlink_inside_copies_the_target(allowed: AllowedDirectories, root: Path) -> None:
    (root / "real").write_text("R")
    (root / "alias").symlink_to("real")
    copy_file(allowed, "alias", "copy")
    assert (root / "copy").read_text() == "R" and not (root / "copy").is_symlink()


# --- delete_path -------------------------------------------------------------------------------


def test_delete_a_file(allowed: AllowedDirectories, root: Path) -> None:
    (root / "f").write_text("x")
    assert delete_path(allowed, "f") == "file"
    assert not (root / "f").exists()


def test_delete_an_empty_directory(allowed: AllowedDirectories, root: Path) -> None:
    (root / "d").mkdir()
    assert delete_path(allowed, "d") == "directory"


def test_delete_non_empty_directory_needs_recursive(allowed: AllowedDirectories, root: Path) -> None:
    (root / "d").mkdir()
    (root / "d" / "f").write_text("x")
    with pytest.raises(InvalidInput, match="recursive=True"):
        delete_path(allowed, "d")
    assert delete_path(allowed, "d", recursive=True) == "directory"
    assert not (root / "d").exists()


def test_delete_missing_is_not_found(allowed: AllowedDirectories) -> None:
    with pytest.raises(NotFound):
        delete_path(allowed, "ghost")


def test_delete_dangling_symlink_removes_the_link(allowed: AllowedDirectories, root: Path) -> None:
    (root / "dangling").symlink_to("nowhere")
    assert delete_path(allowed, "dangling") == "symlink"
    assert not (root / "dangling").is_symlink()


def test_delete_allowed_root_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    with pytest.raises(AccessDenied):
        delete_path(allowed, str(root), recursive=True)
