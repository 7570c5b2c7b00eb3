"""Who commits: the repository's configured identity, else the operator's `--author`, else an error.

git itself would invent an identity from the login name and host name when none is configured
(`user.useConfigOnly` off); a commit made that way carries an address nobody owns. This server
never lets that happen: every command that records an identity runs with
`user.useConfigOnly=true`, and before it runs the identity is looked up so that the error names
what to set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcp_batteries.errors import InvalidInput

__all__ = ["Identity", "missing_identity_message", "parse_author"]

_AUTHOR = re.compile(r"^\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>\s]*)>\s*$")


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    def config(self) -> list[str]:
        """`-c` values that make git use this identity for author and committer."""
        return [f"user.name={self.name}", f"user.email={self.email}"]


def parse_author(text: str) -> Identity:
    """'Name <email>' -> Identity; raises ValueError naming the expected form."""
    match = _AUTHOR.match(text)
    if match is None or not match.group("name") or not match.group("email"):
        raise ValueError(f"expected 'Name <email>', got {text!r}")
    if any(ch in text for ch in "\n\r\x00"):
        raise ValueError("the author must be one line without control characters")
    return Identity(match.group("name"), match.group("email"))


def missing_identity_message(what: str, missing: list[str]) -> str:
    keys = " and ".join(missing)
    return (
        f"Cannot {what}: this repository has no committer identity ({keys} not set), and the "
        'server never makes one up. Set it with `git config user.name "Your Name"` and '
        "`git config user.email you@example.com` (in the repository, or with --global), or start "
        "the server with --author 'Name <email>'. Nothing was changed."
    )


def require_identity(what: str, configured: dict[str, str], fallback: Identity | None) -> list[str]:
    """The `-c` overrides to record an identity: none when the repository has one.

    `configured` holds the identity keys the repository's git configuration sets (user.name,
    user.email, author.*, committer.*) and the identity environment variables the operator set.
    """
    name = configured.get("user.name") or (configured.get("author.name") and configured.get("committer.name"))
    email = configured.get("user.email") or (
        configured.get("author.email") and configured.get("committer.email")
    )
    if name and email:
        return []
    if fallback is not None:
        overrides = []
        if not name:
            overrides.append(f"user.name={fallback.name}")
        if not email:
            overrides.append(f"user.email={fallback.email}")
        return overrides
    missing = [key for key, value in (("user.name", name), ("user.email", email)) if not value]
    raise InvalidInput(missing_identity_message(what, missing))
