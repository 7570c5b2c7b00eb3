"""Who is calling: one API for every server, whatever authenticated the caller.

    caller = current_caller()          # inside a tool, resource or prompt handler
    caller.subject                     # stable id: "local:alice", "token:ci-bot", "oauth:<iss>#<sub>"
    caller.name                        # for people: user name, token name, OAuth subject/name
    caller.can_write                   # False for an OAuth token with only the read scope
    caller.workspaces                  # None = unrestricted; else what this caller may use

Sources, all turned into the same `Caller`:

- stdio, and HTTP without authentication (loopback only, or behind an authenticating proxy):
  the local user running the server;
- the static bearer token (`MCP_AUTH_TOKEN` / `--auth-token-file`): one caller named "token";
- a tokens file (`--tokens-file`): each token names its user, scopes and workspaces;
- OAuth 2.1 access tokens (JWT): subject, scopes and claims from the verified token.

The HTTP authentication middleware stores an SDK `AccessToken` on the request (`scope["user"]`,
which also binds each HTTP session to the credential that opened it) and in the SDK's auth
context variable, which the SDK carries into the handler's task; `current_caller` reads it.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

__all__ = [
    "READ_SCOPE",
    "WRITE_SCOPE",
    "Caller",
    "CallerSource",
    "access_token_for",
    "caller_from_access_token",
    "current_caller",
    "local_caller",
]

#: Default scope names (configurable for OAuth): read-only tools, and every tool.
READ_SCOPE = "mcp:read"
WRITE_SCOPE = "mcp:write"

CallerSource = Literal["local", "token", "tokens-file", "oauth"]

#: Where `Caller` details travel inside an `AccessToken.claims`.
_CLAIMS_KEY = "mcp_batteries"


@dataclass(frozen=True)
class Caller:
    """An authenticated (or local) caller, the same shape for every source."""

    subject: str
    name: str
    source: CallerSource
    scopes: frozenset[str] = frozenset({READ_SCOPE, WRITE_SCOPE})
    #: Workspaces this caller may use; None means no restriction (local user, static token).
    workspaces: frozenset[str] | None = None
    #: Whether the caller may use tools that change things (the server's own --read-only aside).
    can_write: bool = True
    claims: Mapping[str, Any] = field(default_factory=dict)

    def may_use(self, workspace: str) -> bool:
        return self.workspaces is None or workspace in self.workspaces


def local_caller() -> Caller:
    """The user running the server process: stdio's caller, and unauthenticated HTTP's."""
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry (some containers)
        user = "local"
    return Caller(subject=f"local:{user}", name=user, source="local")


_LOCAL: Caller | None = None


def access_token_for(caller: Caller, token: str) -> AccessToken:
    """The SDK `AccessToken` an authentication middleware stores for `caller` (see module doc)."""
    return AccessToken(
        token=token,
        client_id=caller.subject,
        scopes=sorted(caller.scopes),
        subject=caller.subject,
        claims={
            **dict(caller.claims),
            _CLAIMS_KEY: {
                "name": caller.name,
                "source": caller.source,
                "workspaces": None if caller.workspaces is None else sorted(caller.workspaces),
                "can_write": caller.can_write,
            },
        },
    )


def caller_from_access_token(token: AccessToken) -> Caller:
    claims = dict(token.claims or {})
    ours = claims.pop(_CLAIMS_KEY, None) or {}
    workspaces = ours.get("workspaces")
    subject = token.subject or token.client_id
    return Caller(
        subject=subject,
        name=str(ours.get("name") or subject),
        source=ours.get("source", "oauth"),
        scopes=frozenset(token.scopes),
        workspaces=None if workspaces is None else frozenset(workspaces),
        can_write=bool(ours.get("can_write", True)),
        claims=claims,
    )


def current_caller() -> Caller:
    """The caller of the request being handled (the local user when nothing authenticated it)."""
    global _LOCAL
    token = get_access_token()
    if token is not None:
        return caller_from_access_token(token)
    if _LOCAL is None:
        _LOCAL = local_caller()
    return _LOCAL
