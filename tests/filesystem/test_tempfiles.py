"""Temporary files of interrupted writes (`kill -9` during write_file) are never listed, and stale
ones of our exact naming are removed (issue 15, item 9). Before, `.mcp-fs-<hex>.tmp` files of up
to 80 MB were listed by every tool and never removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp_batteries.safety import AllowedDirectories
from mcp_filesystem import catalog, grep, walking, writing
from mcp_filesystem.tempfiles import STALE_AFTER_S, is_temp_name, new_temp_name

FRESH = ".mcp-fs-0123456789abcdef.tmp"
STALE = ".mcp-fs-fedcba9876543210.tmp"
LOOKALIKES = [".mcp-fs-notours.tmp", ".mcp-fs-0123456789abcdef.tmp.bak", "x.mcp-fs-0123456789abcdef.tmp"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path.resolve()
    (base / "sub").mkdir()
    (base / "real.txt").write_text("needle\n")
    for where in (base, base / "sub"):
        (where / FRESH).write_text("needle half-written\n")
        (where / STALE).write_text("needle left by kill -9\n")
        old = time.time() - STALE_AFTER_S - 60
        os.utime(where / STALE, (old, old))
        for name in LOOKALIKES:
            (where / name).write_text("needle\n")
    return base


def test_only_our_exact_pattern_is_recognised() -> None:
    assert is_temp_name(new_temp_name()) and is_temp_name(FRESH)
    assert not any(is_temp_name(n) for n in LOOKALIKES)


def test_listings_never_show_our_temporary_files(root: Path) -> None:
    allowed = AllowedDirectories([root])
    outputs = [
        walking.list_directory(allowed, ".").text,
        walking.list_directory_with_sizes(allowed, ".").text,
        walking.directory_tree(allowed, ".").text,
        walking.search_files(allowed, ".", "**/*").text,
        grep.grep(allowed, ".", "needle").text,
        json.dumps([f.title for f in catalog.list_page(allowed, None)[0]]),
        json.dumps(catalog.complete_path(allowed, str(root).lstrip("/") + "/.")),
    ]
    for text in outputs:
        for lookalike in LOOKALIKES:  # (two of them contain our pattern as a substring)
            text = text.replace(lookalike, "")
        assert FRESH not in text and STALE not in text
    assert ".mcp-fs-notours.tmp" in outputs[0]  # a look-alike is an ordinary file


def test_recursive_copy_skips_temporary_files(root: Path) -> None:
    writing.copy_file(AllowedDirectories([root]), "sub", "copy", recursive=True)
    assert not (root / "copy" / FRESH).exists() and (root / "copy" / LOOKALIKES[0]).exists()


def test_stale_temporary_files_are_removed_when_met_fresh_ones_are_kept(root: Path) -> None:
    allowed = AllowedDirectories([root])
    walking.list_directory(allowed, ".")  # read-only mode: nothing removed
    walking.directory_tree(allowed, ".")
    assert (root / STALE).exists() and (root / "sub" / STALE).exists()
    walking.list_directory(allowed, ".", tidy=True)
    assert not (root / STALE).exists() and (root / "sub" / STALE).exists()
    walking.directory_tree(allowed, ".", tidy=True)
    assert not (root / "sub" / STALE).exists()
    assert (root / FRESH).exists() and (root / "sub" / FRESH).exists()  # a write may be running
    assert all((root / n).exists() for n in LOOKALIKES)


def test_a_write_killed_midway_leaves_a_temporary_file_that_is_hidden_then_swept(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    allowed = AllowedDirectories([root])
    # A child process writes a big file and is killed with SIGKILL while writing it.
    script = (
        "import sys; from mcp_batteries.safety import AllowedDirectories; "
        "from mcp_filesystem import writing; "
        "writing._write_all = lambda fd, data: (__import__('os').write(fd, data[:4096]), "
        "sys.stdout.write('writing\\n'), sys.stdout.flush(), __import__('time').sleep(60)); "
        f"writing.write_file(AllowedDirectories([{str(root)!r}]), 'big.txt', 'x' * 100000)"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"writing\n"
    child.send_signal(signal.SIGKILL)
    child.wait()
    left = [p for p in root.iterdir() if is_temp_name(p.name)]
    assert len(left) == 1 and not (root / "big.txt").exists()
    assert walking.list_directory(allowed, ".").text == "(empty directory)"
    old = time.time() - STALE_AFTER_S - 1
    os.utime(left[0], (old, old))
    walking.list_directory(allowed, ".", tidy=True)
    assert list(root.iterdir()) == []
