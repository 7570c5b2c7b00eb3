"""The server builder: tool filtering, error mapping and notifications in both protocol eras."""

from __future__ import annotations

import pytest
from mcp import MCPError
from mcp_batteries._core.notify import RESOURCE_LIST
from mcp_batteries.errors import ConfigError
from mcp_batteries.testing import ERAS, Era, Notifications, connect, legacy_subscribe

from ..conftest import DemoSettings, build_demo

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("era", ERAS)
async def test_read_only_mode_hides_tools_that_write(era: Era) -> None:
    server = build_demo(DemoSettings(read_only=True))
    async with connect(server.mcp, era) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == {"look", "crash"}


@pytest.mark.parametrize("era", ERAS)
async def test_tool_allow_and_deny_lists_are_honoured(era: Era) -> None:
    server = build_demo(DemoSettings(tools=["look", "change"], disable_tools=["change"]))
    async with connect(server.mcp, era) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == {"look"}


def test_unknown_tool_name_in_lists_is_a_config_error_naming_the_real_tools() -> None:
    server = build_demo(DemoSettings(disable_tools=["lok"]))
    with pytest.raises(ConfigError, match=r"unknown tool name.*lok.*change, crash, look"):
        server.check_tool_lists()


@pytest.mark.parametrize("era", ERAS)
async def test_every_tool_states_all_annotations(era: Era) -> None:
    async with connect(build_demo().mcp, era) as client:
        tools = {t.name: t.annotations for t in (await client.list_tools()).tools}
    assert tools["look"].read_only_hint is True and tools["look"].destructive_hint is False
    assert tools["change"].read_only_hint is False and tools["change"].destructive_hint is True
    for hints in tools.values():
        assert hints.idempotent_hint is not None and hints.open_world_hint is False


@pytest.mark.parametrize("era", ERAS)
async def test_domain_error_reaches_client_as_tool_error_with_its_message(era: Era) -> None:
    async with connect(build_demo().mcp, era) as client:
        result = await client.call_tool("look", {"name": "secret"})
    assert result.is_error
    assert result.content[0].text == "secret is outside the allowed names; allowed: public names"


@pytest.mark.parametrize("era", ERAS)
async def test_unexpected_exception_is_an_error_without_internal_details(era: Era) -> None:
    async with connect(build_demo().mcp, era) as client:
        result = await client.call_tool("crash", {})
    assert result.is_error
    assert "internal detail" not in result.content[0].text


@pytest.mark.parametrize("era", ERAS)
async def test_unknown_prompt_is_invalid_params(era: Era) -> None:
    async with connect(build_demo().mcp, era) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("nope", {})
    assert caught.value.error.code == -32602


@pytest.mark.parametrize("era", ERAS)
async def test_an_unknown_tool_is_a_protocol_error_invalid_params(era: Era) -> None:
    # The 2025-11-25 specification: an unknown tool is a JSON-RPC error, not a tool result.
    async with connect(build_demo().mcp, era) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("nope" * 100, {})
    assert caught.value.error.code == -32602
    assert caught.value.error.message.startswith('Unknown tool: "nopenope')
    assert len(caught.value.error.message) < 200  # the name is not echoed back whole


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    "settings",
    [DemoSettings(read_only=True), DemoSettings(tools=["look"]), DemoSettings(disable_tools=["change"])],
    ids=["read-only", "tools", "disable-tools"],
)
async def test_a_tool_the_operator_turned_off_is_unknown_the_same_way(
    era: Era, settings: DemoSettings
) -> None:
    async with connect(build_demo(settings).mcp, era) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("change", {"name": "x"})
    assert caught.value.error.code == -32602
    assert caught.value.error.message.startswith('Unknown tool: "change"')
    assert "turned off" in caught.value.error.message


@pytest.mark.parametrize("era", ERAS)
async def test_missing_resource_is_invalid_params(era: Era) -> None:
    async with connect(build_demo().mcp, era) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("demo://item/missing")
    assert caught.value.error.code == -32602
    assert "no item named missing" in caught.value.error.message


@pytest.mark.parametrize("era", ERAS)
async def test_capabilities_advertise_subscribe_and_list_changed(era: Era) -> None:
    async with connect(build_demo().mcp, era) as client:
        caps = client.server_capabilities
    assert caps.resources.subscribe is True and caps.resources.list_changed is True
    assert caps.tools.list_changed is True


