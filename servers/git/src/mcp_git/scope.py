"""Which repositories a client may use: the operator's configuration, narrowed by client roots.

The operator names repositories (`--repository PATH`: exactly that working tree) and/or
directories (positional `DIR`s: any repository found inside). Containment is decided on real
paths: a `repo_path` whose real location is outside every allowed area is refused, including one
that gets there through a symbolic link; a directory inside a configured repository that is
itself another repository (a nested clone, a submodule) is refused too, because the operator
allowed the outer repository only. Repositories found inside allowed directories must also
keep their git directory inside the allowed areas (a `.git` file may point anywhere).

Client roots (handshake-era clients) narrow this: a configured repository stays when it lies
inside a root or contains one (a repository is the smallest unit git works on); a directory
stays when it lies inside a root, or shrinks to a root that lies inside it. Nothing widens.

Each repository has a key, its name in `git://` URIs and listings: a configured repository's
directory name (more of its path when two share one), or for a discovered one the allowed
directory's name followed by the relative path (`code/app`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_batteries.errors import AccessDenied, ConfigError, InvalidInput, NotFound
from mcp_batteries.safety import AllowedDirectories, quote_path, resolve_path, unquote_path

from mcp_git.repository import Repository, find_worktree_root, is_repository, locate

__all__ = ["SKIPPED_DIRECTORIES", "Area", "RepositoryScope"]

#: Not searched for repositories (they are huge and never hold a user's repositories).
SKIPPED_DIRECTORIES = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages"})
MAX_DISCOVERED = 2000


@dataclass(frozen=True)
class Area:
    """A place repositories may be: one configured repository, or a directory tree."""

    root: Path
    #: The configured path this area came from (differs from root once roots narrowed it).
    base: Path
    repository: bool

    def contains(self, real: Path) -> bool:
        return real == self.root or self.root in real.parents


def _real_directory(raw: str, what: str) -> Path:
    expanded = os.path.expanduser(raw)
    try:
        real = Path(os.path.realpath(expanded, strict=True))
    except OSError as exc:
        raise ConfigError(f"{what} {raw} does not exist ({exc.strerror})") from None
    if not real.is_dir():
        raise ConfigError(f"{what} {raw} is not a directory")
    return real


def _repository_keys(paths: Sequence[Path]) -> dict[Path, str]:
    """Short unique names: the directory name, with parents added where two collide."""
    keys: dict[Path, str] = {}
    depth = 1
    pending = list(paths)
    while pending:
        candidates = {p: "/".join(p.parts[-depth:]) for p in pending}
        counts: dict[str, int] = {}
        for key in candidates.values():
            counts[key] = counts.get(key, 0) + 1
        still = []
        for path, key in candidates.items():
            if counts[key] == 1 or depth >= len(path.parts) - 1:
                keys[path] = key if counts[key] == 1 else str(path)
            else:
                still.append(path)
        pending = still
        depth += 1
    return keys


class RepositoryScope:
    """The allowed areas for one client (immutable)."""

    def __init__(
        self,
        areas: Sequence[Area],
        keys: dict[Path, str],
        depth: int,
        unmatched: tuple[str, str] | None = None,
    ) -> None:
        self.areas = tuple(areas)
        self._keys = keys
        self.depth = depth
        #: When client roots narrowed this to nothing: (the client's roots, what was configured).
        self._unmatched = unmatched if not self.areas else None

    @classmethod
    def configure(
        cls, repositories: Iterable[str], directories: Iterable[str], depth: int
    ) -> RepositoryScope:
        """From the operator's settings; a configured repository that is not one is a ConfigError."""
        repo_paths: list[Path] = []
        for raw in repositories:
            real = _real_directory(raw, "repository")
            top = find_worktree_root(real, Path(real.anchor))
            if top is None:
                raise ConfigError(f"repository {raw} is not inside a git working tree (no .git found)")
            if top not in repo_paths:
                repo_paths.append(top)
        areas = [Area(p, p, True) for p in repo_paths]
        for raw in directories:
            real = _real_directory(raw, "directory")
            if all(a.root != real for a in areas):
                areas.append(Area(real, real, False))
        keys = _repository_keys(repo_paths)
        return cls(areas, keys, depth)

    # -- narrowing -----------------------------------------------------------------------------
    def narrowed(self, client_roots: Iterable[str | os.PathLike[str]]) -> RepositoryScope:
        """Roots that all lie outside leave nothing, and `describe()` then names them. (An empty
        or absent roots list narrows nothing: `mcp_batteries.live.RootsTracker` does not narrow then.)"""
        given = [os.fspath(raw) for raw in client_roots]
        roots: list[Path] = []
        for raw in given:
            try:
                real = Path(os.path.realpath(raw, strict=True))
            except OSError:
                continue
            if real.is_dir():
                roots.append(real)
        kept: list[Area] = []
        for area in self.areas:
            for root in roots:
                inside_root = area.root == root or root in area.root.parents
                if inside_root or (area.repository and area.contains(root)):
                    kept.append(area)
                    break
                if area.contains(root):
                    kept.append(Area(root, area.base, False))
        shown = ", ".join(quote_path(r) for r in given[:5]) + (
            f" and {len(given) - 5} more" if len(given) > 5 else ""
        )
        return RepositoryScope(list(dict.fromkeys(kept)), self._keys, self.depth, (shown, self.describe()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RepositoryScope) and other.areas == self.areas

    def __hash__(self) -> int:
        return hash(self.areas)

    # -- describing ----------------------------------------------------------------------------
    @property
    def roots(self) -> tuple[Path, ...]:
        return tuple(area.root for area in self.areas)

    def describe(self) -> str:
        repos = [quote_path(a.root) for a in self.areas if a.repository]
        dirs = [quote_path(a.root) for a in self.areas if not a.repository]
        parts = []
        if repos:
            parts.append("repositories: " + ", ".join(repos))
        if dirs:
            parts.append("directories (any repository inside): " + ", ".join(dirs))
        if not parts and self._unmatched is not None:
            client_roots, configured = self._unmatched
            return (
                f"nothing: none of this client's roots ({client_roots}) overlaps what this server "
                f"allows ({configured})"
            )
        return (
            "; ".join(parts) if parts else "nothing (no repository or directory is allowed for this client)"
        )

    def key_for(self, worktree: Path, area: Area | None = None) -> str:
        key = self._keys.get(worktree)
        if key is not None:
            return key
        area = area or self._area_for(worktree)
        base = area.base if area is not None else worktree
        if worktree == base:
            return base.name or str(base)
        return base.name + "/" + os.path.relpath(worktree, base)

    def _area_for(self, real: Path) -> Area | None:
        best: Area | None = None
        for area in self.areas:
            if area.contains(real) and (best is None or len(area.root.parts) > len(best.root.parts)):
                best = area
        return best

    # -- resolving -------------------------------------------------------------------------------
    def default(self) -> Repository:
        """The repository to use when a call names none: only when there is exactly one."""
        if len(self.areas) == 1 and (self.areas[0].repository or is_repository(self.areas[0].root)):
            return self._open(self.areas[0].root, self.areas[0])
        found = self.discover(limit=21)
        if len(found) == 1 and len(self.areas) == 1:
            return found[0]
        names = ", ".join(r.key for r in found[:20]) + (", ..." if len(found) > 20 else "")
        raise InvalidInput(
            "repo_path is required: this server has "
            + (f"{len(found)} repositories ({names})" if found else "no repository yet")
            + f" in {self.describe()}. Pass one of them (its path or its name) as repo_path."
        )

    def resolve(self, text: str | None) -> Repository:
        """The repository a `repo_path` argument names (its path, any path inside it, or its key)."""
        if text is None or text == "":
            return self.default()
        if not isinstance(text, str):
            raise InvalidInput("repo_path must be a string")
        raw = unquote_path(text)
        if "\x00" in raw:
            raise InvalidInput("repo_path contains a NUL byte")
        by_key = self._by_key(raw)
        if by_key is not None:
            return by_key
        if not self.areas:
            raise AccessDenied(
                f"repo_path {quote_path(raw)} is refused: this client may use {self.describe()}"
            )
        expanded = os.path.expanduser(raw) if raw == "~" or raw.startswith("~/") else raw
        absolute = expanded if os.path.isabs(expanded) else os.path.join(self.areas[0].root, expanded)
        real = Path(os.path.realpath(absolute))
        area = self._area_for(real)
        if area is None:
            lexical = Path(os.path.normpath(absolute))
            how = (
                "resolves through a symbolic link to a location outside"
                if self._area_for(lexical) is not None
                else "is outside"
            )
            raise AccessDenied(
                f"repo_path {quote_path(raw)} {how} what this server allows: {self.describe()}"
            )
        if not real.exists():
            raise NotFound(f"repo_path {quote_path(raw)} does not exist")
        if not real.is_dir():
            real = real.parent
        return self._open_containing(real, area, raw)

    def _by_key(self, raw: str) -> Repository | None:
        for worktree, key in self._keys.items():
            if key == raw:
                area = self._area_for(worktree)
                return self._open(worktree, area) if area is not None else None
        first, _, rest = raw.partition("/")
        for area in self.areas:
            if area.repository or area.base.name != first:
                continue
            candidate = area.base / rest if rest else area.base
            if area.contains(candidate) and is_repository(candidate) and not candidate.is_symlink():
                real = Path(os.path.realpath(candidate))
                if real == candidate:
                    return self._open_containing(real, area, raw)
        return None

    def _open_containing(self, real: Path, area: Area, raw: str) -> Repository:
        worktree = find_worktree_root(real, area.root)
        if area.repository:
            if worktree is None or _inside_dot_git(real, area.root):
                worktree = area.root
            if worktree != area.root:
                raise AccessDenied(
                    f"repo_path {quote_path(raw)} is another repository ({quote_path(worktree)}) inside "
                    f"the allowed repository {quote_path(area.root)}; only the configured repositories "
                    f"may be used: {self.describe()}"
                )
        elif worktree is None:
            raise NotFound(
                f"repo_path {quote_path(raw)} is not inside a git repository (no .git at or above it "
                f"within {quote_path(area.root)}); call git_list_repositories to see the repositories, "
                "or git_init to create one"
            )
        return self._open(worktree, area)

    def _open(self, worktree: Path, area: Area | None) -> Repository:
        repository = locate(worktree, self.key_for(worktree, area))
        if area is not None and not area.repository:
            for inner in (repository.git_dir, repository.common_dir):
                if self._area_for(inner) is None:
                    raise AccessDenied(
                        f"the repository {quote_path(worktree)} keeps its git directory at "
                        f"{quote_path(inner)}, outside what this server allows ({self.describe()})"
                    )
        return repository

    # -- discovering -----------------------------------------------------------------------------
    def discover(self, limit: int = MAX_DISCOVERED) -> list[Repository]:
        """Every repository in the allowed areas (directories searched `depth` levels deep)."""
        found: dict[Path, Area] = {}
        for area in self.areas:
            if area.repository:
                found.setdefault(area.root, area)
                continue
            for worktree in _walk_for_repositories(area.root, self.depth, limit):
                found.setdefault(worktree, area)
            if len(found) >= limit:
                break
        repositories = []
        for worktree, area in list(found.items())[:limit]:
            try:
                repositories.append(self._open(worktree, area))
            except (AccessDenied, NotFound, InvalidInput):
                continue  # a broken or escaping repository is simply not offered
        return sorted(repositories, key=lambda r: r.key)

    def init_target(self, text: str) -> Path:
        """Where git_init may create a repository: a real path inside an allowed directory."""
        directories = [a.root for a in self.areas if not a.repository]
        if not directories:
            raise AccessDenied(
                "git_init needs an allowed directory to create repositories in; this server allows "
                f"only {self.describe()} (start it with a DIR argument to allow one)"
            )
        allowed = AllowedDirectories(directories)
        raw = unquote_path(text)
        try:
            return resolve_path(raw, allowed, must_exist=False)
        except AccessDenied:
            raise AccessDenied(
                f"git_init refused: {quote_path(raw)} is outside the directories where repositories may "
                f"be created ({', '.join(quote_path(d) for d in directories)})"
            ) from None


def _inside_dot_git(real: Path, worktree: Path) -> bool:
    dot = worktree / ".git"
    return real == dot or dot in real.parents


def _walk_for_repositories(top: Path, depth: int, limit: int) -> list[Path]:
    found: list[Path] = []
    level = [top]
    for current_depth in range(depth + 1):
        following: list[Path] = []
        for directory in level:
            if is_repository(directory):
                found.append(directory)
                if len(found) >= limit:
                    return found
                continue  # repositories inside repositories are not offered by discovery
            if current_depth == depth:
                continue
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        if (
                            entry.is_dir(follow_symlinks=False)
                            and not entry.name.startswith(".")
                            and entry.name not in SKIPPED_DIRECTORIES
                        ):
                            following.append(Path(entry.path))
            except OSError:
                continue
        level = sorted(following)
    return found
