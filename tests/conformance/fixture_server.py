"""The fixture server the official MCP conformance suite (`@modelcontextprotocol/conformance`) calls.

Every scenario of the suite calls fixtures with fixed names (tools `test_*`, resources `test://...`,
prompts `test_*`), written for an "everything"-style server. This module registers them on a
`BatteriesServer`, not a bare `MCPServer`: the point is to test MCP Batteries' runtime (settings,
capabilities, subscriptions, HTTP transport with DNS-rebinding protection) the way a real server
uses it.

    python tests/conformance/fixture_server.py --transport http --port 0

prints the standard banner naming the URL.
"""

from __future__ import annotations

import base64
import json
import warnings
from typing import Any, ClassVar

import anyio
from mcp import MCPDeprecationWarning
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import (
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmbeddedResource,
    ImageContent,
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
from pydantic import BaseModel

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
