"""Static bearer-token authentication for the HTTP transport.

A pure ASGI middleware rather than the SDK's OAuth resource-server mode: with one shared token
there is no authorization server to advertise, and a `WWW-Authenticate` header pointing at
OAuth metadata would send clients into a discovery flow that cannot succeed.
"""

from __future__ import annotations

import hmac
import json
import os
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_batteries.errors import ConfigError

TOKEN_ENV = "MCP_AUTH_TOKEN"
#: Paths served without a token: liveness probes must not need the secret.
PUBLIC_PATHS = frozenset({"/healthz"})


def load_token(token_file: Path | None) -> str | None:
    """The token from `--auth-token-file`, else `$MCP_AUTH_TOKEN`, else None."""
    if token_file is not None:
        try:
            token = token_file.expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"--auth-token-file: cannot read {token_file}: {exc.strerror}") from exc
        if not token:
            raise ConfigError(f"--auth-token-file: {token_file} is empty")
        return token
    token = os.environ.get(TOKEN_ENV, "").strip()
    return token or None


class BearerTokenMiddleware:
    """Rejects HTTP requests without `Authorization: Bearer <token>` (constant-time compare)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        supplied = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                supplied = value
                break
        if hmac.compare_digest(supplied, self._expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32001, "message": "Unauthorized: send 'Authorization: Bearer <token>'"},
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="mcp"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
