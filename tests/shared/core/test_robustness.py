"""No tool result, resource, prompt or notification can take a transport down; errors from
resources, prompts and protocol handlers are mapped like tool errors; tool arguments are held to
their JSON types. Checked over stdio and HTTP (stateful and stateless), in both protocol eras."""

from __future__ import annotations

import os
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPDeprecationWarning, MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS
from mcp_batteries._live.watch import WatchService, WatchTarget
from mcp_batteries.testing import ERAS, Era, connect, connect_http
from watchfiles import Change

from ..hostile_server import DOMAIN_ERRORS, HostileSettings, build_server, http_process, stdio_command

pytestmark = pytest.mark.anyio

TRANSPORTS = ("stdio", "http", "http-stateless")


@asynccontextmanager
async def hostile(transport: str, era: Era) -> AsyncIterator[tuple[Client, list[str]]]:
    """A client of the fixture server, and the server's stderr lines (HTTP only)."""
    if transport == "stdio":
        async with connect(stdio_command(), era) as client:
            yield client, []
        return
    extra = ("--stateless",) if transport == "http-stateless" else ()
    async with http_process(*extra) as running, connect_http(running.url, era) as client:
        yield client, running.stderr_lines


async def still_serving(client: Client, era: Era) -> None:
    if era == "legacy":
        with warnings.catch_warnings():  # the SDK marks ping deprecated (it is legacy-era only)
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.send_ping()
    else:  # ping is gone in 2026-07-28
        assert (await client.list_tools()).tools


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_replies_that_cannot_be_encoded_become_errors_and_the_connection_lives_on(
    transport: str, era: Era
) -> None:
    async with hostile(transport, era) as (client, stderr):
        attempts: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("result.content[0].text", lambda: client.call_tool("unencodable_text", {})),
            ("result.contents[0].text", lambda: client.read_resource("hostile://unencodable")),
            ("result.contents[0].text", lambda: client.read_resource("hostile-dyn://x")),
            ("result.messages[0].content.text", lambda: client.get_prompt("unencodable_prompt", {})),
        ]
        for where, attempt in attempts:
            with pytest.raises(MCPError) as raised:
                await attempt()
            assert raised.value.code == INTERNAL_ERROR
            assert "could not be encoded as JSON" in raised.value.message and where in raised.value.message
            await still_serving(client, era)
        # A notification that cannot be encoded is left out; its request still gets its answer.
        result = await client.call_tool("unencodable_progress", {}, progress_callback=_ignore)
        assert result.content[0].text == "done"  # type: ignore[union-attr]
        await still_serving(client, era)
    if transport != "stdio":
        assert any("cannot be encoded as JSON" in line for line in stderr)


async def _ignore(progress: float, total: float | None, message: str | None) -> None:
    pass


@pytest.mark.parametrize("era", ERAS)
async def test_a_crashing_resource_reader_is_an_error_without_internals(era: Era) -> None:
    async with connect(build_server(HostileSettings()).mcp, era) as client:
        for uri in ("hostile-dyn://crash", "hostile://crash"):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            assert raised.value.code == INTERNAL_ERROR
            assert "secret" not in raised.value.message and uri in raised.value.message


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("what", sorted(DOMAIN_ERRORS))
async def test_domain_errors_from_resources_and_prompts_reach_the_client_with_their_message(
    era: Era, what: str
) -> None:
    client_error = what in ("missing", "denied", "invalid")
    async with connect(build_server(HostileSettings()).mcp, era) as client:
        with pytest.raises(MCPError) as from_resource:
            await client.read_resource(f"hostile-dyn://{what}")
        with pytest.raises(MCPError) as from_prompt:
            await client.get_prompt("failing_prompt", {"what": what})
    for raised in (from_resource.value, from_prompt.value):
        assert raised.message == f"{what}: the message written for the model"
        assert raised.code == (INVALID_PARAMS if client_error else INTERNAL_ERROR)


