"""Path safety: the one place that decides whether a user-supplied path may be touched.

Two layers, because checking a name and then opening it by name is racy (TOCTOU):

1. `resolve_path` turns the user's string into a real absolute path (symlinks resolved, `..`
   collapsed by the kernel's rules) and refuses anything outside the allowed directories.
2. The `open_*` primitives re-check at use time: they walk the resolved path from its allowed
   root one component at a time with `O_NOFOLLOW`, so a symlink swapped in after step 1 makes
   the open fail (ELOOP/ENOTDIR) instead of being followed out of the tree.

Path rules (documented for tool descriptions):

* Absolute paths are taken as they are; relative paths are relative to the FIRST allowed
  directory (not the server's working directory).
* `file://` URIs (host empty or `localhost`) are accepted and turned into paths.
* `~` and `~/...` expand to the server process's home directory, like the reference server;
  containment is checked afterwards, so this only works when home is inside an allowed
  directory. `~user` is NOT expanded: it is an ordinary relative name (a file called `~user`
  in the first allowed directory), so probing other accounts' homes is impossible.
* Symlinks inside the allowed tree that point inside keep working; anything whose real
  location is outside is refused, including dangling links whose target would be outside.
* Non-UTF-8 names arrive as `surrogateescape` strings and work; `display_path` renders them
  in the one reversible form of `mcp_batteries._safety.names` (git-style quoting) for messages.

What this cannot see: hard links to outside files and bind mounts inside an allowed directory
look like ordinary in-tree files. Those are the operator's choice of what to allow.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

from mcp_batteries._safety.names import quote_path
from mcp_batteries.errors import (
    AccessDenied,
    BatteriesError,
    ConfigError,
    InvalidInput,
    LimitExceeded,
    NotFound,
    UpstreamError,
)

__all__ = [
    "NAME_MAX",
    "PATH_MAX",
    "AllowedDirectories",
    "display_path",
    "file_uri_to_path",
    "open_dir_fd",
    "open_for_read",
    "open_parent_dir",
    "open_path_for_read",
    "resolve_path",
    "stat_within",
    "symlink_target_within",
    "translate_os_error",
]

PATH_MAX: Final = 4096  # Linux limit for a whole path, in bytes
NAME_MAX: Final = 255  # Linux limit for one component, in bytes

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
# O_PATH (Linux) opens a directory for traversal only: no read permission needed, cheaper.
_TRAVERSE: Final = getattr(os, "O_PATH", os.O_RDONLY)
_WALK_FLAGS: Final = _TRAVERSE | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# NONBLOCK: opening a FIFO for reading must not wait for a writer. NOCTTY: a tty never
# becomes our controlling terminal. Both are harmless for regular files.
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _CLOEXEC


def display_path(path: str | os.PathLike[str]) -> str:
    """Render a path for messages in the one reversible form (`names.quote_path`): as it is when
    it is clean text, else git-style quoted, so undecodable bytes and control characters neither
    break the JSON encoder further up nor deceive the reader, and the form can be sent back."""
    return quote_path(path)


def _is_within(path: Path, root: Path) -> bool:
    # Component-wise: /data2 and /data-evil are NOT inside /data. Both are absolute and
    # normalised, so comparing strings at a separator boundary is exact (and far cheaper than
    # building `path.parents` on every check).
    p, r = str(path), str(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


def file_uri_to_path(uri: str) -> str:
    """`file:///a/b%20c` -> `/a/b c`. Only local file URIs; percent-escapes of non-UTF-8 bytes
    decode to surrogateescape strings so such names round-trip."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        raise InvalidInput(f"not a file:// URI: {uri!r}")
    if parts.netloc not in ("", "localhost"):
        raise InvalidInput(f"file URI names a remote host ({parts.netloc!r}); only local paths are allowed")
    if parts.query or parts.fragment:
        raise InvalidInput("file URI must not have a query or fragment (percent-encode '?' and '#')")
    path = unquote(parts.path, encoding="utf-8", errors="surrogateescape")
    if not path.startswith("/"):
        raise InvalidInput(f"file URI has no absolute path: {uri!r}")
    return path