async def test_stateless_http_does_not_promise_legacy_notifications() -> None:
    server = build_demo(DemoSettings(transport="http", stateless=True))
    async with connect(server.mcp, "legacy") as client:
        caps = client.server_capabilities
    assert not caps.resources.subscribe
    assert not caps.resources.list_changed and not caps.tools.list_changed


async def test_legacy_subscriber_hears_resource_updated_and_others_do_not() -> None:
    server = build_demo()
    heard, other = Notifications(), Notifications()
    async with (
        connect(server.mcp, "legacy", message_handler=heard) as client,
        connect(server.mcp, "legacy", message_handler=other) as bystander,
    ):
        await legacy_subscribe(client, "demo://item/x")
        await bystander.list_tools()
        await server.notify_resource_updated("demo://item/x")
        await heard.wait_method("notifications/resources/updated", "demo://item/x")
        await server.notify_resources_list_changed()
        await other.wait_method("notifications/resources/list_changed")
    assert "notifications/resources/updated" not in other.methods()


async def test_subscribing_to_a_refused_uri_is_invalid_params() -> None:
    async with connect(build_demo().mcp, "legacy") as client:
        with pytest.raises(MCPError) as caught:
            await legacy_subscribe(client, "file:///etc/passwd")
    assert caught.value.error.code == -32602
    assert "only demo:// URIs" in caught.value.error.message


async def test_modern_listener_hears_resource_updated_and_tools_list_changed() -> None:
    server = build_demo()
    async with (
        connect(server.mcp, "modern") as client,
        client.listen(resource_subscriptions=["demo://item/y"], tools_list_changed=True) as events,
    ):
        assert "demo://item/y" in server.interest
        await server.notify_resource_updated("demo://item/other")
        await server.notify_resource_updated("demo://item/y")
        await server.notify_tools_list_changed()
        received = []
        async for event in events:
            received.append(event)
            if len(received) == 2:
                break
    assert [type(e).__name__ for e in received] == ["ResourceUpdated", "ToolsListChanged"]
    assert received[0].uri == "demo://item/y"


async def test_legacy_tools_list_changed_reaches_every_connected_client() -> None:
    server = build_demo()
    heard = Notifications()
    async with connect(server.mcp, "legacy", message_handler=heard) as client:
        await client.list_tools()
        await server.notify_tools_list_changed()
        await heard.wait_method("notifications/tools/list_changed")


async def test_interest_is_forgotten_when_clients_disconnect() -> None:
    server = build_demo()
    async with connect(server.mcp, "legacy") as client:
        await legacy_subscribe(client, "demo://item/z")
        assert server.interest.keys() == {"demo://item/z", RESOURCE_LIST}
    assert server.interest.keys() == frozenset()
    assert server.notifier.legacy_client_count == 0
    async with (
        connect(server.mcp, "modern") as client,
        client.listen(resource_subscriptions=["demo://item/z"]),
    ):
        assert "demo://item/z" in server.interest
    assert server.interest.keys() == frozenset()


async def test_services_open_once_for_overlapping_clients_and_close_after_the_last() -> None:
    from contextlib import asynccontextmanager

    server = build_demo()
    events: list[str] = []

    @asynccontextmanager
    async def pool():  # type: ignore[no-untyped-def]
        events.append("open")
        yield
        events.append("close")

    server.service(pool)
    async with connect(server.mcp, "legacy") as first:
        async with connect(server.mcp, "modern") as second:
            await second.list_tools()
        await first.list_tools()
        assert events == ["open"]
    assert events == ["open", "close"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_declared_cheap_runs_on_the_event_loop_and_keeps_its_schema(era: Era) -> None:
    import threading

    server = build_demo()
    threads: dict[str, int] = {}

    @server.tool(title="Cheap", read_only=True, cheap=True)
    def cheap(word: str, times: int = 1) -> str:
        """No I/O: formats its arguments."""
        threads["cheap"] = threading.get_ident()
        return word * times

    @server.tool(title="Plain", read_only=True)
    def plain() -> str:
        """A plain function not declared cheap: the SDK runs it in a worker thread."""
        threads["plain"] = threading.get_ident()
        return "plain"

    async with connect(server.mcp, era) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("cheap", {"word": "ab", "times": 2})
        await client.call_tool("plain", {})
    assert result.content[0].text == "abab"
    assert set(tools["cheap"].input_schema["properties"]) == {"word", "times"}
    assert tools["cheap"].input_schema["required"] == ["word"]
    assert threads["cheap"] == threading.get_ident()  # the test's event loop thread
    assert threads["plain"] != threading.get_ident()
