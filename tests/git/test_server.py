"""mcp-git through real clients: parity with the reference, every tool, resources, prompts.

`data/reference_tools.json` is the reference server's `tools/list` (PyPI mcp-server-git
2026.10.19), recorded with the SDK client against `bench/.anchors/git/bin/mcp-server-git
--repository REPO` in the legacy era; re-record it when the reference changes.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPDeprecationWarning, MCPError
from mcp.types import PromptReference, ResourceTemplateReference
from mcp_batteries.testing import ERAS, Era, connect, connect_http, http_server, stdio_params
from mcp_git.config import GitSettings
from mcp_git.server import build_server

from .conftest import run_git

pytestmark = pytest.mark.anyio

REFERENCE = json.loads((Path(__file__).parent / "data" / "reference_tools.json").read_text())["tools"]
WRITERS = {
    "git_commit",
    "git_add",
    "git_reset",
    "git_create_branch",
    "git_checkout",
    "git_restore",
    "git_init",
    "git_fetch",
    "git_pull",
    "git_push",
}
BEYOND = {
    "git_blame",
    "git_grep",
    "git_tag",
    "git_stash",
    "git_remote",
    "git_restore",
    "git_reflog",
    "git_init",
    "git_list_repositories",
}


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def server_for(*repositories: Path, directories: list[Path] | None = None, **options: Any) -> Any:
    settings = GitSettings(
        repository=[str(r) for r in repositories], directories=[str(d) for d in directories or []], **options
    )
    return build_server(settings).mcp


async def test_every_reference_tool_argument_and_default_is_offered(project: Path) -> None:
    async with connect(server_for(project), "legacy") as client:
        ours = {t.name: t for t in (await client.list_tools()).tools}
    for reference in REFERENCE:
        name = reference["name"]
        assert name in ours, f"missing reference tool {name}"
        theirs_props = reference["inputSchema"].get("properties", {})
        our_props = ours[name].input_schema.get("properties", {})
        assert set(theirs_props) <= set(our_props), name
        for arg, schema in theirs_props.items():
            if "default" in schema:
                assert our_props[arg].get("default") == schema["default"], (name, arg)
        # Anything we require, the reference requires too: calls written for it keep working.
        assert set(ours[name].input_schema.get("required", [])) <= set(
            reference["inputSchema"]["required"]
        ), name
        annotations = reference.get("annotations", {})
        assert ours[name].annotations.read_only_hint == annotations.get("readOnlyHint", False), name
    assert set(ours) >= BEYOND
    listings = {"git_status", "git_log", "git_branch", "git_blame", "git_grep", "git_tag", "git_reflog"}
    for name in listings:
        assert ours[name].output_schema is not None, name


@pytest.mark.parametrize("era", ERAS)
async def test_every_tool_works_in_process(project: Path, tmp_path: Path, era: Era, git_cli: Any) -> None:
    async with connect(server_for(project, directories=[tmp_path / "work"]), era) as c:

        async def call(tool: str, /, **args: Any) -> Any:
            result = await c.call_tool(tool, args)
            assert not result.is_error, (tool, text(result))
            return result

        status = await call("git_status", repo_path=str(project))
        assert text(status).startswith("Repository status:\nOn branch main")
        assert "Changes to be committed:\n\tmodified:   notes.txt" in text(status)
        assert "Untracked files:\n\tnew.txt" in text(status)
        rows = status.structured_content["rows"]
        assert ["notes.txt", "modified", None, None] in rows and ["new.txt", None, "untracked", None] in rows
        assert "+changed" in text(await call("git_diff_unstaged", repo_path="project"))
        assert text(await call("git_diff_staged", repo_path=str(project), context_lines=0)).startswith(
            "Staged changes:\ndiff --git a/notes.txt"
        )
        assert "-    return 1" in text(await call("git_diff", repo_path=str(project), target="v1.0"))
        ranged = text(await call("git_diff", repo_path=str(project), target="v1.0..main", paths=["src"]))
        assert "+    return 2" in ranged and "notes.txt" not in ranged
        log = await call("git_log", repo_path=str(project), max_count=1)
        assert text(log).startswith("Commit history:\nCommit: ") and "Message: second commit" in text(log)
        assert log.structured_content["next_skip"] == 1
        assert "skip=1" in log.structured_content["next_page"]
        older = await call("git_log", repo_path=str(project), author="test user", message="FIRST")
        assert [r[4] for r in older.structured_content["rows"]] == ["first commit\n"]
        assert "first commit" in text(await call("git_show", repo_path=str(project), revision="v1.0"))
        assert text(await call("git_show", repo_path=str(project), revision="HEAD:src")) == "app.py"
        branches = await call("git_branch", repo_path=str(project), branch_type="local")
        assert text(branches) == "  feature\n* main"
        contains = await call("git_branch", repo_path=str(project), branch_type="all", not_contains="HEAD")
        assert [b["name"] for b in contains.structured_content["branches"]] == ["feature"]
        blame = await call("git_blame", repo_path=str(project), path="src/app.py", revision="v1.0")
        assert blame.structured_content["rows"][1][4] == "    return 1"
        grep = await call("git_grep", repo_path=str(project), pattern="RETURN", ignore_case=True)
        assert grep.structured_content["rows"] == [["src/app.py", 2, "    return 2"]]
        tags = await call("git_tag", repo_path=str(project))
        assert [(t["name"], t["annotated"]) for t in tags.structured_content["tags"]] == [
            ("light", False),
            ("v1.0", True),
        ]
        assert "release one" in text(tags)
        assert "HEAD@{0}: commit: second commit" in text(await call("git_reflog", repo_path=str(project)))
        assert text(await call("git_remote", repo_path=str(project))) == "No remotes."
        repos = await call("git_list_repositories")
        assert [r["name"] for r in repos.structured_content["repositories"]] == ["project"]

        # Changes.
        await call("git_add", repo_path=str(project), files=["README.md", "new.txt"])
        done = text(await call("git_commit", repo_path=str(project), message="third commit"))
        assert done.startswith("Changes committed successfully with hash ")
        assert (
            git_cli(project, "log", "-1", "--format=%an <%ae> %s").strip()
            == "Test User <test@example.com> third commit"
        )
        nothing = text(await call("git_add", repo_path=str(project), files=["."]))
        assert nothing.startswith("No changes were staged")
        assert text(
            await call("git_create_branch", repo_path=str(project), branch_name="topic", base_branch="v1.0")
        ) == ("Created branch 'topic' from 'v1.0'")
        assert (
            text(await call("git_checkout", repo_path=str(project), branch_name="topic"))
            == "Switched to branch 'topic'"
        )
        detached = text(await call("git_checkout", repo_path=str(project), branch_name="v1.0"))
        assert detached.startswith("HEAD is now detached at ")
        await call("git_checkout", repo_path=str(project), branch_name="main")
        (project / "README.md").write_text("scratch\n")
        await call("git_stash", repo_path=str(project), action="push", message="wip readme")
        stashes = await call("git_stash", repo_path=str(project))
        assert stashes.structured_content["stashes"][0]["description"].endswith("wip readme")
        await call("git_stash", repo_path=str(project), action="pop")
        assert (project / "README.md").read_text() == "scratch\n"
        await call("git_add", repo_path=str(project), files=["README.md"])
        await call("git_restore", repo_path=str(project), paths=["README.md"], staged=True)
        assert "README.md" not in git_cli(project, "diff", "--cached", "--name-only")
        await call("git_restore", repo_path=str(project), paths=["README.md"])
        assert (project / "README.md").read_text() == "# project\nchanged\n"
        (project / "src/app.py").write_text("changed\n")
        await call("git_add", repo_path=str(project), files=["src"])
        assert text(await call("git_reset", repo_path=str(project))) == "All staged changes reset"
        assert git_cli(project, "diff", "--cached", "--name-only") == ""
        created = await call("git_tag", repo_path=str(project), action="create", name="v2.0", message="two")
        assert created.structured_content["tags"][0]["annotated"] is True
        await call("git_tag", repo_path=str(project), action="create", name="v2.0-light", revision="v1.0")
        assert git_cli(project, "rev-parse", "v2.0-light^{commit}") == git_cli(
            project, "rev-parse", "v1.0^{commit}"
        )
        assert "Initialized empty repository" in text(
            await call("git_init", path=str(tmp_path / "work" / "fresh"))
        )
        assert (tmp_path / "work" / "fresh" / ".git").is_dir()


async def test_repo_path_may_be_left_out_only_when_there_is_one_repository(
    project: Path, tmp_path: Path, new_repository: Any
) -> None:
    async with connect(server_for(project), "legacy") as c:
        assert not (await c.call_tool("git_status", {})).is_error
    other = new_repository(tmp_path / "work" / "other")
    async with connect(server_for(project, other), "legacy") as c:
        refused = await c.call_tool("git_status", {})
        assert refused.is_error and "repo_path is required" in text(refused) and "other" in text(refused)
        assert not (await c.call_tool("git_status", {"repo_path": "other"})).is_error


async def test_commits_never_use_a_made_up_identity(project: Path, git_config: Path, git_cli: Any) -> None:
    git_config.write_text("[init]\n\tdefaultBranch = main\n")
    async with connect(server_for(project), "legacy") as c:
        refused = await c.call_tool("git_commit", {"message": "anonymous"})
        assert refused.is_error
        for hint in ("user.name", "user.email", "--author"):
            assert hint in text(refused)
    async with connect(server_for(project, author="Operator Bot <bot@example.com>"), "legacy") as c:
        assert not (await c.call_tool("git_commit", {"message": "by the operator's identity"})).is_error
    shown = git_cli(project, "log", "-1", "--format=%an <%ae>").strip()
    assert shown == "Operator Bot <bot@example.com>"


@pytest.mark.parametrize("era", ERAS)
async def test_read_only_mode_offers_and_runs_nothing_that_changes_a_repository(
    project: Path, era: Era
) -> None:
    async with connect(server_for(project, read_only=True, allow_network=True), era) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert not set(tools) & WRITERS
        assert {"git_status", "git_log", "git_tag", "git_stash"} <= set(tools)
        assert "action" not in tools["git_tag"].input_schema["properties"]
        with pytest.raises(MCPError) as refused:  # turned off: an unknown tool (-32602)
            await c.call_tool("git_commit", {"message": "sneaky"})
        assert refused.value.error.code == -32602 and "git_commit" in refused.value.error.message
        status_before = (project / ".git" / "index").stat().st_mtime_ns
        await c.call_tool("git_status", {})
        assert (project / ".git" / "index").stat().st_mtime_ns == status_before  # no index refresh either


async def test_network_tools_exist_only_with_allow_network(project: Path) -> None:
    async with connect(server_for(project), "legacy") as c:
        names = {t.name for t in (await c.list_tools()).tools}
    assert not names & {"git_fetch", "git_pull", "git_push"}
    async with connect(server_for(project, allow_network=True), "legacy") as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert {"git_fetch", "git_pull", "git_push"} <= set(tools)
    assert all(tools[n].annotations.open_world_hint for n in ("git_fetch", "git_pull", "git_push"))


@pytest.mark.parametrize("era", ERAS)
async def test_long_outputs_are_paged_with_the_next_call_named(project: Path, era: Era, git_cli: Any) -> None:
    (project / "big.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    git_cli(project, "add", "big.txt")
    async with connect(server_for(project), era) as c:
        first = text(await c.call_tool("git_diff_staged", {"limit": 100}))
        assert "more follows: call git_diff_staged with offset=101" in first
        second = text(await c.call_tool("git_diff_staged", {"offset": 101, "limit": 100}))
        last_of_first = first.split("\n[lines")[0].rsplit("\n", 1)[1]
        first_of_second = second.split("\n")[1]
        assert int(first_of_second.split()[1]) == int(last_of_first.split()[1]) + 1
        assert "[lines 101-200 shown; more follows: call git_diff_staged with offset=201]" in second
        status = await c.call_tool("git_status", {"limit": 1})
        assert status.structured_content["next_offset"] == 1
        assert "call git_status with offset=1" in status.structured_content["next_page"]
        git_cli(project, "commit", "-qm", "big")
        blame = await c.call_tool("git_blame", {"path": "big.txt"})
        assert blame.structured_content["next_start_line"] == 401
        grep = await c.call_tool("git_grep", {"pattern": "line 4", "limit": 5})
        assert grep.structured_content["next_offset"] == 5


@pytest.mark.parametrize("era", ERAS)
async def test_resources_templates_completion_and_prompts(project: Path, era: Era) -> None:
    async with connect(server_for(project), era) as c:
        listed = {r.uri for r in (await c.list_resources()).resources}
        assert {
            "git://project/status",
            "git://project/log",
            "git://project/branches",
            "git://project/tags",
            "git://project/commit/feature",
            "git://project/commit/v1.0",
        } <= listed
        templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
        assert (
            "git://{repo}/blob/{revision}/{+path}" in templates
            and "git://{repo}/commit/{revision}" in templates
        )
        status = (await c.read_resource("git://project/status")).contents[0]
        assert "Changes to be committed" in status.text
        blob = (await c.read_resource("git://project/blob/v1.0/src/app.py")).contents[0]
        assert blob.text == "def main():\n    return 1\n"
        commit = (await c.read_resource("git://project/commit/v1.0")).contents[0]
        assert commit.mime_type == "text/x-diff" and "release one" in commit.text
        branches = (await c.read_resource("git://project/branches")).contents[0]
        assert "* main" in branches.text
        with pytest.raises(MCPError):
            await c.read_resource("git://project/blob/v1.0/../secret")
        template = ResourceTemplateReference(type="ref/resource", uri="git://{repo}/blob/{revision}/{+path}")
        repos = await c.complete(template, {"name": "repo", "value": "pro"})
        assert repos.completion.values == ["project"]
        revisions = await c.complete(template, {"name": "revision", "value": "fe"}, {"repo": "project"})
        assert revisions.completion.values == ["feature"]
        paths = await c.complete(
            template, {"name": "path", "value": "src/a"}, {"repo": "project", "revision": "main"}
        )
        assert paths.completion.values == ["src/app.py"]
        prompt_ref = PromptReference(type="ref/prompt", name="review_diff")
        targets = await c.complete(prompt_ref, {"name": "target", "value": "v"})
        assert "v1.0" in targets.completion.values
        names = {p.name for p in (await c.list_prompts()).prompts}
        assert {"commit_message", "review_diff"} <= names
        message = await c.get_prompt("commit_message", {})
        assert "+three" in message.messages[0].content.text
        review = await c.get_prompt("review_diff", {"target": "v1.0"})
        assert "-    return 1" in review.messages[0].content.text


async def test_a_ping_is_answered_while_a_heavy_call_runs(tmp_path: Path, git_cli: Any) -> None:
    repo = tmp_path / "heavy"
    repo.mkdir()
    git_cli(repo, "init", "-q")
    stream = "".join(
        f"commit refs/heads/main\ncommitter T <t@e> {1_700_000_000 + i} +0000\n"
        f"data 22\ncommit number {i:07d}\n\n"
        for i in range(12_000)
    )
    git_cli(repo, "fast-import", "--quiet", input=stream.encode())
    async with connect(server_for(repo), "legacy") as c:
        finished: list[str] = []

        async def heavy() -> None:
            await c.call_tool("git_log", {"max_count": 10_000})
            finished.append("log")

        async with anyio.create_task_group() as tg:
            tg.start_soon(heavy)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # ping is legacy-era only
                await c.send_ping()
            finished.append("ping")
    assert finished == ["ping", "log"]


async def test_client_roots_narrow_the_repositories_and_never_widen_them(
    project: Path, tmp_path: Path, new_repository: Any
) -> None:
    from mcp.types import ListRootsResult, Root

    other = new_repository(tmp_path / "work" / "other")
    outside = new_repository(tmp_path / "outside")

    async def roots(_: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=project.as_uri()), Root(uri=outside.as_uri())])

    async with connect(server_for(project, other), "legacy", list_roots_callback=roots) as c:
        listed = await c.call_tool("git_list_repositories", {})
        assert [r["name"] for r in listed.structured_content["repositories"]] == ["project"]
        refused = await c.call_tool("git_status", {"repo_path": str(other)})
        assert refused.is_error and "outside" in text(refused)
        widened = await c.call_tool("git_status", {"repo_path": str(outside)})
        assert widened.is_error  # a root never adds a repository the operator did not allow
        assert not (await c.call_tool("git_status", {"repo_path": "project"})).is_error


async def no_roots(_: Any) -> Any:
    """What the MCP Inspector answers to roots/list: it declares roots and lists none."""
    from mcp.types import ListRootsResult

    return ListRootsResult(roots=[])


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_client_whose_roots_list_is_empty_may_use_every_configured_repository(
    project: Path, transport: str
) -> None:
    args = ("--repository", str(project), "--no-watch")
    if transport == "stdio":
        async with connect(
            stdio_params("mcp-batteries-git", *args), "legacy", list_roots_callback=no_roots
        ) as c:
            status = await c.call_tool("git_status", {})
            listed = await c.call_tool("git_list_repositories", {})
    else:
        async with (
            http_server("mcp-batteries-git", *args) as running,
            connect_http(running.url, "legacy", list_roots_callback=no_roots) as c,
        ):
            status = await c.call_tool("git_status", {})
            listed = await c.call_tool("git_list_repositories", {})
            log = await c.read_resource("git://project/log")
            assert "second commit" in log.contents[0].text  # type: ignore[union-attr]
    assert not status.is_error, text(status)
    assert [r["name"] for r in listed.structured_content["repositories"]] == ["project"]  # type: ignore[index]


async def test_roots_outside_every_allowed_repository_refuse_and_name_the_roots(
    project: Path, tmp_path: Path
) -> None:
    from mcp.types import ListRootsResult, Root

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def outside(_: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=elsewhere.as_uri())])

    async with connect(server_for(project), "legacy", list_roots_callback=outside) as c:
        refused = await c.call_tool("git_status", {"repo_path": str(project)})
    assert refused.is_error
    assert str(elsewhere) in text(refused) and str(project) in text(refused), text(refused)
    assert "none of this client's roots" in text(refused)


async def test_cache_hints_follow_how_fast_each_resource_changes(project: Path) -> None:
    head = run_git(project, "rev-parse", "HEAD").strip()
    async with connect(server_for(project), "modern", cache=None) as c:
        hints = {
            uri: ((r := await c.read_resource(uri)).ttl_ms, r.cache_scope)
            for uri in (
                "git://project/status",
                "git://project/branches",
                f"git://project/commit/{head}",
                "git://project/commit/main",
            )
        }
        listing = await c.list_resources()
    assert hints == {
        "git://project/status": (0, "private"),  # changes with every edit
        "git://project/branches": (10_000, "private"),  # refs change in minutes
        f"git://project/commit/{head}": (3_600_000, "private"),  # a commit id never changes
        "git://project/commit/main": (10_000, "private"),  # a branch name moves
    }
    assert (listing.ttl_ms, listing.cache_scope) == (10_000, "private")
