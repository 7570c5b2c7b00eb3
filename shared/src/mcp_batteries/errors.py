"""The one error hierarchy every server raises.

    BatteriesError                 a failure the client should read: becomes a tool error (isError)
    ├── InvalidInput               an argument was rejected; the message says what is allowed
    ├── AccessDenied               outside what the operator allowed (paths, hosts, read-only)
    ├── NotFound                   the named thing does not exist
    ├── LimitExceeded              a size, count or time limit was hit; the message names the limit
    └── UpstreamError              the system behind the server failed (database, HTTP peer, git)
    ConfigError                    bad configuration at start-up: one line on stderr, exit status 2

Domain modules raise these and never import `mcp`; the server layer turns a `BatteriesError`
into an `isError` tool result carrying exactly this message, and resource/prompt lookups into
JSON-RPC errors with the right codes.
"""

from __future__ import annotations

__all__ = [
    "AccessDenied",
    "BatteriesError",
    "ConfigError",
    "InvalidInput",
    "LimitExceeded",
    "NotFound",
    "UpstreamError",
]


class BatteriesError(Exception):
    """A failure whose message is written for the model: what was rejected and what is allowed."""


class InvalidInput(BatteriesError):
    """An argument was malformed or out of range."""


class AccessDenied(BatteriesError):
    """The request reaches outside what the operator allowed."""


class NotFound(BatteriesError):
    """The file, table, resource or object named does not exist."""


class LimitExceeded(BatteriesError):
    """A configured size, count or time limit was reached."""


class UpstreamError(BatteriesError):
    """The database, web server or repository behind the server reported an error."""


class ConfigError(Exception):
    """Invalid configuration detected at start-up; reported as one line, exit status 2."""
