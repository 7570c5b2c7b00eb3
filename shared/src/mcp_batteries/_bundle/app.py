"""The bundle's ASGI app: every server at `/<name>/mcp`, `/healthz`, `/status`, one lifespan.

Each server is a `Mount`: the same MCP endpoint a single server serves (the SDK's Streamable
HTTP app built by `mcp_batteries._transport.http.mcp_endpoint`, with its resumable-SSE store and Host/Origin
checks), behind the bundle's one authenticator, with a life of its own:

- a mounted app's lifespan never runs, so the bundle's lifespan runs each server's session
  manager, which opens the server's services (pools, watchers) — each mount in its own task;
- a server whose services fail to start (a database that refuses connections) is `failed`: its
  path answers 503 with the reason and `/status` shows it, while the others serve;
- on shutdown (`drain`), new calls get 503, calls in flight finish (bounded), then each mount's
  session manager stops, which closes its sessions and its services.

Host and Origin are checked as for a single server (`mcp_batteries._transport.hosts.HostGuard`, around the
whole bundle). The dispatcher matches exact paths: `/<name>/mcp`, the RFC 9728 metadata of each mount at
`/.well-known/oauth-protected-resource/<name>/mcp` (when OAuth is on), `/healthz` (no token, for
load balancers), `/status` and `/metrics` (Prometheus, `mcp_batteries._ops`; both behind the same
sign-in as the servers). Any other path is behind
that sign-in too: a caller without a valid token gets the same 401 wherever it knocks, so it
learns nothing about what is mounted; a signed-in caller gets 404 naming the servers' paths.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_batteries._core.version import distribution_version
from mcp_batteries._ops.observe import Ops
from mcp_batteries._protocol import sdk
from mcp_batteries._protocol.frames import Reply, error_reply, send_reply
from mcp_batteries._safety.redact import redact_text
from mcp_batteries._signin.auth import Authenticator, AuthMiddleware, metadata_path, protected_resource_route
from mcp_batteries._transport.events import EventStores
from mcp_batteries._transport.hosts import HostGuard
from mcp_batteries._transport.http import is_call
from mcp_batteries._transport.sessions import SessionForwarder

if TYPE_CHECKING:
    from mcp_batteries._core.app import BatteriesServer
    from mcp_batteries._entry.definition import ServerDefinition

__all__ = ["BundleApp", "Mount", "MountState"]

logger = logging.getLogger(__name__)

MountState = Literal["starting", "ready", "failed", "stopping", "stopped"]

#: The JSON-RPC error code of a request refused because its server cannot serve it now.
UNAVAILABLE_CODE = -32603


#: Answers of the bundle's own are about now: never cached by a proxy.
NO_STORE = (b"cache-control", b"no-store")


async def send_json(send: Send, status: int, body: Any) -> None:
    await send_reply(send, Reply(json.dumps(body).encode(), status), [NO_STORE])


async def refuse(send: Send, status: int, message: str, *, retry_after: int | None = None) -> None:
    """A JSON-RPC error body, as MCP clients show it to the person."""
    headers = [NO_STORE] + ([(b"retry-after", str(retry_after).encode())] if retry_after is not None else [])
    await send_reply(send, error_reply(None, UNAVAILABLE_CODE, message, status=status), headers)


def _first_message(exc: BaseException) -> str:
    """The innermost first message of an exception (groups included), for `/status` and the 503
    body: through the one redaction, since a driver's error may quote its connection string."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    cause = exc.__cause__
    text = str(exc) or type(exc).__name__
    if cause is not None and str(cause) and str(cause) not in text:
        text = f"{text}: {cause}"
    return redact_text(" ".join(text.split()))[:500]


