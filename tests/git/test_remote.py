"""git_fetch, git_pull and git_push against a bare repository on local disk (never the network)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.testing import ERAS, Era, connect
from mcp_git.config import GitSettings
from mcp_git.server import build_server

pytestmark = pytest.mark.anyio


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def clones(tmp_path: Path, new_repository: Any, git_cli: Any) -> tuple[Path, Path, Path]:
    """origin.git (bare, with a post-receive hook that must not run), and two clones of it."""
    work = tmp_path / "work"
    work.mkdir()
    seed = new_repository(tmp_path / "seed", {"file.txt": "one\n"})
    origin = work / "origin.git"
    git_cli(tmp_path, "clone", "--quiet", "--bare", str(seed), str(origin))
    hook = origin / "hooks" / "post-receive"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/remote-hook-ran\n")
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    ours = work / "ours"
    theirs = work / "theirs"
    git_cli(work, "clone", "--quiet", str(origin), str(ours))
    git_cli(work, "clone", "--quiet", str(origin), str(theirs))
    return origin, ours, theirs


@pytest.mark.parametrize("era", ERAS)
async def test_push_fetch_and_pull_with_a_local_bare_repository(
    clones: tuple[Path, Path, Path], tmp_path: Path, era: Era, git_cli: Any
) -> None:
    origin, ours, theirs = clones
    server = build_server(GitSettings(directories=[str(tmp_path / "work")], allow_network=True)).mcp
    async with connect(server, era) as c:

        async def call(tool: str, /, **args: Any) -> str:
            result = await c.call_tool(tool, args)
            assert not result.is_error, (tool, text(result))
            return text(result)

        # Push a new commit and a new branch.
        (ours / "file.txt").write_text("one\ntwo\n")
        git_cli(ours, "commit", "-qam", "two")
        pushed = await call("git_push", repo_path=str(ours))
        assert pushed.startswith("Pushed to origin") and "main" in pushed
        assert git_cli(origin, "rev-parse", "main") == git_cli(ours, "rev-parse", "main")
        await call("git_create_branch", repo_path=str(ours), branch_name="topic")
        await call("git_push", repo_path=str(ours), branch="topic", set_upstream=True)
        assert git_cli(ours, "rev-parse", "--abbrev-ref", "topic@{upstream}").strip() == "origin/topic"
        assert not (tmp_path / "remote-hook-ran").exists()

        # The other clone fetches and fast-forwards.
        fetched = await call("git_fetch", repo_path="work/theirs")
        assert "topic" in fetched
        await call("git_pull", repo_path=str(theirs))
        assert (theirs / "file.txt").read_text() == "one\ntwo\n"

        # Diverged histories: pull is fast-forward only unless asked; push never forces.
        (theirs / "other.txt").write_text("theirs\n")
        git_cli(theirs, "add", "other.txt")
        git_cli(theirs, "commit", "-qm", "theirs")
        (ours / "file.txt").write_text("one\ntwo\nthree\n")
        git_cli(ours, "commit", "-qam", "three")
        await call("git_push", repo_path=str(ours))
        refused = await c.call_tool("git_pull", {"repo_path": str(theirs)})
        assert refused.is_error and ("fast-forward" in text(refused).lower() or "diverg" in text(refused))
        rejected = await c.call_tool("git_push", {"repo_path": str(theirs)})
        assert rejected.is_error and "rejected" in text(rejected)
        merged = await call("git_pull", repo_path=str(theirs), ff_only=False)
        assert "Pulled from origin" in merged
        assert len(git_cli(theirs, "rev-list", "--parents", "-1", "HEAD").split()) == 3  # a merge commit

        # force_with_lease overwrites only what we last saw.
        git_cli(ours, "reset", "-q", "--hard", "HEAD~1")
        assert (await c.call_tool("git_push", {"repo_path": str(ours)})).is_error
        await call("git_push", repo_path=str(ours), force_with_lease=True)
        assert git_cli(origin, "rev-parse", "main") == git_cli(ours, "rev-parse", "main")

        # Prune removes remote-tracking branches deleted on the remote.
        git_cli(origin, "branch", "-D", "topic")
        await call("git_fetch", repo_path=str(theirs), prune=True)
        assert "origin/topic" not in git_cli(theirs, "branch", "-r")
    assert not (tmp_path / "remote-hook-ran").exists()


# Remote URLs as found in real configurations: a token as user name, a token in the query string,
# a password containing "@" and ":", and one containing "/" (which breaks the URL's syntax).
SECRET_REMOTES = {
    "tokenuser": ("https://ghp_0123456789abcdefghij@github.com/o/r.git", "https://***@github.com/o/r.git"),
    "query": (
        "https://example.com/o/r.git?access_token=tok-in-query",
        "https://example.com/o/r.git?access_token=***",
    ),
    "atpass": ("https://me:p@ss:w0rd-tail@example.com/r.git", "https://***@example.com/r.git"),
    "slashpass": ("https://me:sl/ash-tail@example.com/r.git", "https://***"),
    "plain": ("git@github.com:o/r.git", "git@github.com:o/r.git"),
}


async def test_git_remote_never_shows_a_credential_over_stdio(
    tmp_path: Path, new_repository: Any, git_cli: Any
) -> None:
    from mcp_batteries.testing import stdio_params

    repo = new_repository(tmp_path / "repo", {"a.txt": "a\n"})
    for name, (url, _) in SECRET_REMOTES.items():
        git_cli(repo, "remote", "add", name, url)
    git_cli(repo, "remote", "set-url", "--push", "query", "https://u:push-secret@example.com/r.git")
    async with connect(stdio_params("mcp-batteries-git", str(tmp_path)), "legacy") as c:
        result = await c.call_tool("git_remote", {"repo_path": str(repo)})
    shown = text(result) + str(result.structured_content)
    assert not result.is_error, shown
    for name, (_, redacted) in SECRET_REMOTES.items():
        assert f"{name}\t{redacted} (fetch)" in text(result), text(result)
    assert "query\thttps://***@example.com/r.git (push)" in text(result)
    for secret in (
        "ghp_",
        "0123456789abcdef",
        "tok-in-query",
        "p@ss",
        "w0rd",
        "tail",
        "sl/ash",
        "push-secret",
    ):
        assert secret not in shown, (secret, shown)
