"""A hostile repository, driven through the real server over stdio, as a client would.

A repository is data the operator allowed, not code the operator trusts: every test here builds
one whose own files (`.git/config` and what it includes, `.gitattributes`, `objects/info`, the
working tree) try to make the server run a program, reach outside the allowed directories, or
flood a reply, and proves that nothing ran (the hostile programs would create marker files),
nothing outside was read or written, and the reply says what happened.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Iterator
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters
from mcp_batteries.testing import connect, stdio_params

pytestmark = pytest.mark.anyio


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def server(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """mcp-git as a subprocess over stdio (its console script), as Claude Desktop starts it."""
    return stdio_params("mcp-batteries-git", *args, env=env)


def markers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob("pwned*"))


def append_config(repository_git_dir: Path, text_: str) -> None:
    with open(repository_git_dir / "config", "a") as handle:
        handle.write(text_)


# -- 1. drivers named in any case, through includes, on every command ---------------------------


async def test_drivers_of_any_case_and_from_includes_never_run(
    tmp_path: Path, git_cli: Any, new_repository: Any
) -> None:
    m = tmp_path / "pwned"
    work = tmp_path / "work"
    attributes = (
        "*.txt filter=EVIL diff=MiXeD merge=Mrg\n*.dat filter=Evil2\n*.inc filter=EvIl3\n*.late filter=Late\n"
    )
    repo = new_repository(
        work / "repo",
        {
            "a.txt": "one\n",
            "b.dat": "two\n",
            "c.inc": "three\n",
            "d.late": "four\n",
            ".gitattributes": attributes,
        },
    )
    git_cli(repo, "checkout", "-q", "-b", "other")
    for name in ("a.txt", "b.dat", "c.inc", "d.late"):
        (repo / name).write_text(f"{name} on other\n")
    git_cli(repo, "commit", "-qam", "other")
    git_cli(repo, "checkout", "-q", "-b", "evil", "main")
    (repo / "d.late").write_text("late on evil\n")
    git_cli(repo, "commit", "-qam", "evil")
    git_cli(repo, "checkout", "-q", "main")
    # Written last: from here on, plain git in this repository would run these programs.
    append_config(
        repo / ".git",
        f"""[filter "EVIL"]
