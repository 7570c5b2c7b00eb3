"""Which tools a caller may use: allow and deny patterns over `server:tool`, and read-only servers.

One policy per caller (`Caller.policy`), from the tokens file or an OAuth claim:

```toml
[[tokens]]
user = "ci-bot"
sha256 = "..."
allow = ["git:git_*"]                 # `server:tool` glob patterns; "*" alone means every tool
deny = ["git:git_push"]               # deny wins over allow
read_only = ["filesystem"]            # these servers' writing tools are off; `true`: every server
```

The decision for a tool `T` of server `S` (the same where tools are listed and where they are
called: a caller never sees a tool it may not call), first match wins:

1. `S` is read-only for this caller (`read_only = true` or names `S`), or the caller lacks the
   write scope, and `T` changes things: refused;
2. a `deny` pattern matches `S:T`: refused;
3. an `allow` pattern matches `S:T`: allowed;
4. otherwise refused (default-deny). An entry without `allow` allows `*` (every tool), so a tokens
   file written before policies existed means what it meant.

Patterns are `fnmatch` globs, case-sensitive, matched against `server:tool` as a whole
(`git:*`, `*:read_*`, `filesystem:write_file`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

__all__ = ["EVERY_TOOL", "POLICY_KEYS", "ToolPolicy", "parse_policy"]

EVERY_TOOL = ("*",)
#: The keys of a policy, in a tokens-file entry or an OAuth claim's object.
POLICY_KEYS = frozenset({"allow", "deny", "read_only"})


@dataclass(frozen=True)
class ToolPolicy:
    """A caller's tool permissions (see the module doc for the order they are applied in)."""

    allow: tuple[str, ...] = EVERY_TOOL
    deny: tuple[str, ...] = ()
    #: True: read-only on every server; else the servers this caller may only read.
    read_only: bool | frozenset[str] = False

    def reads_only(self, server: str) -> bool:
        return self.read_only is True or (isinstance(self.read_only, frozenset) and server in self.read_only)

    def permits(self, server: str, tool: str, *, writes: bool) -> bool:
        """Whether this policy lets its caller see and call `tool` of `server`."""
        if writes and self.reads_only(server):
            return False
        qualified = f"{server}:{tool}"
        if any(_matches(pattern, qualified) for pattern in self.deny):
            return False
        return any(_matches(pattern, qualified) for pattern in self.allow)

    @property
    def unrestricted(self) -> bool:
        return self.allow == EVERY_TOOL and not self.deny and self.read_only is False


def _matches(pattern: str, qualified: str) -> bool:
    return pattern == "*" or fnmatchcase(qualified, pattern)


def parse_policy(entry: Mapping[str, Any], where: str) -> ToolPolicy:
    """The policy in `entry`'s `allow`/`deny`/`read_only` keys; ValueError names what is wrong."""
    allow = _patterns(entry.get("allow", list(EVERY_TOOL)), f"{where}: 'allow'")
    deny = _patterns(entry.get("deny", []), f"{where}: 'deny'")
    read_only = entry.get("read_only", False)
    if isinstance(read_only, bool):
        servers: bool | frozenset[str] = read_only
    elif isinstance(read_only, list) and all(isinstance(name, str) and name for name in read_only):
        servers = frozenset(read_only)
    else:
        raise ValueError(f"{where}: 'read_only' must be true, false or a list of server names")
    return ToolPolicy(allow=allow, deny=deny, read_only=servers)


def _patterns(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"{where} must be a list of 'server:tool' patterns")
    for pattern in value:
        if pattern != "*" and ":" not in pattern:
            raise ValueError(
                f"{where}: {pattern!r} names no server; write 'server:tool' (e.g. 'git:{pattern}' or "
                f"'*:{pattern}'), or '*' for every tool"
            )
    return tuple(value)
