"""Confirmation before destruction on mcp-git: what `git_restore`, `git_stash` drop and a force
push would lose (`mcp_git.losses`), and the server as a subprocess through the SDK's `Client` in
both eras, over stdio and HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, InputRequiredResult
from mcp_batteries.testing import ERAS, Era, connect, connect_http, http_server, stdio_params
from mcp_git import losses
from mcp_git.config import GitSettings
from mcp_git.service import GitService

pytestmark = pytest.mark.anyio

SCRIPT = "mcp-batteries-git"


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def answering(action: str, asked: list[str]) -> Any:
    async def callback(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)  # type: ignore[arg-type]

    return callback


def describe(root: Path, repo: Path, fn: Any, *args: Any, **kwargs: Any) -> str | None:
    service = GitService(GitSettings(directories=[str(root)]))
    result: str | None = service.call(service.scope, str(repo), fn, *args, **kwargs)
    return result


# -- what would be lost (domain) -------------------------------------------------------------------


def test_restore_names_the_files_and_lines_it_would_discard(project: Path) -> None:
    root = project.parent
    described = describe(root, project, losses.describe_restore, ["."], staged=False)
    assert described is not None
    assert described.startswith("discard the uncommitted changes to 1 file in ")
    assert "(+1 -0 lines), restoring them from the index:" in described and "README.md (+1 -0)" in described
    assert describe(root, project, losses.describe_restore, ["."], staged=True) is None
    assert describe(root, project, losses.describe_restore, ["src"], staged=False) is None
    from_head = describe(root, project, losses.describe_restore, ["."], staged=False, source="HEAD")
    assert from_head is not None and "2 files" in from_head and "notes.txt (+1 -0)" in from_head


def test_a_stash_drop_names_the_stash_and_its_files(project: Path, git_cli: Any) -> None:
    git_cli(project, "stash", "push", "--quiet", "-m", "half-done idea")
    described = describe(project.parent, project, losses.describe_stash_drop, "drop", 0)
    assert described is not None
    assert described.startswith("delete stash@{0} ('On main: half-done idea')")
    assert "README.md (+1 -0)" in described and "notes.txt (+1 -0)" in described
    assert describe(project.parent, project, losses.describe_stash_drop, "drop", 5) is None
    assert describe(project.parent, project, losses.describe_stash_drop, "apply", 0) is None


@pytest.fixture
def diverged(tmp_path: Path, new_repository: Any, git_cli: Any) -> tuple[Path, Path]:
    """origin.git and a clone `ours` whose main lacks two commits the remote has (fetched)."""
    work = tmp_path / "work"
    work.mkdir()
    seed = new_repository(tmp_path / "seed", {"file.txt": "one\n"})
    origin = work / "origin.git"
    git_cli(tmp_path, "clone", "--quiet", "--bare", str(seed), str(origin))
    ours, theirs = work / "ours", tmp_path / "theirs"
    git_cli(work, "clone", "--quiet", str(origin), str(ours))
    git_cli(tmp_path, "clone", "--quiet", str(origin), str(theirs))
    for n in ("two", "three"):
        (theirs / "file.txt").write_text(f"{n}\n")
        git_cli(theirs, "commit", "-qam", f"their commit {n}")
    git_cli(theirs, "push", "--quiet", "origin", "main")
    git_cli(ours, "fetch", "--quiet")
    (ours / "mine.txt").write_text("mine\n")
    git_cli(ours, "add", "mine.txt")
    git_cli(ours, "commit", "-qm", "my commit")
    return origin, ours


def test_a_force_push_names_the_remote_commits_it_would_remove(diverged: tuple[Path, Path]) -> None:
    _origin, ours = diverged
    root = ours.parent
    described = describe(root, ours, losses.describe_force_push, "origin", None, force_with_lease=True)
    assert described is not None
    assert described.startswith("force-push the branch main to origin, removing 2 commits")
    assert "their commit three" in described and "their commit two" in described
    assert describe(root, ours, losses.describe_force_push, "origin", None, force_with_lease=False) is None


# -- through the server --------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_restore_declined_keeps_the_changes_and_accepted_discards_them(project: Path, era: Era) -> None:
    asked: list[str] = []
    params = stdio_params(SCRIPT, str(project.parent))
    async with connect(params, era, elicitation_callback=answering("decline", asked)) as c:
        kept = await c.call_tool("git_restore", {"repo_path": str(project), "paths": ["."]})
        assert not kept.is_error and text(kept).startswith("Nothing was changed: the user declined.")
    assert (project / "README.md").read_text() == "# project\nchanged\n"
    assert len(asked) == 1 and "README.md (+1 -0)" in asked[0]
    async with connect(params, era, elicitation_callback=answering("accept", asked)) as c:
        done = await c.call_tool("git_restore", {"repo_path": str(project), "paths": ["."]})
        assert not done.is_error, text(done)
    assert (project / "README.md").read_text() == "# project\n"


@pytest.mark.parametrize("era", ERAS)
async def test_a_stash_drop_over_http_asks_and_a_decline_keeps_it(
    project: Path, era: Era, git_cli: Any
) -> None:
    git_cli(project, "stash", "push", "--quiet", "-m", "keep me")
    asked: list[str] = []
    async with (
        http_server(SCRIPT, str(project.parent)) as running,
        connect_http(running.url, era, elicitation_callback=answering("decline", asked)) as c,
    ):
        kept = await c.call_tool("git_stash", {"repo_path": str(project), "action": "drop"})
        assert (
            not kept.is_error
            and "Nothing was changed" in text(kept)
            and "stash@{0}: On main: keep me" in text(kept)
        )
    assert "keep me" in git_cli(project, "stash", "list")
    assert len(asked) == 1 and "delete stash@{0} ('On main: keep me')" in asked[0]


@pytest.mark.parametrize("era", ERAS)
async def test_a_force_push_is_refused_to_a_client_that_cannot_be_asked_under_destructive(
    diverged: tuple[Path, Path], era: Era, git_cli: Any
) -> None:
    origin, ours = diverged
    before = git_cli(origin, "rev-parse", "main")
    params = stdio_params(SCRIPT, str(ours.parent), "--allow-network", "--confirm", "destructive")
    async with connect(params, era) as c:
        refused = await c.call_tool("git_push", {"repo_path": str(ours), "force_with_lease": True})
        assert refused.is_error and "--confirm" in text(refused) and "removing 2 commits" in text(refused)
    assert git_cli(origin, "rev-parse", "main") == before


async def test_an_accepted_force_push_overwrites_and_an_altered_state_does_not(
    diverged: tuple[Path, Path], git_cli: Any
) -> None:
    origin, ours = diverged
    arguments = {"repo_path": str(ours), "force_with_lease": True}
    params = stdio_params(SCRIPT, str(ours.parent), "--allow-network")
    async with connect(params, "modern", elicitation_callback=answering("accept", [])) as c:
        first = await c.session.call_tool("git_push", arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult) and first.request_state
        (key,) = first.input_requests
        answer = {key: ElicitResult(action="accept", content={"confirm": True})}
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await c.session.call_tool(
                "git_push", arguments, input_responses=answer, request_state=first.request_state + "x"
            )
        assert git_cli(origin, "rev-parse", "main") != git_cli(ours, "rev-parse", "main")
        pushed = await c.session.call_tool(
            "git_push", arguments, input_responses=answer, request_state=first.request_state
        )
        assert not pushed.is_error, text(pushed)
    assert git_cli(origin, "rev-parse", "main") == git_cli(ours, "rev-parse", "main")