@dataclass(eq=False)
class Mount:
    """One server in the bundle: its endpoint, and the life of its session manager and services."""

    definition: ServerDefinition[Any]
    #: None when the server could not even be built (then the mount is failed from the start).
    server: BatteriesServer | None
    path: str
    #: The server's MCP endpoint (the SDK app and what wraps it), without the bundle's sign-in.
    endpoint: ASGIApp | None
    #: The resumable-SSE event stores of its sessions (None: stateless, or not built).
    events: EventStores | None = None
    #: With a bus: forwards requests for sessions other replicas hold (`_transport.sessions`).
    forwarder: SessionForwarder | None = None
    state: MountState = "starting"
    reason: str | None = None
    calls_in_flight: int = 0
    _settled: anyio.Event = field(default_factory=anyio.Event)
    _stop: anyio.Event = field(default_factory=anyio.Event)
    _stopped: anyio.Event = field(default_factory=anyio.Event)
    _idle: anyio.Event = field(default_factory=anyio.Event)

    @classmethod
    def failed(cls, definition: ServerDefinition[Any], path: str, reason: str) -> Mount:
        return cls(
            definition=definition,
            server=None,
            path=path,
            endpoint=None,
            state="failed",
            reason=redact_text(reason),
        )

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def writing_tools(self) -> Collection[str]:
        return self.server.writing_tools if self.server is not None else ()

    @property
    def sessions(self) -> int:
        if self.state != "ready" or self.server is None or self.server.settings.stateless:
            return 0
        return sdk.open_sessions(self.server.mcp.session_manager)

    def status(self) -> dict[str, Any]:
        report: dict[str, Any] = {
            "name": self.name,
            "version": self.server.mcp.version if self.server is not None else self.definition.version,
            "path": self.path,
            "state": self.state,
            "sessions": self.sessions,
            "calls_in_flight": self.calls_in_flight,
            # What the sessions' resumable streams keep (bounded: see mcp_batteries._transport.events).
            "event_store_bytes": self.events.total_bytes if self.events is not None else 0,
        }
        if self.forwarder is not None:
            # Requests for sessions other replicas hold, passed on to them (docs/deploy.md).
            report["forwarded"] = self.forwarder.forwarded
        if self.reason is not None:
            report["reason"] = self.reason
        if self.server is not None:
            for name, part in self.server.reports.items():
                report[name] = part()
        return report

    @property
    def parts_degraded(self) -> bool:
        """Whether a part of a ready server is not working (its change bus is unreachable)."""
        if self.server is None or self.state != "ready":
            return False
        return any(part().get("state") not in (None, "connected") for part in self.server.reports.values())

    async def run(self) -> None:
        """The mount's life: its session manager (and so its services) from start to `stop()`."""
        if self.server is None:
            self._settled.set()
            self._stopped.set()
            return
        try:
            async with self.server.mcp.session_manager.run():
                self.state = "ready"
                self._settled.set()
                logger.info("%s is ready at %s", self.name, self.path)
                await self._stop.wait()
                self.state = "stopping"
        except Exception as exc:
            # Failing to start (or crashing) is this mount's own: the others keep serving.
            was = "crashed" if self._settled.is_set() else "failed to start"
            self.state, self.reason = "failed", f"{was}: {_first_message(exc)}"
            logger.error("%s failed: %s", self.name, self.reason, exc_info=logger.isEnabledFor(logging.DEBUG))
        finally:
            if self.state != "failed":
                self.state = "stopped"
            self._settled.set()
            self._stopped.set()

    async def wait_settled(self) -> None:
        await self._settled.wait()

    async def stop(self) -> None:
        self._stop.set()
        await self._stopped.wait()

    async def wait_idle(self) -> None:
        while self.calls_in_flight:
            await self._idle.wait()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.state != "ready" or self.endpoint is None:
            await self._unavailable(send)
            return
        if not is_call(scope):
            await self.endpoint(scope, receive, send)
            return
        self.calls_in_flight += 1
        try:
            await self.endpoint(scope, receive, send)
        finally:
            self.calls_in_flight -= 1
            if not self.calls_in_flight:
                self._idle.set()
                self._idle = anyio.Event()

    async def _unavailable(self, send: Send) -> None:
        if self.state == "starting":
            await refuse(send, 503, f"{self.name} is starting; try again in a moment", retry_after=1)
        elif self.state == "failed":
            await refuse(send, 503, f"{self.name} is not available: it {self.reason}")
        else:
            await refuse(send, 503, f"{self.name} is shutting down", retry_after=5)


