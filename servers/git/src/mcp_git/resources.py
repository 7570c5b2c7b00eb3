"""`git://` resources: what each URI names, reading it, listing them, completing their templates.

    git://{repo}/status                    the working tree's status (live: index, working tree)
    git://{repo}/log                       the latest commits on HEAD (live: HEAD and refs)
    git://{repo}/branches                  local and remote-tracking branches (live)
    git://{repo}/tags                      tags (live)
    git://{repo}/commit/{revision}         a commit as `git show` prints it (first page)
    git://{repo}/blob/{revision}/{+path}   a file at a revision

`{repo}` is the repository's key (`scope.RepositoryScope`); a key holding `/` and a revision
holding `/` (feature/x) are percent-encoded by clients that expand templates, and also accepted
unencoded. Paths that are not UTF-8 are percent-encoded bytes, as in `file://` URIs.
"""

from __future__ import annotations

import mimetypes
import os
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, LimitExceeded, NotFound

from mcp_git.checks import resolve_object, tree_path
from mcp_git.history import log, show_page
from mcp_git.refs import list_branches, list_tags
from mcp_git.repository import Repository
from mcp_git.runner import Git
from mcp_git.scope import RepositoryScope
from mcp_git.status import status_fingerprint, status_page
from mcp_git.uris import MAX_BLOB_BYTES, SCHEME, uri_for

__all__ = [
    "KINDS",
    "GitUri",
    "complete_paths",
    "complete_revisions",
    "parse_uri",
    "read",
    "repository_uris",
    "uri_for",
]

KINDS = ("status", "log", "branches", "tags", "commit", "blob")
Kind = Literal["status", "log", "branches", "tags", "commit", "blob"]
MAX_COMPLETIONS = 100
RESOURCE_LOG_COMMITS = 50


@dataclass(frozen=True)
class GitUri:
    repository: Repository
    kind: Kind
    revision: str | None = None
    path: str | None = None


def _decode(text: str) -> str:
    return unquote(text, encoding="utf-8", errors="surrogateescape")


def parse_uri(scope: RepositoryScope, uri: str) -> GitUri:
    """The repository and resource a `git://` URI names (in the client's scope)."""
    if not uri.startswith(SCHEME):
        raise InvalidInput(f"not a git:// URI: {uri!r}")
    body = uri[len(SCHEME) :].split("?", 1)[0].split("#", 1)[0]
    parts = body.split("/")
    last_error: BatteriesError | None = None
    for split in range(1, len(parts)):
        kind = parts[split]
        if kind not in KINDS:
            continue
        key = _decode("/".join(parts[:split]))
        try:
            repository = scope.resolve(key) if key else scope.default()
        except (NotFound, AccessDenied, InvalidInput) as exc:
            last_error = exc
            continue
        rest = parts[split + 1 :]
        if kind in ("status", "log", "branches", "tags"):
            if rest and any(rest):
                raise InvalidInput(f"{uri}: git://{{repo}}/{kind} takes nothing after it")
            return GitUri(repository, kind)  # type: ignore[arg-type]
        if kind == "commit":
            if not rest or not any(rest):
                raise InvalidInput(f"{uri}: name a revision, e.g. git://{{repo}}/commit/HEAD")
            return GitUri(repository, "commit", revision=_decode("/".join(rest)))
        if len(rest) < 2:
            raise InvalidInput(f"{uri}: expected git://{{repo}}/blob/{{revision}}/{{path}}")
        return GitUri(repository, "blob", revision=_decode(rest[0]), path=_decode("/".join(rest[1:])))
    if last_error is not None:
        raise last_error
    raise InvalidInput(
        f"{uri} is not a git resource; expected git://{{repo}}/"
        "status|log|branches|tags|commit/{revision}|blob/{revision}/{path}"
    )


def _blob_revision_and_path(git: Git, target: GitUri) -> tuple[str, str]:
    """Resolve `blob/REV/PATH`; an unencoded REV holding '/' (feature/x) is found by trying."""
    assert target.revision is not None and target.path is not None
    segments = [target.revision, *target.path.split("/")]
    for split in range(1, len(segments)):
        revision = "/".join(segments[:split])
        path = "/".join(segments[split:])
        try:
            return resolve_object(git, f"{revision}:{tree_path(path)}", "revision and path"), path
        except NotFound:
            continue
    raise NotFound(f"no file {target.path!r} at revision {target.revision!r} in {git.repository.key}")


