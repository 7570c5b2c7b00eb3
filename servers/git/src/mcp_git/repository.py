"""A repository on disk: its working tree, its git directory, and how to find one from a path.

Everything here works on real paths (symlinks resolved) and reads only what git itself reads to
locate a repository (`.git` as a directory, or a `gitdir:` file for linked worktrees and
submodules, plus `commondir`). Nothing runs git.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mcp_batteries.errors import InvalidInput, NotFound
from mcp_batteries.safety import quote_path

__all__ = [
    "Repository",
    "find_worktree_root",
    "is_bare_repository",
    "is_repository",
    "locate",
    "transport_git_dir",
]


@dataclass(frozen=True)
class Repository:
    """A non-bare repository: all three paths are real, absolute paths."""

    worktree: Path
    git_dir: Path
    common_dir: Path
    #: Its name in `git://` URIs and in listings (see `scope.RepositoryScope`).
    key: str

    @property
    def shown(self) -> str:
        return quote_path(self.worktree)


def _dot_git(worktree: Path) -> Path | None:
    dot = worktree / ".git"
    try:
        if dot.is_dir() or dot.is_file():
            return dot
    except OSError:
        return None
    return None


def is_repository(directory: Path) -> bool:
    """Whether `directory` is the top of a working tree (holds `.git`)."""
    return _dot_git(directory) is not None


def is_bare_repository(directory: Path) -> bool:
    """Whether `directory` looks like a bare repository (HEAD, objects/ and refs/ at its top)."""
    try:
        return (
            (directory / "HEAD").is_file()
            and (directory / "objects").is_dir()
            and (directory / "refs").is_dir()
        )
    except OSError:
        return False


def find_worktree_root(path: Path, stop: Path) -> Path | None:
    """The nearest directory at or above `path` (not above `stop`) that holds `.git`."""
    current = path
    while True:
        if is_repository(current):
            return current
        if current == stop or current.parent == current:
            return None
        current = current.parent


def _read_gitdir_file(dot_git: Path) -> Path:
    try:
        content = dot_git.read_bytes()
    except OSError as exc:
        raise NotFound(f"cannot read {quote_path(dot_git)}: {exc.strerror}") from None
    if not content.startswith(b"gitdir:"):
        raise InvalidInput(f"{quote_path(dot_git)} is a file but not a 'gitdir:' link")
    target = os.fsdecode(content[len(b"gitdir:") :].strip())
    return Path(os.path.realpath(dot_git.parent / target))


def locate(worktree: Path, key: str) -> Repository:
    """The repository whose working tree is `worktree` (a real path holding `.git`)."""
    dot_git = _dot_git(worktree)
    if dot_git is None:
        raise NotFound(f"{quote_path(worktree)} is not a git repository (it has no .git)")
    git_dir = Path(os.path.realpath(dot_git)) if dot_git.is_dir() else _read_gitdir_file(dot_git)
    if not (git_dir / "HEAD").is_file():
        raise NotFound(f"{quote_path(worktree)}: {quote_path(git_dir)} is not a git directory (no HEAD)")
    return Repository(worktree=worktree, git_dir=git_dir, common_dir=_common_dir(git_dir), key=key)


def _common_dir(git_dir: Path) -> Path:
    commondir_file = git_dir / "commondir"
    if commondir_file.is_file():
        relative = os.fsdecode(commondir_file.read_bytes().strip())
        return Path(os.path.realpath(git_dir / relative))
    return git_dir


def _is_git_directory(directory: Path) -> bool:
    """git's own test: a HEAD, and objects/ and refs/ (in the common directory, when there is one)."""
    if not (directory / "HEAD").is_file():
        return False
    common = _common_dir(directory)
    return (common / "objects").is_dir() and (common / "refs").is_dir()


def transport_git_dir(path: str) -> tuple[Path, Path] | None:
    """The (git directory, common directory) that `git upload-pack PATH` or `git receive-pack
    PATH` enters, found as git's `enter_repo` finds it: PATH/.git, PATH, PATH.git/.git, PATH.git
    (trailing slashes removed), a `gitdir:` file followed. Real paths; None when none is a
    repository (git then refuses too; a regular file there may be a bundle)."""
    base = path.rstrip("/") or "/"
    for suffix in ("/.git", "", ".git/.git", ".git"):
        candidate = Path(base + suffix)
        try:
            if candidate.is_file():
                try:
                    git_dir = _read_gitdir_file(candidate)
                except (InvalidInput, NotFound):
                    return None  # not a gitdir link: git stops here too
            elif candidate.is_dir() and _is_git_directory(candidate):
                git_dir = Path(os.path.realpath(candidate))
            else:
                continue
        except OSError:
            continue
        return git_dir, _common_dir(git_dir)
    return None
