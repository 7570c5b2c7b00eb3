"""What a destructive filesystem call would lose (`mcp_filesystem.losses`): the words its user
confirms, and the ledger of what each caller has read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp_batteries.errors import AccessDenied
from mcp_batteries.safety import AllowedDirectories
from mcp_filesystem.losses import (
    MAX_NAMED,
    ReadLedger,
    describe_copy_overwrite,
    describe_deletion,
    describe_overwrite,
    human_size,
)


@pytest.fixture
def allowed(tmp_path: Path) -> AllowedDirectories:
    return AllowedDirectories([str(tmp_path)])


def test_sizes_read_as_people_say_them() -> None:
    assert [human_size(n) for n in (0, 1, 1023, 1024, 3000, 5 * 1024**3)] == [
        "0 bytes", "1 byte", "1023 bytes", "1.0 KiB", "2.9 KiB", "5.0 GiB"
    ]  # fmt: skip


def test_a_file_is_named_with_its_size_and_time(tmp_path: Path, allowed: AllowedDirectories) -> None:
    (tmp_path / "a.txt").write_bytes(b"x" * 2048)
    described = describe_deletion(allowed, str(tmp_path / "a.txt"), recursive=False)
    assert described is not None and described.startswith(
        f"delete the file {tmp_path}/a.txt (2.0 KiB, last modified "
    )


def test_a_link_is_named_with_its_target_which_stays(tmp_path: Path, allowed: AllowedDirectories) -> None:
    (tmp_path / "target.txt").write_text("t")
    os.symlink("target.txt", tmp_path / "link")
    assert describe_deletion(allowed, str(tmp_path / "link"), recursive=False) == (
        f"delete the symbolic link {tmp_path}/link (pointing to target.txt; the target stays)"
    )


def test_a_tree_names_each_file_up_to_a_limit_and_counts_the_rest(
    tmp_path: Path, allowed: AllowedDirectories
) -> None:
    top = tmp_path / "top"
    (top / "sub").mkdir(parents=True)
    for n in range(MAX_NAMED + 5):
        (top / "sub" / f"f{n:02}.txt").write_bytes(b"y" * 100)
    os.symlink("/etc/passwd", top / "outside")
    described = describe_deletion(allowed, str(top), recursive=True)
    assert described is not None
    lines = described.split("\n")
    assert lines[0] == (
        f"delete the directory {top} and everything in it: {MAX_NAMED + 5} files (2.4 KiB), 1 directory, "
        "1 symbolic link"
    )
    assert lines[1] == "  sub/f00.txt (100 bytes)"
    assert lines[-1] == "  ... and 5 more files (500 bytes)"
    assert len(lines) == MAX_NAMED + 2


def test_what_loses_nothing_or_will_fail_asks_nothing(tmp_path: Path, allowed: AllowedDirectories) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    assert describe_deletion(allowed, str(tmp_path / "missing"), recursive=False) is None
    assert describe_deletion(allowed, str(tmp_path / "empty"), recursive=False) is None
    assert describe_deletion(allowed, str(tmp_path / "full"), recursive=False) is None  # refused by the call
    assert describe_deletion(allowed, str(tmp_path / "empty"), recursive=True) == (
        f"delete the empty directory {tmp_path}/empty"
    )


def test_a_path_outside_is_refused_before_anything_is_described(
    tmp_path: Path, allowed: AllowedDirectories
) -> None:
    with pytest.raises(AccessDenied):
        describe_deletion(allowed, "/etc/passwd", recursive=False)


def test_an_overwrite_asks_unless_new_same_or_already_read(
    tmp_path: Path, allowed: AllowedDirectories
) -> None:
    ledger = ReadLedger()
    path = tmp_path / "notes.md"
    assert describe_overwrite(allowed, str(path), "new", ledger, "alice") is None  # a new file
    path.write_text("old content\n")
    described = describe_overwrite(allowed, str(path), "other", ledger, "alice")
    assert described is not None
    assert described.startswith(f"replace the file {path} (12 bytes, last modified ")
    assert described.endswith(
        "which this client has not read, with 5 bytes of new content: its current content will be lost"
    )
    assert describe_overwrite(allowed, str(path), "old content\n", ledger, "alice") is None  # the same bytes
    ledger.saw_path(allowed, "alice", str(path))
    assert describe_overwrite(allowed, str(path), "other", ledger, "alice") is None
    assert describe_overwrite(allowed, str(path), "other", ledger, "bob") is not None  # per caller
    path.write_text("changed by someone else\n")
    assert describe_overwrite(allowed, str(path), "other", ledger, "alice") is not None


def test_the_ledger_forgets_the_oldest_beyond_its_capacity(tmp_path: Path) -> None:
    ledger = ReadLedger(capacity=2)
    files = []
    for n in range(3):
        f = tmp_path / f"{n}.txt"
        f.write_text(str(n))
        ledger.saw("alice", f)
        files.append(f)
    assert [ledger.has_seen("alice", f, os.stat(f)) for f in files] == [False, True, True]


def test_a_copy_over_existing_files_names_those_it_replaces(
    tmp_path: Path, allowed: AllowedDirectories
) -> None:
    ledger = ReadLedger()
    (tmp_path / "src" / "deep").mkdir(parents=True)
    (tmp_path / "src" / "a.txt").write_text("new a")
    (tmp_path / "src" / "deep" / "b.txt").write_text("new b")
    (tmp_path / "dst" / "deep").mkdir(parents=True)
    (tmp_path / "dst" / "deep" / "b.txt").write_bytes(b"old" * 100)
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    assert losses_copy(allowed, src, dst, overwrite=True, recursive=True, ledger=ledger) == (
        f"replace 1 file in {tmp_path}/dst (300 bytes) with copies from {tmp_path}/src:\n"
        "  deep/b.txt (300 bytes)"
    )
    assert losses_copy(allowed, src, dst, overwrite=False, recursive=True, ledger=ledger) is None
    one = losses_copy(
        allowed, f"{src}/a.txt", f"{dst}/deep/b.txt", overwrite=True, recursive=False, ledger=ledger
    )
    assert one is not None and one.startswith(
        f"replace the file {tmp_path}/dst/deep/b.txt (300 bytes, last modified "
    )
    ledger.saw_path(allowed, "alice", f"{dst}/deep/b.txt")
    assert (
        losses_copy(
            allowed, f"{src}/a.txt", f"{dst}/deep/b.txt", overwrite=True, recursive=False, ledger=ledger
        )
        is None
    )
    assert (
        losses_copy(allowed, f"{src}/a.txt", f"{dst}/new.txt", overwrite=True, recursive=False, ledger=ledger)
        is None
    )


def losses_copy(
    allowed: AllowedDirectories,
    source: str,
    destination: str,
    *,
    overwrite: bool,
    recursive: bool,
    ledger: ReadLedger,
) -> str | None:
    return describe_copy_overwrite(allowed, source, destination, overwrite, recursive, ledger, "alice")
