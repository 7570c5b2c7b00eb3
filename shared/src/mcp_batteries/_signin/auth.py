"""Authentication for the HTTP transport: one layer, three sources, one `Caller`.

    app = authenticate(app, settings, resource_path="/mcp", writing_tools=server.writing_tools)

Sources (any combination; a presented token is tried against each in this order):

- the static bearer token (`MCP_AUTH_TOKEN` / `--auth-token-file`): one shared secret, one caller
  named "token";
- a tokens file (`--tokens-file`, TOML, documented in docs/configuration.md): each token (or its
  SHA-256) names a user, the workspaces that user may use and optional scopes; reloaded when
  the file changes;
- OAuth 2.1 access tokens (JWT) from `--oauth-issuer` for `--oauth-audience`, per the MCP
  authorization spec: this server is a resource server (`mcp_batteries._signin.oauth` verifies them).

Every source yields a `Caller` (`mcp_batteries._core.identity`), stored as an SDK `AccessToken` in
`scope["user"]` (which binds each stateful session to the principal that opened it: anyone else
gets 404), `scope["auth"]` and the SDK's auth context variable, which the SDK carries with each
message into the handler's task; `identity.current_caller()` reads it there.

Scopes: the write scope grants every tool; the read scope alone shows the server as if it ran
with `--read-only` (the per-caller filter lives in `app.py`); an OAuth token with neither is
refused with 403. An OAuth caller without the write scope who calls a writing tool gets 403
`insufficient_scope` at the HTTP layer (so OAuth clients can step up), with a JSON-RPC error body
that names the scope.

With OAuth, Protected Resource Metadata (RFC 9728) is served at
`/.well-known/oauth-protected-resource<resource path>` and a 401 carries
`WWW-Authenticate: Bearer resource_metadata="..."`. Without OAuth a 401 says only
`Bearer realm="mcp"`: a shared secret has no authorization server to discover, and pointing
clients at OAuth metadata would send them into a flow that cannot succeed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import os
import re
import time
import tomllib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_batteries._core.identity import Caller, CallerUser, authenticated_user_for
from mcp_batteries._core.permissions import POLICY_KEYS, parse_policy
from mcp_batteries._protocol import sdk
from mcp_batteries._protocol.frames import Reply, error_reply, send_reply
from mcp_batteries._safety.secret_files import check_private
from mcp_batteries._signin.oauth import (
    JwksKeys,
    KeysUnavailable,
    OAuthVerifier,
    Refusal,
    ScopeNames,
    invalid_token,
    url_problem,
)
from mcp_batteries.errors import ConfigError

if TYPE_CHECKING:
    from mcp_batteries._core.settings import ServerSettings

__all__ = [
    "PUBLIC_PATHS",
    "TOKEN_ENV",
    "AuthMiddleware",
    "Authenticator",
    "Refusal",
    "ScopeNames",
    "TokensFile",
    "authenticate",
    "build_authenticator",
    "load_token",
    "load_tokens_file",
    "metadata_path",
    "protected_resource_route",
]

logger = logging.getLogger(__name__)

TOKEN_ENV = "MCP_AUTH_TOKEN"
#: Paths served without a token: liveness probes must not need the secret.
PUBLIC_PATHS = frozenset({"/healthz"})
WELL_KNOWN_RESOURCE = "/.well-known/oauth-protected-resource"

#: A verified OAuth token is trusted without re-verification for at most this long.
VERIFIED_TOKEN_TTL_S = 300.0
MAX_CACHED_TOKENS = 4096
TOKENS_FILE_RECHECK_S = 2.0
MIN_TOKEN_CHARS = 16
#: Largest request body read to see which tool an OAuth read-only caller calls (the SDK's limit).
MAX_PEEK_BYTES = 4 * 1024 * 1024
#: JSON-RPC code of a request refused for authentication or authorization (implementation-defined).
AUTH_ERROR_CODE = -32001


# -- static token ------------------------------------------------------------------------------


def load_token(token_file: Path | None) -> str | None:
    """The token from `--auth-token-file`, else `$MCP_AUTH_TOKEN`, else None."""
    if token_file is not None:
        check_private(token_file.expanduser(), "--auth-token-file")
        try:
            token = token_file.expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"--auth-token-file: cannot read {token_file}: {exc.strerror}") from exc
        if not token:
            raise ConfigError(f"--auth-token-file: {token_file} is empty")
        return token
    token = os.environ.get(TOKEN_ENV, "").strip()
    return token or None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


# -- tokens file -------------------------------------------------------------------------------

_TOKEN_KEYS = (
    frozenset({"user", "token", "sha256", "workspaces", "scopes", "rate_limit", "max_calls_in_flight"})
    | POLICY_KEYS
)
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]+")


def load_tokens_file(path: Path, scopes: ScopeNames) -> dict[bytes, Caller]:
    """Parse a tokens file into SHA-256(token) -> Caller; any mistake is one-line ConfigError.

    ```toml
    [[tokens]]
    user = "alice"
    sha256 = "<hex SHA-256 of the token>"   # or: token = "<the token itself>"
    workspaces = ["team-a", "shared"]       # optional; omitted or ["*"]: every workspace
    scopes = ["mcp:read"]                   # optional; default: read and write
    allow = ["git:*", "tasks:*"]            # optional: `server:tool` patterns (default "*")
    deny = ["git:git_push"]                 # optional; deny wins
    read_only = ["filesystem"]              # optional: true, or the servers only read
    rate_limit = 5.0                        # optional: calls per second (default --rate-limit)
    max_calls_in_flight = 4                 # optional (default --max-calls-in-flight)
    ```
    (`mcp_batteries._core.permissions` says how a policy decides.)
    """
    where = f"--tokens-file {path}"
    check_private(path, "--tokens-file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read it: {exc.strerror}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - {"tokens"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; the file holds [[tokens]] entries")
    entries = data.get("tokens")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{where}: no [[tokens]] entries")
    found: dict[bytes, Caller] = {}
    for number, entry in enumerate(entries, 1):
        digest, caller = _token_entry(entry, f"{where}: [[tokens]] entry {number}", scopes)
        if digest in found:
            raise ConfigError(f"{where}: [[tokens]] entry {number} repeats the token of an earlier entry")
        found[digest] = caller
    return found


def _token_entry(entry: Any, where: str, scopes: ScopeNames) -> tuple[bytes, Caller]:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = sorted(set(entry) - _TOKEN_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_TOKEN_KEYS))}"
        )
    user = entry.get("user")
    if not isinstance(user, str) or not _PRINTABLE.fullmatch(user) or user != user.strip():
        raise ConfigError(f"{where}: 'user' must be a non-empty name without control characters")
    if ("token" in entry) == ("sha256" in entry):
        raise ConfigError(f"{where} ({user}): give exactly one of 'token' or 'sha256' (preferred)")
    if "token" in entry:
        token = entry["token"]
        if not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS or token != token.strip():
            raise ConfigError(
                f"{where} ({user}): 'token' must be at least {MIN_TOKEN_CHARS} characters, "
                "without surrounding spaces"
            )
        digest = _digest(token)
    else:
        hexed = entry["sha256"]
        if not isinstance(hexed, str) or not _HEX64.fullmatch(hexed):
            raise ConfigError(f"{where} ({user}): 'sha256' must be 64 hexadecimal digits")
        digest = bytes.fromhex(hexed)
    workspaces = _string_list(entry.get("workspaces", ["*"]), f"{where} ({user}): 'workspaces'")
    granted = _string_list(entry.get("scopes", sorted(scopes.both())), f"{where} ({user}): 'scopes'")
    if not workspaces or not granted:
        raise ConfigError(f"{where} ({user}): 'workspaces' and 'scopes' cannot be empty lists")
    if not granted & scopes.both():
        raise ConfigError(f"{where} ({user}): 'scopes' must include {scopes.read!r} or {scopes.write!r}")
    try:
        policy = parse_policy(entry, f"{where} ({user})")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    rate_limit = entry.get("rate_limit")
    if rate_limit is not None and (
        isinstance(rate_limit, bool) or not isinstance(rate_limit, (int, float)) or not rate_limit > 0
    ):
        raise ConfigError(f"{where} ({user}): 'rate_limit' must be a number of calls per second above 0")
    in_flight = entry.get("max_calls_in_flight")
    if in_flight is not None and (
        isinstance(in_flight, bool) or not isinstance(in_flight, int) or in_flight < 1
    ):
        raise ConfigError(f"{where} ({user}): 'max_calls_in_flight' must be a whole number, 1 or more")
    return digest, Caller(
        subject=f"user:{user}",
        name=user,
        source="tokens-file",
        scopes=frozenset(granted),
        workspaces=None if "*" in workspaces else frozenset(workspaces),
        can_write=scopes.write in granted,
        policy=policy,
        rate_limit=float(rate_limit) if rate_limit is not None else None,
        max_calls_in_flight=in_flight,
    )


def _string_list(value: Any, where: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where} must be a list of non-empty strings")
    return frozenset(value)


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class TokensFile:
    """The tokens file's entries, reloaded when the file changes (a broken edit keeps the old ones)."""

    def __init__(
        self, path: Path, scopes: ScopeNames, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.path = path.expanduser()
        self.scopes = scopes
        self._clock = clock
        self._stamp = _file_stamp(self.path)
        self.entries = load_tokens_file(self.path, scopes)
        self._checked_at = clock()

    def refresh(self) -> bool:
        """Reload if the file changed (checked at most every few seconds); True if it was reloaded."""
        now = self._clock()
        if now - self._checked_at < TOKENS_FILE_RECHECK_S:
            return False
        self._checked_at = now
        stamp = _file_stamp(self.path)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            self.entries = load_tokens_file(self.path, self.scopes)
        except ConfigError as exc:
            logger.error("keeping the previous tokens: %s", exc)
            return False
        logger.warning("reloaded %s: %d token(s)", self.path, len(self.entries))
        return True

    def lookup(self, digest: bytes) -> Caller | None:
        # Keyed by SHA-256 of the secret: how long the lookup takes tells an attacker about the
        # hash of what they sent, which they cannot steer, never about a stored token.
        return self.entries.get(digest)


# -- the authenticator -------------------------------------------------------------------------


@dataclass
class _Cached:
    user: CallerUser
    expires_at: float  # wall clock


class Authenticator:
    """Turns a presented bearer token into an authenticated user, whatever the source.

    Successful results are cached by the token's SHA-256 (bounded, and OAuth results only until
    the token expires or for `VERIFIED_TOKEN_TTL_S`), so a call costs one hash and a lookup.
    """

    def __init__(
        self,
        *,
        scopes: ScopeNames,
        static_token: str | None = None,
        tokens: TokensFile | None = None,
        oauth: OAuthVerifier | None = None,
        public_url: str | None = None,
    ) -> None:
        self.scopes = scopes
        self._static = _digest(static_token) if static_token is not None else None
        self.tokens = tokens
        self.oauth = oauth
        self.public_url = public_url.rstrip("/") if public_url else None
        self._cache: dict[bytes, _Cached] = {}
        self._static_caller = Caller(subject="token", name="token", source="token", scopes=scopes.both())

    async def authenticate(self, token: str) -> CallerUser:
        if self.tokens is not None and self.tokens.refresh():
            self._cache.clear()
        digest = _digest(token)
        cached = self._cache.get(digest)
        if cached is not None:
            if cached.expires_at > time.time():
                return cached.user
            del self._cache[digest]
        caller: Caller | None = None
        expires_at: int | None = None
        if self._static is not None and hmac.compare_digest(digest, self._static):
            caller = self._static_caller
        elif self.tokens is not None:
            caller = self.tokens.lookup(digest)
        if caller is None:
            if self.oauth is None:
                raise invalid_token("the bearer token is not valid")
            caller, expires_at = await self.oauth.verify(token)
        user = authenticated_user_for(caller, token, expires_at=expires_at)
        lifetime = math.inf if expires_at is None else min(expires_at, time.time() + VERIFIED_TOKEN_TTL_S)
        if len(self._cache) >= MAX_CACHED_TOKENS:
            del self._cache[next(iter(self._cache))]
        self._cache[digest] = _Cached(user, lifetime)
        return user

    # -- what the responses say
    def base_url(self, scope: Scope) -> str:
        """This server's origin as clients see it: `--public-url`, else the request's own."""
        if self.public_url is not None:
            return self.public_url
        host = _header(scope, b"host")
        if host is None or not _HOST.fullmatch(host):
            server = scope.get("server") or ("127.0.0.1", 80)
            host = f"[{server[0]}]:{server[1]}" if ":" in str(server[0]) else f"{server[0]}:{server[1]}"
        return f"{scope.get('scheme', 'http')}://{host}"

    def metadata_url(self, scope: Scope, resource_path: str) -> str:
        return self.base_url(scope) + metadata_path(resource_path)

    def challenge(self, scope: Scope, resource_path: str, refusal: Refusal | None) -> str:
        """The `WWW-Authenticate` value for a refusal (None: no credentials were sent)."""
        if self.oauth is None:
            params = ['realm="mcp"']
        else:
            params = [f"resource_metadata={_quoted(self.metadata_url(scope, resource_path))}"]
            params.append(f"scope={_quoted(self.scopes.read + ' ' + self.scopes.write)}")
        if refusal is not None and refusal.error is not None:
            params += [f"error={_quoted(refusal.error)}", f"error_description={_quoted(refusal.description)}"]
        return "Bearer " + ", ".join(params)

    def resource_metadata(self, scope: Scope, resource_path: str) -> dict[str, Any]:
        """RFC 9728 Protected Resource Metadata for the MCP endpoint at `resource_path`."""
        assert self.oauth is not None
        return {
            "resource": self.base_url(scope) + resource_path,
            "authorization_servers": [self.oauth.issuer],
            "scopes_supported": [self.scopes.read, self.scopes.write],
            "bearer_methods_supported": ["header"],
        }


_HOST = re.compile(r"[A-Za-z0-9.\-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _quoted(value: str) -> str:
    """An RFC 9110 quoted-string (our own texts, but never trust a header to stay simple)."""
    clean = "".join(ch for ch in value if " " <= ch <= "~")
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


def metadata_path(resource_path: str) -> str:
    """Where RFC 9728 puts the metadata of the resource at `resource_path` ("/mcp", "/tasks/mcp")."""
    return WELL_KNOWN_RESOURCE + ("" if resource_path == "/" else resource_path)


def protected_resource_route(authenticator: Authenticator, resource_path: str) -> Route:
    """The RFC 9728 metadata route for the MCP endpoint at `resource_path`, to mount at the root of
    the host app (the bundle mounts one per server; a single server's middleware serves its own)."""

    async def metadata(request: Request) -> Response:
        return _metadata_response(authenticator, request.scope, resource_path)

    return Route(metadata_path(resource_path), metadata, methods=["GET", "OPTIONS"])


def _metadata_response(authenticator: Authenticator, scope: Scope, resource_path: str) -> Response:
    cors = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET, OPTIONS"}
    if scope.get("method") == "OPTIONS":
        return Response(status_code=204, headers=cors)
    body = authenticator.resource_metadata(scope, resource_path)
    return JSONResponse(body, headers={**cors, "Cache-Control": "max-age=300"})


# -- the middleware ----------------------------------------------------------------------------


class AuthMiddleware:
    """Authenticates every HTTP request but `/healthz` (and the metadata) before the MCP app sees it.

    `resource_path` is the MCP endpoint's path as clients see it (the bundle's `/<name>/mcp`);
    `writing_tools` the names of the tools that change things (a live collection).
    """

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        *,
        resource_path: str,
        writing_tools: Collection[str] = (),
        serve_metadata: bool = True,
        on_refusal: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        #: Told the reason of each refusal ("missing_token", "invalid_token", ...), for metrics.
        self.on_refusal = on_refusal
        self.authenticator = authenticator
        self.resource_path = resource_path
        self.writing_tools = writing_tools
        # The path RFC 9728 derives from the resource, and the root form clients without the
        # challenge's resource_metadata fall back to (meaningful only for a single server).
        self._metadata_paths = (
            frozenset({metadata_path(resource_path), WELL_KNOWN_RESOURCE})
            if serve_metadata and authenticator.oauth is not None
            else frozenset()
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        if scope["path"] in self._metadata_paths:
            await _metadata_response(self.authenticator, scope, self.resource_path)(scope, receive, send)
            return
        token = _bearer(scope)
        try:
            if token is None:
                raise Refusal(401, "send 'Authorization: Bearer <token>'")
            user = await self.authenticator.authenticate(token)
        except Refusal as refusal:
            logger.info("refused %s %r: %s", scope.get("method"), scope["path"], refusal.description)
            await self._refuse(scope, send, refusal)
            return
        except KeysUnavailable as exc:
            logger.warning("cannot verify a token now: %s", exc)
            if self.on_refusal is not None:
                self.on_refusal("keys_unavailable")
            await send_reply(
                send,
                _error(None, -32603, "cannot verify the token now: the issuer's keys are unreachable", 503),
                [(b"retry-after", b"5")],
            )
            return
        caller = user.caller
        if (
            not caller.can_write
            and caller.source == "oauth"
            and scope.get("method") == "POST"
            and self.writing_tools
        ):
            checked = await self._check_tool_scope(scope, receive, send, caller)
            if checked is None:
                return
            receive = checked
        scope["user"] = user
        scope["auth"] = user.credentials
        reset = sdk.auth_context_var.set(user)
        try:
            await self.app(scope, receive, send)
        finally:
            sdk.auth_context_var.reset(reset)

    async def _refuse(self, scope: Scope, send: Send, refusal: Refusal, request_id: Any = None) -> None:
        if self.on_refusal is not None:
            reason = refusal.error or ("missing_token" if refusal.status == 401 else "forbidden")
            self.on_refusal(reason)
        challenge = self.authenticator.challenge(scope, self.resource_path, refusal)
        await send_reply(
            send,
            _error(request_id, AUTH_ERROR_CODE, _sentence(refusal), refusal.status),
            [(b"www-authenticate", challenge.encode("latin-1", "replace"))],
        )

    async def _check_tool_scope(
        self, scope: Scope, receive: Receive, send: Send, caller: Caller
    ) -> Receive | None:
        """Refuse (403 insufficient_scope) an OAuth read-only caller's call of a writing tool.

        Reads the request body to see which tool it calls, then hands the body on unchanged.
        Returns the receive channel to use, or None when the request was refused.
        """
        length = _header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_PEEK_BYTES):
            return receive  # the SDK refuses oversized bodies itself
        body, complete, last = await _read_body(receive, MAX_PEEK_BYTES)
        replay = _replay(body, complete, last, receive)
        if not complete:
            return replay
        called = _writing_tool_call(body, self.writing_tools)
        if called is None:
            return replay
        request_id, tool = called
        scopes = self.authenticator.scopes
        refusal = Refusal(
            403,
            f"{tool} changes things, so it needs the {scopes.write!r} scope; "
            f"this token ({caller.name}) grants only {scopes.read!r}",
            error="insufficient_scope",
        )
        logger.info("refused %r to %r: %s", tool, caller.subject, refusal.description)
        await self._refuse(scope, send, refusal, request_id)
        return None


def _sentence(refusal: Refusal) -> str:
    prefix = "Unauthorized" if refusal.status == 401 else "Forbidden"
    return f"{prefix}: {refusal.description}"


def _bearer(scope: Scope) -> str | None:
    """The bearer token, decoded so that `_digest` sees exactly the bytes the client sent."""
    for key, raw in scope.get("headers", ()):
        if key == b"authorization":
            value = bytes(raw).decode("utf-8", "surrogateescape")
            if value[:7].lower() != "bearer ":
                return None
            return value[7:].strip() or None
    return None


def _error(request_id: Any, code: int, message: str, status: int) -> Reply:
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        request_id = None  # not an id a client can match: JSON-RPC says null
    return error_reply(request_id, code, message, status=status)


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool, Message | None]:
    """Up to `limit` bytes of the body: (bytes, whole body read, a non-body message that ended it)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False, message
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True, None
        if size > limit:
            return b"".join(chunks), False, None


def _replay(body: bytes, complete: bool, last: Message | None, receive: Receive) -> Receive:
    """A receive channel that yields what was already read, then continues from `receive`."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": not complete}]
    if last is not None:
        pending.append(last)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


