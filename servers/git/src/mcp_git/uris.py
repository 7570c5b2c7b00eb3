"""`git://` URIs: how a repository's resources are named (parsing and reading are in `resources`)."""

from __future__ import annotations

from urllib.parse import quote

from mcp_git.repository import Repository

__all__ = ["MAX_BLOB_BYTES", "SCHEME", "uri_for"]

SCHEME = "git://"
#: A `blob` resource holds at most this many bytes (bigger files are paged with git_show).
MAX_BLOB_BYTES = 10 * 1024 * 1024


def segment(text: str) -> str:
    """One path segment of a URI: every byte that is not unreserved percent-encoded."""
    return quote(text.encode("utf-8", "surrogateescape"), safe="")


def uri_for(repository: Repository, kind: str, revision: str | None = None, path: str | None = None) -> str:
    uri = f"{SCHEME}{segment(repository.key)}/{kind}"
    if revision is not None:
        uri += "/" + segment(revision)
    if path is not None:
        uri += "/" + quote(path.encode("utf-8", "surrogateescape"), safe="/")
    return uri
