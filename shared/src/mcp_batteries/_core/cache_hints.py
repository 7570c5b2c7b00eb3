"""Cache hints (SEP-2549, 2026-07-28): how long a client may reuse a list or a read, and with whom.

Results of `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` and
`resources/read` carry `ttlMs` (how long the result stays fresh) and `cacheScope` (`public`: the
same for every caller, so a shared cache may serve it to anyone; `private`: only for the caller
who asked). Handshake-era clients never see them (the SDK leaves them out of older revisions).

The runtime's defaults, by list, with the reason for each:

- `tools/list`: 5 minutes, private. The tools change only with the server's configuration (and
  a change is announced with `list_changed`), but read-only callers see fewer tools.
- `prompts/list`, `resources/templates/list`: 1 hour, public. Fixed by the server's version and
  the same for every caller.
- `resources/list`, `resources/read`: 0 (ask again each time), private. They are the server's
  data, seen through the caller's scope (roots, workspaces); each server sets what its data
  allows (`BatteriesServer.cache` for reads by URI, `list_resources_with(..., cache=)`): a file's
  content can change any second, a repository's branches change in minutes, a commit never does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["DEFAULT_CACHE_HINTS", "ReadHints"]

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS

DEFAULT_CACHE_HINTS: Mapping[CacheableMethod, CacheHint] = {
    "tools/list": CacheHint(ttl_ms=5 * MINUTE_MS, scope="private"),
    "prompts/list": CacheHint(ttl_ms=HOUR_MS, scope="public"),
    "resources/templates/list": CacheHint(ttl_ms=HOUR_MS, scope="public"),
    "resources/list": CacheHint(ttl_ms=0, scope="private"),
    "resources/read": CacheHint(ttl_ms=0, scope="private"),
}


class ReadHints:
    """Per-URI hints for `resources/read`: the first pattern that matches the whole URI wins."""

    def __init__(self) -> None:
        self._rules: list[tuple[re.Pattern[str], CacheHint]] = []

    def add(self, uri_pattern: str, hint: CacheHint) -> None:
        self._rules.append((re.compile(uri_pattern), hint))

    def hint_for(self, uri: str) -> CacheHint | None:
        for pattern, hint in self._rules:
            if pattern.fullmatch(uri):
                return hint
        return None

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Set the matching hint on a 2026-07-28 `resources/read` result (the SDK's read handler
        fills only the server-wide default)."""
        result = await call_next(ctx)
        if (
            ctx.method != "resources/read"
            or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
            or not isinstance(result, dict)
            or result.get("resultType", "complete") != "complete"
        ):
            return result
        uri = (ctx.params or {}).get("uri")
        hint = self.hint_for(uri) if isinstance(uri, str) else None
        if hint is None:
            return result
        return {**result, "ttlMs": hint.ttl_ms, "cacheScope": hint.scope}
