"""Every value that reaches git is checked here first: names, revisions, paths, remote URLs.

The rule: a value is either a name validated by git's own rules (ref names as
`git check-ref-format` defines them), a revision resolved to an object id with
`git rev-parse --verify --end-of-options` (so nothing in it is ever read as an option), or a
path placed after `--` (with literal pathspecs) once it is known to stay inside the working
tree. Values starting with `-` are refused outright with a clear message: no git command ever
sees one where an option could be.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote_to_bytes

from mcp_batteries.errors import AccessDenied, InvalidInput, NotFound
from mcp_batteries.safety import (
    AllowedDirectories,
    quote_name,
    quote_path,
    resolve_path,
    unquote_name,
    unquote_path,
)

from mcp_git.hardening import ConfigEntry, expand_home, split_key
from mcp_git.repository import Repository
from mcp_git.runner import Git

__all__ = [
    "branch_name",
    "check_remote_url",
    "ref_name_problem",
    "remote_name",
    "resolve_commit",
    "resolve_object",
    "revision_text",
    "rewritten_urls",
    "tag_name",
    "tree_path",
    "worktree_path",
]

MAX_ARGUMENT = 4096
_FORBIDDEN_IN_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
_OBJECT_ID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def ref_name_problem(name: str) -> str | None:
    """Why `name` is not a valid ref name by git's rules (check-ref-format), or None."""
    if not name:
        return "it is empty"
    if name.startswith("-"):
        return "it starts with '-' (it would be read as an option)"
    if name == "@":
        return "'@' alone is not allowed"
    if name.startswith("/") or name.endswith("/"):
        return "it starts or ends with '/'"
    if name.endswith("."):
        return "it ends with '.'"
    if "//" in name:
        return "it contains '//'"
    if ".." in name:
        return "it contains '..'"
    if "@{" in name:
        return "it contains '@{'"
    bad = _FORBIDDEN_IN_REF.search(name)
    if bad is not None:
        shown = {" ": "a space", "\x7f": "DEL"}.get(bad.group(), repr(bad.group()))
        return f"it contains {shown} (not allowed: spaces, control characters, ~ ^ : ? * [ \\)"
    for component in name.split("/"):
        if component.startswith("."):
            return "a component starts with '.'"
        if component.endswith(".lock"):
            return "a component ends with '.lock'"
    return None


def _checked_name(text: str, what: str) -> str:
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a string")
    name = unquote_name(text)
    problem = ref_name_problem(name)
    if problem is not None:
        raise InvalidInput(f"invalid {what} {quote_name(name)}: {problem}")
    if len(os.fsencode(name)) > 1024:
        raise InvalidInput(f"{what} is longer than 1024 bytes")
    return name


def branch_name(text: str, what: str = "branch name") -> str:
    """A branch name as git accepts it (`git check-ref-format --branch`), not `HEAD`."""
    name = _checked_name(text, what)
    if name == "HEAD":
        raise InvalidInput(f"invalid {what} 'HEAD': it names the current commit, not a branch")
    return name


def tag_name(text: str) -> str:
    return _checked_name(text, "tag name")


def remote_name(text: str) -> str:
    name = _checked_name(text, "remote name")
    if "/" in name:
        raise InvalidInput(f"invalid remote name {quote_name(name)}: it contains '/'")
    return name


