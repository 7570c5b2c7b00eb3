"""The attack classes that hit the reference git server and its peers, through a real client.

- option injection through every string argument of every tool (`--output=`, `--upload-pack=`,
  `-c ...`, `--exec=`, `-O`, a branch called `-D`);
- paths escaping the repository in git_add, git_restore and git_blame (`..`, absolute paths,
  symlinked directories: CVE-2026-27735);
- git_init outside the allowed directories (CVE-2025-68143);
- `--repository` not enforced (CVE-2025-68145): other repositories, symlinks, nested repositories;
- remote URLs with the `ext::` and `fd::` transports, or local paths outside the allowed areas;
- a hostile repository configuration (fsmonitor, ssh command, external diff, textconv and
  filter drivers, pager, hooks, signing program, credential helper) that must never run.
"""

from __future__ import annotations

import os
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


def server_for(*repositories: Path, directories: list[Path] | None = None, **options: Any) -> Any:
    settings = GitSettings(
        repository=[str(r) for r in repositories], directories=[str(d) for d in directories or []], **options
    )
    return build_server(settings).mcp


def attack_values(marker: Path) -> list[str]:
    return [
        f"--output={marker}-output",
        f"--upload-pack=touch {marker}-upload-pack",
        f"-c core.pager=touch {marker}-pager",
        f"--exec=touch {marker}-exec",
        f"-Otouch {marker}-open",
        f"--open-files-in-pager=touch {marker}-open2",
        "-D",
        "--delete",
        "--force",
        "-fdx",
    ]


def valid_arguments(tool: str, project: Path, tmp_path: Path) -> dict[str, Any]:
    base: dict[str, Any] = {"repo_path": str(project)}
    extra: dict[str, dict[str, Any]] = {
        "git_diff": {"target": "HEAD"},
        "git_commit": {"message": "attack probe"},
        "git_add": {"files": ["notes.txt"]},
        "git_create_branch": {"branch_name": "probe"},
        "git_checkout": {"branch_name": "main"},
        "git_show": {"revision": "HEAD"},
        "git_blame": {"path": "notes.txt"},
        "git_grep": {"pattern": "one"},
        "git_restore": {"paths": ["notes.txt"], "staged": True},
        "git_init": {"path": str(tmp_path / "work" / "probe-init")},
        "git_tag": {"action": "list"},
        "git_stash": {"action": "list"},
    }
    if tool in ("git_init", "git_list_repositories"):
        base = {}
    return {**base, **extra.get(tool, {})}


@pytest.mark.parametrize("era", ERAS)
async def test_no_string_argument_of_any_tool_is_ever_read_as_an_option(
    project: Path, tmp_path: Path, era: Era, git_cli: Any
) -> None:
    marker = tmp_path / "pwned"
    branches_before = git_cli(project, "branch", "--format=%(refname)")
    async with connect(server_for(project, directories=[tmp_path / "work"], allow_network=True), era) as c:
        tools = (await c.list_tools()).tools
        probed = 0
        for tool in tools:
            properties = tool.input_schema.get("properties", {})
            for argument, schema in properties.items():
                kinds = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", [])}
                is_list = "array" in kinds
                if not ({"string", "array"} & kinds) or "enum" in schema:
                    continue
                # The checks are the same in both eras: the whole matrix once, a sample in the other.
                values = attack_values(marker) if era == "legacy" else attack_values(marker)[:3]
                for value in values:
                    arguments = valid_arguments(tool.name, project, tmp_path)
                    arguments[argument] = [value] if is_list else value
                    result = await c.call_tool(tool.name, arguments)
                    probed += 1
                    # Refused with a clear reason, or taken literally (a commit message may be
                    # "--force"); never an unexpected failure.
                    assert not text(result).startswith("Error executing tool"), (tool.name, argument, value)
        assert probed > (200 if era == "legacy" else 60)
    assert not list(tmp_path.glob("pwned*")), "an argument was read as an option"
    for line in branches_before.split():
        assert line in git_cli(project, "branch", "--format=%(refname)")


@pytest.mark.parametrize("era", ERAS)
async def test_a_branch_named_like_an_option_is_refused(project: Path, era: Era) -> None:
    async with connect(server_for(project), era) as c:
        for tool, arguments in [
            ("git_create_branch", {"branch_name": "-D"}),
            ("git_create_branch", {"branch_name": "ok", "base_branch": "--all"}),
            ("git_checkout", {"branch_name": "-D"}),
            ("git_checkout", {"branch_name": "--orphan=x"}),
            ("git_show", {"revision": "--output=/tmp/x"}),
            ("git_diff", {"target": "--output=/tmp/x"}),
            ("git_log", {"start_timestamp": "--output=/tmp/x"}),
            ("git_branch", {"contains": "--all"}),
            ("git_reflog", {"ref": "--all"}),
            ("git_tag", {"action": "create", "name": "-d"}),
        ]:
            result = await c.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            assert "'-'" in text(result) or "does not resolve" in text(result), text(result)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.usefixtures("each_platform_family")  # containment on both platform families