@pytest.mark.parametrize("era", ERAS)
async def test_a_crashing_prompt_or_protocol_handler_answers_without_internals(era: Era) -> None:
    async with connect(build_server(HostileSettings()).mcp, era) as client:
        with pytest.raises(MCPError) as from_prompt:
            await client.get_prompt("failing_prompt", {"what": "crash"})
        with pytest.raises(MCPError) as from_listing:
            await client.list_resources(cursor="crash")
    for raised in (from_prompt.value, from_listing.value):
        assert raised.code == INTERNAL_ERROR and "secret" not in raised.message
    assert "resources/list" in from_listing.value.message


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"count": True}, "count: Input should be a valid integer (got true)"),
        ({"count": "5"}, 'count: Input should be a valid integer (got "5")'),
        ({"count": 1.5}, "count: Input should be a valid integer (got 1.5)"),
        ({"count": 2.0}, "count: Input should be a valid integer (got 2.0)"),
        ({"ratio": True}, "ratio: Input should be a valid number (got true)"),
        ({"ratio": "0.5"}, "ratio: Input should be a valid number"),
        ({"flag": 1}, "flag: Input should be a valid boolean (got 1)"),
        ({"flag": "true"}, "flag: Input should be a valid boolean"),
        ({"knobs": {"depth": False}}, "knobs.depth: Input should be a valid integer (got false)"),
        ({"items": [1, True]}, "items[1]: Input should be a valid integer (got true)"),
        ({"text": 5}, "text: Input should be a valid string (got 5)"),
        # Past the integers JSON carries exactly: 2^63 used to reach SQLite as a driver error.
        ({"count": 2**63}, "count: Input should be less than or equal to 9007199254740991"),
        ({"count": -(2**53)}, "count: Input should be greater than or equal to -9007199254740991"),
        ({"knobs": {"depth": 2**64}}, "knobs.depth: Input should be less than or equal to 9007199254740991"),
        ({"items": [1, 10**30]}, "items[1]: Input should be less than or equal to 9007199254740991"),
    ],
)
async def test_arguments_of_the_wrong_json_type_are_refused_naming_the_argument(
    era: Era, arguments: dict[str, Any], problem: str
) -> None:
    async with connect(build_server(HostileSettings()).mcp, era) as client:
        result = await client.call_tool("echo", arguments)
    assert result.is_error
    assert result.content[0].text.startswith("invalid arguments for echo: ")  # type: ignore[union-attr]
    assert problem in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
async def test_normal_json_arguments_still_work(era: Era) -> None:
    arguments = {
        "text": "t",
        "count": 3,
        "ratio": 2**63,
        "flag": True,
        "knobs": {"depth": 4},
        "items": [1, 2**53 - 1],
    }
    async with connect(build_server(HostileSettings()).mcp, era) as client:
        result = await client.call_tool("echo", arguments)
        stringified = await client.call_tool("echo", {"items": "[5, 6]"})  # as Claude Desktop sends lists
    assert not result.is_error
    assert result.content[0].text == (  # type: ignore[union-attr]
        "str:'t' int:3 float:9.223372036854776e+18 bool:True Knobs:Knobs(depth=4, label='') "
        "list:[1, 9007199254740991]"
    )
    assert stringified.content[0].text.endswith("list:[5, 6]")  # type: ignore[union-attr]


async def test_a_change_to_a_name_that_is_not_utf8_does_not_end_file_watching(tmp_path: Path) -> None:
    # RustNotify cannot decode such a name and loses the batch; this used to end the watch
    # service's task group, and with it the server's lifespan (every later request failed).
    bad = tmp_path / os.fsdecode(b"bad\xff\xfename.txt")
    bad.write_text("1")
    good = tmp_path / "good.txt"
    changed: list[set[tuple[Change, str]]] = []
    arrived = anyio.Event()

    async def record(batch: set[tuple[Change, str]]) -> None:
        changed.append(batch)
        arrived.set()

    async with WatchService(record) as watch:
        await watch.add(WatchTarget.tree(tmp_path))
        bad.write_text("2")
        with anyio.fail_after(10):
            await arrived.wait()
        good.write_text("still watching")
        with anyio.fail_after(10):
            while not any(path == str(good) for batch in changed for _, path in batch):
                arrived = anyio.Event()
                await arrived.wait()
