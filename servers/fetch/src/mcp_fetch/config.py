"""Settings of mcp-fetch: the common flags plus how the server fetches (limits, safety, identity)."""

from __future__ import annotations

from mcp_batteries.settings import NameList, ServerSettings
from pydantic import Field

from mcp_fetch.client import FetchSettings

_DEFAULTS = FetchSettings()


class FetchServerSettings(ServerSettings):
    server_name = "fetch"

    user_agent: str = Field(
        _DEFAULTS.user_agent,
        description="User-Agent header sent with every request; its product token is matched in robots.txt.",
    )
    proxy: str | None = Field(
        None,
        description="HTTP(S) proxy URL for all requests, e.g. http://proxy:3128 (the proxy resolves names).",
    )
    connect_timeout: float = Field(
        _DEFAULTS.connect_timeout, gt=0, description="Seconds allowed to resolve and connect to a host."
    )
    read_timeout: float = Field(
        _DEFAULTS.read_timeout,
        gt=0,
        description="Seconds of silence allowed between reads; with --connect-timeout, also the "
        "deadline of each request as a whole.",
    )
    max_download_bytes: int = Field(
        _DEFAULTS.max_download_bytes,
        ge=1024,
        description="Largest response body downloaded (after decompression); bigger pages are refused.",
    )
    max_redirects: int = Field(
        _DEFAULTS.max_redirects, ge=0, le=50, description="Most redirects followed for one fetch."
    )
    allow_host: NameList = Field(
        default_factory=list,
        description="Host name or CIDR network that may be fetched even though it is private/internal "
        "(e.g. intranet.example.com, 10.0.0.0/8).",
    )
    allow_private: bool = Field(
        False,
        description="Allow fetching private, loopback and link-local addresses (disables SSRF protection).",
    )
    ignore_robots_txt: bool = Field(
        False, description="Do not check robots.txt before fetching (the fetch prompt never checks it)."
    )
    cache_entries: int = Field(
        _DEFAULTS.cache_entries,
        ge=1,
        description="Converted pages kept in memory so paging with start_index does not refetch.",
    )


def fetch_settings(settings: FetchServerSettings) -> FetchSettings:
    """The domain layer's settings from the server's."""
    return FetchSettings(
        user_agent=settings.user_agent,
        proxy=settings.proxy or None,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        max_download_bytes=settings.max_download_bytes,
        max_redirects=settings.max_redirects,
        allow_hosts=tuple(settings.allow_host),
        allow_private=settings.allow_private,
        ignore_robots_txt=settings.ignore_robots_txt,
        cache_entries=settings.cache_entries,
    )
