"""Path safety: the one place that decides whether a user-supplied path may be touched.

Two layers, because checking a name and then opening it by name is racy (TOCTOU):

1. `resolve_path` turns the user's string into a real absolute path (symlinks resolved, `..`
   collapsed by the kernel's rules) and refuses anything outside the allowed directories.
2. The `open_*` primitives re-check at use time: they walk the resolved path from its allowed
   root one component at a time without following a link (`mcp_batteries._platform.files`: on
   POSIX directory descriptors and `O_NOFOLLOW`, so a symlink swapped in after step 1 makes the
   open fail (ELOOP/ENOTDIR) instead of being followed out of the tree; on Windows each step is
   proven by resolving it again and by identity, with the weaker guarantee docs/platforms.md states).

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
* A path that names an allowed directory in another spelling (another case on a case-insensitive
  volume, another Unicode normalisation, `/var` for macOS's `/private/var` is already resolved) is
  inside it: containment falls back to the directories' identity (device, inode) when the text
  differs, and the path is then spelled from the allowed directory. A differently spelled path
  that leads elsewhere is still outside.
* On Windows a path is first held to Windows' own rules (`_platform/windows.py`: device names,
  alternate data streams, trailing dots and spaces, the device namespace, drive-relative paths)
  and a network (UNC) path is refused unless it is lexically inside an allowed directory, before
  anything touches the network.

What this cannot see: hard links to outside files and bind mounts inside an allowed directory
look like ordinary in-tree files. Those are the operator's choice of what to allow.
"""

from __future__ import annotations

import errno
import ntpath
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

from mcp_batteries._platform import files, windows
from mcp_batteries._platform.files import Directory, Identity, identity_of, is_link_like
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
    "Directory",
    "display_path",
    "file_uri_to_path",
    "is_link_like",
    "open_directory",
    "open_for_read",
    "open_parent",
    "open_path_for_read",
    "reopen_directory",
    "reopen_file",
    "resolve_path",
    "stat_within",
    "symlink_target_within",
    "translate_os_error",
]

PATH_MAX: Final = 4096  # Linux limit for a whole path, in bytes
NAME_MAX: Final = 255  # Linux limit for one component, in bytes

#: Paths are Windows paths (drive letters, backslashes, device names): Windows' rules apply.
_WINDOWS_PATHS: Final = os.path is ntpath


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
    return p == r or p.startswith(r.rstrip(os.sep) + os.sep)


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
    if _WINDOWS_PATHS:
        on_a_drive = windows.file_uri_path(path)
        if on_a_drive is None:
            raise InvalidInput(f"file URI names no drive (file:///C:/...): {uri!r}")
        return on_a_drive
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
            # As the volume spells it (macOS: the stored case), so clients' paths match as text.
            real = Path(files.current().canonical_directory(str(real)))
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
    for component in (encoded.replace(b"\\", b"/") if _WINDOWS_PATHS else encoded).split(b"/"):
        if len(component) > NAME_MAX:
            raise InvalidInput(
                f"path component {display_path(os.fsdecode(component[:40]))}... is "
                f"{len(component)} bytes long; the limit is {NAME_MAX} bytes per name (NAME_MAX)"
            )


def _denied(user_path: str, allowed: AllowedDirectories, why: str = "is outside") -> AccessDenied:
    if not allowed.roots:
        return AccessDenied(f"Access denied: {display_path(user_path)}: {allowed.describe()}")
    return AccessDenied(f"Access denied: {display_path(user_path)} {why} the {allowed.describe()}")


def _realpath(path: str, user_path: str) -> Path:
    # The OS's own resolution in one step where it can tell (Linux: two system calls); else
    # `os.path.realpath`, which also resolves paths that do not exist yet, one `lstat` per
    # component (Windows: the final path of a handle).
    real = files.current().final_path(path)
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
    if _WINDOWS_PATHS:
        path = _windows_checked(path, user_path, allowed)
    _check_lengths(path)
    if not allowed.roots:
        raise _denied(user_path, allowed)
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser(path)  # `~user` deliberately stays literal (module docstring)
    if not os.path.isabs(path):
        path = os.path.join(allowed.roots[0], path)
    return path


def _windows_checked(path: str, user_path: str, allowed: AllowedDirectories) -> str:
    """Windows' own rules (`_platform/windows.py`), before any file-system call sees the path."""
    why = windows.refusal(path)
    if why is not None:
        raise InvalidInput(f"{display_path(user_path)}: refused because {why}")
    path = windows.normalise(path)
    if windows.is_network(path) and not any(windows.is_within(path, str(root)) for root in allowed.roots):
        # Resolving \\host\share would make Windows connect to that host and offer credentials.
        raise _denied(user_path, allowed, "is a network (UNC) path outside")
    return path


def _respelled_under_a_root(real: Path, allowed: AllowedDirectories) -> Path | None:
    """`real` spelled from the allowed directory it is inside by identity, or None.

    `real` (resolved: no link on the way, except a last component left unresolved on purpose, which
    `lstat` describes as itself) whose text does not start with an allowed directory may still be
    inside one: another case on a case-insensitive volume (APFS, NTFS, ext4 `casefold`), another
    Unicode normalisation, an 8.3 short name. Its nearest ancestor that *is* an allowed directory
    (same device and inode) says so. Only reached for paths the text comparison refused."""
    roots: dict[tuple[int, int], Path] = {}
    for root in allowed.roots:
        try:
            roots.setdefault(identity_of(os.stat(root)), root)
        except OSError:
            continue
    below: list[str] = []
    current = real
    while True:
        try:
            st = os.lstat(current)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            found = roots.get(identity_of(st))
            if found is not None:
                return found.joinpath(*reversed(below))
        parent = current.parent
        if parent == current:
            return None
        below.append(current.name)
        current = parent


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
    if root is None and (respelled := _respelled_under_a_root(real, allowed)) is not None:
        real, root = respelled, allowed.root_for(respelled)
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