class AllowedDirectories:
    """The directories the operator allowed, each stored as its realpath (resolved once here).

    Immutable. Order matters: relative user paths are taken relative to the first one.
    """

    __slots__ = ("_roots", "_unmatched")
    _roots: tuple[Path, ...]
    #: When client roots narrowed this to nothing: (the client's roots, the configured dirs).
    _unmatched: tuple[tuple[str, ...], tuple[Path, ...]] | None

    def __init__(self, dirs: Iterable[str | os.PathLike[str]]) -> None:
        roots: list[Path] = []
        for d in dirs:
            raw = os.fspath(d)
            if isinstance(raw, str) and raw.startswith("file:"):
                raw = file_uri_to_path(raw)
            try:
                real = Path(os.path.realpath(os.path.expanduser(raw), strict=True))
            except OSError as exc:
                raise ConfigError(
                    f"allowed directory {display_path(raw)} does not exist ({exc.strerror})"
                ) from None
            if not real.is_dir():
                raise ConfigError(f"allowed directory {display_path(raw)} is not a directory")
            if real not in roots:
                roots.append(real)
        object.__setattr__(self, "_roots", tuple(roots))
        object.__setattr__(self, "_unmatched", None)

    @classmethod
    def _from_real(
        cls, roots: Iterable[Path], unmatched: tuple[tuple[str, ...], tuple[Path, ...]] | None = None
    ) -> AllowedDirectories:
        # For already-resolved, de-duplicated roots (used by `narrowed`).
        self = cls.__new__(cls)
        object.__setattr__(self, "_roots", tuple(dict.fromkeys(roots)))
        object.__setattr__(self, "_unmatched", unmatched if not self._roots else None)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("AllowedDirectories is immutable")

    @property
    def roots(self) -> tuple[Path, ...]:
        return self._roots

    def __repr__(self) -> str:
        return f"AllowedDirectories({[str(r) for r in self._roots]!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AllowedDirectories) and other._roots == self._roots

    def __hash__(self) -> int:
        return hash(self._roots)

    def contains(self, real_path: Path) -> bool:
        """Whether an already-resolved absolute path is inside (or is) an allowed directory."""
        return self.root_for(real_path) is not None

    def root_for(self, real_path: Path) -> Path | None:
        """The deepest allowed directory containing `real_path` (walks from it are shortest)."""
        best: Path | None = None
        for root in self._roots:
            if _is_within(real_path, root) and (best is None or len(root.parts) > len(best.parts)):
                best = root
        return best

    def narrowed(self, client_roots: Iterable[str | os.PathLike[str]]) -> AllowedDirectories:
        """Intersect with the client's MCP roots. Never widens access.

        A configured dir is kept if it lies inside a client root; a client root is kept if it
        lies inside a configured dir. A client root of `/` therefore yields exactly the
        configured dirs, and a root outside them contributes nothing. Client roots that do not
        exist (or are not directories) are dropped. Roots that all lie outside yield nothing, and
        `describe()` then names them. (An empty or absent roots list narrows nothing: the caller,
        `mcp_batteries._live.roots.RootsTracker`, does not narrow then.)
        """
        given = [os.fspath(r) for r in client_roots]
        client_real: list[Path] = []
        for raw in given:
            try:
                if isinstance(raw, str) and raw.startswith("file:"):
                    raw = file_uri_to_path(raw)
                real = Path(os.path.realpath(raw, strict=True))
            except (OSError, BatteriesError):
                continue
            if real.is_dir():
                client_real.append(real)
        kept: list[Path] = []
        for configured in self._roots:
            for client in client_real:
                if _is_within(configured, client):
                    kept.append(configured)
                elif _is_within(client, configured):
                    kept.append(client)
        shown = tuple(display_path(r) for r in given)
        return AllowedDirectories._from_real(kept, (shown, self._roots))

    def describe(self) -> str:
        if not self._roots and self._unmatched is not None:
            client_roots, configured = self._unmatched
            shown = ", ".join(client_roots[:5]) + (
                f" and {len(client_roots) - 5} more" if len(client_roots) > 5 else ""
            )
            return (
                f"no allowed directories for this client: none of its roots ({shown}) overlaps the "
                "directories this server allows (" + ", ".join(display_path(r) for r in configured) + ")"
            )
        if not self._roots:
            return "no allowed directories are configured"
        return "allowed directories: " + ", ".join(display_path(r) for r in self._roots)


