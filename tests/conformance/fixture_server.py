"""The fixture server the official MCP conformance suite (`@modelcontextprotocol/conformance`) calls.

Every scenario of the suite calls fixtures with fixed names (tools `test_*`, resources `test://...`,
prompts `test_*`; for the tasks extension `greet`, `slow_compute`, `failing_job`, ...), written for
an "everything"-style server. This module registers them on a `BatteriesServer`, not a bare
`MCPServer`: the point is to test MCP Batteries' runtime (settings, capabilities, subscriptions,
multi-round requests, tasks, HTTP transport with DNS-rebinding protection) the way a real server
uses it. Each fixture says which scenario calls it and what that scenario asks of it.

    python tests/conformance/fixture_server.py --transport http --port 0

prints the standard banner naming the URL.
"""

from __future__ import annotations

import base64
import json
import warnings
from typing import Annotated, Any, ClassVar

import anyio
from mcp import MCPDeprecationWarning
from mcp.server.mcpserver import Context, Elicit, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Prompt, UserMessage
from mcp.server.subscriptions import PromptsListChanged
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    InputRequest,
    InputRequiredResult,
    ListRootsRequest,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._entry.definition import ServerDefinition
from mcp_batteries._protocol import sdk
from mcp_batteries.errors import InvalidInput
from pydantic import BaseModel, Field

#: A 1x1 red PNG pixel and a minimal WAV file (the suite's own test data).
IMAGE_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

#: SEP-1613 / SEP-2106: the raw JSON Schema 2020-12 the `json-schema-2020-12` scenario expects to
#: see preserved in `tools/list` ($schema, $defs with $anchor, allOf/anyOf, if/then/else,
#: additionalProperties: false).
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


class ConformanceSettings(ServerSettings):
    server_name: ClassVar[str] = "conformance-fixture"
    # The tasks scenarios expect a task-supporting tool's call to become a task even when it
    # ends within a second (`slow_compute` with seconds=1): become one as soon as the work starts.
    task_after: float = Field(0.0, ge=0)


class Name(BaseModel):
    name: str


def user_name() -> Elicit[Name]:
    """The question `test_tool_with_task` asks before it works (an InputRequiredResult round)."""
    return Elicit("What is your name?", Name)


class Confirmation(BaseModel):
    confirm: bool


class Partial(BaseModel):
    name: str = ""
    confirm: bool = False


def _elicit(message: str, properties: dict[str, Any], required: list[str]) -> ElicitRequest:
    schema = {"type": "object", "properties": properties, "required": required}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _sample(text: str, max_tokens: int) -> CreateMessageRequest:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    return CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=max_tokens))


def _accepted(ctx: Context, key: str) -> dict[str, Any] | None:
    """The content of an accepted elicitation answer for `key` in this round, if any."""
    answer = (ctx.input_responses or {}).get(key)
    if isinstance(answer, ElicitResult) and answer.action == "accept":
        return dict(answer.content or {})
    return None


def _answered(ctx: Context, *keys: str) -> bool:
    responses = ctx.input_responses or {}
    return all(key in responses for key in keys)


def _ask(requests: dict[str, InputRequest], state: str | None = None) -> InputRequiredResult:
    return InputRequiredResult(input_requests=requests, request_state=state)


class Address(BaseModel):
    street: str | None = None
    city: str | None = None


def _image() -> ImageContent:
    return ImageContent(type="image", data=IMAGE_BASE64, mime_type="image/png")