\tclean = touch {m}-clean-upper; cat
\tsmudge = touch {m}-smudge-upper; cat
[filter "Evil2"]
\tprocess = touch {m}-process-mixed
\trequired = true
[diff "MiXeD"]
\ttextconv = touch {m}-textconv-mixed; cat
\tcommand = touch {m}-diff-command-mixed
[merge "Mrg"]
\tdriver = touch {m}-merge-driver; false
[include]
\tpath = ../included.cfg
[includeIf "onbranch:evil"]
\tpath = late.cfg
""",
    )
    (repo / "included.cfg").write_text(
        f'[Filter "EvIl3"]\n\tclean = touch {m}-clean-include; cat\n'
        f"\tsmudge = touch {m}-smudge-include; cat\n"
    )
    (repo / ".git" / "late.cfg").write_text(
        f'[FILTER "Late"]\n\tclean = touch {m}-clean-onbranch; cat\n'
        f"\tsmudge = touch {m}-smudge-onbranch; cat\n"
    )

    # A read-only server: a plain status once a file's mtime changed re-reads it through the filter.
    os.utime(repo / "a.txt", (1_000_000_000, 1_000_000_000))
    async with connect(server("--repository", str(repo), "--read-only"), "legacy") as c:
        for tool, arguments in [
            ("git_status", {}),
            ("git_diff_unstaged", {}),
            ("git_diff", {"target": "other"}),
            ("git_show", {"revision": "other"}),
            ("git_log", {}),
            ("git_blame", {"path": "a.txt"}),
            ("git_grep", {"pattern": "one"}),
        ]:
            result = await c.call_tool(tool, arguments)
            assert not result.is_error, (tool, text(result))
    assert markers(tmp_path) == []

    async with connect(server("--repository", str(repo)), "modern") as c:

        async def call(tool: str, /, **arguments: Any) -> str:
            result = await c.call_tool(tool, arguments)
            assert not result.is_error, (tool, text(result))
            return text(result)

        for name in ("a.txt", "b.dat", "c.inc"):
            (repo / name).write_text(f"{name} changed\n")
        await call("git_add", files=["a.txt", "b.dat", "c.inc"])
        await call("git_commit", message="through the drivers")
        await call("git_checkout", branch_name="other")
        await call("git_checkout", branch_name="evil")  # onbranch:evil is now active
        (repo / "d.late").write_text("late changed\n")
        await call("git_add", files=["d.late"])
        await call("git_commit", message="late")
        await call("git_checkout", branch_name="main")
        # A merge driver runs when a stash is applied over a conflicting change.
        (repo / "a.txt").write_text("stashed change\n")
        await call("git_stash", action="push")
        (repo / "a.txt").write_text("committed change\n")
        await call("git_add", files=["a.txt"])
        await call("git_commit", message="conflicting")
        applied = await c.call_tool("git_stash", {"action": "apply"})
        assert not text(applied).startswith("Error executing tool"), text(applied)
    assert markers(tmp_path) == []
    # The content went in as it is (no clean filter rewrote it).
    assert git_cli(repo, "cat-file", "blob", "main:a.txt") == "committed change\n"


# -- 2. the receiving end of a local push --------------------------------------------------------


async def test_a_local_push_target_runs_nothing_and_a_refused_push_never_says_pushed(
    tmp_path: Path, git_cli: Any, new_repository: Any
) -> None:
    m = tmp_path / "pwned"
    work = tmp_path / "work"
    work.mkdir()
    seed = new_repository(tmp_path / "seed", {"f.txt": "one\n", ".gitattributes": "*.txt filter=Deploy\n"})
    ours = work / "ours"
    git_cli(work, "clone", "-q", str(seed), str(ours))
    (ours / "f.txt").write_text("two\n")
    git_cli(ours, "commit", "-qam", "two")
    # A non-bare target that updates its working tree on push, with a smudge filter and fsmonitor.
    deploy = work / "deploy"
    git_cli(work, "clone", "-q", str(seed), str(deploy))
    # A bare target borrowing objects from an allowed store, with an alternate-refs program.
    store = work / "store.git"
    git_cli(work, "init", "-q", "--bare", str(store))
    bare = work / "bare.git"
    git_cli(work, "clone", "-q", "--bare", str(seed), str(bare))
    (bare / "objects" / "info" / "alternates").write_text(f"{store}/objects\n")
    # A bare target borrowing objects from outside the allowed directories.
    outside = tmp_path / "outside.git"
    git_cli(tmp_path, "clone", "-q", "--bare", str(seed), str(outside))
    far = work / "far.git"
    git_cli(work, "clone", "-q", "--bare", str(seed), str(far))
    (far / "objects" / "info" / "alternates").write_text(f"{outside}/objects\n")
    seed_main = git_cli(seed, "rev-parse", "main").strip()
    for name, target in (("deploy", deploy), ("bare", bare), ("far", far)):
        git_cli(ours, "remote", "add", name, str(target))
    append_config(
        deploy / ".git",
        f"""[receive]
