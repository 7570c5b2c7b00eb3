"""robots.txt (RFC 9309) with protego, fetched through the same SSRF-guarded client, cached per origin.

What an answer for /robots.txt means (RFC 9309 §2.3.1, plus the reference fetch server's choice):

    2xx                      parse it
    401, 403                 disallow everything (the site refuses anonymous robots; as the reference does)
    429, 5xx, unreachable    disallow everything (RFC 9309: "unreachable" means assume complete disallow)
    other 4xx (404, 410...)  allow everything (no robots.txt)

Unreachable answers are cached briefly so a transient outage does not block an origin for long.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from mcp_batteries.errors import AccessDenied
from protego import Protego

from .cache import LRUCache

ROBOTS_TTL_SECONDS = 3600.0
UNREACHABLE_TTL_SECONDS = 60.0
MAX_ROBOTS_BYTES = 512 * 1024  # RFC 9309 asks parsers to handle at least 500 KiB
_ADVICE = "the operator can start the server with --ignore-robots-txt"


@dataclass(frozen=True)
class RobotsAnswer:
    """The response to GET /robots.txt, or the error that prevented one."""

    status: int | None
    text: str = ""
    error: str | None = None


RobotsFetch = Callable[[str], Awaitable[RobotsAnswer]]


@dataclass(frozen=True)
class _Rules:
    robots_url: str
    parser: Protego | None  # None: every path allowed (allow_all) or refused (refusal set)
    text: str = ""
    refusal: str | None = None  # why everything is disallowed


def robots_url_for(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))


def product_token(user_agent: str) -> str:
    """The robots.txt name for our user agent: the word in parentheses if any, else the product name."""
    inside = re.search(r"\(([A-Za-z0-9_-]+)[;)]", user_agent)
    if inside:
        return inside.group(1)
    return re.split(r"[/\s]", user_agent.strip(), maxsplit=1)[0] or "*"


class RobotsChecker:
    def __init__(self, user_agent: str, cache_entries: int = 256) -> None:
        self._user_agent = user_agent
        self._token = product_token(user_agent)
        self._cache: LRUCache[_Rules] = LRUCache(cache_entries, 64 * 1024 * 1024)

    async def ensure_allowed(self, url: str, fetch: RobotsFetch) -> None:
        """Raise AccessDenied if robots.txt of url's origin (fetched by `fetch` if not cached) forbids url."""
        robots_url = robots_url_for(url)
        if url == robots_url:
            return
        rules = self._cache.get(robots_url)
        if rules is None:
            rules = self._interpret(robots_url, await fetch(robots_url))
            ttl = (
                UNREACHABLE_TTL_SECONDS
                if rules.refusal and "unreachable" in rules.refusal
                else ROBOTS_TTL_SECONDS
            )
            self._cache.put(robots_url, rules, size=len(rules.text) + 256, ttl=ttl)
        if rules.refusal is not None:
            raise AccessDenied(
                f"{url} may not be fetched: {rules.refusal}, which by the robots.txt standard (RFC 9309) "
                f"means no robot may fetch anything from this site; {_ADVICE}."
            )
        if rules.parser is None or rules.parser.can_fetch(url, self._user_agent):
            return
        group = self._matched_group(rules.parser)
        rule = _disallow_rule_matching(rules.text, url)
        rule_text = f"rule 'Disallow: {rule}'" if rule is not None else "its rules"
        raise AccessDenied(
            f"{url} is disallowed by {rules.robots_url} {rule_text} for user-agent '{group}'. "
            f"Do not retry this URL; {_ADVICE}."
        )

    def _interpret(self, robots_url: str, answer: RobotsAnswer) -> _Rules:
        if answer.error is not None or answer.status is None:
            reason = f"{robots_url} is unreachable ({answer.error or 'no response'})"
            return _Rules(robots_url, None, refusal=reason)
        status = answer.status
        if status in (401, 403):
            return _Rules(robots_url, None, refusal=f"{robots_url} answered HTTP {status} (access refused)")
        if status == 429 or status >= 500:
            reason = f"{robots_url} is unreachable (HTTP {status}); try again later"
            return _Rules(robots_url, None, refusal=reason)
        if 400 <= status < 500 or not 200 <= status < 300:
            return _Rules(robots_url, None)
        return _Rules(robots_url, Protego.parse(answer.text), text=answer.text)

    def _matched_group(self, parser: Protego) -> str:
        # protego does not expose which group applied; read it if this version still has the helper.
        matcher = getattr(parser, "_get_matching_rule_set", None)
        if matcher is not None:
            try:
                rule_set = matcher(self._user_agent)
                name = getattr(rule_set, "user_agent", None)
                if isinstance(name, str):
                    return name if name != "*" else f"* (which includes {self._token})"
            except Exception:
                pass
        return self._token


def _disallow_rule_matching(robots_text: str, url: str) -> str | None:
    """The longest Disallow pattern in the file that matches url (the one that decided, usually)."""
    best: str | None = None
    for line in robots_text.splitlines():
        field, _, value = line.split("#", 1)[0].partition(":")
        pattern = value.strip()
        if field.strip().lower() != "disallow" or not pattern:
            continue
        probe = Protego.parse(f"User-agent: *\nDisallow: {pattern}\n")
        if not probe.can_fetch(url, "probe") and (best is None or len(pattern) > len(best)):
            best = pattern
    return best
