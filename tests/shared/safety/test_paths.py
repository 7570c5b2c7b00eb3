"""mcp_batteries._safety.paths: resolve_path rules, AllowedDirectories, and the use-time open primitives."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from mcp_batteries._safety.paths import (
    NAME_MAX,
    PATH_MAX,
    AllowedDirectories,
    display_path,
    file_uri_to_path,
    open_directory,
    open_for_read,
    open_parent,
    open_path_for_read,
    resolve_path,
    stat_within,
    symlink_target_within,
)
from mcp_batteries.errors import AccessDenied, BatteriesError, ConfigError, InvalidInput, NotFound


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "allowed"
    d.mkdir()
    (d / "file.txt").write_text("hello\n")
    (d / "sub").mkdir()
    (d / "sub" / "inner.txt").write_text("inner\n")
    return d


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("SECRET\n")
    return d


@pytest.fixture
def allowed(root: Path) -> AllowedDirectories:
    return AllowedDirectories([root])


# --- AllowedDirectories ------------------------------------------------------------------------


def test_allowed_directories_are_stored_as_realpaths(tmp_path: Path, root: Path) -> None:
    link = tmp_path / "link-to-allowed"
    link.symlink_to(root)
    assert AllowedDirectories([link]).roots == (root.resolve(),)


def test_missing_allowed_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        AllowedDirectories([tmp_path / "nope"])


def test_allowed_file_instead_of_directory_is_a_config_error(root: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        AllowedDirectories([root / "file.txt"])


def test_allowed_directories_are_immutable(allowed: AllowedDirectories) -> None:
    with pytest.raises(AttributeError):
        allowed._roots = ()  # type: ignore[misc]


def test_duplicate_allowed_directories_are_collapsed(root: Path) -> None:
    assert AllowedDirectories([root, root / ".", str(root)]).roots == (root,)


def test_describe_lists_every_allowed_directory(root: Path, outside: Path) -> None:
    assert AllowedDirectories([root, outside]).describe() == f"allowed directories: {root}, {outside}"
    assert "no allowed directories" in AllowedDirectories([]).describe()


def test_narrowed_by_root_slash_gives_exactly_the_configured_dirs(allowed: AllowedDirectories) -> None:
    assert allowed.narrowed([Path("/")]).roots == allowed.roots


def test_narrowed_by_sibling_directory_gives_nothing(allowed: AllowedDirectories, outside: Path) -> None:
    narrowed = allowed.narrowed([outside])
    assert narrowed.roots == ()
    with pytest.raises(AccessDenied):
        resolve_path(str(outside / "secret.txt"), narrowed)


def test_narrowed_by_subdirectory_restricts_to_it(allowed: AllowedDirectories, root: Path) -> None:
    narrowed = allowed.narrowed([root / "sub"])
    assert narrowed.roots == (root / "sub",)
    with pytest.raises(AccessDenied):
        resolve_path(str(root / "file.txt"), narrowed)


def test_narrowed_client_root_symlink_pointing_outside_gives_nothing(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "escape").symlink_to(outside)
    assert allowed.narrowed([root / "escape"]).roots == ()


def test_narrowed_accepts_file_uris_and_drops_missing_roots(allowed: AllowedDirectories, root: Path) -> None:
    narrowed = allowed.narrowed([(root / "sub").as_uri(), root / "does-not-exist"])
    assert narrowed.roots == (root / "sub",)


def test_narrowed_with_no_client_roots_allows_nothing(allowed: AllowedDirectories) -> None:
    assert allowed.narrowed([]).roots == ()


# --- resolve_path: ordinary use ----------------------------------------------------------------


def test_relative_paths_are_relative_to_the_first_allowed_dir(root: Path, outside: Path) -> None:
    allowed = AllowedDirectories([root, outside])
    assert resolve_path("file.txt", allowed) == root / "file.txt"
    assert resolve_path(".", allowed) == root


def test_absolute_path_inside_is_resolved(allowed: AllowedDirectories, root: Path) -> None:
    assert resolve_path(str(root / "sub" / "inner.txt"), allowed) == root / "sub" / "inner.txt"


def test_dotdot_that_stays_inside_is_fine(allowed: AllowedDirectories, root: Path) -> None:
    assert resolve_path("sub/../file.txt", allowed) == root / "file.txt"


def test_missing_file_is_not_found(allowed: AllowedDirectories) -> None:
    with pytest.raises(NotFound):
        resolve_path("missing.txt", allowed)


def test_missing_file_allowed_when_must_exist_is_false(allowed: AllowedDirectories, root: Path) -> None:
    assert resolve_path("new/dir/x.txt", allowed, must_exist=False) == root / "new" / "dir" / "x.txt"


def test_symlink_inside_pointing_inside_is_followed(allowed: AllowedDirectories, root: Path) -> None:
    (root / "alias").symlink_to(root / "sub")
    assert resolve_path("alias/inner.txt", allowed) == root / "sub" / "inner.txt"


def test_follow_symlinks_false_keeps_the_link_itself(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside / "secret.txt")
    assert resolve_path("out", allowed, follow_symlinks=False) == root / "out"


def test_root_itself_can_be_refused(allowed: AllowedDirectories, root: Path) -> None:
    with pytest.raises(AccessDenied, match="allowed directory itself"):
        resolve_path(str(root), allowed, allow_root_itself=False)


def test_empty_path_is_invalid(allowed: AllowedDirectories) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        resolve_path("", allowed)


def test_no_allowed_directories_refuses_everything(root: Path) -> None:
    with pytest.raises(AccessDenied):
        resolve_path(str(root / "file.txt"), AllowedDirectories([]))


def test_file_uri_is_turned_into_a_path(allowed: AllowedDirectories, root: Path) -> None:
    (root / "with space.txt").write_text("x")
    uri = (root / "with space.txt").as_uri()
    assert "%20" in uri
    assert resolve_path(uri, allowed) == root / "with space.txt"
    assert resolve_path(f"file://localhost{root}/file.txt", allowed) == root / "file.txt"


def test_file_uri_with_remote_host_is_refused() -> None:
    with pytest.raises(InvalidInput, match="remote host"):
        file_uri_to_path("file://evil.example/etc/passwd")


def test_file_uri_with_encoded_nul_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        resolve_path(f"file://{root}/file.txt%00.png", allowed)


def test_non_utf8_name_resolves_and_displays(allowed: AllowedDirectories, root: Path) -> None:
    raw = os.fsencode(root) + b"/caf\xe9.txt"
    with open(raw, "wb") as f:
        f.write(b"x")
    name = os.fsdecode(b"caf\xe9.txt")
    real = resolve_path(name, allowed)
    assert os.fsencode(real) == raw
    assert display_path(real).endswith('caf\\351.txt"')  # names.quote_path's form


def test_tilde_expands_to_home_when_home_is_allowed(
    allowed: AllowedDirectories, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(root / "sub"))
    assert resolve_path("~/inner.txt", allowed) == root / "sub" / "inner.txt"


def test_tilde_user_is_a_literal_relative_name(allowed: AllowedDirectories, root: Path) -> None:
    assert resolve_path("~root/.ssh/id_rsa", allowed, must_exist=False) == root / "~root" / ".ssh" / "id_rsa"


# --- use-time primitives -----------------------------------------------------------------------


def test_open_for_read_reads_a_regular_file(allowed: AllowedDirectories, root: Path) -> None:
    fd = open_for_read(resolve_path("file.txt", allowed), allowed)
    try:
        assert os.read(fd, 100) == b"hello\n"
        assert os.get_blocking(fd)  # O_NONBLOCK was cleared again
    finally:
        os.close(fd)


def test_open_for_read_refuses_a_directory(allowed: AllowedDirectories) -> None:
    with pytest.raises(InvalidInput, match="directory"):
        open_for_read(resolve_path("sub", allowed), allowed)


def test_open_for_read_refuses_paths_outside(allowed: AllowedDirectories, outside: Path) -> None:
    with pytest.raises(AccessDenied):
        open_for_read(outside / "secret.txt", allowed)


def test_open_for_read_refuses_a_symlink_swapped_in_after_resolution(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    real = resolve_path("file.txt", allowed)
    (root / "file.txt").unlink()
    (root / "file.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(AccessDenied, match="symbolic link"):
        open_for_read(real, allowed)


def test_open_for_read_refuses_a_parent_swapped_for_a_symlink(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (outside / "inner.txt").write_text("SECRET\n")
    real = resolve_path("sub/inner.txt", allowed)
    (root / "sub").rename(root / "sub-moved")
    (root / "sub").symlink_to(outside)
    with pytest.raises(AccessDenied, match="symbolic link"):
        open_for_read(real, allowed)


def test_fifo_open_does_not_hang_and_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    os.mkfifo(root / "pipe")
    outcome: list[BaseException | int] = []

    def attempt() -> None:
        try:
            outcome.append(open_for_read(resolve_path("pipe", allowed), allowed))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "opening a FIFO blocked"
    assert isinstance(outcome[0], InvalidInput)
    assert "FIFO" in str(outcome[0])


def test_dev_zero_like_devices_are_refused() -> None:
    allowed = AllowedDirectories(["/dev"])
    with pytest.raises(InvalidInput, match="character device"):
        open_for_read(resolve_path("/dev/zero", allowed), allowed)


def test_socket_is_refused(allowed: AllowedDirectories, root: Path, tmp_path: Path) -> None:
    import socket

    sock_path = root / "s.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        with pytest.raises(InvalidInput, match="socket"):
            open_for_read(resolve_path("s.sock", allowed), allowed)


def test_open_directory_create_makes_missing_components(allowed: AllowedDirectories, root: Path) -> None:
    open_directory(resolve_path("a/b/c", allowed, must_exist=False), allowed, create=True).close()
    assert (root / "a" / "b" / "c").is_dir()


def test_open_directory_create_refuses_symlinked_component(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    real = resolve_path("a/b", allowed, must_exist=False)
    (root / "a").symlink_to(outside)  # swapped in after the check
    with pytest.raises(AccessDenied):
        open_directory(real, allowed, create=True)
    assert not (outside / "b").exists()


def test_open_parent_gives_the_directory_and_name(allowed: AllowedDirectories, root: Path) -> None:
    directory, name = open_parent(resolve_path("sub/new.txt", allowed, must_exist=False), allowed)
    with directory, directory.scandir() as entries:
        assert name == "new.txt"
        assert [entry.name for entry in entries] == ["inner.txt"]


def test_open_parent_of_a_root_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    with pytest.raises(AccessDenied):
        open_parent(root, allowed)


def test_stat_within_does_not_follow_symlinks_out(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (outside / "big.bin").write_bytes(b"x" * 5000)
    (root / "out").symlink_to(outside / "big.bin")
    (root / "in").symlink_to(root / "file.txt")
    st_out = stat_within(root / "out", allowed)
    assert stat.S_ISLNK(st_out.st_mode)
    assert st_out.st_size != 5000
    st_in = stat_within(root / "in", allowed)
    assert stat.S_ISREG(st_in.st_mode) and st_in.st_size == len("hello\n")


def test_symlink_target_within_hides_outside_targets(
    allowed: AllowedDirectories, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside / "secret.txt")
    (root / "in").symlink_to("file.txt")
    assert symlink_target_within(root / "out", allowed) is None
    assert symlink_target_within(root / "in", allowed) == root / "file.txt"
    assert symlink_target_within(root / "file.txt", allowed) is None


def test_limits_are_the_linux_ones() -> None:
    assert (PATH_MAX, NAME_MAX) == (4096, 255)


def test_symlink_loop_is_an_error_not_a_hang(allowed: AllowedDirectories, root: Path) -> None:
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(BatteriesError):
        resolve_path("loop", allowed)


def test_open_path_for_read_takes_the_short_way_only_when_it_is_exact(
    allowed: AllowedDirectories, root: Path, tmp_path: Path
) -> None:
    real_root = Path(os.path.realpath(root))
    (tmp_path / "outside.txt").write_text("SECRET\n")
    (root / "in-link").symlink_to("sub/inner.txt")
    (root / "out-link").symlink_to(tmp_path / "outside.txt")
    (root / "dir-link").symlink_to("sub")
    for given, expected in [
        ("file.txt", real_root / "file.txt"),  # short way
        (str(real_root / "sub" / "inner.txt"), real_root / "sub" / "inner.txt"),  # short way
        ("in-link", real_root / "sub" / "inner.txt"),  # a symlink inside: resolved
        ("dir-link/inner.txt", real_root / "sub" / "inner.txt"),
        ("sub/../file.txt", real_root / "file.txt"),
        ("./sub//inner.txt", real_root / "sub" / "inner.txt"),
    ]:
        fd, real = open_path_for_read(given, allowed)
        try:
            assert real == expected, given
            assert os.read(fd, 100) in (b"hello\n", b"inner\n")
        finally:
            os.close(fd)
    for escape in ("out-link", "../outside.txt", str(tmp_path / "outside.txt")):
        with pytest.raises(AccessDenied, match="allowed directories"):
            open_path_for_read(escape, allowed)
    with pytest.raises(NotFound):
        open_path_for_read("missing.txt", allowed)
    with pytest.raises(InvalidInput, match="directory"):
        open_path_for_read("sub", allowed)


@pytest.mark.usefixtures("each_platform_family")
def test_an_allowed_directory_reached_through_a_system_link_works_in_both_spellings(tmp_path: Path) -> None:
    # macOS: /var and /tmp are links to /private/var and /private/tmp, and clients send either form.
    real = tmp_path / "private" / "var" / "folders" / "project"
    real.mkdir(parents=True)
    (real / "notes.txt").write_text("notes\n")
    (tmp_path / "var").symlink_to(tmp_path / "private" / "var")
    allowed = AllowedDirectories([tmp_path / "var" / "folders" / "project"])
    assert allowed.roots == (real,)
    for spelling in (tmp_path / "var" / "folders" / "project", real):
        assert resolve_path(str(spelling / "notes.txt"), allowed) == real / "notes.txt"
        fd, opened = open_path_for_read(str(spelling / "notes.txt"), allowed)
        os.close(fd)
        assert opened == real / "notes.txt"
        assert (
            resolve_path(str(spelling / "new" / "file.txt"), allowed, must_exist=False)
            == real / "new" / "file.txt"
        )
    with pytest.raises(AccessDenied):
        resolve_path(str(tmp_path / "var" / "folders" / "project-evil"), allowed, must_exist=False)
