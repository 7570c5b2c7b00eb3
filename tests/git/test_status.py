"""Parsing `git status --porcelain -z --branch` (no MCP involved)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_git.repository import locate
from mcp_git.runner import Git, Policy
from mcp_git.status import parse_status, read_head, render_status


def test_branch_headers_of_every_kind() -> None:
    diverged = parse_status(b"## main...origin/main [ahead 2, behind 3]\x00")
    assert (diverged.branch, diverged.upstream, diverged.ahead, diverged.behind) == (
        "main",
        "origin/main",
        2,
        3,
    )
    even = parse_status(b"## topic...origin/topic\x00")
    assert (even.ahead, even.behind) == (0, 0)
    gone = parse_status(b"## topic...origin/topic [gone]\x00")
    assert gone.upstream == "origin/topic" and gone.ahead is None
    assert parse_status(b"## HEAD (no branch)\x00").branch is None
    unborn = parse_status(b"## No commits yet on main\x00")
    assert unborn.branch == "main" and unborn.unborn
    assert parse_status(b"## feat-\xff\x00").branch == '"feat-\\377"'


def test_entries_renames_conflicts_and_untracked() -> None:
    status = parse_status(
        b"## main\x00R  new name.txt\x00old\nname.txt\x00 M a.txt\x00UU both.txt\x00?? bad\xff\x00"
    )
    rows = [(e.path, e.staged, e.unstaged, e.original) for e in status.entries]
    assert rows == [
        ("new name.txt", "renamed", None, '"old\\nname.txt"'),
        ("a.txt", None, "modified", None),
        ("both.txt", "unmerged", "both modified", None),
        ('"bad\\377"', None, "untracked", None),
    ]
    text = render_status(status, status.entries)
    assert 'renamed:    "old\\nname.txt" -> new name.txt' in text and "both modified:   both.txt" in text


def test_head_is_read_from_loose_and_packed_refs(tmp_path: Path, new_repository: Any, git_cli: Any) -> None:
    repo = new_repository(tmp_path / "repo")
    git = Git(locate(repo, "repo"), Policy())
    expected = git_cli(repo, "rev-parse", "HEAD").strip()
    assert read_head(git) == expected
    git_cli(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert read_head(git) == expected
    git_cli(repo, "checkout", "-q", "--detach")
    assert read_head(git) == expected
