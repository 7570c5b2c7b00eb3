"""OAuth 2.1 resource server: verifying JWT access tokens against the issuer's published keys.

Per the MCP authorization spec this server never issues tokens; it checks those an
authorization server issued for it:

- keys come from the issuer's JWKS, found through its metadata (RFC 8414
  `/.well-known/oauth-authorization-server`, then OpenID `/.well-known/openid-configuration`) or
  named directly; they are cached, refreshed after `JWKS_MAX_AGE_S`, and refetched when a token
  names an unknown key id, at most once per `JWKS_REFETCH_INTERVAL_S` (so key rotation works and
  forged key ids cannot hammer the issuer); fetching is async (httpx2) and bounded in time and size;
- a token must be signed with an allowed asymmetric algorithm (never `none`, never HMAC: the
  RS/HS confusion attack) by a key whose type, curve and declared `alg` fit, and carry the
  configured `iss` and `aud`, a `sub`, and an `exp` (with `nbf`/`iat`) within `LEEWAY_S`;
- its `scope` (or `scp`) decides what the caller may do: the write scope every tool, the read
  scope only the read-only ones, neither nothing (403).

`mcp_batteries._signin.auth` uses this for the HTTP layer; `Refusal`, `KeysUnavailable` and `ScopeNames`
are the vocabulary every authentication source shares.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import jwt

from mcp_batteries._core.identity import Caller
from mcp_batteries._core.permissions import POLICY_KEYS, ToolPolicy, parse_policy

__all__ = [
    "ALGORITHMS",
    "JwksKeys",
    "KeysUnavailable",
    "OAuthVerifier",
    "Refusal",
    "ScopeNames",
    "fetch_json",
    "metadata_urls",
    "parse_jwks",
    "url_problem",
]

logger = logging.getLogger(__name__)

#: Asymmetric JWS algorithms only: `none` and HMAC (the RS/HS confusion attack) never verify.
ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
_KEY_TYPE = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521", "EdDSA": "Ed25519"}
#: Clock skew tolerated on `exp`, `nbf` and `iat`.
LEEWAY_S = 30
#: Least time between JWKS refetches caused by tokens naming an unknown key id.
JWKS_REFETCH_INTERVAL_S = 30.0
#: Keys are refreshed this long after they were fetched (a key the issuer withdrew stops working).
JWKS_MAX_AGE_S = 900.0
#: After a failed fetch, the next attempt waits this long (requests meanwhile get 503 or old keys).
JWKS_RETRY_AFTER_FAILURE_S = 5.0
FETCH_TIMEOUT_S = 5.0
FETCH_DEADLINE_S = 10.0
MAX_METADATA_BYTES = 1 << 20
MAX_TOKEN_CHARS = 16_384

# -- refusals ----------------------------------------------------------------------------------


class Refusal(Exception):
    """A request refused for authentication (401) or authorization (403)."""

    def __init__(self, status: int, description: str, *, error: str | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        #: RFC 6750 error code: "invalid_token", "insufficient_scope", or None (no credentials).
        self.error = error


def invalid_token(description: str) -> Refusal:
    return Refusal(401, description, error="invalid_token")


class KeysUnavailable(Exception):
    """The issuer's keys cannot be fetched now, so no OAuth token can be verified (503)."""


@dataclass(frozen=True)
class ScopeNames:
    """The two scopes this server understands (`--oauth-read-scope`, `--oauth-write-scope`)."""

    read: str
    write: str

    def both(self) -> frozenset[str]:
        return frozenset({self.read, self.write})


def _is_loopback_host(host: str | None) -> bool:
    return host in ("localhost", "::1") or bool(host and host.startswith("127."))