def read(git: Git, target: GitUri) -> tuple[str | bytes, str]:
    """(content, MIME type) of a resource; text replies are the tools' texts."""
    if target.kind == "status":
        text, _ = status_page(git, 0, 500)
        return text, "text/plain"
    if target.kind == "log":
        text, _ = log(git, max_count=RESOURCE_LOG_COMMITS)
        return text, "text/plain"
    if target.kind == "branches":
        text, _ = list_branches(git, "all")
        return text, "text/plain"
    if target.kind == "tags":
        text, _ = list_tags(git)
        return text, "text/plain"
    if target.kind == "commit":
        assert target.revision is not None
        page = show_page(git, target.revision)
        footer = page.footer(
            lambda line: f"call git_show with revision={target.revision!r} and offset={line}"
        )
        return page.text + footer, "text/x-diff"
    oid, path = _blob_revision_and_path(git, target)
    kind = git.run(["cat-file", "-t", oid]).stdout.strip()
    if kind != b"blob":
        raise InvalidInput(f"{path!r} at {target.revision!r} is a {kind.decode()}, not a file")
    size = int(git.run(["cat-file", "-s", oid]).stdout.strip() or b"0")
    if size > MAX_BLOB_BYTES:
        raise LimitExceeded(
            f"{path!r} is {size} bytes; resources are capped at {MAX_BLOB_BYTES} bytes "
            "(page through it with git_show revision='REV:PATH' and offset)"
        )
    data = git.run(["cat-file", "blob", oid]).stdout
    mime = mimetypes.guess_type(os.fsdecode(path))[0]
    if b"\x00" not in data[:8000]:
        try:
            return data.decode("utf-8"), mime or "text/plain"
        except UnicodeDecodeError:
            pass
    return data, mime or "application/octet-stream"


def fingerprint(git: Git, target: GitUri) -> bytes:
    """What a resource shows, compactly: it changed exactly when this did."""
    if target.kind == "status":
        return status_fingerprint(git)
    if target.kind == "log":
        result = git.run(["rev-parse", "HEAD", "--symbolic-full-name", "HEAD"], check=False)
    elif target.kind == "branches":
        result = git.run(
            [
                "for-each-ref",
                "--format=%(HEAD)%(refname)%00%(objectname)%00%(upstream)%00%(symref)",
                "refs/heads/",
                "refs/remotes/",
            ],
            check=False,
        )
    elif target.kind == "tags":
        result = git.run(["for-each-ref", "--format=%(refname)%00%(objectname)", "refs/tags/"], check=False)
    elif target.kind == "commit":
        expression = f"{target.revision}^{{commit}}"
        result = git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", expression], check=False)
    else:
        try:
            return _blob_revision_and_path(git, target)[0].encode()
        except NotFound:
            return b"missing"
    return bytes([result.returncode & 0xFF]) + result.stdout


def repository_uris(git: Git) -> list[tuple[str, str, str]]:
    """(uri, name, title) of a repository's resources: its four views, then a commit per
    local branch and tag (so branches and tags appearing or vanishing change the list)."""
    repository = git.repository
    items = [
        (uri_for(repository, "status"), f"{repository.key} status", f"Status of {repository.key}"),
        (uri_for(repository, "log"), f"{repository.key} log", f"Latest commits of {repository.key}"),
        (uri_for(repository, "branches"), f"{repository.key} branches", f"Branches of {repository.key}"),
        (uri_for(repository, "tags"), f"{repository.key} tags", f"Tags of {repository.key}"),
    ]
    raw = git.run(["for-each-ref", "--format=%(refname)", "refs/heads/", "refs/tags/"]).stdout
    for ref in raw.split(b"\n"):
        if not ref:
            continue
        short = os.fsdecode(ref.split(b"/", 2)[2])
        kind = "branch" if ref.startswith(b"refs/heads/") else "tag"
        items.append(
            (uri_for(repository, "commit", short), f"{repository.key} {short}", f"Commit at {kind} {short}")
        )
    return items


def complete_revisions(git: Git, prefix: str) -> list[str]:
    raw = git.run(["for-each-ref", "--format=%(refname:short)", "refs/heads/", "refs/tags/", "refs/remotes/"])
    names = ["HEAD"] + [os.fsdecode(n) for n in raw.stdout.split(b"\n") if n]
    return [n for n in names if n.startswith(prefix)][:MAX_COMPLETIONS]


def complete_paths(git: Git, revision: str, prefix: str) -> list[str]:
    oid = resolve_object(git, revision or "HEAD", "revision", peel="tree")
    directory, _, partial = prefix.rpartition("/")
    args = ["ls-tree", "-z", oid]
    if directory:
        args += ["--", tree_path(directory) + "/"]
    listing = git.run(args, check=False).stdout
    values = []
    for item in listing.split(b"\x00"):
        if not item:
            continue
        meta, _, raw_path = item.partition(b"\t")
        path = os.fsdecode(raw_path)
        leaf = path.rsplit("/", 1)[-1]
        if leaf.startswith(partial):
            values.append(path + ("/" if meta.split(b" ")[1] == b"tree" else ""))
    return sorted(values)[:MAX_COMPLETIONS]
