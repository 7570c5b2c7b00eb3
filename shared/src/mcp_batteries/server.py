"""Public: what a server's `server.py` registers through.

    from mcp_batteries.server import BatteriesServer, current_caller

`BatteriesServer` is the SDK's `MCPServer` with what every server needs: tools filtered by
read-only mode and the operator's lists, annotations always set, strict arguments, domain errors
mapped, subscriptions and notifications for both protocol eras. `current_caller()` says who is
calling (the same `Caller` on stdio, with tokens or with OAuth). Integers a client sends are
held to JSON's exact range (`MAX_SAFE_INTEGER`); `cursor_offset`/`whole_number` parse the ones that
arrive as text (cursors, ids) by the same rule. `CacheHint` is how long a client may reuse a
list or a resource it read, and whether across callers (`BatteriesServer.cache`). `Consent` is
what a tool registered with `confirm=` gets: whether its user let it destroy what it would
(`mcp_batteries._core.confirm`, docs/confirmation.md).
`note_change(action=..., path=...)` tells the audit trail what the tool call being handled
changed (docs/deploy.md#audit-trail); it does nothing when the call is not audited, which
`changes_wanted()` says beforehand (to skip working out what changed when nobody reads it).
"""

from mcp.server.caching import CacheHint

from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.confirm import Consent
from mcp_batteries._core.identity import Caller, current_caller
from mcp_batteries._ops.audit import changes_wanted, note_change
from mcp_batteries._protocol.integers import MAX_SAFE_INTEGER, cursor_offset, whole_number

__all__ = [
    "MAX_SAFE_INTEGER",
    "BatteriesServer",
    "CacheHint",
    "Caller",
    "Consent",
    "changes_wanted",
    "current_caller",
    "cursor_offset",
    "note_change",
    "whole_number",
]