def build_server(settings: ConformanceSettings) -> BatteriesServer:
    async def check_subscription(session: Any, uri: str) -> None:
        if not uri.startswith("test://"):
            raise InvalidInput(f"only test:// resources can be subscribed to, not {uri}")

    server = BatteriesServer(
        settings,
        title="MCP Batteries conformance fixture",
        instructions="Fixtures for the official MCP conformance suite; not a useful server.",
        subscriptions=check_subscription,
    )

    # -- tools -------------------------------------------------------------------------------
    @server.tool(title="Simple text", read_only=True)
    async def test_simple_text() -> list[TextContent]:
        """Tests simple text content response."""
        return [TextContent(type="text", text="This is a simple text response for testing.")]

    @server.tool(title="Image content", read_only=True)
    async def test_image_content() -> list[ImageContent]:
        """Tests image content response."""
        return [_image()]

    @server.tool(title="Audio content", read_only=True)
    async def test_audio_content() -> list[AudioContent]:
        """Tests audio content response."""
        return [AudioContent(type="audio", data=AUDIO_BASE64, mime_type="audio/wav")]

    @server.tool(title="Embedded resource", read_only=True)
    async def test_embedded_resource() -> list[EmbeddedResource]:
        """Tests embedded resource content response."""
        return [
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="test://embedded-resource",
                    mime_type="text/plain",
                    text="This is an embedded resource content.",
                ),
            )
        ]

    @server.tool(title="Multiple content types", read_only=True)
    async def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
        """Tests response with multiple content types (text, image, resource)."""
        return [
            TextContent(type="text", text="Multiple content types test:"),
            _image(),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text=json.dumps({"test": "data", "value": 123}),
                ),
            ),
        ]

    @server.tool(title="Tool with logging", read_only=True)
    async def test_tool_with_logging(ctx: Context) -> str:
        """Tests a tool that emits log messages during execution."""
        # Logging is deprecated as of 2026-07-28 (SEP-2577) but still served to handshake-era
        # clients, which is what the suite is.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
                await ctx.info(message)
                await anyio.sleep(0.05)
        return "Tool with logging executed successfully"

    @server.tool(title="Tool with progress", read_only=True)
    async def test_tool_with_progress(ctx: Context) -> str:
        """Tests a tool that reports progress notifications."""
        for step in (0, 50, 100):
            await ctx.report_progress(step, 100, f"Completed step {step} of 100")
            await anyio.sleep(0.05)
        return "Tool with progress executed successfully"

    @server.tool(title="Error handling", read_only=True)
    async def test_error_handling() -> str:
        """Tests error response handling."""
        raise ToolError("This tool intentionally returns an error for testing")

    @server.tool(title="Reconnection", read_only=True)
    async def test_reconnection(ctx: Context) -> str:
        """Tests SSE stream disconnection and client reconnection (SEP-1699)."""
        await ctx.close_sse_stream()  # a no-op unless the HTTP transport has an event store
        await anyio.sleep(0.1)
        return (
            "Reconnection test completed successfully. If you received this, the client properly "
            "reconnected after stream closure."
        )

    @server.tool(title="Sampling", read_only=True)
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Tests server-initiated sampling (LLM completion request)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await ctx.session.create_message(
                [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )
        content = result.content
        text = content.text if isinstance(content, TextContent) else "No response"
        return f"LLM response: {text}"

    async def elicit(ctx: Context, message: str, schema: dict[str, Any]) -> str:
        result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        return f"action={result.action}, content={json.dumps(result.content or {})}"

    @server.tool(title="Elicitation", read_only=True)
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Tests server-initiated elicitation (user input request)."""
        schema = {
            "type": "object",
            "properties": {"response": {"type": "string", "description": "User's response"}},
            "required": ["response"],
        }
        return "User response: " + await elicit(ctx, message, schema)

    @server.tool(title="Elicitation defaults (SEP-1034)", read_only=True)
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Tests elicitation with default values per SEP-1034."""
        message = "Please review and update the form fields with defaults"
        return "Elicitation completed: " + await elicit(ctx, message, SEP1034_SCHEMA)

    @server.tool(title="Elicitation enums (SEP-1330)", read_only=True)
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Tests elicitation with enum schema improvements per SEP-1330."""
        message = "Please select options from the enum fields"
        return "Elicitation completed: " + await elicit(ctx, message, SEP1330_SCHEMA)

    @server.tool(title="JSON Schema 2020-12", read_only=True)
    async def json_schema_2020_12_tool(name: str | None = None, address: Address | None = None) -> str:
        """Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)."""
        args = {k: v for k, v in {"name": name, "address": address and address.model_dump()}.items() if v}
        return f"JSON Schema 2020-12 tool called with: {json.dumps(args)}"

    # -- 2026-07-28: multi-round requests (SEP-2322, `input-required-result-*`) -----------------
    # Hand-rolled rounds: the scenarios name the keys of `inputRequests`. `requestState` is
    # sealed and checked by the SDK's request-state boundary (a tampered one never gets here).
    @server.tool(title="MRTR: one elicitation", read_only=True, structured_output=False)
    async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
        """Asks for the user's name (key user_name), then greets them."""
        answer = _accepted(ctx, "user_name")
        if answer is None:
            properties = {"name": {"type": "string"}}
            return _ask({"user_name": _elicit("What is your name?", properties, ["name"])})
        return f"Hello, {answer.get('name')}!"

    @server.tool(title="MRTR: one sampling request", read_only=True, structured_output=False)
    async def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
        """Asks the client's model a question (key capital_question), then returns its answer."""
        answer = (ctx.input_responses or {}).get("capital_question")
        if answer is None:
            return _ask({"capital_question": _sample("What is the capital of France?", 100)})
        content = getattr(answer, "content", None)
        return f"The model said: {getattr(content, 'text', '')}"

    @server.tool(title="MRTR: the client's roots", read_only=True, structured_output=False)
    async def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
        """Asks for the client's roots (key client_roots), then lists them."""
        answer = (ctx.input_responses or {}).get("client_roots")
        if answer is None:
            return _ask({"client_roots": ListRootsRequest()})
        roots = getattr(answer, "roots", [])
        return "Roots: " + ", ".join(str(root.uri) for root in roots)

    @server.tool(title="MRTR: request state", read_only=True, structured_output=False)
    async def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
        """Asks for confirmation with a request state, and checks the state that comes back."""
        if ctx.request_state == "awaiting-confirmation" and _answered(ctx, "confirm"):
            return "state-ok: the request state came back as it was sent"
        properties = {"ok": {"type": "boolean"}}
        return _ask({"confirm": _elicit("Please confirm", properties, ["ok"])}, "awaiting-confirmation")

    @server.tool(title="MRTR: tampered state", read_only=True, structured_output=False)
    async def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
        """Like the request-state tool; a tampered state is refused before this body runs."""
        if ctx.request_state == "integrity-protected" and _answered(ctx, "confirm"):
            return "state-ok"
        properties = {"ok": {"type": "boolean"}}
        return _ask({"confirm": _elicit("Please confirm", properties, ["ok"])}, "integrity-protected")

    @server.tool(title="MRTR: three kinds of input", read_only=True, structured_output=False)
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
        """Asks an elicitation, a sampling request and for roots in one round."""
        keys = ("user_name", "greeting", "client_roots")
        if ctx.request_state == "three-questions" and _answered(ctx, *keys):
            return "All three answers arrived."
        requests: dict[str, InputRequest] = {
            "user_name": _elicit("What is your name?", {"name": {"type": "string"}}, ["name"]),
            "greeting": _sample("Generate a greeting", 50),
            "client_roots": ListRootsRequest(),
        }
        return _ask(requests, "three-questions")

    @server.tool(title="MRTR: two rounds", read_only=True, structured_output=False)
    async def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
        """Asks a name, then a colour (each round with its own state), then answers."""
        state = ctx.request_state or ""
        if state.startswith("round-2:") and (colour := _accepted(ctx, "step2")) is not None:
            return f"{state.removeprefix('round-2:')} likes {colour.get('color')}."
        if state == "round-1" and (name := _accepted(ctx, "step1")) is not None:
            properties = {"color": {"type": "string"}}
            step2 = _elicit("Step 2: What is your favorite color?", properties, ["color"])
            return _ask({"step2": step2}, f"round-2:{name.get('name')}")
        step1 = _elicit("Step 1: What is your name?", {"name": {"type": "string"}}, ["name"])
        return _ask({"step1": step1}, "round-1")

    @server.tool(title="MRTR: only what the client can answer", read_only=True, structured_output=False)
    async def test_input_required_result_capabilities(ctx: Context) -> str | InputRequiredResult:
        """Asks only through the capabilities this request declared."""
        if _answered(ctx, "question") or _answered(ctx, "form"):
            return "answered"
        declared = ctx.client_capabilities
        requests: dict[str, InputRequest] = {}
        if declared is not None and declared.sampling is not None:
            requests["question"] = _sample("Say hello", 20)
        if declared is not None and declared.elicitation is not None:
            requests["form"] = _elicit("Say hello", {"text": {"type": "string"}}, ["text"])
        return _ask(requests) if requests else "The client declared nothing to ask through."

    # -- 2026-07-28: stateless server (SEP-2575, `server-stateless`) -------------------------
    @server.tool(title="Needs sampling", read_only=True, structured_output=False)
    async def test_missing_capability(ctx: Context) -> str:
        """Needs the client's sampling capability; refused (-32021) to a client without it."""
        declared = ctx.client_capabilities
        if declared is None or declared.sampling is None:
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                "this tool needs the client's sampling capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return "The client can sample."

    dynamic: dict[str, bool] = {"tool": False, "prompt": False}

    async def dynamic_tool() -> str:
        """Appears and disappears with test_trigger_tool_change."""
        return "dynamic"

    @server.tool(title="Change the tool list", read_only=True, structured_output=False)
    async def test_trigger_tool_change() -> str:
        """Adds or removes a tool, and tells listening clients the tool list changed."""
        if dynamic["tool"]:
            server.mcp.remove_tool("test_dynamic_tool")
        else:
            server.mcp.add_tool(dynamic_tool, name="test_dynamic_tool")
        dynamic["tool"] = not dynamic["tool"]
        await server.notify_tools_list_changed()
        return "tool list changed"

    @server.tool(title="Change the prompt list", read_only=True, structured_output=False)
    async def test_trigger_prompt_change() -> str:
        """Adds or removes a prompt, and tells listening clients the prompt list changed."""
        if dynamic["prompt"]:
            server.mcp.remove_prompt("test_dynamic_prompt")
        else:
            server.mcp.add_prompt(
                Prompt.from_function(
                    lambda: "dynamic", name="test_dynamic_prompt", description="Comes and goes."
                )
            )
        dynamic["prompt"] = not dynamic["prompt"]
        await server.bus.publish(PromptsListChanged())
        return "prompt list changed"

    @server.tool(title="Logs without being asked to", read_only=True, structured_output=False)
    async def test_logging_tool(ctx: Context) -> str:
        """Tries to log; a 2026-07-28 request that set no log level must receive no log message."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await ctx.info("a log message nobody asked for")
        return "logged"

    @server.tool(title="Asks mid-call", read_only=True, structured_output=False)
    async def test_streaming_elicitation(ctx: Context) -> str | InputRequiredResult:
        """Needs an answer from the user: on 2026-07-28 that is an InputRequiredResult, never a
        request of the server's own on the response stream."""
        if _answered(ctx, "answer"):
            return "answered"
        return _ask({"answer": _elicit("Anything to add?", {"text": {"type": "string"}}, ["text"])})

    # -- 2026-07-28: custom headers (SEP-2243, `http-custom-header-server-validation`) ---------
    @server.tool(title="Custom header", read_only=True, structured_output=False)
    async def test_custom_header(region: str) -> str:
        """Its `region` argument travels as the Mcp-Param-Region header too (x-mcp-header)."""
        return f"Region: {region}"

    sdk.set_tool_input_schema(
        server.mcp,
        "test_custom_header",
        {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"],
        },
    )

    # -- tasks extension (SEP-2663, `tasks-*`) -----------------------------------------------
    @server.tool(title="Greet", read_only=True, structured_output=False)
    async def greet(name: str) -> str:
        """Sync-only: never a task."""
        return f"Hello, {name}!"

    @server.tool(title="Slow computation", read_only=True, structured_output=False, task_support="optional")
    async def slow_compute(seconds: float, label: str = "") -> str:
        """Sleeps `seconds`, then answers; a task for a client that supports them."""
        await anyio.sleep(seconds)
        return f"Computed {label or 'result'} in {seconds:g}s"

    @server.tool(title="Failing job", read_only=True, structured_output=False, task_support="required")
    async def failing_job() -> str:
        """Only runs as a task; ends with a tool error (isError) after about a second."""
        await anyio.sleep(1)
        raise ToolError("the job failed, as it always does")

    @server.tool(title="Protocol error job", read_only=True, structured_output=False, task_support="optional")
    async def protocol_error_job() -> str:
        """Fails with a JSON-RPC error (the task fails, with that error inlined)."""
        await anyio.sleep(0.2)
        raise MCPError(INTERNAL_ERROR, "the job hit an internal error")

    @server.tool(title="Confirm a deletion", read_only=True, structured_output=False, task_support="optional")
    async def confirm_delete(filename: str, ctx: Context) -> str:
        """Asks the user to confirm while it works (the task waits in input_required)."""
        answer = await ctx.elicit(f"Delete {filename}?", Confirmation)
        confirmed = answer.action == "accept" and answer.data.confirm
        return f"{'Deleted' if confirmed else 'Kept'} {filename}"

    @server.tool(
        title="Two questions at once", read_only=True, structured_output=False, task_support="optional"
    )
    async def multi_input(ctx: Context) -> str:
        """Asks two questions in parallel; the task waits until both are answered."""
        answers: list[str] = []

        async def ask(question: str) -> None:
            outcome = await ctx.elicit(question, Partial)
            answers.append(outcome.data.name if outcome.action == "accept" else outcome.action)

        async with anyio.create_task_group() as group:
            group.start_soon(ask, "First question")
            group.start_soon(ask, "Second question")
        return "Answers: " + ", ".join(sorted(answers))

    @server.tool(
        title="Ask, then work as a task", read_only=True, structured_output=False, task_support="required"
    )
    async def test_tool_with_task(who: Annotated[Name, Resolve(user_name)]) -> str:
        """Asks for a name first (InputRequiredResult rounds), then works as a task."""
        await anyio.sleep(0.5)
        return f"Hello, {who.name}! The task is done."

    # Schemas come from Python signatures; the suite checks that a hand-written JSON Schema
    # (root $schema, allOf, if/then/else, additionalProperties) survives tools/list.
    sdk.set_tool_input_schema(server.mcp, "json_schema_2020_12_tool", JSON_SCHEMA_2020_12)

    # -- resources ---------------------------------------------------------------------------
    @server.resource(
        "test://static-text",
        name="static-text",
        title="Static Text Resource",
        description="A static text resource for testing",
        mime_type="text/plain",
    )
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource(
        "test://static-binary",
        name="static-binary",
        title="Static Binary Resource",
        description="A static binary resource (image) for testing",
        mime_type="image/png",
    )
    def static_binary() -> bytes:
        return base64.b64decode(IMAGE_BASE64)

    @server.resource(
        "test://template/{id}/data",
        name="template",
        title="Resource Template",
        description="A resource template with parameter substitution",
        mime_type="application/json",
    )
    def template(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource(
        "test://watched-resource",
        name="watched-resource",
        title="Watched Resource",
        description="A resource clients can subscribe to",
        mime_type="text/plain",
    )
    def watched() -> str:
        return "Watched resource content"

    # -- prompts -----------------------------------------------------------------------------
    @server.prompt(title="Simple Test Prompt", description="A simple prompt without arguments")
    def test_simple_prompt() -> list[UserMessage]:
        return [UserMessage("This is a simple prompt for testing.")]

    @server.prompt(title="Prompt With Arguments", description="A prompt with required arguments")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]

    @server.prompt(
        title="Prompt With Embedded Resource", description="A prompt that includes an embedded resource"
    )
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        return [
            UserMessage(
                EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(
                        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
                    ),
                )
            ),
            UserMessage("Please process the embedded resource above."),
        ]

    @server.prompt(title="Prompt asking for input", description="Asks the user before rendering (SEP-2322)")
    def test_input_required_result_prompt(ctx: Context) -> list[UserMessage] | InputRequiredResult:
        answer = _accepted(ctx, "user_context")
        if answer is None:
            properties = {"context": {"type": "string"}}
            question = _elicit("What context should the prompt use?", properties, ["context"])
            return _ask({"user_context": question})
        return [UserMessage(f"Use this context: {answer.get('context')}")]

    @server.prompt(title="Prompt With Image", description="A prompt that includes image content")
    def test_prompt_with_image() -> list[UserMessage]:
        return [UserMessage(_image()), UserMessage("Please analyze the image above.")]

    # -- completion --------------------------------------------------------------------------
    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        if (
            isinstance(ref, PromptReference)
            and ref.name == "test_prompt_with_arguments"
            and argument.name == "arg1"
        ):
            values = [v for v in ("paris", "park", "party") if v.startswith(argument.value)]
            return Completion(values=values, total=len(values), has_more=False)
        return Completion(values=[], total=0, has_more=False)

    return server


definition = ServerDefinition(
    settings=ConformanceSettings,
    build=f"{__name__}:build_server",
    description="Fixture server for the official MCP conformance suite.",
)
main = definition.main


if __name__ == "__main__":
    main()
