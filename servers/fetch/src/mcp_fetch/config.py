"""Settings of mcp-fetch: the common flags plus how the server fetches (limits, safety, identity).

Everything is checked here, at start, so a mistake is one line on stderr and exit status 2 rather
than a traceback at the first fetch: the proxy URL (scheme, host, the optional SOCKS dependency),
every --allow-private-host entry (a host name, an IP address or a CIDR network), and the one mix-up
the two similar flags invite: --allowed-hosts (which Host headers the HTTP transport accepts) given
where --allow-private-host (which internal hosts fetch may reach) was meant.
"""

from __future__ import annotations

import ipaddress

from mcp_batteries.definition import NameList, ServerSettings
from mcp_batteries.errors import ConfigError
from pydantic import Field, ValidationInfo, field_validator, model_validator

from mcp_fetch.client import FetchSettings
from mcp_fetch.download import check_proxy_url
from mcp_fetch.urls import normalise_allow_entry

_DEFAULTS = FetchSettings()


class FetchServerSettings(ServerSettings):
    server_name = "fetch"

    user_agent: str = Field(
        _DEFAULTS.user_agent,
        description="User-Agent header sent with every request; its product token is matched in robots.txt.",
    )
    proxy: str | None = Field(
        None,
        description="Proxy URL for all requests: http://proxy:3128, https://... or socks5://... "
        "(SOCKS needs the socksio package). The proxy resolves names.",
        json_schema_extra={"metavar": "URL"},
    )
    connect_timeout: float = Field(
        _DEFAULTS.connect_timeout,
        gt=0,
        description="Seconds allowed to resolve and connect to a host, and to wait for a free connection.",
    )
    read_timeout: float = Field(
        _DEFAULTS.read_timeout,
        gt=0,
        description="Seconds of silence allowed between reads; with --connect-timeout, also the "
        "deadline of each request as a whole.",
    )
    fetch_timeout: float = Field(
        _DEFAULTS.fetch_timeout,
        gt=0,
        description="Seconds one fetch may take as a whole: robots.txt, every redirect and every wait "
        "for a connection included.",
    )
    max_download_bytes: int = Field(
        _DEFAULTS.max_download_bytes,
        ge=1024,
        description="Largest response body downloaded (after decompression); bigger pages are refused.",
    )
    max_document_bytes: int = Field(
        _DEFAULTS.max_document_bytes,
        ge=1024,
        description="Largest document downloaded (PDF, Office, OpenDocument, EPUB, or a body sent as "
        "application/octet-stream); other content keeps --max-download-bytes.",
    )
    document_timeout: float = Field(
        _DEFAULTS.document_timeout,
        gt=0,
        description="Seconds one document's conversion may take; the converter process is killed then.",
    )
    document_memory: int = Field(
        _DEFAULTS.document_memory_bytes // (1024 * 1024),
        ge=64,
        description="MiB of memory one document's conversion may add (its process's address space).",
        json_schema_extra={"metavar": "MIB"},
    )
    max_redirects: int = Field(
        _DEFAULTS.max_redirects, ge=0, le=50, description="Most redirects followed for one fetch."
    )
    max_fetch_connections: int = Field(
        _DEFAULTS.max_connections, ge=1, le=10_000, description="Connections open at once, over all hosts."
    )
    max_fetch_connections_per_host: int = Field(
        _DEFAULTS.max_connections_per_host,
        ge=1,
        le=1000,
        description="Connections open at once to one host (and port), so a slow host cannot take them all.",
    )
    allow_private_host: NameList = Field(
        default_factory=list,
        description="A private/internal host name, IP address or CIDR network that fetch may reach "
        "despite the SSRF protection, e.g. intranet.example.com, 10.0.0.0/8, *.corp.example.",
        json_schema_extra={"metavar": "HOST_OR_NETWORK"},
    )
    allow_host: NameList = Field(
        default_factory=list,
        description="Old name of --allow-private-host (still accepted).",
        json_schema_extra={"metavar": "HOST_OR_NETWORK"},
    )
    allow_private: bool = Field(
        False,
        description="Allow fetching every private, loopback and link-local address "
        "(turns SSRF protection off).",
    )
    ignore_robots_txt: bool = Field(
        False, description="Do not check robots.txt before fetching (the fetch prompt never checks it)."
    )
    cache_entries: int = Field(
        _DEFAULTS.cache_entries,
        ge=1,
        description="Converted pages kept in memory so paging with start_index does not refetch.",
    )

    @field_validator("allow_private_host", "allow_host")
    @classmethod
    def _valid_hosts(cls, value: list[str], info: ValidationInfo) -> list[str]:
        flag = "--" + str(info.field_name).replace("_", "-")
        normalised = []
        for entry in value:
            try:
                normalised.append(normalise_allow_entry(entry))
            except ValueError as exc:
                raise ConfigError(f"{flag}: {exc}") from None
        return normalised

    @field_validator("proxy")
    @classmethod
    def _valid_proxy(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        try:
            return check_proxy_url(value)
        except ValueError as exc:
            raise ConfigError(f"--proxy: {exc}") from None

    @model_validator(mode="after")
    def _allowed_hosts_is_not_allow_private_host(self) -> FetchServerSettings:
        if not self.allowed_hosts:
            return self
        given = ",".join(self.allowed_hosts)
        if self.transport != "http":
            raise ConfigError(
                f"--allowed-hosts {given}: that flag only applies with --transport http (it lists the Host "
                "headers the HTTP endpoint accepts); to let fetch reach a private or internal host, use "
                f"--allow-private-host {given}"
            )
        for entry in self.allowed_hosts:
            if "/" in entry:
                try:
                    ipaddress.ip_network(entry, strict=False)
                except ValueError:
                    continue
                raise ConfigError(
                    f"--allowed-hosts {entry}: a Host header is never a network; to let fetch reach the "
                    f"network {entry}, use --allow-private-host {entry}"
                )
        return self


def fetch_settings(settings: FetchServerSettings) -> FetchSettings:
    """The domain layer's settings from the server's."""
    return FetchSettings(
        user_agent=settings.user_agent,
        proxy=settings.proxy,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        fetch_timeout=settings.fetch_timeout,
        max_download_bytes=settings.max_download_bytes,
        max_document_bytes=settings.max_document_bytes,
        document_timeout=settings.document_timeout,
        document_memory_bytes=settings.document_memory * 1024 * 1024,
        max_redirects=settings.max_redirects,
        max_connections=settings.max_fetch_connections,
        max_connections_per_host=settings.max_fetch_connections_per_host,
        allow_hosts=tuple(dict.fromkeys([*settings.allow_private_host, *settings.allow_host])),
        allow_private=settings.allow_private,
        ignore_robots_txt=settings.ignore_robots_txt,
        cache_entries=settings.cache_entries,
    )