class BundleApp:
    """The ASGI app of `mcp-batteries serve` (see the module docstring)."""

    def __init__(
        self,
        mounts: Sequence[Mount],
        *,
        authenticator: Authenticator | None,
        ops: Ops | None = None,
        startup_timeout: float = 30.0,
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
    ) -> None:
        self.mounts = list(mounts)
        #: What uvicorn serves: the bundle behind the Host/Origin checks a single server has
        #: (everything but /healthz). A malformed allow-list entry is a ConfigError here.
        self.asgi: ASGIApp = HostGuard(self, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
        self.authenticator = authenticator
        self.ops = ops
        self.startup_timeout = startup_timeout
        self.draining = False
        self.version = distribution_version("mcp-batteries")
        self._routes: dict[str, ASGIApp] = {"/healthz": self._healthz}
        self._routes["/status"] = self._signed_in(self._status, "/status", ())
        if ops is not None and ops.metrics is not None:
            # Behind the same sign-in as /status (a scraper gets a token of its own).
            self._routes["/metrics"] = self._signed_in(ops.metrics_app, "/status", ())
        # Only a signed-in caller learns what is mounted: without a valid token, an unknown path
        # gets the same 401 as a mounted one (the challenge names /status's metadata).
        self._unknown_path = self._signed_in(self._not_found, "/status", ())
        for mount in self.mounts:
            self._routes[mount.path] = self._signed_in(mount, mount.path, mount.writing_tools)
            if authenticator is not None and authenticator.oauth is not None:
                route = protected_resource_route(authenticator, mount.path)
                self._routes[metadata_path(mount.path)] = route.handle
        if authenticator is not None and authenticator.oauth is not None:
            self._routes[metadata_path("/status")] = protected_resource_route(authenticator, "/status").handle

    def _signed_in(self, app: ASGIApp, resource_path: str, writing_tools: Collection[str]) -> ASGIApp:
        """`app` behind the bundle's sign-in (the same for every mount); the metadata is served
        by the bundle itself, at the root, for every mount."""
        if self.authenticator is None:
            return app
        return AuthMiddleware(
            app,
            self.authenticator,
            resource_path=resource_path,
            writing_tools=writing_tools,
            serve_metadata=False,
            on_refusal=self.ops.auth_refused if self.ops is not None else None,
        )

    # -- requests -------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets: closing without accepting refuses them
        route = self._routes.get(scope["path"], self._unknown_path)
        if self.draining and scope["path"] != "/healthz":
            await refuse(send, 503, "the server is shutting down", retry_after=5)
            return
        await route(scope, receive, send)

    async def _not_found(self, scope: Scope, receive: Receive, send: Send) -> None:
        paths = ", ".join(mount.path for mount in self.mounts)
        await refuse(send, 404, f"no MCP server at {scope['path']}; the servers are at: {paths}")

    async def _healthz(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_json(send, 200, {"status": "draining" if self.draining else "ok", "version": self.version})

    async def _status(self, scope: Scope, receive: Receive, send: Send) -> None:
        servers = [mount.status() for mount in self.mounts]
        ready = sum(1 for server in servers if server["state"] == "ready")
        overall = "ok" if ready == len(servers) else ("degraded" if ready else "unavailable")
        if overall == "ok" and any(mount.parts_degraded for mount in self.mounts):
            overall = "degraded"  # serving, but changes seen by other replicas may not arrive
        if self.draining:
            overall = "draining"
        await send_json(send, 200, {"status": overall, "version": self.version, "servers": servers})

    # -- life -----------------------------------------------------------------------------------
    def advertise(self, base_url: str) -> None:
        """The base URL the other replicas reach this one at, for the sessions it holds."""
        for mount in self.mounts:
            if mount.forwarder is not None:
                mount.forwarder.advertise_url = base_url

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with anyio.create_task_group() as tg:
            for mount in self.mounts:
                tg.start_soon(mount.run, name=f"mount {mount.name}")
            # Serve once every mount is ready or failed; a slow one answers 503 until it settles.
            with anyio.move_on_after(self.startup_timeout):
                for mount in self.mounts:
                    await mount.wait_settled()
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
            assert message["type"] == "lifespan.shutdown"
            await self.drain(grace=0)
        if self.ops is not None:
            self.ops.close()
        for mount in self.mounts:
            if mount.forwarder is not None:
                await mount.forwarder.close()
        await send({"type": "lifespan.shutdown.complete"})

    async def drain(self, grace: float) -> None:
        """Refuse new calls, let calls in flight finish (at most `grace` seconds), then stop every
        mount: its sessions close (streams end) and its services close."""
        self.draining = True
        with anyio.move_on_after(grace if math.isfinite(grace) else None):
            for mount in self.mounts:
                await mount.wait_idle()
        busy = {mount.name: mount.calls_in_flight for mount in self.mounts if mount.calls_in_flight}
        if busy:
            logger.warning("stopping with calls still in flight: %s", busy)
        async with anyio.create_task_group() as tg:
            for mount in self.mounts:
                tg.start_soon(mount.stop)