def revision_text(text: str, what: str = "revision") -> str:
    """A revision expression as typed (branch, tag, sha, HEAD~2, v1.0^{tree}, rev:path), unquoted.

    Never passed to git as it is: `resolve_object` resolves it first.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"{what} is empty; give a branch, tag or commit (e.g. HEAD, main, v1.0, a1b2c3d)")
    revision = unquote_name(text.strip()) if text.strip().startswith('"') else text.strip()
    if revision.startswith("-"):
        raise InvalidInput(
            f"invalid {what} {quote_name(revision)}: it starts with '-' (it would be read as an option)"
        )
    if "\x00" in revision or "\n" in revision:
        raise InvalidInput(f"invalid {what}: it contains a NUL byte or a line break")
    if len(revision) > MAX_ARGUMENT:
        raise InvalidInput(f"{what} is longer than {MAX_ARGUMENT} characters")
    return revision


def resolve_object(git: Git, text: str, what: str = "revision", peel: str = "") -> str:
    """The object id a revision names (peeled with `^{commit}`, `^{tree}`... when `peel` says)."""
    revision = revision_text(text, what)
    if _OBJECT_ID.match(revision) and not peel:
        expression = revision
    else:
        expression = revision + (f"^{{{peel}}}" if peel else "")
    result = git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", expression], check=False)
    oid = result.stdout.strip().decode("ascii", "replace")
    if result.returncode != 0 or not _OBJECT_ID.match(oid):
        kind = f" to a {peel}" if peel else ""
        raise NotFound(
            f"{what} {quote_name(revision)} does not resolve{kind} in {git.repository.key} "
            "(use a branch or tag name from git_branch/git_tag, a commit id, or HEAD~N)"
        )
    return oid


def resolve_commit(git: Git, text: str, what: str = "revision") -> str:
    return resolve_object(git, text, what, peel="commit")


def _inside_git_dir(real: Path, repository: Repository) -> bool:
    dot_git = repository.worktree / ".git"
    return real == dot_git or dot_git in real.parents


def worktree_path(repository: Repository, text: str, *, what: str = "path") -> str:
    """A path inside the working tree, relative to its top, for git after `--`.

    Accepts a path relative to the top of the repository or an absolute one inside it, in the
    quoted form listings show. Refuses anything whose real location (symbolic links in its
    directories resolved) is outside the working tree or inside `.git`. The last component is
    not followed: staging or restoring a symbolic link acts on the link itself.
    """
    if not isinstance(text, str) or not text:
        raise InvalidInput(f"{what} is empty; use '.' for the whole working tree")
    raw = unquote_path(text)
    if "\x00" in raw:
        raise InvalidInput(f"{what} contains a NUL byte")
    top = AllowedDirectories([repository.worktree])
    candidate = raw if os.path.isabs(raw) else os.path.join(repository.worktree, raw)
    try:
        real = resolve_path(candidate, top, must_exist=False, follow_symlinks=False)
    except AccessDenied:
        raise AccessDenied(
            f"{what} {quote_path(raw)} is outside the repository {repository.shown} "
            "(paths must stay inside its working tree, also through symbolic links)"
        ) from None
    if _inside_git_dir(real, repository):
        raise AccessDenied(f"{what} {quote_path(raw)} is inside .git; only working-tree files are allowed")
    relative = os.path.relpath(real, repository.worktree)
    return "." if relative == "." else relative


def tree_path(text: str, *, what: str = "path") -> str:
    """A path inside a commit's tree (no filesystem involved): relative, normalised, no `..`."""
    if not isinstance(text, str) or not text:
        raise InvalidInput(f"{what} is empty")
    raw = unquote_path(text)
    if "\x00" in raw:
        raise InvalidInput(f"{what} contains a NUL byte")
    normal = posixpath.normpath(raw.lstrip("/")) if not raw.startswith("/") else None
    if normal is None:
        raise InvalidInput(f"{what} {quote_path(raw)} must be relative to the top of the repository")
    if normal == ".." or normal.startswith("../"):
        raise AccessDenied(f"{what} {quote_path(raw)} leaves the repository")
    if normal == ".git" or normal.startswith(".git/"):
        raise AccessDenied(f"{what} {quote_path(raw)} is inside .git")
    return normal


# -- remote URLs ---------------------------------------------------------------------------------

_HELPER_SYNTAX = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
_NETWORK_SCHEMES = frozenset({"https", "http", "ssh", "git", "git+ssh", "ssh+git"})
_SCP_LIKE = re.compile(r"^(?:[^@/:]+@)?(?:\[[^\]]+\]|[^/:]+):(?!//)")


