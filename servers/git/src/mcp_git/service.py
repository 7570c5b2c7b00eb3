"""The server's repositories: the configured scope, one `Git` per repository, listings.

Everything here blocks (it runs git or walks directories): the server layer calls it through
`runner.off_loop`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp_batteries.errors import BatteriesError
from mcp_batteries.safety import current_directory_scope
from mcp_batteries.server import cursor_offset

from mcp_git.authors import parse_author
from mcp_git.config import GitSettings
from mcp_git.models import RepositoriesResult, RepositoryInfo
from mcp_git.repository import Repository
from mcp_git.resources import (
    MAX_COMPLETIONS,
    GitUri,
    complete_paths,
    complete_revisions,
    parse_uri,
    read,
    repository_uris,
    uri_for,
)
from mcp_git.runner import Git, Policy
from mcp_git.scope import RepositoryScope

__all__ = ["GitService"]

T = TypeVar("T")
RESOURCES_PER_PAGE = 200


class GitService:
    def __init__(self, settings: GitSettings) -> None:
        directories = settings.directories
        if not directories and not settings.repository:
            # The current directory, unless a client or service manager chose a wide one
            # (mcp_batteries.safety.current_directory_scope).
            directories = [current_directory_scope("mcp-batteries-git")]
        self.scope = RepositoryScope.configure(settings.repository, directories, settings.discover_depth)
        self.policy = Policy(
            timeout=settings.timeout,
            network_timeout=settings.network_timeout,
            author=parse_author(settings.author) if settings.author else None,
            read_only=settings.read_only,
            areas=self.scope.roots,
        )
        self._gits: dict[Path, Git] = {}
        self._lock = threading.Lock()

    def git(self, repository: Repository) -> Git:
        with self._lock:
            found = self._gits.get(repository.worktree)
            if found is None or found.repository != repository:
                found = self._gits[repository.worktree] = Git(repository, self.policy)
            return found

    def open(self, scope: RepositoryScope, repo_path: str | None) -> Git:
        return self.git(scope.resolve(repo_path))

    def call(
        self, scope: RepositoryScope, repo_path: str | None, fn: Callable[..., T], *args: Any, **kwargs: Any
    ) -> T:
        """`fn(git, *args, **kwargs)` for the repository `repo_path` names (in `scope`)."""
        return fn(self.open(scope, repo_path), *args, **kwargs)

    # -- listings --------------------------------------------------------------------------------
    def list_repositories(
        self, scope: RepositoryScope, offset: int, limit: int
    ) -> tuple[str, RepositoriesResult]:
        found = scope.discover()
        page = found[offset : offset + limit]
        next_offset = offset + len(page) if offset + len(page) < len(found) else None
        hint = (
            f"more repositories: call git_list_repositories with offset={next_offset}"
            if next_offset
            else None
        )
        infos = [RepositoryInfo(name=r.key, path=r.shown, uri=uri_for(r, "status")) for r in page]
        lines = [f"{i.name}\t{i.path}" for i in infos] or ["No repositories found."]
        lines.append(f"(allowed: {scope.describe()})")
        if hint:
            lines.append(f"[{hint}]")
        return "\n".join(lines), RepositoriesResult(
            repositories=infos,
            allowed=scope.describe(),
            offset=offset,
            next_offset=next_offset,
            next_page=hint,
        )

    def resource_page(
        self, scope: RepositoryScope, cursor: str | None
    ) -> tuple[list[tuple[str, str, str]], str | None]:
        """One page of (uri, name, title) over every repository's resources."""
        start = cursor_offset(cursor)
        items: list[tuple[str, str, str]] = []
        for repository in scope.discover():
            try:
                items += repository_uris(self.git(repository))
            except BatteriesError:
                continue  # a repository the server refuses (hardening) offers no resources
            if len(items) > start + RESOURCES_PER_PAGE:
                break
        page = items[start : start + RESOURCES_PER_PAGE]
        more = len(items) > start + RESOURCES_PER_PAGE
        return page, str(start + RESOURCES_PER_PAGE) if more else None

    def listing_fingerprint(self, scope: RepositoryScope) -> bytes:
        """What resources/list shows, compactly: each repository and its branch and tag names."""
        parts: list[bytes] = []
        for repository in scope.discover():
            try:
                refs = (
                    self.git(repository)
                    .run(["for-each-ref", "--format=%(refname)", "refs/heads/", "refs/tags/"], check=False)
                    .stdout
                )
            except BatteriesError as exc:
                refs = str(exc).encode()
            parts += [repository.key.encode("utf-8", "surrogateescape"), refs]
        return b"\x00".join(parts)

    def target(self, scope: RepositoryScope, uri: str) -> GitUri:
        return parse_uri(scope, uri)

    def read_resource(self, scope: RepositoryScope, uri: str) -> tuple[str | bytes, str]:
        target = parse_uri(scope, uri)
        return read(self.git(target.repository), target)

    def complete(self, scope: RepositoryScope, argument: str, value: str, known: dict[str, str]) -> list[str]:
        """Completion values for a template variable or prompt argument (repo, revision, path)."""
        if argument == "repo":
            return [r.key for r in scope.discover() if r.key.startswith(value)][:MAX_COMPLETIONS]
        try:
            git = self.open(scope, known.get("repo"))
            if argument in ("revision", "target"):
                return complete_revisions(git, value)
            if argument == "path":
                return complete_paths(git, known.get("revision") or "HEAD", value)
        except BatteriesError:
            return []
        return []

    def areas(self, scope: RepositoryScope) -> list[Path]:
        """Where local remotes may be: every allowed repository and directory."""
        return list(scope.roots)