def _symlink_appeared(directory: Directory, name: str, shown: Path, allowed: AllowedDirectories) -> None:
    """After an open refused with ELOOP/ENOTDIR/EMLINK: say so if a symlink sits at `name` now."""
    try:
        st = directory.lstat(name)
    except OSError:
        return
    if is_link_like(st):
        raise AccessDenied(
            f"Access denied: {display_path(shown)} contains a symbolic link at {display_path(name)} "
            f"that appeared after the path was checked (refusing to follow; {allowed.describe()})"
        ) from None


def _open_dir_in(
    directory: Directory, name: str, traverse_only: bool, shown: Path, allowed: AllowedDirectories
) -> Directory:
    try:
        return directory.open_dir(name, traverse_only=traverse_only)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            _symlink_appeared(directory, name, shown, allowed)
        raise translate_os_error(exc, shown) from None


def _walk(
    root: Path, parts: tuple[str, ...], path: Path, allowed: AllowedDirectories, *, create: bool = False
) -> Directory:
    """Open `root/parts...` as a directory (read-capable), never following a symlink."""
    try:
        # The root is a realpath resolved at start-up; it is refused if it has since been replaced
        # by a symlink.
        directory = files.current().open_root(str(root), traverse_only=bool(parts))
    except OSError as exc:
        raise translate_os_error(exc, root) from None
    try:
        last = len(parts) - 1
        for i, part in enumerate(parts):
            if create:
                try:
                    directory.mkdir(part)
                except FileExistsError:
                    pass  # already there (or a symlink/file: the no-follow open below decides)
                except OSError as exc:
                    raise translate_os_error(exc, path) from None
            nxt = _open_dir_in(directory, part, i != last, path, allowed)
            directory.close()
            directory = nxt
        return directory
    except BaseException:
        directory.close()
        raise


def open_directory(path: Path, allowed: AllowedDirectories, *, create: bool = False) -> Directory:
    """An open, listable `Directory` for a resolved path (from `resolve_path`), opened component by
    component from its allowed root without following a link. `create=True` is `mkdir -p`:
    missing components are created as they are reached. Close it (or use it in `with`)."""
    root, parts = _split_under_root(path, allowed)
    return _walk(root, parts, path, allowed, create=create)


def open_parent(path: Path, allowed: AllowedDirectories) -> tuple[Directory, str]:
    """`(directory, name)` for a resolved path, so writers act on `name` in it (create, rename,
    unlink) without any lookup above `name` being redirectable. The parent must exist."""
    root, parts = _split_under_root(path, allowed)
    if not parts:
        raise AccessDenied(f"Access denied: {display_path(path)} is an allowed directory itself")
    return _walk(root, parts[:-1], path, allowed), parts[-1]


def reopen_directory(path: str, identity: Identity) -> Directory | None:
    """The directory at `path` (found by a walk that started at `open_directory`) if it is still
    the one listed (`identity`: device, inode) and not a link; None if something else is there now
    (a parent swapped for a link since the listing). OSError if it cannot be opened."""
    return files.current().reopen_directory(path, identity)


def reopen_file(path: str, identity: Identity) -> int | None:
    """A read fd on the listed regular file at `path` if it is still that file, else None.
    OSError if it cannot be opened (gone, unreadable, a link now)."""
    return files.current().reopen_file(path, identity)


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
    no-follow walk, the file itself opened without following a link and without waiting on a
    FIFO, and anything but a regular file (FIFO, socket, device, directory) refused. The caller
    closes it."""
    directory, name = open_parent(path, allowed)
    try:
        # Cheap pre-check so devices are normally never opened at all (opening some has side
        # effects); the fstat after the open is the authoritative check.
        try:
            pre = directory.lstat(name)
        except OSError as exc:
            raise translate_os_error(exc, path) from None
        if not stat.S_ISREG(pre.st_mode) and not stat.S_ISLNK(pre.st_mode):
            raise InvalidInput(
                f"{display_path(path)} is {_kind(pre.st_mode)}; only regular files can be read"
            )
        try:
            fd = directory.open_file(name)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                _symlink_appeared(directory, name, path, allowed)
            raise translate_os_error(exc, path) from None
    finally:
        directory.close()
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidInput(f"{display_path(path)} is {_kind(st.st_mode)}; only regular files can be read")
        files.current().make_blocking(fd)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_path_for_read(user_path: str, allowed: AllowedDirectories) -> tuple[int, Path]:
    """`resolve_path` then `open_for_read` in one step: `(fd, real path)`, same checks, same errors.

    The common case costs no `realpath` (one `lstat` per component): a path that is already
    absolute-and-normal inside an allowed directory (no `.`, `..`, `//`, trailing `/`) is opened
    directly, component by component without following a link, which succeeds only if no component
    is a symbolic link, so the path is its own real path. Anything else (a symlink on the way, a
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
