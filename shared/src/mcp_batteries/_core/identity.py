"""Who is calling: one API for every server, whatever authenticated the caller.

    caller = current_caller()          # inside a tool, resource or prompt handler
    caller.subject                     # stable id: "local:alice", "token", "user:alice", "oauth:<iss>#<sub>"
    caller.name                        # for people: user name, "token", the OAuth user's name
    caller.can_write                   # False for a caller holding only the read scope
    caller.workspaces                  # None = unrestricted; else what this caller may use
    caller.may_use("team-a")           # the check a multi-user server makes

Sources, all turned into the same `Caller` (`mcp_batteries._signin.auth` does the HTTP ones):

- stdio, and HTTP without authentication (loopback only, or behind an authenticating proxy):
  the local user running the server (`local:<login>`);
- the static bearer token (`MCP_AUTH_TOKEN` / `--auth-token-file`): one caller, `token`;
- a tokens file (`--tokens-file`): each token names its user (`user:<name>`), scopes and
  workspaces;
- OAuth 2.1 access tokens (JWT): `oauth:<issuer>#<sub>`, scopes and claims from the verified token.

The HTTP authentication middleware stores the SDK's `AuthenticatedUser` carrying the `Caller`
(`authenticated_user_for`) on the request (`scope["user"]`, which also binds each HTTP session
to the principal that opened it) and in the SDK's auth context variable, which the SDK carries
with each message into the handler's task, so every request (not just a session's first) is
seen as the credential that sent it. `current_caller` reads it back in O(1).
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials

from mcp_batteries._core.permissions import ToolPolicy
from mcp_batteries._protocol import sdk
from mcp_batteries._protocol.sdk import AuthenticatedUser

__all__ = [
    "READ_SCOPE",
    "WRITE_SCOPE",
    "Caller",
    "CallerSource",
    "CallerUser",
    "access_token_for",
    "authenticated_user_for",
    "caller_from_access_token",
    "current_caller",
    "local_caller",
]

#: Default scope names (configurable): read-only tools, and every tool.
READ_SCOPE = "mcp:read"
WRITE_SCOPE = "mcp:write"

CallerSource = Literal["local", "token", "tokens-file", "oauth"]


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
    #: The verified token's claims (OAuth); empty for other sources.
    claims: Mapping[str, Any] = field(default_factory=dict)
    #: Which servers' tools this caller may see and call (`mcp_batteries._core.permissions`).
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    #: This caller's own limits (tokens file), instead of `--rate-limit`/`--max-calls-in-flight`.
    rate_limit: float | None = None
    max_calls_in_flight: int | None = None

    def may_call(self, server: str, tool: str, *, writes: bool) -> bool:
        """Whether this caller may see and call `tool` of `server` (`writes`: it changes things)."""
        if writes and not self.can_write:
            return False
        return self.policy.permits(server, tool, writes=writes)

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


class CallerUser(AuthenticatedUser):
    """What the middleware stores in `scope["user"]` and the auth context: the SDK's user type,
    carrying the `Caller` as a plain attribute so reading it costs nothing per call."""

    def __init__(self, caller: Caller, access_token: AccessToken) -> None:
        super().__init__(access_token)
        self.caller = caller
        self.credentials = AuthCredentials(access_token.scopes)


def access_token_for(caller: Caller, token: str, *, expires_at: int | None = None) -> AccessToken:
    """The SDK `AccessToken` for `caller`, who presented `token`.

    The SDK binds a stateful HTTP session to (client_id, claims["iss"], subject) of the token
    that opened it; all three derive from the caller's identity, so a user's other tokens (a
    refreshed OAuth token, a second entry in the tokens file) keep working in the same session,
    and nobody else's do.
    """
    return AccessToken(
        token=token,
        client_id=caller.subject,
        scopes=sorted(caller.scopes),
        subject=caller.subject,
        expires_at=expires_at,
        claims=dict(caller.claims) or None,
    )


def authenticated_user_for(caller: Caller, token: str, *, expires_at: int | None = None) -> CallerUser:
    """The user object an authentication middleware stores for `caller` (see the module doc)."""
    return CallerUser(caller, access_token_for(caller, token, expires_at=expires_at))


def caller_from_access_token(token: AccessToken) -> Caller:
    """The `Caller` an `AccessToken` stored by other code (the SDK's own auth) stands for."""
    subject = token.subject or token.client_id
    scopes = frozenset(token.scopes)
    return Caller(
        subject=subject,
        name=subject,
        source="oauth",
        scopes=scopes,
        can_write=WRITE_SCOPE in scopes,
        claims=dict(token.claims or {}),
    )


def current_caller() -> Caller:
    """The caller of the request being handled (the local user when nothing authenticated it)."""
    global _LOCAL
    user = sdk.auth_context_var.get()
    if user is not None:
        return user.caller if isinstance(user, CallerUser) else caller_from_access_token(user.access_token)
    if _LOCAL is None:
        _LOCAL = local_caller()
    return _LOCAL
