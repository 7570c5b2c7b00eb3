"""What the git tools tell the audit trail they changed, checked on a real server over HTTP:
commits with their ids, branches created and switched, files staged and restored, pushes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.testing import connect_http, http_server

from .conftest import make_repository, run_git

pytestmark = pytest.mark.anyio


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_git_tools_report_commits_branches_staged_files_and_pushes(tmp_path: Path) -> None:
    work = tmp_path / "work"
    seed = make_repository(tmp_path / "seed", {"file.txt": "one\n"})
    origin = work / "origin.git"
    work.mkdir()
    run_git(tmp_path, "clone", "--quiet", "--bare", str(seed), str(origin))
    ours = work / "ours"
    run_git(work, "clone", "--quiet", str(origin), str(ours))
    before = run_git(ours, "rev-parse", "HEAD").strip()
    audit = tmp_path / "audit.jsonl"
    args = (str(work), "--allow-network", "--no-watch", "--audit-log", str(audit))
    async with (
        http_server("mcp-batteries-git", *args) as running,
        connect_http(running.url, "legacy") as client,
    ):

        async def call(tool: str, /, **arguments: Any) -> None:
            result = await client.call_tool(tool, {"repo_path": str(ours), **arguments})
            assert not result.is_error, (tool, result.content)

        (ours / "file.txt").write_text("one\ntwo\n")
        (ours / "new.txt").write_text("new\n")
        await call("git_add", files=["file.txt", "new.txt"])
        await call("git_commit", message="two")
        await call("git_create_branch", branch_name="topic")
        await call("git_checkout", branch_name="topic")
        (ours / "file.txt").write_text("scratch\n")
        await call("git_restore", paths=["file.txt"])
        await call("git_push", branch="topic")
        await call("git_status")  # a read: no line
    lines = audit_lines(audit)
    changes = {line["tool"]: line["changes"] for line in lines}
    assert [line["tool"] for line in lines] == [
        "git_add",
        "git_commit",
        "git_create_branch",
        "git_checkout",
        "git_restore",
        "git_push",
    ]
    repo = {"repository": changes["git_add"][0]["repository"]}
    assert changes["git_add"] == [{"action": "stage", **repo, "paths": ["file.txt", "new.txt"]}]
    commit = run_git(ours, "rev-parse", "main").strip()
    assert changes["git_commit"] == [
        {"action": "commit", **repo, "branch": "main", "commit": commit, "parent": before}
    ]
    assert changes["git_create_branch"] == [
        {"action": "create_branch", **repo, "branch": "topic", "commit": commit}
    ]
    assert changes["git_checkout"] == [{"action": "switch", **repo, "from": "main", "to": "topic"}]
    assert changes["git_restore"] == [{"action": "restore", **repo, "paths": ["file.txt"], "source": None}]
    push, remote_branch = changes["git_push"]
    assert push == {
        "action": "push",
        **repo,
        "remote": "origin",
        "refs": ["refs/heads/topic:refs/heads/topic"],
        "commit": commit,
        "force_with_lease": False,
        "follow_tags": False,
    }
    assert remote_branch == {
        "action": "update_remote_branch",
        **repo,
        "ref": "origin/topic",
        "from": None,
        "to": commit,
    }


async def test_a_pull_is_reported_as_branches_moved_not_as_commits_made_here(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    seed = make_repository(tmp_path / "seed", {"file.txt": "one\n"})
    origin = work / "origin.git"
    run_git(tmp_path, "clone", "--quiet", "--bare", str(seed), str(origin))
    ours, theirs = work / "ours", work / "theirs"
    for clone in (ours, theirs):
        run_git(work, "clone", "--quiet", str(origin), str(clone))
    old = run_git(theirs, "rev-parse", "HEAD").strip()
    (ours / "file.txt").write_text("one\ntwo\n")
    run_git(ours, "commit", "-qam", "two")
    run_git(ours, "push", "--quiet", "origin", "main")
    new = run_git(ours, "rev-parse", "HEAD").strip()
    audit = tmp_path / "audit.jsonl"
    args = (str(work), "--allow-network", "--no-watch", "--audit-log", str(audit))
    async with (
        http_server("mcp-batteries-git", *args) as running,
        connect_http(running.url, "legacy") as client,
    ):
        assert not (await client.call_tool("git_pull", {"repo_path": str(theirs)})).is_error
    (line,) = audit_lines(audit)
    repo = {"repository": line["changes"][0]["repository"]}
    assert sorted(line["changes"], key=lambda change: change["action"]) == [
        {"action": "update_branch", **repo, "branch": "main", "from": old, "to": new},
        {"action": "update_remote_branch", **repo, "ref": "origin/main", "from": old, "to": new},
    ]
