"""A fixture server whose tools misbehave on purpose, for the runtime's robustness tests.

Its tools, resource and prompt return text that cannot be encoded as JSON (lone surrogates, as
a file name that is not UTF-8 becomes in Python), send such a notification, run calls that
take a while, or flood (20 MB of every kind of content), so the tests can check that the
transport survives each one, that every reply stays under the reply cap, and that shutdown is
prompt and bounded. Run it as the real servers run:

    python tests/shared/hostile_server.py [--transport http --port 0]
"""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
from mcp import StdioServerParameters
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import CallToolResult, ContentBlock, ImageContent, Resource, TextContent
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._entry.definition import ServerDefinition
from mcp_batteries._work.progress import in_thread
from mcp_batteries.errors import AccessDenied, InvalidInput, LimitExceeded, NotFound, UpstreamError
from mcp_batteries.testing import RunningServer
from pydantic import BaseModel, Field

#: What the sleep and block tools write on stderr once running: a process test waits for it.
STARTED = "hostile-server: call started"

#: What `os.fsdecode(b"bad\xffname.txt")` gives: a lone surrogate the JSON encoder refuses.
UNENCODABLE = "bad\udcffname.txt"


#: How much each flood produces: characters of text, or bytes of an image before base64.
FLOOD_SIZE = 20_000_000
#: The kinds of flood: what a tool, a resource and a prompt can return.
FLOODS = ("one_line", "lines", "multibyte", "image", "mixed", "structured", "small_structured")


