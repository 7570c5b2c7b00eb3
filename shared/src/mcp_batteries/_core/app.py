"""The one way to build an MCP Batteries server on the SDK's `MCPServer`.

`BatteriesServer` adds what every server needs and `MCPServer` lacks: tools that disappear in
read-only mode or by the operator's allow/deny lists; annotations that are always set;
domain errors (`mcp_batteries.errors`) turned into `isError` results and correct JSON-RPC codes;
legacy `resources/subscribe` next to modern `subscriptions/listen`, with truthful capabilities;
and `notify_*` methods that reach every interested client of both protocol eras.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server import MCPServer, ServerRequestContext
from mcp.server.caching import CacheHint
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
)
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    GetPromptResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
    Resource,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from mcp.types import Tool as MCPTool
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.applications import Starlette

from mcp_batteries._core.cache_hints import DEFAULT_CACHE_HINTS, ReadHints
from mcp_batteries._core.confirm import Confirm, Consent, consent_parameter
from mcp_batteries._core.identity import Caller, current_caller
from mcp_batteries._core.notify import RESOURCE_LIST, Interest, Notifier
from mcp_batteries._core.request_state import request_state_security
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._core.tasks_extension import TasksExtension, TaskSupport
from mcp_batteries._core.version import distribution_version
from mcp_batteries._protocol import sdk
from mcp_batteries._protocol.frames import FrameGuard
from mcp_batteries._protocol.strict import strict_arguments
from mcp_batteries._safety.bounds import bound_reply
from mcp_batteries._safety.names import scrub
from mcp_batteries._safety.redact import redact_text
from mcp_batteries._work.tasks import TaskLimits, TaskStore, announcing
from mcp_batteries.errors import AccessDenied, BatteriesError, ConfigError, InvalidInput, NotFound

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

#: Lists one page of dynamic resources: (session, cursor) -> (resources, next cursor).
ResourceLister = Callable[[Any, str | None], Awaitable[tuple[list[Resource], str | None]]]

#: Checks a URI a client (its session) asks to subscribe to; raises a BatteriesError to refuse it.
SubscriptionCheck = Callable[[Any, str], Awaitable[None]]


#: Reads a resource by URI for a session: -> (text or bytes, MIME type).
ResourceReader = Callable[[Any, str], Awaitable[tuple[str | bytes, str]]]


class _Server(MCPServer[Any]):
    """`MCPServer` with MCP Batteries' error mapping at its public seams.

    Tools, resources and prompts fail alike: a `BatteriesError` reaches the client with exactly
    its message (a tool as an `isError` result; a resource or prompt as JSON-RPC `-32602` for
    NotFound, InvalidInput and AccessDenied, `-32603` for the others); anything else is logged
    on stderr with its traceback and answered without internals.
    """

    #: URI prefix -> reader, for resources whose MIME type is only known when read.
    readers: dict[str, ResourceReader]
    #: Per-caller filter: the registered tools that change things, and the scope they need.
    writing_tools: set[str]
    write_scope: str
    #: Tools the operator turned off (not registered), and by which setting.
    turned_off: dict[str, str]

    #: The server's short name in permission patterns (`server:tool`) and metrics.
    server_name: str

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        caller = current_caller()
        if caller.can_write and caller.policy.unrestricted:
            return tools
        return [tool for tool in tools if self.may_call(caller, tool.name)]

    def may_call(self, caller: Caller, name: str) -> bool:
        """Whether `caller` may see and call the tool `name` (scope and tool policy)."""
        return caller.may_call(self.server_name, name, writes=name in self.writing_tools)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if not sdk.has_tool(self, name):
            # The 2025-11-25 specification: an unknown tool is a protocol error (-32602), as an
            # unknown prompt is, not a tool result. The SDK echoes the whole name back, however long.
            why = self.turned_off.get(name)
            raise MCPError(
                INVALID_PARAMS,
                f"Unknown tool: {_preview(name, 100)}"
                + (f" (turned off on this server: {why})" if why else ""),
                data={"name": _preview(name, 100)},
            )
        caller = current_caller()
        if name in self.writing_tools and not caller.can_write:
            raise ToolError(
                f"{name} changes things, so it needs the {self.write_scope!r} scope, which this "
                f"caller ({caller.name}) does not have; only the read-only tools are available"
            )
        if not caller.policy.permits(self.server_name, name, writes=name in self.writing_tools):
            # As for a tool that does not exist: the caller never saw it listed, and an answer
            # that told it apart would tell a caller what else the server could do.
            logger.info("refused %s:%s to %s (its tool policy)", self.server_name, name, caller.subject)
            raise MCPError(
                INVALID_PARAMS, f"Unknown tool: {_preview(name, 100)}", data={"name": _preview(name, 100)}
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, BatteriesError):
                raise ToolError(said(cause)) from cause
            if isinstance(cause, ValidationError):
                raise ToolError(
                    f"invalid arguments for {name}: {describe_validation_error(cause)}"
                ) from cause
            raise

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        try:
            for prefix, reader in getattr(self, "readers", {}).items():
                if str(uri).startswith(prefix):
                    session = context.session if context is not None else None
                    try:
                        content, mime_type = await reader(session, str(uri))
                    except (BatteriesError, MCPError, ResourceError):
                        raise
                    except Exception as exc:
                        # Like the SDK's own resources: the message names only the URI, the
                        # traceback goes to the log.
                        raise UnexpectedResourceError(f"Error reading resource {uri}") from exc
                    return [ReadResourceContents(content=content, mime_type=mime_type)]
            return await super().read_resource(uri, context)
        except BatteriesError as exc:
            raise _resource_error(exc, uri) from exc
        except ResourceError as exc:
            if isinstance(exc.__cause__, BatteriesError):
                raise _resource_error(exc.__cause__, uri) from exc.__cause__
            raise

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        # The SDK reports an unknown prompt or bad arguments as code 0; the spec says -32602.
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as exc:
            domain = _batteries_cause(exc)
            if domain is not None:
                code = INVALID_PARAMS if isinstance(domain, _CLIENT_ERRORS) else INTERNAL_ERROR
                raise MCPError(code, said(domain), data={"prompt": name}) from exc
            if _crash_cause(exc) is not None:
                logger.error("prompt %r raised an unexpected exception", name, exc_info=_crash_cause(exc))
                raise MCPError(
                    INTERNAL_ERROR, f"Error rendering prompt {name}; the server's log has the details"
                ) from exc
            raise MCPError(INVALID_PARAMS, str(exc), data={"prompt": name}) from exc

    def streamable_http_app(self, **options: Any) -> Starlette:
        """The SDK's app, with every POST body checked as a JSON-RPC frame first and every
        outgoing message encoded safely (see `mcp_batteries._protocol.frames`)."""
        sdk.harden_http_writes()
        app = super().streamable_http_app(**options)
        app.add_middleware(
            FrameGuard,
            path=options.get("streamable_http_path", "/mcp"),
            max_body=options.get("max_request_body_size", DEFAULT_MAX_REQUEST_BODY_SIZE),
        )
        return app


def said(error: BaseException) -> str:
    """A domain error's message as the client gets it: exactly its text, through the one
    redaction (a git or driver error may quote a remote's or database's URL with its password)."""
    return redact_text(str(error))


#: Errors of the client's making: JSON-RPC `-32602` when they end a resource read or a prompt.
_CLIENT_ERRORS = (NotFound, InvalidInput, AccessDenied)


def _resource_error(exc: BatteriesError, uri: Any) -> Exception:
    if isinstance(exc, NotFound):
        return ResourceNotFoundError(said(exc))
    if isinstance(exc, _CLIENT_ERRORS):
        return MCPError(INVALID_PARAMS, said(exc), data={"uri": str(uri)})
    return ResourceError(said(exc))


def _batteries_cause(exc: BaseException) -> BatteriesError | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BatteriesError):
            return seen
        seen = seen.__cause__
    return None


def _crash_cause(exc: BaseException) -> BaseException | None:
    """The original exception under the SDK's "Error rendering prompt" wrapper, if any."""
    inner = exc.__cause__
    if isinstance(inner, ValueError) and str(inner).startswith("Error rendering prompt"):
        return inner.__cause__
    return None