def _writing_tool_call(body: bytes, writing_tools: Collection[str]) -> tuple[Any, str] | None:
    """(request id, tool) if the JSON-RPC body calls one of `writing_tools`."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    for item in message if isinstance(message, list) else [message]:
        if not isinstance(item, dict) or item.get("method") != "tools/call":
            continue
        params = item.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if isinstance(name, str) and name in writing_tools:
            return item.get("id"), name
    return None


# -- building it from settings -----------------------------------------------------------------


def build_authenticator(settings: ServerSettings) -> Authenticator | None:
    """The authenticator the settings describe, or None when no source is configured."""
    s = settings
    scopes = ScopeNames(s.oauth_read_scope, s.oauth_write_scope)
    if not scopes.read or not scopes.write or scopes.read == scopes.write:
        raise ConfigError("--oauth-read-scope and --oauth-write-scope must be two different names")
    static = load_token(s.auth_token_file)
    tokens = TokensFile(s.tokens_file, scopes) if s.tokens_file is not None else None
    oauth = None
    if s.oauth_issuer is None:
        given = [
            f
            for f in ("oauth_audience", "oauth_jwks_url", "oauth_workspaces_claim", "oauth_permissions_claim")
            if getattr(s, f)
        ]
        if given:
            flags = ", ".join("--" + f.replace("_", "-") for f in given)
            raise ConfigError(f"{flags} need(s) --oauth-issuer")
    else:
        for flag, url in (("--oauth-issuer", s.oauth_issuer), ("--oauth-jwks-url", s.oauth_jwks_url)):
            problem = url_problem(url) if url is not None else None
            if problem is not None:
                raise ConfigError(f"{flag} {url}: {problem}")
        if not s.oauth_audience:
            raise ConfigError(
                "--oauth-issuer needs --oauth-audience: the audience (aud) your authorization server "
                "puts in access tokens for this server, often its URL"
            )
        keys = JwksKeys(s.oauth_issuer, s.oauth_jwks_url)
        oauth = OAuthVerifier(
            s.oauth_issuer,
            s.oauth_audience,
            scopes,
            keys,
            workspaces_claim=s.oauth_workspaces_claim,
            permissions_claim=s.oauth_permissions_claim,
        )
    if s.public_url is not None:
        parts = urlsplit(s.public_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path.strip("/"):
            raise ConfigError(
                f"--public-url {s.public_url}: give scheme://host[:port] only, e.g. https://mcp.example.com"
            )
    if static is None and tokens is None and oauth is None:
        return None
    return Authenticator(
        scopes=scopes, static_token=static, tokens=tokens, oauth=oauth, public_url=s.public_url
    )


def authenticate(
    app: ASGIApp,
    settings: ServerSettings,
    *,
    resource_path: str,
    writing_tools: Collection[str] = (),
    on_refusal: Callable[[str], None] | None = None,
) -> ASGIApp:
    """`app` behind the authentication the settings configure (unchanged when there is none).

    Refuses (ConfigError) to serve a non-loopback address without authentication unless
    `--insecure-no-auth` says a proxy in front authenticates.
    """
    authenticator = build_authenticator(settings)
    if authenticator is None:
        if not settings.is_loopback and not settings.insecure_no_auth:
            raise ConfigError(
                f"refusing to serve {settings.host} without authentication: set {TOKEN_ENV}, "
                "--auth-token-file, --tokens-file or --oauth-issuer, "
                "or pass --insecure-no-auth if a proxy in front authenticates"
            )
        return app
    return AuthMiddleware(
        app, authenticator, resource_path=resource_path, writing_tools=writing_tools, on_refusal=on_refusal
    )
