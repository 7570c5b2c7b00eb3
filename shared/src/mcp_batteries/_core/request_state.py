"""The keys that protect 2026-07-28 multi-round requests' `requestState`, shared by replicas.

A tool that asks its caller something (a confirmation before destroying, `_core/confirm`) answers
with an `InputRequiredResult` whose `requestState` the client echoes on its retry. The SDK seals
that state (AES-256-GCM, bound to the request, its arguments, the caller and this server's name;
`mcp.server.request_state`) and refuses a retry whose state was altered, expired (10 minutes) or
sealed under another key. The key is random per process unless configured: then a retry that a
load balancer sends to another replica is refused. Every replica of a deployment must therefore
be given the same key(s): `--request-state-key-file FILE` (one key a line, private to its owner
like a tokens file; the first line seals, every line unseals, so a key is rotated by adding the
new one second, then first, then removing the old) or `MCP_BATTERIES_REQUEST_STATE_KEY` (keys
comma-separated). Servers may share one key: the state names the server it was sealed for.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.request_state import RequestStateSecurity

from mcp_batteries._safety.secret_files import check_private
from mcp_batteries.errors import ConfigError

__all__ = ["KEY_ENV", "MIN_KEY_CHARS", "load_keys", "request_state_security"]

#: The keys from the environment, comma-separated (the same variable for every server).
KEY_ENV = "MCP_BATTERIES_REQUEST_STATE_KEY"
#: The SDK's floor: 32 bytes of secret randomness (64 hex digits are 32 bytes twice over).
MIN_KEY_CHARS = 32
_FLAG = "--request-state-key-file"
_HOW_TO_MAKE_ONE = 'make one with: python3 -c "import secrets; print(secrets.token_hex(32))"'


def load_keys(key_file: Path | None) -> list[str]:
    """The configured keys, sealing key first: from `key_file`, else the environment; [] if none."""
    if key_file is not None:
        path = key_file.expanduser()
        check_private(path, _FLAG)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{_FLAG}: cannot read {key_file}: {exc.strerror}") from exc
        keys = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        if not keys:
            raise ConfigError(f"{_FLAG}: {key_file} holds no key; {_HOW_TO_MAKE_ONE}")
        where = f"{_FLAG} {key_file}"
    else:
        keys = [part.strip() for part in os.environ.get(KEY_ENV, "").split(",") if part.strip()]
        where = KEY_ENV
    for number, key in enumerate(keys, start=1):
        if len(key.encode("utf-8")) < MIN_KEY_CHARS:
            raise ConfigError(
                f"{where}: key {number} is {len(key)} characters; a request-state key needs at least "
                f"{MIN_KEY_CHARS} characters of secret randomness; {_HOW_TO_MAKE_ONE}"
            )
    if len(set(keys)) != len(keys):
        raise ConfigError(f"{where}: the same key is given twice")
    return keys


def request_state_security(key_file: Path | None) -> RequestStateSecurity:
    """The SDK's protection under the configured keys, or a random per-process key."""
    keys = load_keys(key_file)
    if not keys:
        return RequestStateSecurity.ephemeral()
    return RequestStateSecurity(keys=keys)
