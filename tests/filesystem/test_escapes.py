"""Escape corpus: every known way out of the allowed directories, against every operation.

Includes the reference server's CVEs: CVE-2025-53109 (symlink inside the allowed dir pointing
out) and CVE-2025-53110 (prefix match: /x/allowed vs /x/allowed_evil), plus roots that try to
widen access and symlinks swapped in while operations run (TOCTOU races).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput
from mcp_batteries.safety import AllowedDirectories, resolve_path
from mcp_filesystem import tools
from mcp_filesystem.reading import read_multiple_files, read_text_file
from mcp_filesystem.tools import Job
from mcp_filesystem.writing import delete_path, move_file, write_file

# Every escape, on each platform family: `posix` (descriptor-relative opens, Linux and macOS) and
# `portable` (what Windows has: resolve with the OS, then prove by identity), forced on Linux.
pytestmark = pytest.mark.usefixtures("each_platform_family")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "x" / "allowed"
    d.mkdir(parents=True)
    (d / "ok.txt").write_text("public\n")
    (d / "sub").mkdir()
    return d


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "x" / "allowed_evil"  # also the CVE-2025-53110 prefix sibling
    d.mkdir(parents=True)
    (d / "secret.txt").write_text("SECRET\n")
    return d


@pytest.fixture
def allowed(root: Path) -> AllowedDirectories:
    return AllowedDirectories([root])


#: Every tool, through the function the server registers (`mcp_filesystem.tools`), with the
#: escape in each of its path arguments. `list_allowed_directories` takes no path: its check is
#: that it names nothing but the allowed directories (test_client_roots_cannot_widen_access).
TOOLS_WITH_PATHS = {
    "read_text_file",
    "read_file",
    "read_media_file",
    "read_multiple_files",
    "write_file",
    "edit_file",
    "create_directory",
    "move_file",
    "copy_file",
    "delete_path",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "search_files",
    "grep",
    "get_file_info",
}


def _everything(allowed: AllowedDirectories, p: str) -> Iterator[tuple[str, Callable[[], object]]]:
    job = Job(allowed)
    yield "resolve", lambda: resolve_path(p, allowed, must_exist=False)
    yield "read_text_file", lambda: tools.read_text_file(job, p, None, None, None, None)
    yield "read_file tail", lambda: tools.read_text_file(job, p, None, 1, None, None)
    yield "read_text_file page", lambda: tools.read_text_file(job, p, None, None, 2, 1)
    yield "read_media_file", lambda: tools.read_media_file(job, p)
    yield "read_multiple_files", lambda: _per_file_refusal(tools.read_multiple_files(job, ["ok.txt", p]))
    yield "get_file_info", lambda: tools.get_file_info(job, p)
    yield "write_file", lambda: tools.write_file(job, p, "PWNED")
    yield "edit_file", lambda: tools.edit_file(job, p, [{"oldText": "SECRET", "newText": "PWNED"}], False)
    yield "create_directory", lambda: tools.create_directory(job, p + "/newdir")
    yield "copy_file from", lambda: tools.copy_file(job, p, "copied.txt", False, True)
    yield "copy_file to", lambda: tools.copy_file(job, "ok.txt", p, True, False)
    yield "move_file to", lambda: tools.move_file(job, "ok.txt", p)
    yield "list_directory", lambda: tools.list_directory(job, p)
    yield "list_directory_with_sizes", lambda: tools.list_directory_with_sizes(job, p, "name")
    yield "directory_tree", lambda: tools.directory_tree(job, p, [], None, False)
    yield "search_files", lambda: tools.search_files(job, p, "**/*", [])
    yield "grep", lambda: tools.grep(job, p, "SECRET", False, False, [], [], 0, 100)
    # Last, because they may legitimately act on an in-tree symlink itself (never its target).
    yield "move_file from", lambda: _move_back(job, p)
    yield "delete_path", lambda: tools.delete_path(job, p, True)


def _per_file_refusal(text: str) -> None:
    """read_multiple_files answers per file: the escape must be an error, the rest still read."""
    first, refusal = text.split("\n---\n")
    assert first == "ok.txt:\npublic\n" or "Access denied" in first  # (an empty scope refuses all)
    if "Access denied" in refusal:
        raise AccessDenied(refusal)
    if "Error - " in refusal:
        raise InvalidInput(refusal)


def _move_back(job: Job, p: str) -> None:
    tools.move_file(job, p, "moved-away")
    tools.move_file(job, "moved-away", p)  # it was a link inside the tree: put it back


# Operations that act on a symlink itself, so a link inside the tree that points outside may be
# described, moved or deleted (the checks below make sure nothing outside is read or touched).
_ON_THE_LINK_ITSELF = {"get_file_info", "move_file from", "delete_path"}


def _assert_all_refused(allowed: AllowedDirectories, p: str, outside: Path) -> None:
    before = {q: q.read_bytes() for q in outside.rglob("*") if q.is_file()}
    covered = set()
    for name, op in _everything(allowed, p):
        covered.add(name.split(" ")[0])
        if name in _ON_THE_LINK_ITSELF:
            try:
                shown = op()
            except (AccessDenied, InvalidInput):
                continue
            if name == "get_file_info":
                assert isinstance(shown, str) and "type: symlink" in shown and "mimeType" not in shown
                assert "(outside the allowed directories or dangling)" in shown
            continue
        with pytest.raises((AccessDenied, InvalidInput)) as info:
            op()
        assert "SECRET" not in str(info.value)
        if info.type is AccessDenied:
            assert "allowed directories" in str(info.value), name
    assert covered >= TOOLS_WITH_PATHS - {"read_file"}
    after = {q: q.read_bytes() for q in outside.rglob("*") if q.is_file()}
    assert after == before, "an operation changed files outside the allowed directory"
    assert not (outside / "newdir").exists()


def test_the_escape_matrix_covers_every_tool_that_takes_a_path() -> None:
    from mcp_filesystem.config import FilesystemSettings
    from mcp_filesystem.server import build_server

    server = build_server(FilesystemSettings(directories=["."]))
    registered = set(server._declared_tools)
    assert registered == TOOLS_WITH_PATHS | {"list_allowed_directories"}, registered


ESCAPES = [
    "../allowed_evil/secret.txt",
    "../../x/allowed_evil/secret.txt",
    "sub/../../allowed_evil/secret.txt",
    "sub/../../../../../../../../../../etc/passwd",
    "/etc/passwd",
    "/etc/../etc/passwd",
    "//etc/passwd",
    "file:///etc/passwd",
    "file://localhost/etc/passwd",
    "file:///etc/%2e%2e/etc/passwd",
    "..",
    "../",
    "./../allowed_evil",
]


@pytest.mark.parametrize("escape", ESCAPES)
def test_dotdot_and_absolute_escapes_are_refused_everywhere(
    escape: str, allowed: AllowedDirectories, outside: Path
) -> None:
    _assert_all_refused(allowed, escape, outside)


def test_cve_2025_53110_prefix_sibling_is_refused(allowed: AllowedDirectories, outside: Path) -> None:
    _assert_all_refused(allowed, str(outside / "secret.txt"), outside)
    _assert_all_refused(allowed, str(outside), outside)


@pytest.mark.parametrize("suffix", ["_evil", "2", "-evil", ".bak", " "])
def test_prefix_variants_are_refused(suffix: str, root: Path, allowed: AllowedDirectories) -> None:
    sibling = Path(str(root) + suffix)
    sibling.mkdir()
    (sibling / "f").write_text("x")
    with pytest.raises(AccessDenied):
        resolve_path(str(sibling / "f"), allowed)


def test_cve_2025_53109_symlink_to_etc_passwd_is_refused(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "passwd").symlink_to("/etc/passwd")
    (root / "secret").symlink_to(outside / "secret.txt")
    _assert_all_refused(allowed, "passwd", outside)
    _assert_all_refused(allowed, "secret", outside)
    assert (outside / "secret.txt").read_text() == "SECRET\n"


def test_symlinked_parent_pointing_outside_is_refused(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "door").symlink_to(outside)
    _assert_all_refused(allowed, "door/secret.txt", outside)
    _assert_all_refused(allowed, "door/new.txt", outside)
    assert not (outside / "new.txt").exists()


def test_chain_of_symlinks_leading_out_is_refused(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "l3").symlink_to(outside)
    (root / "l2").symlink_to("l3")
    (root / "sub" / "l1").symlink_to("../l2")
    _assert_all_refused(allowed, "sub/l1/secret.txt", outside)


def test_relative_symlink_climbing_out_is_refused(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "sub" / "up").symlink_to("../../allowed_evil/secret.txt")
    _assert_all_refused(allowed, "sub/up", outside)


def test_dangling_symlink_whose_target_would_be_outside_is_refused(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    _assert_all_refused(allowed, "dangling", outside)
    assert not (outside / "not-yet.txt").exists()


def test_symlink_to_root_filesystem_is_refused(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "slash").symlink_to("/")
    _assert_all_refused(allowed, "slash/etc/passwd", outside)


def test_tilde_home_outside_is_refused(
    allowed: AllowedDirectories, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(outside))
    _assert_all_refused(allowed, "~/secret.txt", outside)
    _assert_all_refused(allowed, "~", outside)


def test_nul_bytes_are_invalid_everywhere(allowed: AllowedDirectories, outside: Path) -> None:
    for name, op in _everything(allowed, "ok.txt\x00/../../etc/passwd"):
        with pytest.raises(InvalidInput, match="NUL"):
            op()
        del name


def test_over_long_path_is_invalid_with_the_limit(allowed: AllowedDirectories) -> None:
    with pytest.raises(InvalidInput, match="4096"):
        resolve_path("a/" * 2100, allowed, must_exist=False)
    with pytest.raises(InvalidInput, match="255"):
        resolve_path("x" * 256, allowed, must_exist=False)
    with pytest.raises(InvalidInput, match="255"):
        write_file(allowed, "é" * 128, "x")  # 256 bytes in UTF-8


def test_client_roots_cannot_widen_access(allowed: AllowedDirectories, root: Path, outside: Path) -> None:
    for client_roots in ([Path("/")], [outside], [root.parent], [Path("/"), outside, root.parent]):
        narrowed = allowed.narrowed(client_roots)
        assert set(narrowed.roots) <= set(allowed.roots)
        _assert_all_refused(narrowed, str(outside / "secret.txt"), outside)


def test_delete_of_symlink_pointing_outside_removes_only_the_link(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "link").symlink_to(outside / "secret.txt")
    (root / "dirlink").symlink_to(outside)
    assert delete_path(allowed, "link") == "symlink"
    assert delete_path(allowed, "dirlink", recursive=True) == "symlink"
    assert (outside / "secret.txt").read_text() == "SECRET\n"


def test_recursive_delete_does_not_follow_symlinks_inside_the_tree(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "sub" / "door").symlink_to(outside)
    (root / "sub" / "file").symlink_to(outside / "secret.txt")
    delete_path(allowed, "sub", recursive=True)
    assert not (root / "sub").exists()
    assert (outside / "secret.txt").read_text() == "SECRET\n"


def test_move_out_of_or_into_outside_is_refused(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    with pytest.raises(AccessDenied):
        move_file(allowed, str(outside / "secret.txt"), "stolen.txt")
    with pytest.raises(AccessDenied):
        move_file(allowed, "ok.txt", str(outside / "planted.txt"))
    assert (outside / "secret.txt").exists() and not (root / "stolen.txt").exists()


def test_allowed_root_cannot_be_deleted_or_moved(allowed: AllowedDirectories, root: Path) -> None:
    for op in (
        lambda: delete_path(allowed, str(root), recursive=True),
        lambda: delete_path(allowed, ".", recursive=True),
        lambda: move_file(allowed, str(root), str(root / "sub" / "moved")),
        lambda: write_file(allowed, str(root), "x"),
    ):
        with pytest.raises(AccessDenied):
            op()
    assert root.is_dir()


def test_directory_holding_another_allowed_root_cannot_be_deleted(root: Path) -> None:
    (root / "sub" / "inner").mkdir()
    allowed = AllowedDirectories([root, root / "sub" / "inner"])
    with pytest.raises(AccessDenied, match="contains an allowed directory"):
        delete_path(allowed, "sub", recursive=True)
    assert (root / "sub" / "inner").is_dir()


def test_read_multiple_files_reports_escapes_per_file(allowed: AllowedDirectories, root: Path) -> None:
    (root / "passwd").symlink_to("/etc/passwd")
    out = read_multiple_files(allowed, ["ok.txt", "passwd", "../allowed_evil/secret.txt"])
    assert out.results[0].text == "public\n"
    assert all(r.error and "Access denied" in r.error for r in out.results[1:])


# --- TOCTOU races ------------------------------------------------------------------------------


def _flipper(stop: threading.Event, flip: Callable[[int], None]) -> threading.Thread:
    def run() -> None:
        i = 0
        while not stop.is_set():
            flip(i)
            i += 1

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_symlink_swapped_in_during_reads_never_leaks_the_secret(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    target = root / "racy.txt"
    target.write_text("public\n")
    staging_file, staging_link = root / ".stage-file", root / ".stage-link"

    def flip(i: int) -> None:
        # os.replace is atomic: readers see either the regular file or the symlink.
        if i % 2:
            staging_link.unlink(missing_ok=True)
            staging_link.symlink_to(outside / "secret.txt")
            os.replace(staging_link, target)
        else:
            staging_file.write_text("public\n")
            os.replace(staging_file, target)

    stop = threading.Event()
    thread = _flipper(stop, flip)
    outcomes = {"ok": 0, "refused": 0}
    try:
        for i in range(3000):
            try:
                page = (
                    read_text_file(allowed, "racy.txt", tail=1)
                    if i % 3 == 0
                    else read_text_file(allowed, "racy.txt")
                )
            except BatteriesError as exc:
                assert "SECRET" not in str(exc)
                outcomes["refused"] += 1
                continue
            assert "SECRET" not in page.text
            outcomes["ok"] += 1
    finally:
        stop.set()
        thread.join()
    assert outcomes["ok"] > 0  # the race really exercised both states


def test_parent_directory_swapped_for_symlink_during_reads_never_leaks(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (outside / "data.txt").write_text("SECRET\n")
    real_dir = root / "real"
    real_dir.mkdir()
    (real_dir / "data.txt").write_text("public\n")
    link_stage, dir_link = root / ".stage", root / "d"
    dir_link.symlink_to("real")

    def flip(i: int) -> None:
        link_stage.unlink(missing_ok=True)
        link_stage.symlink_to(outside if i % 2 else real_dir)
        os.replace(link_stage, dir_link)

    stop = threading.Event()
    thread = _flipper(stop, flip)
    try:
        for _ in range(3000):
            try:
                page = read_text_file(allowed, "d/data.txt")
            except BatteriesError:
                continue
            assert "SECRET" not in page.text
    finally:
        stop.set()
        thread.join()


def test_parent_swapped_for_symlink_during_writes_never_writes_outside(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    target_dir = root / "w"
    target_dir.mkdir()
    parked = root / ".parked"
    stage = root / ".stage"

    def flip(i: int) -> None:
        # Alternate "w" between the real directory and a symlink to the outside directory.
        if i % 2:
            if target_dir.is_symlink():
                return
            os.rename(target_dir, parked)
            stage.unlink(missing_ok=True)
            stage.symlink_to(outside)
            os.replace(stage, target_dir)
        else:
            if not target_dir.is_symlink():
                return
            target_dir.unlink()
            os.rename(parked, target_dir)

    stop = threading.Event()
    thread = _flipper(stop, flip)
    try:
        for i in range(1500):
            try:
                write_file(allowed, f"w/f{i}.txt", "PWNED")
            except BatteriesError:
                continue
    finally:
        stop.set()
        thread.join()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
