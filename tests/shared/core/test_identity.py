"""The caller-identity API: `Caller`, `current_caller()`, and the per-caller read-only filter."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from mcp.server.auth.middleware.bearer_auth import authorization_context
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver.exceptions import ToolError
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.identity import (
    Caller,
    authenticated_user_for,
    caller_from_access_token,
    current_caller,
    local_caller,
)
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._protocol import sdk
from mcp_batteries.testing import ERAS, Era, connect

pytestmark = pytest.mark.anyio

ALICE = Caller(subject="user:alice", name="alice", source="tokens-file", workspaces=frozenset({"team-a"}))
READER = Caller(
    subject="user:rita",
    name="rita",
    source="tokens-file",
    scopes=frozenset({"mcp:read"}),
    can_write=False,
)


class IdSettings(ServerSettings):
    server_name = "identity-test"


def build_server(settings: IdSettings | None = None) -> BatteriesServer:
    server = BatteriesServer(settings or IdSettings(), instructions="identity test")

    @server.tool(title="Who", read_only=True)
    async def who() -> str:
        """Reports the caller."""
        return current_caller().subject

    @server.tool(title="Change", read_only=False)
    async def change() -> str:
        """Writes."""
        return "changed"

    return server


@contextmanager
def calling_as(caller: Caller) -> Iterator[None]:
    """What the HTTP middleware does around a request, here around direct calls."""
    reset = sdk.auth_context_var.set(authenticated_user_for(caller, "t"))
    try:
        yield
    finally:
        sdk.auth_context_var.reset(reset)


def test_outside_any_request_the_caller_is_the_local_user() -> None:
    caller = current_caller()
    assert caller == local_caller()
    assert caller.source == "local" and caller.subject == f"local:{caller.name}"
    assert caller.can_write and caller.workspaces is None and caller.may_use("anything")


def test_a_caller_travels_with_the_authenticated_user_unchanged() -> None:
    user = authenticated_user_for(ALICE, "secret")
    assert user.caller is ALICE and user.access_token.subject == "user:alice"
    with calling_as(ALICE):
        assert current_caller() is ALICE
    assert ALICE.may_use("team-a") and not ALICE.may_use("team-b")


def test_sessions_bind_to_the_principal_so_a_users_other_tokens_match_and_nobody_elses() -> None:
    def principal(caller: Caller, token: str) -> Any:
        return authorization_context(authenticated_user_for(caller, token))

    alice_again = Caller(subject="user:alice", name="alice", source="tokens-file", can_write=False)
    assert principal(ALICE, "one") == principal(alice_again, "two")
    assert principal(ALICE, "one") != principal(READER, "one")


def test_an_access_token_from_other_code_counts_as_an_oauth_caller() -> None:
    foreign = AccessToken(token="t", client_id="app", scopes=["mcp:read"], subject="u1")
    caller = caller_from_access_token(foreign)
    assert (caller.subject, caller.source, caller.can_write) == ("u1", "oauth", False)
    reset = sdk.auth_context_var.set(sdk.AuthenticatedUser(foreign))
    try:
        assert current_caller() == caller
    finally:
        sdk.auth_context_var.reset(reset)


@pytest.mark.parametrize("era", ERAS)
async def test_in_process_and_stdio_clients_are_the_local_user(era: Era) -> None:
    async with connect(build_server().mcp, era) as client:
        result = await client.call_tool("who", {})
    assert result.content[0].text == local_caller().subject  # type: ignore[union-attr]


async def test_a_caller_who_may_not_write_sees_and_may_call_only_read_only_tools() -> None:
    server = build_server()
    assert server.writing_tools == {"change"}
    with calling_as(READER):
        assert [t.name for t in await server.mcp.list_tools()] == ["who"]
        with pytest.raises(ToolError) as refused:
            await server.mcp.call_tool("change", {})
        assert "needs the 'mcp:write' scope" in str(refused.value) and "rita" in str(refused.value)
        assert (await server.mcp.call_tool("who", {})).content[0].text == "user:rita"  # type: ignore[union-attr]
    with calling_as(ALICE):
        assert {t.name for t in await server.mcp.list_tools()} == {"who", "change"}
        assert not (await server.mcp.call_tool("change", {})).is_error  # type: ignore[union-attr]


async def test_the_refusal_names_the_configured_write_scope() -> None:
    server = build_server(IdSettings(oauth_write_scope="files:write"))
    with calling_as(READER), pytest.raises(ToolError, match="'files:write'"):
        await server.mcp.call_tool("change", {})


def test_tools_removed_by_read_only_mode_are_not_writing_tools() -> None:
    assert build_server(IdSettings(read_only=True)).writing_tools == set()