\tdenyCurrentBranch = updateInstead
[core]
\tfsmonitor = touch {m}-fsmonitor
[filter "Deploy"]
\tclean = touch {m}-clean; cat
\tsmudge = touch {m}-smudge; cat
""",
    )
    append_config(bare, f"[core]\n\talternateRefsCommand = touch {m}-alternate-refs\n")
    append_config(far, f"[core]\n\talternateRefsCommand = touch {m}-alternate-refs-far\n")

    async with connect(server(str(work), "--allow-network"), "legacy") as c:
        refused = await c.call_tool(
            "git_push", {"repo_path": str(ours), "remote": "deploy", "branch": "main"}
        )
        assert refused.is_error and "Pushed" not in text(refused), text(refused)
        pushed = await c.call_tool("git_push", {"repo_path": str(ours), "remote": "bare", "branch": "main"})
        assert not pushed.is_error and text(pushed).startswith("Pushed to bare"), text(pushed)
        for tool in ("git_push", "git_fetch", "git_pull"):
            result = await c.call_tool(tool, {"repo_path": str(ours), "remote": "far", "branch": "main"})
            assert result.is_error and "outside" in text(result), (tool, text(result))
            assert "Pushed" not in text(result) and "Fetched" not in text(result)
    assert markers(tmp_path) == []
    assert git_cli(deploy, "-c", "core.fsmonitor=false", "rev-parse", "main").strip() == seed_main
    assert (deploy / "f.txt").read_text() == "one\n"
    assert git_cli(far, "rev-parse", "main").strip() == seed_main
    assert git_cli(bare, "rev-parse", "main") == git_cli(ours, "rev-parse", "main")


# -- 3. percent-encoded and rewritten URLs --------------------------------------------------------


async def test_encoded_and_rewritten_urls_cannot_reach_outside(
    tmp_path: Path, git_cli: Any, new_repository: Any
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    seed = new_repository(tmp_path / "seed", {"f.txt": "one\n"})
    ours = work / "ours"
    git_cli(work, "clone", "-q", str(seed), str(ours))
    outside = tmp_path / "outside.git"
    home_outside = Path(os.environ["HOME"]) / "outside.git"
    for target in (outside, home_outside):
        git_cli(tmp_path, "clone", "-q", "--bare", str(seed), str(target))
    secret = new_repository(tmp_path / "secret-src", {"secret.txt": "outside only\n"})
    git_cli(secret, "push", "-q", str(outside), "main:refs/heads/secret")
    git_cli(secret, "push", "-q", str(home_outside), "main:refs/heads/secret")
    secret_commit = git_cli(secret, "rev-parse", "main").strip()
    before = {t: git_cli(t, "for-each-ref") for t in (outside, home_outside)}
    encoded = [
        f"file://{work}/%2e%2e/outside.git",
        f"file://{work}/%2E%2E/outside.git",
        f"file://localhost{work}/%2e%2e/outside.git",
        f"file://{work}/..%2Foutside.git",
        f"file://{work}%2F..%2Foutside.git",
        "~/outside.git",
    ]
    git_cli(ours, "remote", "add", "encoded", encoded[0])
    git_cli(ours, "remote", "add", "rewritten", "https://example.invalid/outside.git")
    git_cli(ours, "config", f"url.file://{work}/%2e%2e/.insteadOf", "https://example.invalid/")
    git_cli(ours, "config", f"url.file://{work}/%2E%2E/.pushInsteadOf", "https://push.invalid/")
    # A legacy remotes file for a name that looks like an ssh URL, and a remote named like a local
    # path inside whose push URL leads outside: git uses both for that "URL".
    (ours / ".git" / "remotes").mkdir()
    (ours / ".git" / "remotes" / "srv:outside").write_text(f"URL: {outside}\n")
    git_cli(ours, "config", f"remote.{work}/ours.pushurl", str(outside))
    async with connect(server(str(work), "--allow-network"), "modern") as c:
        for tool in ("git_fetch", "git_pull", "git_push"):
            for remote in [
                *encoded,
                "encoded",
                "rewritten",
                "https://example.invalid/outside.git",
                "https://push.invalid/outside.git",
                "srv:outside",
                f"{work}/ours",
            ]:
                result = await c.call_tool(tool, {"repo_path": str(ours), "remote": remote, "branch": "main"})
                assert result.is_error, (tool, remote, text(result))
                assert "outside" in text(result) or "refused" in text(result), (tool, remote, text(result))
    assert {t: git_cli(t, "for-each-ref") for t in (outside, home_outside)} == before
    with pytest.raises(AssertionError):
        git_cli(ours, "cat-file", "-e", secret_commit)


# -- 4. the cookie jar -----------------------------------------------------------------------------


@pytest.fixture
def cookie_server(tmp_path: Path, git_cli: Any, new_repository: Any) -> Iterator[str]:
    """A dumb-HTTP git server on 127.0.0.1 that sets a cookie on every reply; yields its URL."""
    seed = new_repository(tmp_path / "served-seed", {"f.txt": "served\n"})
    root = tmp_path / "served"
    git_cli(tmp_path, "clone", "-q", "--bare", str(seed), str(root / "repo.git"))
    git_cli(root / "repo.git", "update-server-info")

    class SetsCookies(SimpleHTTPRequestHandler):
        def end_headers(self) -> None:
            self.send_header("Set-Cookie", "session=pwned; Path=/")
            super().end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = HTTPServer(("127.0.0.1", 0), functools.partial(SetsCookies, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/repo.git"
    finally:
        httpd.shutdown()
        thread.join(timeout=10)
        httpd.server_close()


async def test_cookie_settings_never_write_a_file(
    tmp_path: Path, cookie_server: str, new_repository: Any
) -> None:
    work = tmp_path / "work"
    victims = [tmp_path / "victim-plain.txt", tmp_path / "victim-url.txt"]
    for victim in victims:
        victim.write_text("precious\n")
    plain = new_repository(work / "plain")
    append_config(plain / ".git", f"[http]\n\tcookieFile = {victims[0]}\n\tsaveCookies = true\n")
    scoped = new_repository(work / "scoped")
    base = cookie_server.rsplit("/", 1)[0] + "/"
    append_config(scoped / ".git", f'[HTTP "{base}"]\n\tCookieFile = {victims[1]}\n\tsavecookies = yes\n')
    async with connect(server(str(work), "--allow-network"), "legacy") as c:
        for repo in (plain, scoped):
            result = await c.call_tool("git_fetch", {"repo_path": str(repo), "remote": cookie_server})
            assert not result.is_error, text(result)
    assert [v.read_text() for v in victims] == ["precious\n", "precious\n"]


# -- 5. a symlinked directory in the working tree ---------------------------------------------------


async def test_grep_never_reads_through_a_symlinked_directory(
    tmp_path: Path, git_cli: Any, new_repository: Any
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET outside\n")
    repo = new_repository(
        tmp_path / "work" / "repo", {"d/secret.txt": "inside\n", "e/secret.txt": "inside e\n"}
    )
    git_cli(repo, "checkout", "-q", "-b", "evil")
    git_cli(repo, "rm", "-rq", "d")
    os.symlink(outside, repo / "d")
    git_cli(repo, "add", "d")
    git_cli(repo, "commit", "-qm", "d is a link to outside")
    git_cli(repo, "checkout", "-q", "main")
    async with connect(server("--repository", str(repo)), "legacy") as c:
        # Through the tools: restoring d from the branch where it is a link.
        restored = await c.call_tool("git_restore", {"paths": ["d"], "source": "evil"})
        assert not restored.is_error, text(restored)
        assert (repo / "d").is_symlink()
        # And as a repository can arrive: the index tracks e/secret.txt, e is a link to outside.
        (repo / "e" / "secret.txt").unlink()
        (repo / "e").rmdir()
        os.symlink(outside, repo / "e")
        for arguments in (
            {"pattern": "SECRET"},
            {"pattern": "secret", "ignore_case": True},
            {"pattern": "."},
        ):
            result = await c.call_tool("git_grep", arguments)
            assert "TOP SECRET" not in text(result), text(result)
            assert result.is_error and "symbolic link" in text(result), text(result)
        at_revision = await c.call_tool("git_grep", {"pattern": "inside", "revision": "main"})
        assert not at_revision.is_error and "d/secret.txt" in text(at_revision), text(at_revision)
        blamed = await c.call_tool("git_blame", {"path": "e/secret.txt"})
        assert blamed.is_error and "TOP SECRET" not in text(blamed)
    assert (outside / "secret.txt").read_text() == "TOP SECRET outside\n"


# -- 6. object stores outside the allowed directories -------------------------------------------------


async def test_object_stores_outside_are_never_consulted(
    tmp_path: Path, git_cli: Any, new_repository: Any
) -> None:
    work = tmp_path / "work"
    outside = new_repository(tmp_path / "outside", {"secret.txt": "OUTSIDE CONTENT\n"})
    git_cli(outside, "repack", "-q", "-a", "-d")
    blob = git_cli(outside, "rev-parse", "HEAD:secret.txt").strip()
    outside_objects = outside / ".git" / "objects"
    absolute = new_repository(work / "absolute")
    (absolute / ".git/objects/info/alternates").write_text(f"{outside_objects}\n")
    relative = new_repository(work / "relative")
    (relative / ".git/objects/info/alternates").write_text(
        os.path.relpath(outside_objects, relative / ".git" / "objects") + "\n"
    )
    middle = new_repository(work / "middle")
    (middle / ".git/objects/info/alternates").write_text(f"{outside_objects}\n")
    chained = new_repository(work / "chained")
    (chained / ".git/objects/info/alternates").write_text(f"# a comment\n\n{middle}/.git/objects\n")
    linked = new_repository(work / "linked")
    for pack in (outside_objects / "pack").iterdir():
        os.symlink(pack, linked / ".git" / "objects" / "pack" / pack.name)
    plain = new_repository(work / "plain")
    env = {"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(outside_objects)}
    async with connect(server(str(work), env=env), "modern") as c:
        for repo in (absolute, relative, chained, linked):
            for tool, arguments in [("git_show", {"revision": blob}), ("git_log", {}), ("git_status", {})]:
                result = await c.call_tool(tool, {"repo_path": str(repo), **arguments})
                assert result.is_error, (repo.name, tool, text(result))
                assert "OUTSIDE CONTENT" not in text(result)
                assert "outside" in text(result), (repo.name, tool, text(result))
        shown = await c.call_tool("git_show", {"repo_path": str(plain), "revision": blob})
        assert shown.is_error and "OUTSIDE CONTENT" not in text(shown), text(shown)
        log = await c.call_tool("git_log", {"repo_path": str(plain)})
        assert not log.is_error, text(log)
        # A refused repository does not take the others' resources down with it.
        listed = [str(r.uri) for r in (await c.list_resources()).resources]
        assert "git://work%2Fplain/status" in listed and not any("absolute" in uri for uri in listed)


# -- 7. replies stay bounded ---------------------------------------------------------------------------


async def test_huge_lines_messages_and_blames_are_cut_with_a_note(
    tmp_path: Path, git_cli: Any, new_repository: Any
) -> None:
    repo = new_repository(tmp_path / "work" / "big")
    (repo / "big.txt").write_bytes(b"x" * (20 * 1024 * 1024))  # one line, no newline
    (repo / "wide.txt").write_bytes(b"y" * (5 * 1024 * 1024) + b"\n")
    git_cli(repo, "add", "big.txt", "wide.txt")
    message = tmp_path / "message.txt"
    message.write_bytes(b"m" * (20 * 1024 * 1024))
    git_cli(repo, "commit", "-q", "-F", str(message))
    git_cli(repo, "tag", "-a", "huge", "-F", str(message))
    bound = 1_100_000  # far below the 20 MB (and the runtime's own reply cap)
    async with connect(server("--repository", str(repo)), "legacy") as c:
        for tool, arguments in [
            ("git_show", {"revision": "HEAD:big.txt"}),
            ("git_show", {"revision": "HEAD:wide.txt"}),
            ("git_show", {"revision": "HEAD", "offset": 5}),  # the message line
            ("git_log", {"max_count": 5}),
            ("git_blame", {"path": "wide.txt"}),
            ("git_blame", {"path": "wide.txt", "revision": "HEAD"}),
            ("git_reflog", {}),
            ("git_tag", {}),
        ]:
            result = await c.call_tool(tool, arguments)
            assert not result.is_error, (tool, text(result)[:500])
            size = len(text(result)) + len(json.dumps(result.structured_content or {}))
            assert size < bound, (tool, arguments, size)
            assert "cut" in text(result), (tool, arguments, text(result)[-300:])
        log = await c.read_resource("git://big/log")
        shown = "".join(getattr(item, "text", "") for item in log.contents)
        assert len(shown) < bound and "cut" in shown


# -- 8. names in git_show, a HEAD naming a missing commit -------------------------------------------


async def test_show_quotes_author_names_and_log_reports_a_broken_head(
    tmp_path: Path, names_repository: Path, git_cli: Any, new_repository: Any
) -> None:
    broken = new_repository(tmp_path / "work" / "broken")
    (broken / ".git" / "refs" / "heads" / "main").write_text("0123456789abcdef0123456789abcdef01234567\n")
    blob_head = new_repository(tmp_path / "work" / "blobhead")
    blob = git_cli(blob_head, "rev-parse", "HEAD:README.md").strip()
    (blob_head / ".git" / "refs" / "heads" / "main").write_text(blob + "\n")
    args = [
        "--repository",
        str(names_repository),
        "--repository",
        str(broken),
        "--repository",
        str(blob_head),
    ]
    async with connect(server(*args), "modern") as c:
        shown = await c.call_tool("git_show", {"repo_path": str(names_repository), "revision": "HEAD"})
        assert not shown.is_error, text(shown)
        authors = [line for line in text(shown).splitlines() if line.startswith("Author:")]
        assert authors and all("\x1b" not in line for line in authors), text(shown)
        assert 'Author: "Bj\\366rn \\033[31mRed" <bjorn@example.com>' in text(shown), text(shown)
        resource = await c.read_resource("git://names/commit/HEAD")
        assert "\x1b[31m" not in "".join(getattr(item, "text", "") for item in resource.contents)
        for repo in (broken, blob_head):
            log = await c.call_tool("git_log", {"repo_path": str(repo)})
            assert log.is_error, text(log)
            assert "no commits yet" not in text(log) and "HEAD" in text(log), text(log)
            assert "missing" in text(log) or "not a commit" in text(log), text(log)