def flood_text(kind: str, size: int = FLOOD_SIZE) -> str:
    """`size` characters: one line without a newline, many short lines, or multibyte characters
    (2-, 3- and 4-byte UTF-8 sequences, so a cut by bytes would land inside one)."""
    if kind == "lines":
        return ("a line of text\n" * (size // 15 + 1))[:size]
    if kind == "multibyte":
        return ("é€😀" * (size // 3 + 1))[:size]
    return "x" * size


def flood_image(size: int = FLOOD_SIZE) -> ImageContent:
    return ImageContent(
        type="image", data=base64.b64encode(b"\x89PNG" + bytes(size)).decode(), mime_type="image/png"
    )


def flood_content(kind: str) -> list[ContentBlock]:
    if kind == "image":
        return [flood_image()]
    if kind == "mixed":
        return [
            TextContent(type="text", text="before"),
            flood_image(),
            TextContent(type="text", text="after"),
        ]
    return [TextContent(type="text", text=flood_text(kind))]


class Flood(BaseModel):
    lines: list[str]


#: What a resource reader or prompt raises for each name, to check how each reaches the client.
DOMAIN_ERRORS: dict[str, type[Exception]] = {
    "missing": NotFound,
    "denied": AccessDenied,
    "invalid": InvalidInput,
    "limit": LimitExceeded,
    "upstream": UpstreamError,
}


class HostileSettings(ServerSettings):
    server_name = "hostile"


class Listing(BaseModel):
    names: list[str]


class Knobs(BaseModel):
    depth: int
    label: str = ""


def build_server(settings: HostileSettings) -> BatteriesServer:
    server = BatteriesServer(settings, instructions="misbehaves on purpose")

    @server.tool(title="Unencodable text", read_only=True)
    async def unencodable_text() -> str:
        """Returns text holding a lone surrogate."""
        return UNENCODABLE

    @server.tool(title="Unencodable listing", read_only=True)
    async def unencodable_listing() -> Listing:
        """Returns structured content holding a lone surrogate."""
        return Listing(names=["fine.txt", UNENCODABLE])

    @server.tool(title="Unencodable notification", read_only=True)
    async def unencodable_progress(ctx: Context[Any, Any]) -> str:
        """Sends a progress notification holding a lone surrogate, then answers normally."""
        await ctx.report_progress(1, 2, f"reading {UNENCODABLE}")
        return "done"

    @server.tool(title="Echo", read_only=True)
    async def echo(
        text: Annotated[str, Field(description="any text")] = "",
        count: Annotated[int, Field(description="an integer")] = 0,
        ratio: Annotated[float, Field(description="a number")] = 0.0,
        flag: Annotated[bool, Field(description="a boolean")] = False,
        knobs: Annotated[Knobs | None, Field(description="a nested object")] = None,
        items: Annotated[list[int] | None, Field(description="a list of integers")] = None,
    ) -> str:
        """Echoes its arguments with their Python types."""
        values = [text, count, ratio, flag, knobs, items]
        return " ".join(f"{type(v).__name__}:{v!r}" for v in values)

    @server.tool(title="Sleep", read_only=True)
    async def sleep(seconds: float) -> str:
        """Sleeps on the event loop (cancellable)."""
        print(STARTED, file=sys.stderr, flush=True)
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(title="Block", read_only=True)
    async def block(seconds: float) -> str:
        """Blocks a worker thread that ignores cancellation (like a stuck system call)."""
        print(STARTED, file=sys.stderr, flush=True)
        await in_thread(time.sleep, seconds)
        return f"blocked {seconds}"

    @server.tool(title="Flood", read_only=True, paging="call flood again with a smaller kind of flood")
    async def flood(kind: str) -> Annotated[CallToolResult, Flood]:
        """Returns 20 MB of the given kind (see FLOODS), with or without structured content."""
        if kind == "structured":
            rows = ["row " + "y" * 100] * (FLOOD_SIZE // 100)
            return CallToolResult(
                content=[TextContent(type="text", text="\n".join(rows))], structured_content={"lines": rows}
            )
        if kind == "small_structured":
            return CallToolResult(content=flood_content("lines"), structured_content={"lines": ["small"]})
        return CallToolResult(content=flood_content(kind), structured_content={"lines": []})

    @server.resource("hostile://flood/{kind}", paging="read hostile://flood/lines instead")
    def flood_resource(kind: str) -> str | bytes:
        return bytes(FLOOD_SIZE) if kind == "image" else flood_text(kind)

    @server.prompt(paging="ask for a smaller prompt")
    def flood_prompt(kind: str) -> list[Any]:
        if kind == "image":
            return [UserMessage(content=flood_image()), UserMessage(content="after the image")]
        return [UserMessage(content=flood_text(kind))]

    @server.resource("hostile://unencodable")
    def unencodable_resource() -> str:
        return UNENCODABLE

    @server.resource("hostile://crash")
    def crashing_resource() -> str:
        raise RuntimeError("secret internal detail /etc/shadow")

    async def read_prefixed(session: Any, uri: str) -> tuple[str | bytes, str]:
        what = uri.removeprefix("hostile-dyn://")
        if what in DOMAIN_ERRORS:
            raise DOMAIN_ERRORS[what](f"{what}: the message written for the model")
        if what == "crash":
            raise RuntimeError("secret internal detail /etc/shadow")
        return UNENCODABLE, "text/plain"

    server.read_resources_with("hostile-dyn://", read_prefixed)

    async def list_resources(session: Any, cursor: str | None) -> tuple[list[Resource], str | None]:
        if cursor == "crash":
            raise RuntimeError("secret internal detail /etc/shadow")
        return [Resource(uri="hostile-dyn://x", name="x")], None

    server.list_resources_with(list_resources)

    @server.prompt()
    def unencodable_prompt() -> str:
        return f"Open {UNENCODABLE}"

    @server.prompt()
    def failing_prompt(what: str) -> str:
        if what in DOMAIN_ERRORS:
            raise DOMAIN_ERRORS[what](f"{what}: the message written for the model")
        raise RuntimeError("secret internal detail /etc/shadow")

    return server


def stdio_command(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[__file__, *args], env=dict(os.environ))


@asynccontextmanager
async def http_process(*args: str) -> AsyncIterator[RunningServer]:
    """This server over HTTP on a free port (as `mcp_batteries.testing.http_server` runs scripts)."""
    process = subprocess.Popen(  # noqa: ASYNC220 - runs beside the test
        [sys.executable, __file__, "--transport", "http", "--port", "0", *args], stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    lines: list[str] = []
    stderr = process.stderr

    def read_until_url() -> str:
        for raw in stderr:
            lines.append(raw.decode(errors="replace").rstrip())
            found = re.search(r"at (http://\S+) \(", lines[-1])
            if found:
                return found.group(1)
        raise RuntimeError("no URL announced:\n" + "\n".join(lines))

    def drain() -> None:
        for raw in stderr:
            lines.append(raw.decode(errors="replace").rstrip())

    try:
        with anyio.fail_after(60):
            url = await anyio.to_thread.run_sync(read_until_url, abandon_on_cancel=True)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: anyio.to_thread.run_sync(drain, abandon_on_cancel=True))
            yield RunningServer(process, url, lines)
            tg.cancel_scope.cancel()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await anyio.to_thread.run_sync(lambda: process.wait(timeout=15))
        except subprocess.TimeoutExpired:
            process.kill()


definition = ServerDefinition(
    settings=HostileSettings,
    build=f"{__name__}:build_server",
    description="Fixture server that misbehaves on purpose.",
)
main = definition.main

if __name__ == "__main__":
    main()
