"""Test kit for OAuth: a stand-in authorization server on 127.0.0.1 that mints access tokens.

    with TestIssuer() as issuer:                       # RSA, EC and Ed25519 keys, served on loopback
        token = issuer.mint(scope="mcp:read")          # a valid RS256 access token for AUDIENCE
        bad = issuer.mint(exp_in=-3600)                # expired; see `mint` for every knob
        issuer.add_key("rsa-2")                        # rotation: a new key appears in the JWKS
        issuer.jwks_hits                               # how often servers fetched the JWKS

It serves RFC 8414 metadata (`/.well-known/oauth-authorization-server`), OpenID metadata
(`/.well-known/openid-configuration`) and the JWKS (`/jwks.json`) from a thread
(`http.server`), so a server under test, in this process or another, can fetch them while the
test awaits its client. Nothing here is used outside tests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

__all__ = ["AUDIENCE", "KeyKind", "TestIssuer", "b64url"]

#: The audience the test tokens are minted for (pass it as --oauth-audience).
AUDIENCE = "https://mcp.test/mcp"

KeyKind = Literal["RSA", "EC", "Ed25519"]
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey

_DEFAULT_ALG = {"RSA": "RS256", "EC": "ES256", "Ed25519": "EdDSA"}


_generated: dict[tuple[str, KeyKind], PrivateKey] = {}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TestIssuer:
    """Signing keys, a JWKS, issuer metadata on loopback, and a token mint."""

    __test__ = False  # not a pytest test class

    def __init__(self, *, metadata: Literal["oauth", "openid", "both"] = "both", path: str = "") -> None:
        self._keys: dict[str, tuple[KeyKind, PrivateKey]] = {}
        self.published: set[str] = set()
        self.metadata = metadata
        self.jwks_hits = 0
        self.metadata_hits = 0
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self.port = self._http.server_address[1]
        self.issuer = f"http://127.0.0.1:{self.port}{path}"
        self.jwks_url = f"http://127.0.0.1:{self.port}/jwks.json"
        # A short poll interval: shutting down waits for the serving loop's next look.
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, name="test-issuer", daemon=True
        )
        self.add_key("rsa-1", "RSA")
        self.add_key("ec-1", "EC")
        self.add_key("ed-1", "Ed25519")

    def __enter__(self) -> TestIssuer:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    # -- keys
    def add_key(self, kid: str, kind: KeyKind = "RSA", *, publish: bool = True) -> None:
        key = _generated.get((kid, kind))
        if key is None:  # RSA keys take a while to make: one per name and kind per process
            if kind == "RSA":
                key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            elif kind == "EC":
                key = ec.generate_private_key(ec.SECP256R1())
            else:
                key = ed25519.Ed25519PrivateKey.generate()
            _generated[(kid, kind)] = key
        with self._lock:
            self._keys[kid] = (kind, key)
            if publish:
                self.published.add(kid)

    def publish(self, kid: str) -> None:
        with self._lock:
            self.published.add(kid)

    def public_pem(self, kid: str) -> bytes:
        return (
            self._keys[kid][1]
            .public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )

    def jwks(self) -> dict[str, Any]:
        keys = []
        with self._lock:
            for kid in sorted(self.published):
                _, key = self._keys[kid]
                public = key.public_key()
                jwk: dict[str, Any]
                if isinstance(public, rsa.RSAPublicKey):
                    jwk = RSAAlgorithm.to_jwk(public, as_dict=True)
                elif isinstance(public, ec.EllipticCurvePublicKey):
                    jwk = ECAlgorithm.to_jwk(public, as_dict=True)
                else:
                    jwk = OKPAlgorithm.to_jwk(public, as_dict=True)
                keys.append({**jwk, "kid": kid, "use": "sig"})
        return {"keys": keys}

    # -- tokens
    def claims(
        self,
        *,
        sub: str = "alice",
        scope: str | None = "mcp:read mcp:write",
        aud: str | list[str] | None = AUDIENCE,
        iss: str | None = None,
        exp_in: float | None = 300,
        nbf_in: float | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {"iss": iss or self.issuer, "sub": sub, "iat": now, "jti": uuid.uuid4().hex}
        if aud is not None:
            claims["aud"] = aud
        if scope is not None:
            claims["scope"] = scope
        if exp_in is not None:
            claims["exp"] = now + int(exp_in)
        if nbf_in is not None:
            claims["nbf"] = now + int(nbf_in)
        claims.update(extra or {})
        return claims

    def mint(
        self,
        kid: str = "rsa-1",
        *,
        alg: str | None = None,
        header: Mapping[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """A token signed by key `kid` (with its default algorithm unless `alg`); see `claims`."""
        kind, key = self._keys[kid]
        algorithm = alg or _DEFAULT_ALG[kind]
        return jwt.encode(
            self.claims(**claims),
            key,
            algorithm=algorithm,
            headers={"kid": kid, "typ": "at+jwt", **(header or {})},
        )

    def mint_unsigned(self, **claims: Any) -> str:
        """`alg: none`: no signature at all."""
        head = b64url(json.dumps({"alg": "none", "typ": "JWT", "kid": "rsa-1"}).encode())
        body = b64url(json.dumps(self.claims(**claims)).encode())
        return f"{head}.{body}."

    def mint_hs256_with_public_key(self, kid: str = "rsa-1", **claims: Any) -> str:
        """The RS/HS confusion attack: HMAC-signed with the published public key as the secret."""
        head = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
        body = b64url(json.dumps(self.claims(**claims)).encode())
        signature = hmac.new(self.public_pem(kid), f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{b64url(signature)}"

    def tamper(self, token: str, **changes: Any) -> str:
        """`token` with its payload changed (say, more scopes) and the original signature kept."""
        head, body, signature = token.split(".")
        payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        payload.update(changes)
        return f"{head}.{b64url(json.dumps(payload).encode())}.{signature}"

    # -- serving
    def _document(self, path: str) -> dict[str, Any] | None:
        origin = f"http://127.0.0.1:{self.port}"
        suffix = self.issuer[len(origin) :]
        metadata = {
            "issuer": self.issuer,
            "jwks_uri": self.jwks_url,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
        }
        if path == "/jwks.json":
            self.jwks_hits += 1
            return self.jwks()
        oauth = {f"/.well-known/oauth-authorization-server{suffix}"}
        openid = {f"/.well-known/openid-configuration{suffix}", f"{suffix}/.well-known/openid-configuration"}
        if (path in oauth and self.metadata in ("oauth", "both")) or (
            path in openid and self.metadata in ("openid", "both")
        ):
            self.metadata_hits += 1
            return metadata
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                document = issuer._document(self.path)
                body = json.dumps(document if document is not None else {"error": "not found"}).encode()
                self.send_response(200 if document is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