async def test_paths_cannot_escape_the_repository(
    project: Path, tmp_path: Path, era: Era, git_cli: Any
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    os.symlink(outside, project / "linked")
    async with connect(server_for(project), era) as c:
        for path in [
            "../outside/secret.txt",
            str(outside / "secret.txt"),
            "linked/secret.txt",
            "src/../../x",
        ]:
            for tool, arguments in [
                ("git_add", {"files": [path]}),
                ("git_restore", {"paths": [path]}),
                ("git_restore", {"paths": [path], "staged": True}),
                ("git_blame", {"path": path}),
                ("git_stash", {"action": "push", "paths": [path]}),
            ]:
                result = await c.call_tool(tool, arguments)
                assert result.is_error and "outside the repository" in text(result), (
                    tool,
                    path,
                    text(result),
                )
        for path in ["../outside/secret.txt", ".git/config"]:
            result = await c.call_tool("git_blame", {"path": path, "revision": "HEAD"})
            assert result.is_error and "TOP SECRET" not in text(result)
        result = await c.call_tool("git_add", {"files": [".git/config"]})
        assert result.is_error and ".git" in text(result)
    assert "secret" not in git_cli(project, "ls-files")


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.usefixtures("each_platform_family")  # containment on both platform families
async def test_git_init_only_inside_the_allowed_directories(project: Path, tmp_path: Path, era: Era) -> None:
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "work" / "jump")
    async with connect(server_for(directories=[tmp_path / "work"]), era) as c:
        for path in [
            str(tmp_path / "elsewhere" / "x"),
            "../elsewhere/y",
            "jump/z",
            "/tmp/mcp-git-init-probe",
        ]:
            result = await c.call_tool("git_init", {"path": path})
            assert result.is_error and "outside" in text(result), (path, text(result))
        existing = await c.call_tool("git_init", {"path": str(project)})
        assert existing.is_error and "already a git repository" in text(existing)
    async with connect(server_for(project), era) as c:
        result = await c.call_tool("git_init", {"path": str(project / "inner")})
        assert result.is_error and "DIR" in text(result)
    assert not list((tmp_path / "elsewhere").iterdir())
    assert not Path("/tmp/mcp-git-init-probe").exists()


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.usefixtures("each_platform_family")  # containment on both platform families
async def test_only_the_configured_repositories_are_used(
    project: Path, tmp_path: Path, era: Era, new_repository: Any
) -> None:
    other = new_repository(tmp_path / "other")
    nested = new_repository(project / "vendor" / "nested")
    os.symlink(other, project / "to-other")
    async with connect(server_for(project), era) as c:
        for repo_path, reason in [
            (str(other), "outside"),
            ("../../other", "outside"),
            (str(project / "to-other"), "symbolic link"),
            (str(nested), "another repository"),
            (str(project) + "-evil", "outside"),
            ("/", "outside"),
        ]:
            result = await c.call_tool("git_log", {"repo_path": repo_path})
            assert result.is_error and reason in text(result), (repo_path, text(result))
            assert str(project) in text(result)  # the error names what is allowed
        inside = await c.call_tool("git_status", {"repo_path": str(project / "src")})
        assert not inside.is_error  # a directory inside the repository means the repository


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.usefixtures("each_platform_family")  # containment on both platform families
async def test_remote_urls_that_run_programs_or_leave_the_allowed_areas_are_refused(
    project: Path, tmp_path: Path, era: Era, git_cli: Any
) -> None:
    marker = tmp_path / "pwned-ext"
    outside = tmp_path / "outside.git"
    git_cli(tmp_path, "init", "--quiet", "--bare", str(outside))
    git_cli(project, "remote", "add", "evil", f"ext::sh -c touch% {marker}")
    git_cli(project, "remote", "add", "fd", "fd::17")
    git_cli(project, "remote", "add", "far", str(outside))
    git_cli(project, "remote", "add", "rewritten", "https://example.invalid/repo.git")
    git_cli(project, "config", "url." + str(outside) + ".insteadOf", "https://example.invalid/")
    async with connect(server_for(project, allow_network=True), era) as c:
        for tool in ("git_fetch", "git_pull", "git_push"):
            for remote in (
                "evil",
                "fd",
                "far",
                "rewritten",
                f"ext::sh -c touch% {marker}",
                "fd::3",
                str(outside),
            ):
                result = await c.call_tool(tool, {"remote": remote, "branch": "main"})
                assert result.is_error, (tool, remote)
                assert "refused" in text(result) or "outside" in text(result), (tool, remote, text(result))
    assert not marker.exists()
    assert git_cli(outside, "for-each-ref") == ""