def url_problem(url: str) -> str | None:
    """Why `url` cannot name an issuer or key set (https, or http on loopback for testing)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and _is_loopback_host(parts.hostname):
        return None
    return "must be an https:// URL (http:// only on a loopback address)"


# -- OAuth: keys -------------------------------------------------------------------------------

FetchJson = Callable[[str], Awaitable[Any]]


async def fetch_json(url: str) -> Any:
    """GET `url` as JSON: async (the server keeps serving meanwhile), no redirects, bounded in
    size and in total time (a peer that drips bytes cannot hold the key lock for long)."""
    import httpx2  # only OAuth needs it

    try:
        with anyio.fail_after(FETCH_DEADLINE_S):
            async with (
                httpx2.AsyncClient(timeout=FETCH_TIMEOUT_S, follow_redirects=False) as http,
                http.stream("GET", url, headers={"Accept": "application/json"}) as response,
            ):
                if response.status_code != 200:
                    raise KeysUnavailable(f"{url} answered HTTP {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_METADATA_BYTES:
                        raise KeysUnavailable(f"{url} sent more than {MAX_METADATA_BYTES} bytes")
    except TimeoutError as exc:
        raise KeysUnavailable(
            f"cannot fetch {url}: no complete answer within {FETCH_DEADLINE_S:g} s"
        ) from exc
    except httpx2.HTTPError as exc:
        raise KeysUnavailable(f"cannot fetch {url}: {exc or type(exc).__name__}") from exc
    try:
        return json.loads(body)
    except ValueError as exc:
        raise KeysUnavailable(f"{url} did not send JSON") from exc


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may live, in the order the MCP spec tells clients to try."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [
        f"{origin}/.well-known/oauth-authorization-server{path}",  # RFC 8414
        f"{origin}/.well-known/openid-configuration{path}",  # RFC 8414 style for OIDC
        f"{origin}{path}/.well-known/openid-configuration",  # OpenID Connect Discovery 1.0
    ]
    return list(dict.fromkeys(urls))


def _same_issuer(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


@dataclass(frozen=True)
class _Key:
    kid: str | None
    jwk: jwt.PyJWK
    data: Mapping[str, Any]

    def fits(self, alg: str) -> bool:
        data = self.data
        if _KEY_TYPE.get(alg[:2]) != data.get("kty"):
            return False
        declared = data.get("alg")
        if declared is not None and declared != alg:
            return False
        curve = _CURVE.get(alg)
        return curve is None or data.get("crv") == curve


def parse_jwks(document: Any) -> list[_Key]:
    """The usable public signing keys of a JWKS (symmetric, private and encryption keys skipped)."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise KeysUnavailable("the JWKS is not a JSON object with a 'keys' list")
    keys: list[_Key] = []
    for data in document["keys"]:
        if not isinstance(data, dict) or data.get("kty") not in ("RSA", "EC", "OKP"):
            continue
        if data.get("use", "sig") != "sig" or "d" in data:
            continue
        try:
            jwk = jwt.PyJWK(data)
        except jwt.PyJWTError as exc:
            logger.warning("skipping JWKS key %r: %s", data.get("kid"), exc)
            continue
        kid = data.get("kid")
        keys.append(_Key(kid if isinstance(kid, str) else None, jwk, data))
    return keys


class JwksKeys:
    """The issuer's signing keys: fetched on first use, refreshed when old, refetched (rate-limited)
    when a token names a key id we do not know. Fetches never block the event loop."""

    def __init__(
        self,
        issuer: str,
        jwks_url: str | None,
        *,
        fetch: FetchJson = fetch_json,
        refetch_interval: float = JWKS_REFETCH_INTERVAL_S,
        max_age: float = JWKS_MAX_AGE_S,
        retry_after_failure: float = JWKS_RETRY_AFTER_FAILURE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self.jwks_url = jwks_url
        self._fetch = fetch
        self.refetch_interval = refetch_interval
        self.max_age = max_age
        self.retry_after_failure = retry_after_failure
        self._clock = clock
        self._keys: list[_Key] | None = None
        self._fetched_at = -math.inf
        self._failed_at = -math.inf
        self._failure = ""
        self._unknown_refetch_at = -math.inf
        self._generation = 0
        self._lock = anyio.Lock()

    async def key(self, kid: str | None, alg: str) -> jwt.PyJWK | None:
        """The key to verify a token signed with `alg` by key `kid`; None if there is none."""
        generation = self._generation
        if self._clock() - self._fetched_at > self.max_age:
            await self._refresh(generation)
        found = self._find(kid, alg)
        if found is None:
            now = self._clock()
            if self._generation != generation:
                pass  # the keys were fetched just now, for this very request
            elif now - self._unknown_refetch_at >= self.refetch_interval:
                self._unknown_refetch_at = now
                await self._refresh(self._generation)
            elif self._lock.locked():
                async with self._lock:  # a refetch is under way: its keys may include this one
                    pass
            found = self._find(kid, alg)
        return found

    def _find(self, kid: str | None, alg: str) -> jwt.PyJWK | None:
        fitting = [k for k in self._keys or () if k.fits(alg) and (kid is None or k.kid == kid)]
        # Without a key id, only an unambiguous key will do.
        return fitting[0].jwk if len(fitting) == 1 else None

    async def _refresh(self, generation: int) -> None:
        async with self._lock:
            if self._generation != generation:
                return  # someone else refreshed while we waited
            if self._clock() - self._failed_at < self.retry_after_failure:
                if self._keys is None:
                    raise KeysUnavailable(self._failure)
                return
            try:
                url = self.jwks_url or await self._discover()
                keys = parse_jwks(await self._fetch(url))
            except KeysUnavailable as exc:
                self._failed_at = self._clock()
                self._failure = str(exc)
                logger.warning("OAuth signing keys unavailable: %s", exc)
                if self._keys is None:
                    raise
                return
            self._keys = keys
            self._fetched_at = self._clock()
            self._generation += 1
            logger.info("OAuth signing keys from %s: %s", url, ", ".join(str(k.kid) for k in keys) or "none")

    async def _discover(self) -> str:
        failures: list[str] = []
        for url in metadata_urls(self.issuer):
            try:
                metadata = await self._fetch(url)
            except KeysUnavailable as exc:
                failures.append(str(exc))
                continue
            if not isinstance(metadata, dict):
                failures.append(f"{url} is not a JSON object")
                continue
            if not _same_issuer(str(metadata.get("issuer", "")), self.issuer):
                failures.append(f"{url} names issuer {metadata.get('issuer')!r}, not {self.issuer!r}")
                continue
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str) or url_problem(jwks_uri):
                failures.append(f"{url} has no usable jwks_uri")
                continue
            self.jwks_url = jwks_uri
            return jwks_uri
        raise KeysUnavailable("no issuer metadata: " + "; ".join(failures))