def _check_lengths(path: str) -> None:
    try:
        encoded = os.fsencode(path)
    except UnicodeEncodeError:
        raise InvalidInput("path contains characters that cannot be encoded (lone surrogates)") from None
    if len(encoded) > PATH_MAX:
        raise InvalidInput(f"path is {len(encoded)} bytes long; the limit is {PATH_MAX} bytes (PATH_MAX)")
    for component in encoded.split(b"/"):
        if len(component) > NAME_MAX:
            raise InvalidInput(
                f"path component {display_path(os.fsdecode(component[:40]))}... is "
                f"{len(component)} bytes long; the limit is {NAME_MAX} bytes per name (NAME_MAX)"
            )


def _denied(user_path: str, allowed: AllowedDirectories, why: str = "is outside") -> AccessDenied:
    if not allowed.roots:
        return AccessDenied(f"Access denied: {display_path(user_path)}: {allowed.describe()}")
    return AccessDenied(f"Access denied: {display_path(user_path)} {why} the {allowed.describe()}")


_PROC_FD: Final = "/proc/self/fd/"
_HAS_PROC_FD: Final = hasattr(os, "O_PATH") and os.path.isdir(_PROC_FD)


def _kernel_realpath(path: str) -> str | None:
    """The kernel's own resolution of an existing path, in two system calls: open it O_PATH
    (symlinks and `..` resolved exactly as any later open would) and read back the name of what
    was opened. None when that cannot answer (a missing component, no /proc): the caller then
    uses `os.path.realpath`, which also resolves paths that do not exist yet, one `lstat` per
    component."""
    try:
        fd = os.open(path, os.O_PATH | _CLOEXEC)
    except OSError:
        return None
    try:
        real = os.readlink(f"{_PROC_FD}{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    if not real.startswith("/") or real.endswith(" (deleted)"):
        return None  # not a plain path (removed meanwhile, or another namespace)
    return real


def _realpath(path: str, user_path: str) -> Path:
    if _HAS_PROC_FD:
        real = _kernel_realpath(path)
        if real is not None:
            return Path(real)
    # realpath's islink-then-readlink can race with a concurrent swap (EINVAL/ENOENT from
    # readlink); the swap is not our business, so retry a few times before giving up.
    for _ in range(3):
        try:
            return Path(os.path.realpath(path))
        except OSError as exc:
            last = exc
    raise UpstreamError(
        f"{display_path(user_path)} kept changing while being resolved ({last.strerror}); try again"
    ) from None


def _absolute(user_path: str, allowed: AllowedDirectories) -> str:
    """The checks every user path gets before any lookup, and its absolute (not yet resolved)
    form: relative paths are taken from the first allowed directory."""
    if not isinstance(user_path, str):
        raise InvalidInput(f"path must be a string, got {type(user_path).__name__}")
    if "\x00" in user_path:
        raise InvalidInput("path contains a NUL byte")
    path = user_path
    if path[:5].lower() == "file:":
        path = file_uri_to_path(path)
        if "\x00" in path:
            raise InvalidInput("path contains a NUL byte")
    if path == "":
        raise InvalidInput("path is empty; use '.' for the first allowed directory")
    _check_lengths(path)
    if not allowed.roots:
        raise _denied(user_path, allowed)
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser(path)  # `~user` deliberately stays literal (module docstring)
    if not os.path.isabs(path):
        path = os.path.join(allowed.roots[0], path)
    return path


def resolve_path(
    user_path: str,
    allowed: AllowedDirectories,
    *,
    must_exist: bool = True,
    allow_root_itself: bool = True,
    follow_symlinks: bool = True,
) -> Path:
    """Turn a user-supplied path into a real absolute path inside the allowed directories.

    Raises AccessDenied (naming the path and the allowed dirs) for anything outside,
    InvalidInput for NUL bytes / over-long paths / bad URIs, NotFound if `must_exist` and it
    does not exist. With `must_exist=False` the deepest existing ancestor is resolved (so a
    symlinked parent or a dangling link pointing out is still caught) and the rest appended.

    `follow_symlinks=False` resolves everything but the last component, for operations that act
    on a link itself (delete, move, info). `allow_root_itself=False` refuses an allowed
    directory itself (deleting or moving a root).
    """
    path = _absolute(user_path, allowed)

    # realpath applies the kernel's rule for `..` (after resolving symlinks), and for missing
    # components resolves the deepest existing ancestor and appends the rest lexically.
    trimmed = path.rstrip("/") or "/"
    head, tail = os.path.split(trimmed)
    if follow_symlinks or tail in ("", ".", ".."):
        real = _realpath(path, user_path)
    else:
        real = _realpath(head, user_path) / tail
    if len(os.fsencode(real)) > PATH_MAX:
        raise InvalidInput(f"resolved path is longer than {PATH_MAX} bytes (PATH_MAX)")

    root = allowed.root_for(real)
    if root is None:
        # Say *that* a symlink led out without revealing where it points.
        lexical = Path(os.path.normpath(path))
        if allowed.contains(lexical):
            raise _denied(user_path, allowed, "resolves through a symbolic link to a location outside")
        raise _denied(user_path, allowed)
    if not allow_root_itself and real == root:
        raise AccessDenied(
            f"Access denied: {display_path(user_path)} is an allowed directory itself; "
            "this operation is only permitted on entries inside it"
        )
    if must_exist:
        try:
            os.stat(real, follow_symlinks=follow_symlinks)
        except OSError as exc:
            raise translate_os_error(exc, user_path) from None
    return real


def translate_os_error(exc: OSError, path: str | os.PathLike[str]) -> BatteriesError:
    """Map an OSError to the error class the client should see, naming the path."""
    shown = display_path(path)
    code = exc.errno
    if code == errno.ENOENT:
        return NotFound(f"{shown} does not exist")
    if code in (errno.EACCES, errno.EPERM):
        return AccessDenied(f"Access denied by the operating system: {shown}")
    if code == errno.ELOOP:
        return AccessDenied(
            f"Access denied: {shown} is (or passes through) a symbolic link that cannot be followed"
        )
    if code == errno.ENOTDIR:
        return InvalidInput(f"{shown}: a component of the path is not a directory")
    if code == errno.EISDIR:
        return InvalidInput(f"{shown} is a directory")
    if code == errno.EEXIST:
        return InvalidInput(f"{shown} already exists")
    if code == errno.ENOTEMPTY:
        return InvalidInput(f"{shown} is a directory that is not empty")
    if code == errno.ENAMETOOLONG:
        return InvalidInput(
            f"{shown}: name too long (limits: {NAME_MAX} bytes per name, {PATH_MAX} per path)"
        )
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return LimitExceeded(f"{shown}: {exc.strerror} (disk full, quota or file size limit)")
    if code == errno.EROFS:
        return AccessDenied(f"{shown} is on a read-only file system")
    return UpstreamError(f"{shown}: {exc.strerror or exc}")


# --- use-time primitives ---------------------------------------------------------------------


def _split_under_root(path: Path, allowed: AllowedDirectories) -> tuple[Path, tuple[str, ...]]:
    root = allowed.root_for(path)
    if root is None or not path.is_absolute():
        raise _denied(str(path), allowed)
    parts = path.parts[len(root.parts) :]
    if any(p in ("", ".", "..") for p in parts):  # never true for a realpath; belt and braces
        raise _denied(str(path), allowed)
    return root, parts


def _open_component(dir_fd: int, name: str, flags: int, shown: Path, allowed: AllowedDirectories) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            # O_NOFOLLOW refused: was it a symlink (swapped in, or never resolved)?
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                st = None
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise AccessDenied(
                    f"Access denied: {display_path(shown)} contains a symbolic link at {display_path(name)} "
                    f"that appeared after the path was checked (refusing to follow; {allowed.describe()})"
                ) from None
        raise translate_os_error(exc, shown) from None


def _open_root(root: Path, flags: int) -> int:
    # The root is a realpath resolved at start-up; O_NOFOLLOW refuses it if it has since been
    # replaced by a symlink.
    try:
        return os.open(root, flags)
    except OSError as exc:
        raise translate_os_error(exc, root) from None


def _walk(
    root: Path, parts: tuple[str, ...], path: Path, allowed: AllowedDirectories, *, create: bool = False
) -> int:
    """Open `root/parts...` as a directory fd (read-capable), never following a symlink."""
    fd = _open_root(root, _WALK_FLAGS if parts else _DIR_FLAGS)
    try:
        for i, part in enumerate(parts):
            flags = _DIR_FLAGS if i == len(parts) - 1 else _WALK_FLAGS
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # already there (or a symlink/file: the O_NOFOLLOW open below decides)
                except OSError as exc:
                    raise translate_os_error(exc, path) from None
            nxt = _open_component(fd, part, flags, path, allowed)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_dir_fd(path: Path, allowed: AllowedDirectories, *, create: bool = False) -> int:
    """A read-capable directory fd for a resolved path (from `resolve_path`), opened
    component-wise from its allowed root with O_NOFOLLOW. `create=True` is `mkdir -p`:
    missing components are created as they are reached. The caller closes the fd."""
    root, parts = _split_under_root(path, allowed)
    return _walk(root, parts, path, allowed, create=create)


def open_parent_dir(path: Path, allowed: AllowedDirectories) -> tuple[int, str]:
    """`(dir_fd, name)` for a resolved path, so writers can use `dir_fd=` operations
    (`O_CREAT|O_EXCL|O_NOFOLLOW` opens, `os.rename(..., src_dir_fd=, dst_dir_fd=)`, unlink)
    without any path lookup above `name` being redirectable. The parent must exist."""
    root, parts = _split_under_root(path, allowed)
    if not parts:
        raise AccessDenied(f"Access denied: {display_path(path)} is an allowed directory itself")
    return _walk(root, parts[:-1], path, allowed), parts[-1]


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def open_for_read(path: Path, allowed: AllowedDirectories) -> int:
    """A blocking read fd on a resolved path that is re-verified at open time: component-wise
    O_NOFOLLOW walk, the file itself opened O_NOFOLLOW|O_NONBLOCK (a FIFO cannot hang us), and
    anything but a regular file (FIFO, socket, device, directory) refused. The caller closes."""
    dir_fd, name = open_parent_dir(path, allowed)
    try:
        # Cheap pre-check so devices are normally never opened at all (opening some has side
        # effects); the fstat after the open is the authoritative check.
        try:
            pre = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise translate_os_error(exc, path) from None
        if not stat.S_ISREG(pre.st_mode) and not stat.S_ISLNK(pre.st_mode):
            raise InvalidInput(
                f"{display_path(path)} is {_kind(pre.st_mode)}; only regular files can be read"
            )
        fd = _open_component(dir_fd, name, _FILE_FLAGS, path, allowed)
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidInput(f"{display_path(path)} is {_kind(st.st_mode)}; only regular files can be read")
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_path_for_read(user_path: str, allowed: AllowedDirectories) -> tuple[int, Path]:
    """`resolve_path` then `open_for_read` in one step: `(fd, real path)`, same checks, same errors.

    The common case costs no `realpath` (one `lstat` per component): a path that is already
    absolute-and-normal inside an allowed directory (no `.`, `..`, `//`, trailing `/`) is opened
    directly, component by component with O_NOFOLLOW, which succeeds only if no component is a
    symbolic link, so the path is its own real path. Anything else (a symlink on the way, a
    missing file, a `..`) takes the full `resolve_path` route and gets its exact answer."""
    path = _absolute(user_path, allowed)
    if os.path.normpath(path) == path:
        candidate = Path(path)
        root = allowed.root_for(candidate)
        if root is not None and candidate != root:
            try:
                return open_for_read(candidate, allowed), candidate
            except BatteriesError:
                pass  # decided below, with the message resolve_path gives
    real = resolve_path(user_path, allowed, must_exist=False)
    return open_for_read(real, allowed), real


def symlink_target_within(path: Path, allowed: AllowedDirectories) -> Path | None:
    """For a symlink: its fully resolved target if that is inside the allowed directories (and
    exists), else None. For a non-symlink: None."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return None
        target = Path(os.path.realpath(path, strict=True))
    except OSError:
        return None
    return target if allowed.contains(target) else None


def stat_within(path: Path, allowed: AllowedDirectories) -> os.stat_result:
    """`lstat`-based stat for listings: a symlink whose target is inside the allowed dirs
    reports its target's stat; one pointing outside (or dangling) reports the link itself, so
    sizes and types of outside files never leak."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) and (target := symlink_target_within(path, allowed)) is not None:
            return os.stat(target, follow_symlinks=False)
        return st
    except OSError as exc:
        raise translate_os_error(exc, path) from None
