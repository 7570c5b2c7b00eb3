"""The checks every value passes before it reaches git (no MCP involved)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.errors import AccessDenied, InvalidInput, LimitExceeded
from mcp_git.checks import check_remote_url, ref_name_problem, tree_path, worktree_path
from mcp_git.repository import locate
from mcp_git.runner import Git, Policy

REF_NAMES = [
    "main",
    "feature/x",
    "-D",
    "--force",
    "a..b",
    "a b",
    "a~1",
    "a^",
    "a:b",
    "a?",
    "a*",
    "a[",
    "a\\b",
    ".hidden",
    "x/.y",
    "x.lock",
    "x/y.lock/z",
    "x/",
    "/x",
    "x//y",
    "x.",
    "@",
    "a@{1}",
    "café",
    "tab\tx",
    "ctrl\x01",
    "del\x7f",
    "ok-name_1.2",
    "a/b/c",
    "@{-1}",
    "v1.0",
    "HEAD",
    "x@y",
]


@pytest.mark.parametrize("name", REF_NAMES)
def test_ref_names_follow_git_check_ref_format(name: str) -> None:
    done = subprocess.run(["git", "check-ref-format", f"refs/heads/{name}"], capture_output=True, check=False)
    # Beyond refs/heads/NAME being valid, a branch name may not start with '-' (git's own
    # branch rule) and '@' alone means HEAD to every git command.
    git_accepts = done.returncode == 0 and not name.startswith("-") and name != "@"
    assert (ref_name_problem(name) is None) == git_accepts, name


def test_a_ref_name_starting_with_a_dash_is_refused_with_the_reason() -> None:
    assert "option" in (ref_name_problem("-D") or "")


@pytest.fixture
def repo(tmp_path: Path, new_repository: Any) -> Any:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    worktree = new_repository(tmp_path / "repo")
    os.symlink(outside, worktree / "link")
    return locate(worktree, "repo")


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "/etc/passwd", "link/secret.txt", "link", "sub/../../outside/x"]
)
@pytest.mark.usefixtures("each_platform_family")  # containment on both platform families
def test_worktree_paths_cannot_leave_the_repository(repo: Any, path: str) -> None:
    if path == "link":  # the link itself is inside: staging a symlink stores the link
        assert worktree_path(repo, path) == "link"
        return
    with pytest.raises(AccessDenied, match="outside the repository"):
        worktree_path(repo, path)


@pytest.mark.usefixtures("each_platform_family")  # containment on both platform families
def test_worktree_paths_cannot_reach_into_dot_git(repo: Any) -> None:
    with pytest.raises(AccessDenied, match=r"\.git"):
        worktree_path(repo, ".git/config")


@pytest.mark.usefixtures("each_platform_family")  # containment on both platform families
def test_worktree_paths_accept_absolute_inside_quoted_forms_and_dashes(repo: Any) -> None:
    assert worktree_path(repo, str(repo.worktree / "README.md")) == "README.md"
    assert worktree_path(repo, '"bad\\377.txt"') == os.fsdecode(b"bad\xff.txt")
    assert worktree_path(repo, "-rf") == "-rf"  # a file named -rf: passed after `--`
    assert worktree_path(repo, ".") == "."


@pytest.mark.parametrize("path", ["../x", "/abs", ".git/config", "a/../../x"])
def test_tree_paths_stay_inside(path: str) -> None:
    with pytest.raises((AccessDenied, InvalidInput)):
        tree_path(path)


@pytest.mark.parametrize(
    "url",
    [
        "ext::sh -c touch% /tmp/pwned",
        "fd::3",
        "fd::3,4/x",
        "foo::bar",
        "-uupload",
        "--upload-pack=touch /tmp/pwned",
        "gopher://host/x",
        "file:///etc",
        "/etc",
        "../outside",
    ],
)
@pytest.mark.usefixtures("each_platform_family")  # containment on both platform families
def test_remote_urls_that_run_programs_or_leave_the_allowed_areas_are_refused(
    tmp_path: Path, url: str
) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    with pytest.raises(AccessDenied):
        check_remote_url(url, [allowed], allowed)


@pytest.mark.parametrize(
    "url", ["https://example.com/r.git", "ssh://git@host/r.git", "git@github.com:o/r.git", "git://host/r"]
)
def test_network_remote_urls_are_allowed(tmp_path: Path, url: str) -> None:
    check_remote_url(url, [tmp_path], tmp_path)


@pytest.mark.usefixtures("each_platform_family")  # containment on both platform families
def test_local_remotes_inside_the_allowed_areas_are_allowed(tmp_path: Path) -> None:
    (tmp_path / "origin.git").mkdir()
    check_remote_url(str(tmp_path / "origin.git"), [tmp_path], tmp_path)
    check_remote_url((tmp_path / "origin.git").as_uri(), [tmp_path], tmp_path)
    check_remote_url("../" + tmp_path.name + "/origin.git", [tmp_path], tmp_path)


def test_a_command_that_runs_too_long_is_stopped(repo: Any) -> None:
    fifo = repo.worktree / "pipe"
    os.mkfifo(fifo)  # hashing it blocks until a writer comes: never
    git = Git(repo, Policy(timeout=0.5))
    with pytest.raises(LimitExceeded, match="--timeout"):
        git.run(["hash-object", "--stdin-paths"], input=f"{fifo}\n".encode())


@pytest.mark.anyio
async def test_a_cancelled_call_stops_its_git_at_once(repo: Any) -> None:
    import time

    import anyio
    from mcp_git.runner import off_loop

    fifo = repo.worktree / "pipe"
    os.mkfifo(fifo)
    git = Git(repo, Policy(timeout=60))
    started = time.monotonic()
    with anyio.move_on_after(0.5) as scope:
        await off_loop(git.run, ["hash-object", "--stdin-paths"], input=f"{fifo}\n".encode())
    assert scope.cancelled_caught
    assert time.monotonic() - started < 10  # not the 60 s timeout: the process was killed