def rewritten_urls(url: str, entries: Iterable[ConfigEntry]) -> list[str]:
    """`url` and what git may rewrite it to: `url.<base>.insteadOf` (fetch and push) and
    `url.<base>.pushInsteadOf` (push), each as git picks it (the longest matching prefix; the
    first one among equals), from every configuration entry (inactive includes too)."""
    candidates = [url]
    for variable in ("insteadof", "pushinsteadof"):
        best: tuple[str, str] | None = None
        for entry in entries:
            section, base, name = split_key(entry.key)
            prefix = entry.value
            if section != "url" or base is None or name != variable or prefix is None:
                continue
            if url.startswith(prefix) and (best is None or len(prefix) > len(best[1])):
                best = (base, prefix)
        if best is not None:
            candidates.append(best[0] + url[len(best[1]) :])
    return list(dict.fromkeys(candidates))


def check_remote_url(url: str, areas: Iterable[Path], base: Path) -> str | None:
    """Refuse remote URLs git must not use: transport helpers (`ext::`, `fd::`, `foo::`), options,
    unknown schemes, and local repositories outside the allowed directories and repositories.

    A local repository is decided on the path git will use: a `file://` URL percent-decoded as
    git decodes it (`%2e%2e` is `..`), `~` expanded as git expands it, relative paths taken from
    the working tree. Returns that absolute path (not resolved: git tries suffixes on it, see
    `repository.transport_git_dir`) for a local repository, None for a network URL.
    """
    if not url or url.startswith("-"):
        raise AccessDenied(f"remote URL {quote_name(url)} is refused: it is empty or starts with '-'")
    if any(ch in url for ch in "\x00\n\r"):
        raise AccessDenied("remote URL is refused: it contains control characters")
    if _HELPER_SYNTAX.match(url):
        transport = url.split("::", 1)[0]
        raise AccessDenied(
            f"remote URL {quote_name(url)} is refused: the {transport}:: transport runs programs or "
            "reads file descriptors; only https, http, ssh, git and local repositories inside the "
            "allowed directories are allowed"
        )
    if "://" in url:
        scheme = url.split("://", 1)[0].lower()
        if scheme in _NETWORK_SCHEMES:
            return None
        if scheme != "file":
            raise AccessDenied(
                f"remote URL {quote_name(url)} is refused: scheme {scheme}:// is not one of "
                "https, http, ssh, git or file"
            )
        # git decodes the whole URL first, then takes the path from the first '/' after '://'
        # (any host part is ignored): file://localhost/a%2F..%2Fb is /a/../b.
        decoded = os.fsdecode(unquote_to_bytes(url).split(b"\x00", 1)[0])
        after = decoded.split("://", 1)[1]
        slash = after.find("/")
        if slash < 0:
            raise AccessDenied(f"remote URL {quote_name(url)} is refused: it names no path")
        return _check_local(after[slash:], url, areas, base)
    if _SCP_LIKE.match(url) and not os.path.isabs(url):
        return None  # user@host:path, git's scp-like ssh syntax
    expanded = expand_home(url)
    if expanded is None:
        raise AccessDenied(f"remote {quote_name(url)} is refused: it names a user that does not exist")
    return _check_local(expanded, url, areas, base)


def _check_local(path: str, url: str, areas: Iterable[Path], base: Path) -> str:
    allowed = list(areas)
    absolute = os.path.join(base, path)
    real = Path(os.path.realpath(absolute))
    for area in allowed:
        if real == area or area in real.parents:
            return absolute
    shown = ", ".join(quote_path(a) for a in allowed) or "none"
    raise AccessDenied(
        f"remote {quote_name(url)} is a local repository outside the allowed directories and "
        f"repositories ({shown}); the server only pushes to and fetches from those"
    )
