"""Settings every server shares, loaded from flags, environment and a TOML file.

Precedence, highest first: command-line flags, environment variables `MCP_<SERVER>_<FIELD>`
(e.g. `MCP_FILESYSTEM_READ_ONLY=true`), the TOML file named by `--config` (or
`MCP_<SERVER>_CONFIG`), then the defaults below. A server subclasses `ServerSettings` to add
its own fields; `mcp_batteries._core.cli` turns every field into a flag automatically.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from mcp_batteries._safety.redact import remember_secrets

#: The TOML file for the settings being built; a context variable because pydantic-settings
#: builds its sources from the class, not from the instance.
_config_file: ContextVar[Path | None] = ContextVar("mcp_batteries_config_file", default=None)
#: Or the settings' table already read from a file (one server's table in the bundle's file).
_config_table: ContextVar[Mapping[str, Any] | None] = ContextVar("mcp_batteries_config_table", default=None)


def split_names(value: Any) -> Any:
    """ "a, b,c" -> ["a", "b", "c"]; list items are split too (`--tools a,b --tools c`)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)):
        return [part.strip() for item in value for part in str(item).split(",") if part.strip()]
    return value


def split_paths(value: Any) -> Any:
    """One string (an environment variable) -> its comma-separated paths; a list stays as it is,
    so a path given as a flag or a TOML array may itself contain a comma."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


#: A list of names (tools, hosts, ...): comma-separated anywhere, repeatable as a flag.
NameList = Annotated[list[str], NoDecode, BeforeValidator(split_names)]
#: A list of paths or URLs: repeatable as a flag or a TOML array; comma-separated in the environment.
PathList = Annotated[list[str], NoDecode, BeforeValidator(split_paths)]

S = TypeVar("S", bound="ServerSettings")

#: When a tool that destroys asks first (docs/confirmation.md).
ConfirmPolicy = Literal["auto", "destructive", "never"]
CONFIRM_POLICIES: tuple[str, ...] = ("auto", "destructive", "never")

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class ServerSettings(BaseSettings):
    """The flags common to every MCP Batteries server."""

    model_config = SettingsConfigDict(extra="forbid", validate_default=True)

    #: The server's short name (e.g. "filesystem"): the env prefix, the mount path in the bundle,
    #: and the console scripts (`mcp-batteries-filesystem`, `mcp-filesystem`).
    server_name: ClassVar[str] = "server"
    #: The distribution that installs the server; None means the convention `mcp-batteries-NAME`
    #: (a server written outside this project sets its own).
    distribution: ClassVar[str | None] = None

    transport: Literal["stdio", "http"] = Field(
        "stdio", description="How clients connect: stdio (a client starts this process) or http."
    )
    host: str = Field(
        "127.0.0.1",
        description="HTTP: address to bind. Non-loopback needs auth.",
        json_schema_extra={"metavar": "ADDRESS"},
    )
    port: int = Field(8000, ge=0, le=65535, description="HTTP: port to bind (0 picks a free one).")
    path: str = Field(
        "/mcp", description="HTTP: the MCP endpoint path.", json_schema_extra={"metavar": "PATH"}
    )
    stateless: bool = Field(
        False,
        description="HTTP: no sessions (legacy clients then get no change notifications).",
    )
    read_only: bool = Field(False, description="Hide and refuse every tool that changes anything.")
    max_result_bytes: int = Field(
        16 * 1024 * 1024,
        ge=16 * 1024,
        description=(
            "Most bytes one tool result, resource read or prompt may carry; the server cuts a larger "
            "one and says how to get the rest."
        ),
        json_schema_extra={"metavar": "BYTES"},
    )
    tools: NameList | None = Field(
        None,
        description="Only offer these tools (default: all).",
        json_schema_extra={"metavar": "TOOL"},
    )
    disable_tools: NameList = Field(
        default_factory=list, description="Never offer these tools.", json_schema_extra={"metavar": "TOOL"}
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "warning", description="Logging threshold; logs always go to stderr."
    )
    # Long tool calls as tasks (io.modelcontextprotocol/tasks; mcp_batteries._work.tasks, docs/long-work.md).
    tasks: bool = Field(
        True, description="Let clients that support tasks follow long tool calls as tasks (2026-07-28)."
    )
    task_after: float = Field(
        1.0,
        ge=0,
        description="Seconds a long call works before it becomes a task (for a client that supports tasks).",
    )
    task_ttl: float = Field(
        3600.0, gt=0, description="Seconds a finished task's result stays readable by its caller."
    )
    # Confirmation before destruction (mcp_batteries._core.confirm, docs/confirmation.md).
    confirm: ConfirmPolicy = Field(
        "auto",
        description=(
            "Ask the user before a tool destroys what cannot be recovered: auto (ask when the client "
            "can be asked, else act as asked), destructive (ask; refuse when the client cannot be "
            "asked) or never."
        ),
    )
    confirm_tools: NameList = Field(
        default_factory=list,
        description="Per-tool policy over --confirm, as TOOL=POLICY (e.g. write_file=never).",
        json_schema_extra={"metavar": "TOOL=POLICY"},
    )
    request_state_key_file: Path | None = Field(
        None,
        description=(
            "HTTP: file holding the key(s) that protect multi-round requests' state, one per line, "
            "the first sealing (or set MCP_BATTERIES_REQUEST_STATE_KEY); the same on every replica "
            "(default: a random key per process)."
        ),
    )
    auth_token_file: Path | None = Field(
        None,
        description="HTTP: file holding the bearer token clients must send (or set MCP_AUTH_TOKEN).",
    )
    insecure_no_auth: bool = Field(
        False, description="HTTP: allow binding a non-loopback address without authentication."
    )
    # -- authentication beyond the static token (mcp_batteries._signin.auth; docs/configuration.md) --
    tokens_file: Path | None = Field(
        None,
        description=(
            "HTTP: TOML file mapping bearer tokens (or their SHA-256) to users, their workspaces "
            "and scopes; reloaded when it changes."
        ),
    )
    oauth_issuer: str | None = Field(
        None,
        description="HTTP: accept OAuth 2.1 JWT access tokens from this authorization server (its iss).",
        json_schema_extra={"metavar": "URL"},
    )
    oauth_audience: str | None = Field(
        None,
        description="HTTP: the audience (aud) access tokens must name; required with --oauth-issuer.",
        json_schema_extra={"metavar": "AUD"},
    )
    oauth_jwks_url: str | None = Field(
        None,
        description="HTTP: the issuer's JWKS URL (default: found through the issuer's metadata).",
        json_schema_extra={"metavar": "URL"},
    )
    oauth_read_scope: str = Field(
        "mcp:read",
        description="HTTP: scope granting the read-only tools.",
        json_schema_extra={"metavar": "SCOPE"},
    )
    oauth_write_scope: str = Field(
        "mcp:write", description="HTTP: scope granting every tool.", json_schema_extra={"metavar": "SCOPE"}
    )
    oauth_workspaces_claim: str | None = Field(
        None,
        description="HTTP: access-token claim listing the caller's workspaces (default: all workspaces).",
        json_schema_extra={"metavar": "CLAIM"},
    )
    oauth_permissions_claim: str | None = Field(
        None,
        description=(
            "HTTP: access-token claim holding the caller's tool policy, an object with allow, deny "
            "and read_only (default: every tool the scopes grant)."
        ),
        json_schema_extra={"metavar": "CLAIM"},
    )
    public_url: str | None = Field(
        None,
        description=(
            "HTTP: the URL clients reach this server at, scheme://host[:port] only (behind a TLS "
            "proxy), for OAuth metadata (default: taken from each request)."
        ),
        json_schema_extra={"metavar": "URL"},
    )
    allowed_hosts: NameList = Field(
        default_factory=list,
        description=(
            "HTTP: extra Host header values accepted (DNS-rebinding protection), e.g. mcp.example.com:*."
        ),
        json_schema_extra={"metavar": "HOST[:PORT]"},
    )
    allowed_origins: NameList = Field(
        default_factory=list,
        description="HTTP: Origin header values accepted from browsers, e.g. https://app.example.com.",
        json_schema_extra={"metavar": "ORIGIN"},
    )
    # HTTP limits (see mcp_batteries._transport.http_limits and docs/configuration.md).
    max_connections: int = Field(
        1000,
        ge=1,
        description=(
            "HTTP: most connections open at once (kept below ulimit -n). The longest-idle one makes room "
            "for a new one; when all are busy a new one gets 503."
        ),
    )
    keep_alive_timeout: float = Field(
        10.0, gt=0, description="HTTP: seconds a connection may stay open with no request under way."
    )
    request_timeout: float = Field(
        30.0,
        gt=0,
        description="HTTP: seconds a client has to send a whole request (headers and body) once it starts.",
    )
    session_idle_timeout: float = Field(
        1800.0,
        ge=0,
        description=(
            "HTTP: end a session after this many seconds with no request and no open stream (0: never)."
        ),
    )
    max_sessions: int = Field(
        1000, ge=1, description="HTTP: most sessions open at once; a new one gets 503 until one ends."
    )
    bus: str | None = Field(
        None,
        description=(
            "HTTP: share change notifications with the other replicas through this PostgreSQL "
            "(postgresql://...: LISTEN/NOTIFY) or Redis (redis://...: pub/sub) server; off for one process."
        ),
        json_schema_extra={"metavar": "URL"},
    )
    bus_channel: str = Field(
        "mcp_batteries",
        min_length=1,
        max_length=40,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="HTTP: the bus channels' prefix (PREFIX.NAME per server); replicas must agree.",
        json_schema_extra={"metavar": "NAME"},
    )
    advertise_url: str | None = Field(
        None,
        description=(
            "HTTP: with --bus, the base URL (http://HOST:PORT) the other replicas reach this one at, "
            "to forward requests for the sessions it holds (default: its bound host and port)."
        ),
        json_schema_extra={"metavar": "URL"},
    )
    # Operating it for a team (mcp_batteries._ops; docs/deploy.md): metrics, audit, limits.
    metrics: bool = Field(
        True,
        description="HTTP: serve Prometheus metrics at /metrics, behind the same sign-in as MCP.",
    )
    metrics_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description=(
            "HTTP: also serve /metrics on this port WITHOUT sign-in (for a scraper inside a private "
            "network; 0: any free port), at --metrics-host."
        ),
        json_schema_extra={"metavar": "PORT"},
    )
    metrics_host: str = Field(
        "127.0.0.1",
        description=(
            "HTTP: the address of the --metrics-port listener (default this machine only; anyone "
            "who reaches it reads the metrics)."
        ),
        json_schema_extra={"metavar": "HOST"},
    )
    audit_log: Path | None = Field(
        None,
        description=(
            "HTTP: append one JSON line per call that changes something to this file, written "
            "before the reply; reopened on SIGHUP."
        ),
        json_schema_extra={"metavar": "PATH"},
    )
    audit_all: bool = Field(
        False, description="HTTP: audit every tool call, not only those that change things."
    )
    audit_fsync: bool = Field(
        False,
        description="HTTP: fsync the audit log after each line (survives a power cut, costs a disk sync).",
    )
    audit_max_bytes: int = Field(
        0,
        ge=0,
        description="HTTP: rotate the audit log (PATH.1 ... PATH.5) when it would pass this size (0: never).",
        json_schema_extra={"metavar": "BYTES"},
    )
    rate_limit: float = Field(
        0.0,
        ge=0,
        description=(
            "HTTP: calls per second each identity may make to a server, bursts up to that many "
            "(0: no limit); excess gets 429 with Retry-After."
        ),
        json_schema_extra={"metavar": "CALLS_PER_SECOND"},
    )
    max_calls_in_flight: int = Field(
        0,
        ge=0,
        description=(
            "HTTP: calls each identity may have in flight at once on a server (0: no limit); excess gets 429."
        ),
        json_schema_extra={"metavar": "N"},
    )
    config: Path | None = Field(None, description="A TOML file with any of these settings.")

    @field_validator("path")
    @classmethod
    def _path_starts_with_slash(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"must start with '/', got {value!r}")
        return value

    @field_validator("advertise_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"https?://[^/?#\s@]+", value.rstrip("/")):
            raise ValueError("must be http://HOST:PORT (no path), e.g. http://10.0.0.2:8000")
        return value.rstrip("/") if value is not None else None

    @field_validator("confirm_tools")
    @classmethod
    def _tool_policies(cls, value: list[str]) -> list[str]:
        for item in value:
            tool, sep, policy = item.partition("=")
            if not sep or not tool.strip() or policy.strip() not in CONFIRM_POLICIES:
                raise ValueError(
                    f"{item!r} is not TOOL=POLICY with POLICY one of {', '.join(CONFIRM_POLICIES)} "
                    "(e.g. write_file=never)"
                )
        return [f"{t.strip()}={p.strip()}" for t, _, p in (item.partition("=") for item in value)]

    def confirm_policy(self, tool: str) -> ConfirmPolicy:
        """The confirmation policy for `tool`: its own from `confirm_tools`, else `confirm`."""
        for item in self.confirm_tools:
            name, _, policy = item.partition("=")
            if name == tool:
                return policy  # type: ignore[return-value]  # checked by _tool_policies
        return self.confirm

    @model_validator(mode="after")
    def _remember_secrets(self) -> ServerSettings:
        # Whatever a configured URL or DSN would have hidden (a password, a token) is hidden
        # wherever else it turns up, e.g. quoted by a driver's error (mcp_batteries._safety.redact).
        for value in self.__dict__.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str):
                    remember_secrets(item)
        return self

    @property
    def is_loopback(self) -> bool:
        return self.host in LOOPBACK_HOSTS or self.host.startswith("127.")

    @classmethod
    def distribution_name(cls) -> str:
        return cls.distribution or f"mcp-batteries-{cls.server_name}"

    @classmethod
    def env_prefix(cls) -> str:
        return f"MCP_{cls.server_name.upper().replace('-', '_')}_"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_table = _config_table.get()
        config_file = _config_file.get()
        if config_table is not None:
            sources.append(InitSettingsSource(settings_cls, init_kwargs=dict(config_table)))
        elif config_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config_file))
        return tuple(sources)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Each server reads its own environment namespace, e.g. MCP_FILESYSTEM_PORT.
        cls.model_config = {**cls.model_config, "env_prefix": cls.env_prefix()}


def build_settings(
    cls: type[S],
    cli_values: dict[str, Any],
    config_file: Path | None,
    *,
    config_table: Mapping[str, Any] | None = None,
) -> S:
    """Build settings with CLI values on top of environment and the TOML file.

    `config_table`: the file's values already read (the bundle passes each server its own
    table of the bundle's file); it takes the file's place in the precedence.
    """
    file_token = _config_file.set(config_file)
    table_token = _config_table.set(config_table)
    try:
        return cls(**cli_values)
    finally:
        _config_table.reset(table_token)
        _config_file.reset(file_token)