def describe_validation_error(error: ValidationError, *, limit: int = 5) -> str:
    """`head: Input should be a valid integer (got true); path: Field required` and the like."""
    parts = []
    problems = error.errors(include_url=False)
    for problem in problems[:limit]:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem["loc"]).lstrip(".")
        text = f"{where or 'arguments'}: {problem['msg']}"
        if problem["type"] != "missing" and "input" in problem:
            text += f" (got {_preview(problem['input'])})"
        parts.append(text)
    if len(problems) > limit:
        parts.append(f"and {len(problems) - limit} more")
    return "; ".join(parts)


def _preview(value: Any, limit: int = 60) -> str:
    try:
        shown = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        shown = repr(value)
    shown = scrub(shown)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


@dataclass(eq=False)
class _ServiceHost:
    """The services' one opening: how many lifespans use it, and whether it is ready."""

    users: int = 0
    ready: anyio.Event = field(default_factory=anyio.Event)
    all_left: anyio.Event = field(default_factory=anyio.Event)
    failure: BaseException | None = None


def on_the_loop(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` as a coroutine function, so the SDK calls it on the event loop, not in a worker thread.

    The signature and annotations stay `fn`'s (`functools.wraps`), so the arguments' schema, the
    `Context` parameter and the output schema are the same. A coroutine function is returned as is.
    """
    if inspect.iscoroutinefunction(fn):
        return fn

    @functools.wraps(fn)
    async def inline(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return inline


class BatteriesServer:
    """An MCP server with MCP Batteries' conventions; server modules only register on it."""

    def __init__(
        self,
        settings: ServerSettings,
        *,
        instructions: str,
        title: str | None = None,
        subscriptions: SubscriptionCheck | None = None,
    ) -> None:
        """`subscriptions`: pass a check to serve resource subscriptions; None serves none.

        The server's name is `mcp-<settings.server_name>` and its version that of the installed
        distribution (`ServerSettings.distribution_name()`).
        """
        self.settings = settings
        self.interest = Interest()
        self.bus = InMemorySubscriptionBus()
        self.notifier = Notifier(self.bus, self.interest)
        self._services: list[Callable[[], AbstractAsyncContextManager[Any]]] = []
        self._host: _ServiceHost | None = None
        self._lifespan_lock = anyio.Lock()
        self._declared_tools: list[str] = []
        self._confirming_declared: list[str] = []
        self._check_subscription = subscriptions
        #: How to get the rest of a reply the runtime cut (`bounds`): by "method:name" or URI prefix.
        self._paging: dict[str, str] = {}
        self._resource_paging: list[tuple[str, str]] = []
        #: Long tool calls as tasks (docs/long-work.md): the tools that may become tasks, and
        #: the store that runs them and keeps their results, per caller, bounded.
        self.task_tools: dict[str, TaskSupport] = {}
        self.tasks = TaskStore(TaskLimits(promote_after=settings.task_after, ttl_s=settings.task_ttl))
        self.read_hints = ReadHints()
        #: What the server adds to the bundle's `/status` (e.g. "bus": the change bus's state);
        #: a report whose "state" is not "connected" makes the bundle's status "degraded".
        self.reports: dict[str, Callable[[], dict[str, Any]]] = {}
        #: What the server's live resources watch now, as (paths watched, OS watch roots): one
        #: reading per `LiveResources`, summed into `/metrics` (`mcp_watched_paths`).
        self.watch_readings: list[Callable[[], tuple[int, int]]] = []
        self.mcp = _Server(
            f"mcp-{settings.server_name}",
            title=title,
            version=distribution_version(settings.distribution_name()),
            instructions=instructions,
            lifespan=self._lifespan,
            subscriptions=self.bus,
            log_level=settings.log_level.upper(),  # type: ignore[arg-type]
            extensions=[TasksExtension(self.tasks, self.task_tools)] if settings.tasks else [],
            cache_hints=DEFAULT_CACHE_HINTS,
            # Keys every replica shares, or one per process (mcp_batteries._core.request_state).
            request_state_security=request_state_security(settings.request_state_key_file),
        )
        #: Tools that ask before destroying (`confirm=`), with their policy (docs/confirmation.md).
        self.confirming_tools: dict[str, str] = {}
        if settings.tasks:
            self.service(self.tasks.running)
        #: Tools that change things: hidden from, and refused to, callers who may not write.
        self.writing_tools: set[str] = set()
        self.mcp.writing_tools = self.writing_tools
        self.mcp.turned_off = {}
        self.mcp.write_scope = settings.oauth_write_scope
        self.mcp.server_name = settings.server_name
        self._listen = ListenHandler(self.bus)
        sdk.add_request_handler(
            self.mcp, "subscriptions/listen", SubscriptionsListenRequestParams, self._on_listen
        )
        # Outermost but for the SDK's OpenTelemetry span (the first middleware), so it answers for
        # everything inside, other middleware included, and what it logs carries the request's
        # trace id (`mcp_batteries._protocol.trace`).
        self.mcp.middleware.insert(1, self._answer_every_request)
        self.mcp.middleware.append(self._track_legacy_connections)
        # Innermost: every tool result, resource read and prompt, whatever produced it.
        self.mcp.middleware.append(self._bound_reply)
        self.mcp.middleware.append(self.read_hints.middleware)
        # Stateless HTTP gives legacy clients no channel for unsolicited messages: advertising
        # subscribe or listChanged there would promise notifications that can never arrive.
        self.legacy_notifications = not (settings.transport == "http" and settings.stateless)
        if self.legacy_notifications:
            sdk.advertise_legacy_list_changed(self.mcp, tools=True, resources=True, prompts=False)
            # Handshake-era clients may set a log level; the capability must be declared before
            # any notifications/message is sent (logging is deprecated in 2026-07-28).
            sdk.add_request_handler(self.mcp, "logging/setLevel", SetLevelRequestParams, self._on_set_level)
            if subscriptions is not None:
                sdk.add_request_handler(
                    self.mcp, "resources/subscribe", SubscribeRequestParams, self._on_subscribe
                )
                sdk.add_request_handler(
                    self.mcp, "resources/unsubscribe", UnsubscribeRequestParams, self._on_unsubscribe
                )

    # -- registration ----------------------------------------------------------------------
    def tool(
        self,
        *,
        title: str,
        read_only: bool,
        destructive: bool = False,
        idempotent: bool = False,
        open_world: bool = False,
        name: str | None = None,
        structured_output: bool | None = None,
        description: str | None = None,
        paging: str | None = None,
        task_support: TaskSupport = "forbidden",
        confirm: Callable[..., Any] | None = None,
        cheap: bool = False,
    ) -> Callable[[F], F]:
        """Register a tool unless read-only mode or the operator's tool lists exclude it.

        Every annotation is stated explicitly, so a client never falls back to the spec's
        pessimistic defaults (destructive, open-world) by omission. `paging`: how to get the rest
        when the runtime cuts a reply over the cap (e.g. "call again with a larger start_index"),
        quoted in the note it adds (`mcp_batteries._safety.bounds`).

        `task_support="optional"`: the call may run long; a client that supports tasks
        (2026-07-28) gets a task once the call has worked `--task-after` seconds (see
        `mcp_batteries._core.tasks_extension`). Its body should be the work itself: checks
        and questions made through `Resolve` parameters run before, in the request.

        `confirm=describe`: the tool destroys what cannot be recovered, and asks its user first
        (`mcp_batteries._core.confirm`): `describe` takes the tool's arguments by name (and the
        `Context` if it wants) and says what the call would destroy, or None; the tool's one
        parameter annotated `Consent` says whether to go ahead, by the operator's `--confirm`.

        `cheap=True`: a plain (`def`) function that does no I/O and returns in microseconds runs
        on the event loop; without it the SDK hands every call of a plain function to a worker
        thread, which costs more than such a tool's work (`bench/http_calls.py`).
        """

        def register(fn: F) -> F:
            tool_name = name or fn.__name__
            self._declared_tools.append(tool_name)
            if confirm is not None:
                self._confirming_declared.append(tool_name)
            excluded_by = self._excluded(tool_name, read_only=read_only)
            if excluded_by:
                self.mcp.turned_off[tool_name] = excluded_by
                return fn
            if not read_only:
                self.writing_tools.add(tool_name)
            if paging is not None:
                self._paging[f"tools/call:{tool_name}"] = paging
            if task_support != "forbidden":
                self.task_tools[tool_name] = task_support
            if confirm is not None:
                policy = self.settings.confirm_policy(tool_name)
                fn.__annotations__[consent_parameter(fn)] = Annotated[
                    Consent, Confirm(confirm, tool_name, policy)
                ]
                self.confirming_tools[tool_name] = policy
            served: Callable[..., Any] = on_the_loop(fn) if cheap else fn
            self.mcp.add_tool(
                announcing(served) if task_support != "forbidden" else served,
                name=tool_name,
                title=title,
                # The model reads this: the docstring without its source indentation.
                description=description or inspect.cleandoc(fn.__doc__ or ""),
                annotations=ToolAnnotations(
                    title=title,
                    read_only_hint=read_only,
                    destructive_hint=destructive and not read_only,
                    idempotent_hint=idempotent or read_only,
                    open_world_hint=open_world,
                ),
                structured_output=structured_output,
            )
            # `true` is not an integer and "5" is not a number: see `mcp_batteries._protocol.strict`.
            model = sdk.tool_argument_model(self.mcp, tool_name)
            sdk.set_tool_argument_model(self.mcp, tool_name, strict_arguments(model))
            return fn

        return register

    def _excluded(self, tool_name: str, *, read_only: bool) -> str:
        """The setting that turns this tool off ("" when none does)."""
        s = self.settings
        if s.read_only and not read_only:
            return "it runs read-only"
        if s.tools is not None and tool_name not in s.tools:
            return "its tools setting leaves it out"
        return "its disable_tools setting names it" if tool_name in s.disable_tools else ""

    def resource(self, uri: str, *, paging: str | None = None, **options: Any) -> Callable[[F], F]:
        """Register a static resource or a template (`{name}`, `{+path}`), as `MCPServer.resource`;
        `paging` as for `tool`."""
        if paging is not None:
            self._resource_paging.append((uri.split("{", 1)[0], paging))
        return self.mcp.resource(uri, **options)

    def prompt(
        self, name: str | None = None, *, paging: str | None = None, **options: Any
    ) -> Callable[[F], F]:
        """Register a prompt, as `MCPServer.prompt`; bad arguments become JSON-RPC -32602;
        `paging` as for `tool`."""
        register = self.mcp.prompt(name, **options)

        def wrapper(fn: F) -> F:
            if paging is not None:
                self._paging[f"prompts/get:{name or fn.__name__}"] = paging
            return register(fn)

        return wrapper

    def completion(self) -> Callable[[F], F]:
        """Register the completion handler (prompt arguments and resource template variables).

        The handler is called as `handler(ref, argument, context)`, plus `session=` when it
        declares a `session` parameter (to complete within the client's own scope, e.g. roots).
        A `BatteriesError` becomes -32602; anything else is logged and answered without internals.
        """

        def register(fn: F) -> F:
            wants_session = "session" in inspect.signature(fn).parameters

            async def handler(
                ctx: ServerRequestContext[Any], params: CompleteRequestParams
            ) -> CompleteResult:
                extra = {"session": ctx.session} if wants_session else {}
                try:
                    result = await fn(params.ref, params.argument, params.context, **extra)
                except BatteriesError as exc:
                    raise MCPError(INVALID_PARAMS, said(exc)) from exc
                except MCPError:
                    raise
                except Exception as exc:
                    logger.exception("completion of %r failed", params.argument.name)
                    raise MCPError(INTERNAL_ERROR, f"cannot complete {params.argument.name!r}") from exc
                return CompleteResult(completion=result if result is not None else Completion(values=[]))

            sdk.add_request_handler(self.mcp, "completion/complete", CompleteRequestParams, handler)
            return fn

        return register

    def read_resources_with(self, prefix: str, reader: ResourceReader, *, paging: str | None = None) -> None:
        """Read URIs starting with `prefix` through `reader`, which also names the MIME type;
        `paging` as for `tool`."""
        self.mcp.readers = {**getattr(self.mcp, "readers", {}), prefix: reader}
        if paging is not None:
            self._resource_paging.append((prefix, paging))

    def cache(self, uri_pattern: str, hint: CacheHint) -> None:
        """Tell 2026-07-28 clients how long they may reuse a `resources/read` of a URI that
        `uri_pattern` (a regular expression) matches whole, and whether across callers (the
        first matching pattern wins; see `mcp_batteries._core.cache_hints` for the defaults)."""
        self.read_hints.add(uri_pattern, hint)

    def list_resources_with(self, lister: ResourceLister, *, cache: CacheHint | None = None) -> None:
        """Serve `resources/list` from `lister`, paginated, after any static resources; `cache`
        is how long a 2026-07-28 client may reuse a page (default: ask again each time)."""

        async def handler(
            ctx: ServerRequestContext[Any], params: PaginatedRequestParams
        ) -> ListResourcesResult:
            cursor = params.cursor if params is not None else None
            static = await self.mcp.list_resources() if cursor is None else []
            try:
                dynamic, next_cursor = await lister(ctx.session, cursor)
            except BatteriesError as exc:
                raise MCPError(INVALID_PARAMS, said(exc)) from exc
            result = ListResourcesResult(resources=static + dynamic, next_cursor=next_cursor)
            if cache is None:
                return result
            # Set explicitly, so the SDK's server-wide default does not replace it.
            return result.model_copy(update={"ttl_ms": cache.ttl_ms, "cache_scope": cache.scope})

        sdk.add_request_handler(self.mcp, "resources/list", PaginatedRequestParams, handler)

    def service(self, factory: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        """Run an async context (a pool, a watcher) for as long as the server runs.

        Entered once, in registration order, before the first request; exited in reverse order
        after the last connection closes, in the same task, so a service may own a task group.
        """
        self._services.append(factory)

    def check_tool_lists(self) -> None:
        """Refuse `--tools`/`--disable-tools` names that no tool has (a typo hides nothing)."""
        known = set(self._declared_tools)
        named = set(self.settings.tools or ()) | set(self.settings.disable_tools)
        unknown = sorted(named - known)
        if unknown:
            raise ConfigError(
                f"unknown tool name(s) {', '.join(unknown)}; "
                f"this server's tools are: {', '.join(sorted(known))}"
            )
        asking = set(self._confirming_declared)
        confirm_named = {item.partition("=")[0] for item in self.settings.confirm_tools}
        not_asking = sorted(confirm_named - asking)
        if not_asking:
            raise ConfigError(
                f"--confirm-tools names {', '.join(not_asking)}, which never ask before destroying; "
                f"this server's tools that do: {', '.join(sorted(asking)) or 'none'}"
            )

    @asynccontextmanager
    async def _lifespan(self, _: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        # The SDK enters the lifespan once per stdio process or HTTP app, but once per connection
        # for in-process clients. Services (pools, watchers, HTTP clients) are process-wide: the
        # first entry owns them — it opens them in its own task, so a service may hold a task
        # group — and on leaving it waits for every later entry to leave before closing them.
        async with self._lifespan_lock:
            host = self._host
            owner = host is None
            if host is None:
                host = self._host = _ServiceHost()
            host.users += 1
        if not owner:
            await host.ready.wait()
            if host.failure is not None:
                raise RuntimeError("the server's services failed to start") from host.failure
            try:
                yield {}
            finally:
                host.users -= 1
                if host.users == 0:
                    host.all_left.set()
            return
        try:
            async with AsyncExitStack() as stack:
                try:
                    for factory in self._services:
                        await stack.enter_async_context(factory())
                except BaseException as exc:
                    host.failure = exc
                    raise
                finally:
                    host.ready.set()
                try:
                    yield {}
                finally:
                    with anyio.CancelScope(shield=True):
                        host.users -= 1
                        if host.users > 0:
                            await host.all_left.wait()
                        async with self._lifespan_lock:
                            self._host = None
        finally:
            async with self._lifespan_lock:
                if self._host is host:
                    self._host = None

    # -- notifications (the one API server code uses) ------------------------------------------
    async def notify_resource_updated(self, uri: str) -> None:
        await self.notifier.resource_updated(uri)

    async def notify_resources_list_changed(self, connection: sdk.Connection | None = None) -> None:
        """Tell every client (or only `connection`, e.g. after its roots narrowed what it sees)."""
        await self.notifier.resources_list_changed(connection)

    async def notify_tools_list_changed(self) -> None:
        await self.notifier.tools_list_changed()

    # -- protocol handlers -------------------------------------------------------------------
    async def _answer_every_request(self, ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        """Every request gets an answer that says what happened, and none leaks internals.

        The SDK answers a handshake-era request sent before `initialize` with "Invalid request
        parameters" and empty data, pydantic errors in protocol params with the same words, and
        an unexpected exception in a low-level handler with its raw message (code 0).
        """
        if ctx.request_id is None:
            return await call_next(ctx)
        connection = sdk.connection_of(ctx.session)
        if (
            not connection.initialize_accepted
            and ctx.method not in ("initialize", "ping")
            and sdk.lowlevel_server(self.mcp).get_request_handler(ctx.method) is not None
        ):
            raise MCPError(
                INVALID_REQUEST,
                f"{ctx.method} was sent before initialize: a handshake-era client must send "
                "initialize (then notifications/initialized) first; a 2026-07-28 client sends "
                "_meta with its protocolVersion on every request instead",
                data={"method": ctx.method},
            )
        try:
            return await call_next(ctx)
        except MCPError:
            raise
        except ValidationError as exc:
            raise MCPError(
                INVALID_PARAMS, f"Invalid params for {ctx.method}: {describe_validation_error(exc)}"
            ) from exc
        except BatteriesError as exc:
            code = INVALID_PARAMS if isinstance(exc, _CLIENT_ERRORS) else INTERNAL_ERROR
            raise MCPError(code, said(exc)) from exc
        except Exception as exc:
            logger.exception("%s raised an unexpected exception", ctx.method)
            raise MCPError(
                INTERNAL_ERROR,
                f"Internal error while handling {ctx.method}; the server's log has the details",
            ) from exc

    async def _bound_reply(self, ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        """No tool result, resource read or prompt exceeds the reply cap (`mcp_batteries._safety.bounds`)."""
        result = await call_next(ctx)
        if ctx.method not in ("tools/call", "resources/read", "prompts/get") or not isinstance(result, dict):
            return result
        params = ctx.params or {}
        if ctx.method == "resources/read":
            uri = str(params.get("uri", ""))
            subject = f"resource {_preview(uri, 200)}"
            matches = [
                (len(prefix), hint) for prefix, hint in self._resource_paging if uri.startswith(prefix)
            ]
            paging = max(matches)[1] if matches else None
        else:
            name = str(params.get("name", ""))
            subject = f"{'tool' if ctx.method == 'tools/call' else 'prompt'} {_preview(name, 100)}"
            paging = self._paging.get(f"{ctx.method}:{name}")
        return bound_reply(ctx.method, result, self.settings.max_result_bytes, subject=subject, paging=paging)

    async def _track_legacy_connections(self, ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        # Every handshake-era connection with a back-channel hears list_changed, subscribed or not.
        if self.legacy_notifications:
            connection = sdk.connection_of(ctx.session)
            if (
                connection.protocol_version not in MODERN_PROTOCOL_VERSIONS
                and connection.has_standalone_channel
            ):
                await self.notifier.track(connection)
        return await call_next(ctx)

    async def _checked(self, session: Any, uri: str) -> None:
        if self._check_subscription is None:
            raise MCPError(INVALID_PARAMS, "this server has no subscribable resources")
        try:
            await self._check_subscription(session, uri)
        except BatteriesError as exc:
            raise MCPError(INVALID_PARAMS, f"cannot subscribe to {uri}: {exc}", data={"uri": uri}) from exc

    async def _on_subscribe(
        self, ctx: ServerRequestContext[Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        connection = sdk.connection_of(ctx.session)
        if not connection.has_standalone_channel:
            raise MCPError(
                INVALID_REQUEST,
                "resources/subscribe needs a connection that can carry notifications "
                "(stdio or stateful HTTP); this one is stateless",
            )
        await self._checked(ctx.session, params.uri)
        await self.notifier.subscribe(connection, params.uri)
        return EmptyResult()

    async def _on_set_level(
        self, ctx: ServerRequestContext[Any], params: SetLevelRequestParams
    ) -> EmptyResult:
        sdk.connection_of(ctx.session).state["mcp_batteries.log_level"] = params.level
        return EmptyResult()

    async def _on_unsubscribe(
        self, ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        await self.notifier.unsubscribe(sdk.connection_of(ctx.session), params.uri)
        return EmptyResult()

    async def _on_listen(
        self, ctx: ServerRequestContext[Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        wanted = params.notifications
        uris = list(dict.fromkeys(wanted.resource_subscriptions or ()))
        for uri in uris:
            await self._checked(ctx.session, uri)
        keys = uris + ([RESOURCE_LIST] if wanted.resources_list_changed else [])
        await self.interest.add(keys)
        try:
            return await self._listen(ctx, params)
        finally:
            # The stream usually ends by cancellation (the client left): releasing watches must
            # still complete.
            with anyio.CancelScope(shield=True):
                await self.interest.remove(keys)