# -- OAuth: tokens -----------------------------------------------------------------------------


class OAuthVerifier:
    """Verifies JWT access tokens from one issuer for one audience (RFC 9068 / MCP authorization)."""

    def __init__(
        self,
        issuer: str,
        audience: str,
        scopes: ScopeNames,
        keys: JwksKeys,
        *,
        workspaces_claim: str | None = None,
        permissions_claim: str | None = None,
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.scopes = scopes
        self.keys = keys
        self.workspaces_claim = workspaces_claim
        self.permissions_claim = permissions_claim

    async def verify(self, token: str) -> tuple[Caller, int]:
        """The caller a valid token stands for and its expiry; `Refusal` or `KeysUnavailable`."""
        if len(token) > MAX_TOKEN_CHARS:
            raise invalid_token("the token is too long")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise invalid_token("the token is not a well-formed JWT") from None
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise invalid_token(f"tokens signed with {str(alg)[:20]!r} are not accepted")
        if "crit" in header:
            raise invalid_token("the token has critical header parameters this server does not understand")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise invalid_token("the token's key id is not a string")
        key = await self.keys.key(kid, alg)
        if key is None:
            raise invalid_token("the token is signed with a key the issuer does not publish")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise invalid_token("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise invalid_token("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise invalid_token("the token was not issued for this server (audience)") from None
        except jwt.InvalidIssuerError:
            raise invalid_token("the token comes from another issuer") from None
        except jwt.InvalidSignatureError:
            raise invalid_token("the token's signature does not verify") from None
        except jwt.MissingRequiredClaimError as exc:
            raise invalid_token(f"the token lacks the {exc.claim!r} claim") from None
        except jwt.PyJWTError:
            raise invalid_token("the token is malformed") from None
        return self._caller(claims), int(claims["exp"])

    def _caller(self, claims: Mapping[str, Any]) -> Caller:
        granted = _claim_strings(claims.get("scope", claims.get("scp")))
        if not granted & self.scopes.both():
            raise Refusal(
                403,
                f"the token grants neither {self.scopes.read!r} nor {self.scopes.write!r}",
                error="insufficient_scope",
            )
        subject = str(claims["sub"])
        name = next(
            (str(claims[k]) for k in ("preferred_username", "name", "email") if claims.get(k)), subject
        )
        workspaces = None
        if self.workspaces_claim is not None:
            listed = _claim_strings(claims.get(self.workspaces_claim))
            workspaces = None if "*" in listed else listed
        policy = ToolPolicy()
        if self.permissions_claim is not None and self.permissions_claim in claims:
            # {"allow": [...], "deny": [...], "read_only": ...}: the tokens file's keys.
            stated = claims[self.permissions_claim]
            try:
                if not isinstance(stated, dict) or set(stated) - POLICY_KEYS:
                    raise ValueError(f"holds an object with only {', '.join(sorted(POLICY_KEYS))}")
                policy = parse_policy(stated, f"the {self.permissions_claim!r} claim")
            except ValueError as exc:
                raise invalid_token(
                    f"the token's {self.permissions_claim!r} claim is not a policy: {exc}"
                ) from None
        return Caller(
            subject=f"oauth:{self.issuer}#{subject}",
            name=name,
            source="oauth",
            scopes=granted,
            workspaces=workspaces,
            can_write=self.scopes.write in granted,
            claims=claims,
            policy=policy,
        )


def _claim_strings(value: Any) -> frozenset[str]:
    """A space-separated string (`scope`) or a list (`scp`, custom claims) as a set of strings."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(v for v in value if isinstance(v, str) and v)
    return frozenset()