HOSTILE = {
    "core.fsmonitor": "touch {m}-fsmonitor",
    "core.sshCommand": "touch {m}-ssh",
    "core.pager": "touch {m}-pager",
    "pager.log": "touch {m}-pager-log",
    "core.editor": "touch {m}-editor",
    "core.hooksPath": "{hooks}",
    "diff.external": "touch {m}-external-diff",
    "diff.evil.textconv": "touch {m}-textconv; cat",
    "diff.evil.command": "touch {m}-diff-command",
    "filter.evil.clean": "touch {m}-clean; cat",
    "filter.evil.smudge": "touch {m}-smudge; cat",
    "filter.evil.process": "touch {m}-process",
    "gpg.program": "touch {m}-gpg",
    "commit.gpgSign": "true",
    "log.showSignature": "true",
    "credential.helper": "!touch {m}-credential",
    "remote.origin.uploadpack": "touch {m}-uploadpack; git-upload-pack",
    "remote.origin.receivepack": "touch {m}-receivepack; git-receive-pack",
    "core.alternateRefsCommand": "touch {m}-alternate-refs",
}
HOOKS = [
    "pre-commit",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "reference-transaction",
    "pre-push",
    "post-index-change",
    "pre-auto-gc",
    "post-merge",
    "prepare-commit-msg",
    "post-rewrite",
]


@pytest.mark.parametrize("era", ERAS)
async def test_a_hostile_repository_configuration_never_runs_a_program(
    project: Path, tmp_path: Path, era: Era, git_cli: Any
) -> None:
    marker = tmp_path / "pwned"
    hooks = tmp_path / "evil-hooks"
    hooks.mkdir()
    origin = tmp_path / "work" / "origin.git"
    git_cli(tmp_path, "init", "--quiet", "--bare", str(origin))
    git_cli(project, "remote", "add", "origin", str(origin))
    for directory in (hooks, project / ".git" / "hooks", origin / "hooks"):
        for hook in [*HOOKS, "pre-receive", "update", "post-receive", "post-update"]:
            script = directory / hook
            script.write_text(f"#!/bin/sh\ntouch {marker}-hook-{hook}\n")
            script.chmod(script.stat().st_mode | stat.S_IEXEC)
    for key, value in HOSTILE.items():
        git_cli(project, "config", key, value.format(m=marker, hooks=hooks))
    (project / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (project / "src" / "app.py").write_text("changed for the drivers\n")
    async with connect(server_for(project, directories=[tmp_path / "work"], allow_network=True), era) as c:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("git_status", {}),
            ("git_diff_unstaged", {}),
            ("git_diff_staged", {}),
            ("git_diff", {"target": "v1.0"}),
            ("git_log", {}),
            ("git_show", {"revision": "HEAD"}),
            ("git_blame", {"path": "src/app.py"}),
            ("git_grep", {"pattern": "changed"}),
            ("git_add", {"files": ["src/app.py", ".gitattributes"]}),
            ("git_commit", {"message": "through hostile config"}),
            ("git_create_branch", {"branch_name": "hostile"}),
            ("git_checkout", {"branch_name": "hostile"}),
            ("git_checkout", {"branch_name": "main"}),
            ("git_tag", {"action": "create", "name": "hostile-tag", "message": "annotated"}),
            ("git_stash", {"action": "push", "include_untracked": True}),
            ("git_stash", {"action": "pop"}),
            ("git_restore", {"paths": ["README.md"]}),
            ("git_reset", {}),
            ("git_push", {"remote": "origin", "branch": "main"}),
            ("git_fetch", {"remote": "origin"}),
            ("git_pull", {"remote": "origin", "branch": "main"}),
            ("git_remote", {}),
            ("git_reflog", {}),
        ]
        for tool, arguments in calls:
            result = await c.call_tool(tool, {"repo_path": str(project), **arguments})
            assert not text(result).startswith("Error executing tool"), (tool, text(result))
        pushed = await c.call_tool(
            "git_push", {"repo_path": str(project), "remote": "origin", "branch": "main"}
        )
        assert not pushed.is_error, text(pushed)
    assert sorted(p.name for p in tmp_path.glob("pwned*")) == []
    assert git_cli(origin, "rev-parse", "main") == git_cli(project, "rev-parse", "main")
