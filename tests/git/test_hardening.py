"""The neutralisation decision, the configuration parser and the containment checks, directly.

The end-to-end proofs (a hostile repository driven through the server over stdio) are in
test_hostile.py; these pin each decision on its own, quickly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.errors import AccessDenied
from mcp_batteries.safety import AllowedDirectories
from mcp_git.checks import check_remote_url, rewritten_urls
from mcp_git.containment import (
    check_git_directory_links,
    check_include,
    check_object_stores,
    check_tracked_paths,
)
from mcp_git.hardening import (
    RULES,
    STATIC_KEYS,
    ConfigEntry,
    config_arguments,
    include_target,
    neutralise,
    parse_config_listing,
    rule_for,
    split_key,
)
from mcp_git.pages import read_text_page
from mcp_git.repository import locate, transport_git_dir
from mcp_git.runner import Git, Policy
from mcp_git.text import clip, clip_name, show_text


def entry(scope: str, key: str, value: str | None, origin: str | None = "/r/.git/config") -> ConfigEntry:
    return ConfigEntry(scope, origin, key, value)


# -- the listing --------------------------------------------------------------------------------


def test_the_listing_keeps_scopes_origins_subsection_case_and_valueless_keys() -> None:
    raw = (
        b"global\x00file:/home/u/.gitconfig\x00credential.helper\nstore\x00"
        b"local\x00file:.git/config\x00filter.EVIL.clean\ntouch x\x00"
        b"local\x00file:.git/config\x00a.b=c.flag\x00"
        b"local\x00file:/r/included.cfg\x00url.https://a.b/c.insteadof\nhttps://x/\x00"
        b"command\x00command line:\x00core.pager\ncat\x00"
    )
    entries = parse_config_listing(raw)
    assert entries == [
        ConfigEntry("global", "/home/u/.gitconfig", "credential.helper", "store"),
        ConfigEntry("local", ".git/config", "filter.EVIL.clean", "touch x"),
        ConfigEntry("local", ".git/config", "a.b=c.flag", None),
        ConfigEntry("local", "/r/included.cfg", "url.https://a.b/c.insteadof", "https://x/"),
        ConfigEntry("command", None, "core.pager", "cat"),
    ]
    assert [e.from_repository for e in entries] == [False, True, True, True, False]
    assert parse_config_listing(raw, scope="worktree")[0].scope == "worktree"


def test_keys_split_at_the_first_and_last_dot() -> None:
    assert split_key("filter.EVIL.clean") == ("filter", "EVIL", "clean")
    assert split_key("url.https://a.b/c.insteadof") == ("url", "https://a.b/c", "insteadof")
    assert split_key("core.fsmonitor") == ("core", None, "fsmonitor")


def test_include_paths_resolve_as_git_resolves_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert include_target("../extra.cfg", "/r/.git/config", tmp_path) == Path("/r/.git/../extra.cfg")
    assert include_target("extra.cfg", ".git/config", tmp_path) == tmp_path / ".git" / "extra.cfg"
    assert include_target("~/x.cfg", None, tmp_path) == tmp_path / "home" / "x.cfg"
    assert include_target("/abs.cfg", None, tmp_path) == Path("/abs.cfg")
    assert include_target("relative.cfg", None, tmp_path) is None  # git refuses it too
    assert include_target("%(prefix)/etc/x", "/r/.git/config", tmp_path) is None
    assert include_target("~no-such-user-here/x", "/r/.git/config", tmp_path) is None


# -- the rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("filter.EVIL.clean", ""),
        ("filter.Evil.smudge", ""),
        ("filter.evil.process", ""),
        ("filter.MiXeD.required", "false"),
        ("diff.MiXeD.textconv", ""),
        ("diff.x.command", ""),
        ("merge.Mrg.driver", "false"),
        ("pager.log", "false"),
        ("core.sshcommand", "ssh"),
        ("core.alternaterefscommand", "true"),
        ("gpg.x509.program", "gpgsm"),
        ("gpg.SSH.program", ""),  # not the key git reads (the subsection is exact): inert anyway
        ("commit.gpgsign", "false"),
        ("http.savecookies", "false"),
        ("http.https://host/.cookiefile", ""),
        ("http.proxy", ""),
        ("remote.origin.proxy", ""),
        ("remote.origin.vcs", ""),
        ("submodule.x.update", "none"),
        ("branch.main.mergeoptions", ""),
        ("remote.origin.gh-resolved", ""),  # unknown: loses its effect
        ("lfs.customtransfer.x.path", ""),
        ("branch.main.vscode-merge-base", ""),
    ],
)
def test_repository_settings_that_run_or_reach_are_neutralised(key: str, value: str) -> None:
    decision = neutralise([entry("local", key, "touch pwned")])
    assert decision.overrides == [(key, value)]
    assert decision.refusals == []


@pytest.mark.parametrize(
    "key",
    [
        "core.filemode",
        "core.bare",
        "core.repositoryformatversion",
        "remote.origin.fetch",
        "branch.main.remote",
        "user.name",
        "alias.st",
        "extensions.objectformat",
        "color.diff.meta",
        "fetch.fsck.skiplist",
        "http.postbuffer",
        "http.https://host/.extraheader",
        # handled elsewhere by construction
        "remote.origin.url",
        "remote.origin.uploadpack",
        "url.file:///x/.insteadof",
        "include.path",
        "includeif.onbranch:evil.path",
        "core.gitproxy",
        "core.worktree",
        "safe.directory",
        "uploadpack.packobjectshook",
    ],
)
def test_harmless_and_otherwise_handled_settings_get_no_override(key: str) -> None:
    assert neutralise([entry("local", key, "value")]).overrides == []


def test_the_static_configuration_wins_without_a_repository_override() -> None:
    for key in ("core.fsmonitor", "core.hookspath", "core.pager", "protocol.ext.allow", "push.negotiate"):
        assert key in STATIC_KEYS
        assert neutralise([entry("local", key, "touch pwned")]).overrides == []


def test_the_operators_own_values_are_restored_and_lists_reset() -> None:
    entries = [
        entry("global", "credential.helper", "store", "/home/u/.gitconfig"),
        entry("global", "credential.https://corp.example.helper", "corp", "/home/u/.gitconfig"),
        entry("global", "credential.helper", "cache", "/home/u/.gitconfig"),
        entry("global", "filter.lfs.clean", "git-lfs clean -- %f", "/home/u/.gitconfig"),
        entry("local", "credential.https://evil.example.helper", "!touch pwned"),
        entry("local", "credential.helper", "!touch pwned2"),
        entry("local", "filter.lfs.clean", "touch pwned"),
        entry("worktree", "gpg.program", "touch pwned", "/r/.git/config.worktree"),
        entry("local", "user.name", "Someone"),
    ]
    assert neutralise(entries).overrides == [
        ("credential.helper", ""),
        ("credential.helper", "store"),
        ("credential.https://corp.example.helper", "corp"),
        ("credential.helper", "cache"),
        ("filter.lfs.clean", "git-lfs clean -- %f"),
        ("gpg.program", "gpg"),
    ]


def test_only_update_instead_makes_a_receiving_repository_refuse() -> None:
    overrides = neutralise([entry("local", "receive.denycurrentbranch", "updateInstead")]).overrides
    assert overrides == [("receive.denycurrentbranch", "refuse")]
    assert neutralise([entry("local", "receive.denycurrentbranch", "ignore")]).overrides == []


def test_trust_settings_without_an_operator_value_refuse_network_commands_only() -> None:
    decision = neutralise([entry("local", "http.https://host/.sslcainfo", "/r/evil-ca.pem")])
    assert decision.overrides == []
    [refusal] = decision.refusals
    assert refusal.network and refusal.key == "http.https://host/.sslcainfo"
    assert "http.https://host/.sslcainfo" in refusal.message("the repository r")
    assert "fetch, pull and push are refused" in refusal.message("the repository r")
    operator = entry("global", "http.https://host/.sslcainfo", "/etc/corp-ca.pem", "/home/u/.gitconfig")
    kept = neutralise([operator, entry("local", "http.https://host/.sslcainfo", "/r/evil-ca.pem")])
    assert kept.overrides == [("http.https://host/.sslcainfo", "/etc/corp-ca.pem")] and not kept.refusals


def test_a_partial_clone_whose_promisor_sets_its_upload_pack_refuses_network_commands() -> None:
    decision = neutralise(
        [
            entry("local", "extensions.partialclone", "origin"),
            entry("local", "remote.origin.uploadpack", "touch pwned; git-upload-pack"),
        ]
    )
    [refusal] = decision.refusals
    assert refusal.network and refusal.key == "remote.origin.uploadpack"
    assert not neutralise([entry("local", "remote.origin.uploadpack", "x")]).refusals


def test_settings_from_the_operator_alone_are_left_alone() -> None:
    assert (
        neutralise([entry("global", "core.sshcommand", "ssh -i key", "/home/u/.gitconfig")]).overrides == []
    )


def test_every_rule_is_the_one_its_own_keys_get() -> None:
    for pattern, rule in RULES.items():
        for key in {
            pattern.replace("[.<>]", "").replace("<>", "Any.Sub").replace("*", "anything"),
            pattern.replace("[.<>]", ".https://h/").replace("<>", "x").replace("*", "Other"),
        }:
            assert rule_for(key) is rule, (pattern, key)
            assert rule.why


def test_keys_holding_an_equals_sign_go_through_the_environment() -> None:
    argv, env = config_arguments(
        [("filter.a=b.clean", ""), ("core.x", None), ("a.b", "c=d"), ("x.y=z.k", None)]
    )
    assert argv == [
        "--config-env=filter.a=b.clean=MCP_GIT_CONFIG_0",
        "-c",
        "core.x",
        "-c",
        "a.b=c=d",
        "--config-env=x.y=z.k=MCP_GIT_CONFIG_3",
    ]
    assert env == {"MCP_GIT_CONFIG_0": "", "MCP_GIT_CONFIG_3": "true"}


# -- URLs ----------------------------------------------------------------------------------------


def test_urls_are_rewritten_as_git_rewrites_them() -> None:
    entries = [
        entry("local", "url.file:///short/.insteadof", "https://h/"),
        entry("local", "url.file:///long/.insteadof", "https://h/repo"),
        entry("local", "url.file:///same-length/.insteadof", "https://h/repo"),
        entry("global", "url.ssh://push/.pushinsteadof", "https://h/", "/home/u/.gitconfig"),
    ]
    assert rewritten_urls("https://h/repo.git", entries) == [
        "https://h/repo.git",
        "file:///long/.git",
        "ssh://push/repo.git",
    ]
    assert rewritten_urls("https://other/x", entries) == ["https://other/x"]


def test_local_urls_are_checked_on_the_path_git_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    area = tmp_path / "area"
    (area / "repo.git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert check_remote_url(f"file://{area}/repo.git", [area], area) == f"{area}/repo.git"
    assert check_remote_url(f"file://localhost{area}/%72epo.git", [area], area) == f"{area}/repo.git"
    assert check_remote_url("repo.git", [area], area) == f"{area}/repo.git"
    assert check_remote_url("https://example.com/r.git", [area], area) is None
    for url in (
        f"file://{area}/%2e%2e/outside.git",
        f"file://{area}%2F..%2Foutside.git",
        f"file://{area}/..%2f..%2Foutside.git",
        "~/repo.git",
        "file://host-only",  # no path after the host: git refuses, so do we
    ):
        with pytest.raises(AccessDenied):
            check_remote_url(url, [area], area)


def test_the_repository_a_transport_enters_is_found_as_git_finds_it(tmp_path: Path, git_cli: Any) -> None:
    git_cli(tmp_path, "init", "-q", "--bare", "bare.git")
    git_cli(tmp_path, "init", "-q", "work")
    assert transport_git_dir(str(tmp_path / "bare")) == ((tmp_path / "bare.git"), (tmp_path / "bare.git"))
    assert transport_git_dir(str(tmp_path / "bare.git/")) == (
        (tmp_path / "bare.git"),
        (tmp_path / "bare.git"),
    )
    assert transport_git_dir(str(tmp_path / "work"))[0] == tmp_path / "work" / ".git"  # type: ignore[index]
    assert transport_git_dir(str(tmp_path / "nothing")) is None


# -- containment ---------------------------------------------------------------------------------


def test_alternates_must_stay_inside(tmp_path: Path, git_cli: Any) -> None:
    area = tmp_path / "area"
    for name in ("a", "b"):
        git_cli(tmp_path, "init", "-q", "--bare", str(area / f"{name}.git"))
    git_cli(tmp_path, "init", "-q", "--bare", str(tmp_path / "outside.git"))
    allowed = AllowedDirectories([area])
    alternates = area / "a.git" / "objects" / "info" / "alternates"
    alternates.write_text(f'# comment\n\n"{area}/b.git/objects"\n../../b.git/objects\n')
    read = check_object_stores(area / "a.git", allowed, "a")
    assert alternates in read
    (area / "b.git" / "objects" / "info" / "alternates").write_text("../../../outside.git/objects\n")
    with pytest.raises(AccessDenied, match=r"outside\.git"):
        check_object_stores(area / "a.git", allowed, "a")


def test_links_in_the_git_directory_must_stay_inside(tmp_path: Path, git_cli: Any) -> None:
    area = tmp_path / "area"
    git_cli(tmp_path, "init", "-q", "--bare", str(area / "a.git"))
    allowed = AllowedDirectories([area])
    os.symlink(area / "a.git" / "HEAD", area / "a.git" / "refs" / "inside-link")
    (tmp_path / "shared-hooks").mkdir()
    (area / "a.git" / "hooks").rename(area / "a.git" / "hooks-before")
    os.symlink(tmp_path / "shared-hooks", area / "a.git" / "hooks")  # never read: hooks never run
    check_git_directory_links([area / "a.git"], allowed, "a")
    (tmp_path / "outside-refs").mkdir()
    os.symlink(tmp_path / "outside-refs", area / "a.git" / "refs" / "tags-elsewhere")
    with pytest.raises(AccessDenied, match="tags-elsewhere"):
        check_git_directory_links([area / "a.git"], allowed, "a")


def test_includes_must_be_regular_files_inside(tmp_path: Path) -> None:
    area = tmp_path / "area"
    area.mkdir()
    allowed = AllowedDirectories([area])
    (area / "ok.cfg").write_text("[x]\n\ty = 1\n")
    assert check_include(area / "ok.cfg", "include.path", "ok.cfg", allowed, "r") == area / "ok.cfg"
    assert check_include(area / "missing.cfg", "include.path", "missing.cfg", allowed, "r") is None
    os.mkfifo(area / "fifo.cfg")
    (tmp_path / "outside.cfg").write_text("")
    os.symlink(tmp_path / "outside.cfg", area / "link.cfg")
    for target in (area / "fifo.cfg", area / "link.cfg", tmp_path / "outside.cfg", None):
        with pytest.raises(AccessDenied):
            check_include(target, "include.path", "x", allowed, "r")


def test_tracked_files_behind_a_link_out_of_the_working_tree_are_refused(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "inner").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(work / "inner", work / "alias")
    check_tracked_paths(work, [b"alias/a.txt", b"inner/a.txt", b"top.txt"], "git_grep")
    os.symlink(tmp_path / "outside", work / "d")
    with pytest.raises(AccessDenied, match="symbolic link"):
        check_tracked_paths(work, [b"top.txt", b"d/secret.txt"], "git_grep")


def test_a_configuration_git_cannot_parse_is_refused_naming_it(tmp_path: Path, new_repository: Any) -> None:
    repo = new_repository(tmp_path / "repo")
    with open(repo / ".git" / "config", "a") as handle:
        handle.write("[broken\n")
    git = Git(locate(repo, "repo"), Policy(areas=(tmp_path,)))
    with pytest.raises(AccessDenied, match=r"cannot read its configuration.*bad config line"):
        git.run(["status"])


def test_a_changed_configuration_is_read_again(tmp_path: Path, new_repository: Any, git_cli: Any) -> None:
    repo = new_repository(tmp_path / "repo")
    git = Git(locate(repo, "repo"), Policy(areas=(tmp_path,)))
    assert git.inspection().overrides == []
    assert git.inspection() is git.inspection()  # cached while nothing changes
    (repo / "extra.cfg").write_text('[filter "X"]\n\tclean = touch pwned\n')
    git_cli(repo, "config", "include.path", "../extra.cfg")
    assert ("filter.X.clean", "") in git.inspection().overrides
    (repo / "extra.cfg").write_text('[filter "Y"]\n\tsmudge = touch pwned\n')
    assert git.inspection().overrides == [("filter.Y.smudge", "")]


# -- bounded text ----------------------------------------------------------------------------------


def test_clipped_values_say_what_was_cut_and_where_the_rest_is() -> None:
    assert clip(b"short") == "short"
    assert clip("é".encode() * 4, 5) == "éé [... cut: 4 of 8 bytes not shown]"
    assert clip(b"x" * 10, 4, total=100, rest="git_show revision=abc") == (
        "xxxx [... cut: 96 of 100 bytes not shown; git_show revision=abc]"
    )
    assert clip_name(b"\x1b" * 2000, 3).startswith('"\\033\\033\\033" [... cut: 1,997')


def test_show_quotes_names_in_identity_lines_only() -> None:
    raw = b"commit abc\nAuthor: Bj\xf6rn \x1b[31mRed <b@x>\nDate:   today\n\n    body \x1b[2J\n+Author: x\x1b"
    shown = show_text(raw)
    assert 'Author: "Bj\\366rn \\033[31mRed" <b@x>' in shown
    assert "body \x1b[2J" in shown and "+Author: x\x1b" in shown


def test_a_page_cuts_a_huge_last_line_without_a_newline(
    tmp_path: Path, new_repository: Any, git_cli: Any
) -> None:
    repo = new_repository(tmp_path / "repo", {"one.txt": "a\nb\n" + "z" * 500_000})
    git = Git(locate(repo, "repo"), Policy(areas=(tmp_path,)))
    blob = git_cli(repo, "rev-parse", "HEAD:one.txt").strip()
    page = read_text_page(git, ["cat-file", "blob", blob], max_bytes=1000, cut_rest="elsewhere")
    assert (page.text, page.more) == ("a\nb", True)  # the cut line fills a page of its own
    last = read_text_page(git, ["cat-file", "blob", blob], offset=3, max_bytes=1000, cut_rest="elsewhere")
    assert last.text == "z" * 1000 + " [... cut: 499,000 of 500,000 bytes not shown; elsewhere]"
    assert (last.first_line, last.last_line, last.more) == (3, 3, False)
