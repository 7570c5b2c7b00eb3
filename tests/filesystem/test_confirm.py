"""Confirmation before destruction on mcp-filesystem, as a subprocess through the SDK's `Client`
in both eras, over stdio and HTTP: what the user is asked, and what each answer leaves behind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, InputRequiredResult
from mcp_batteries.testing import ERAS, Era, connect, connect_http, http_server, stdio_params, write_private

from ..bundle.conftest import bundle_process

pytestmark = pytest.mark.anyio

SCRIPT = "mcp-batteries-filesystem"
KEY = "0123456789abcdef" * 4

Transport = Literal["stdio", "http"]


def text(result: Any) -> str:
    return str(result.content[0].text)


@asynccontextmanager
async def filesystem(
    root: Path, era: Era, transport: Transport, *flags: str, callback: Any = None
) -> AsyncIterator[Client]:
    options = {"elicitation_callback": callback} if callback is not None else {}
    if transport == "stdio":
        async with connect(stdio_params(SCRIPT, str(root), *flags), era, **options) as client:
            yield client
    else:
        async with (
            http_server(SCRIPT, str(root), *flags) as running,
            connect_http(running.url, era, **options) as client,
        ):
            yield client


def answering(action: str, asked: list[str], tick: bool = True) -> Any:
    async def callback(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        content = {"confirm": tick} if action == "accept" else None
        return ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return callback


def tree(root: Path) -> Path:
    top = root / "project"
    (top / "src").mkdir(parents=True)
    (top / "src" / "main.py").write_text("print('hi')\n")
    (top / "notes.txt").write_bytes(b"x" * 3000)
    return top


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ERAS)
async def test_deleting_a_tree_names_every_file_and_goes_ahead_on_accept(
    tmp_path: Path, era: Era, transport: Transport
) -> None:
    top = tree(tmp_path)
    asked: list[str] = []
    async with filesystem(tmp_path, era, transport, callback=answering("accept", asked)) as c:
        result = await c.call_tool("delete_path", {"path": str(top), "recursive": True})
    assert not result.is_error, text(result)
    assert not top.exists()
    (question,) = asked
    assert f"delete the directory {top} and everything in it: 2 files (2.9 KiB), 1 directory" in question
    assert "src/main.py (12 bytes)" in question and "notes.txt (2.9 KiB)" in question


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ERAS)
async def test_a_declined_deletion_deletes_nothing(tmp_path: Path, era: Era, transport: Transport) -> None:
    top = tree(tmp_path)
    asked: list[str] = []
    async with filesystem(tmp_path, era, transport, callback=answering("decline", asked)) as c:
        result = await c.call_tool("delete_path", {"path": str(top / "notes.txt")})
    assert not result.is_error
    assert text(result).startswith("Nothing was changed: the user declined.")
    assert (top / "notes.txt").stat().st_size == 3000
    assert asked and "delete the file" in asked[0] and "2.9 KiB" in asked[0]


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_cannot_be_asked_is_refused_under_destructive(tmp_path: Path, era: Era) -> None:
    top = tree(tmp_path)
    async with filesystem(tmp_path, era, "stdio", "--confirm", "destructive") as c:
        refused = await c.call_tool("delete_path", {"path": str(top), "recursive": True})
        assert refused.is_error and "--confirm" in text(refused) and "Nothing was changed" in text(refused)
        assert top.exists()
        # A write that loses nothing (a new file) asks nothing, so it is not refused.
        created = await c.call_tool("write_file", {"path": str(tmp_path / "new.txt"), "content": "hi"})
        assert not created.is_error


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_cannot_be_asked_acts_as_before_under_auto_and_never(
    tmp_path: Path, era: Era
) -> None:
    top = tree(tmp_path)
    async with filesystem(tmp_path, era, "stdio") as c:
        result = await c.call_tool("delete_path", {"path": str(top / "notes.txt")})
        assert not result.is_error and not (top / "notes.txt").exists()
    asked: list[str] = []
    callback = answering("decline", asked)
    async with filesystem(tmp_path, era, "stdio", "--confirm", "never", callback=callback) as c:
        result = await c.call_tool("delete_path", {"path": str(top), "recursive": True})
    assert not result.is_error and not top.exists() and asked == []


@pytest.mark.parametrize("era", ERAS)
async def test_overwriting_asks_only_for_a_file_the_caller_has_not_read(tmp_path: Path, era: Era) -> None:
    unread, read = tmp_path / "unread.txt", tmp_path / "read.txt"
    unread.write_text("keep me\n")
    read.write_text("seen\n")
    asked: list[str] = []
    async with filesystem(tmp_path, era, "stdio", callback=answering("decline", asked)) as c:
        refused = await c.call_tool("write_file", {"path": str(unread), "content": "new\n"})
        assert text(refused).startswith("Nothing was changed")
        assert unread.read_text() == "keep me\n"
        assert len(asked) == 1 and f"replace the file {unread} (8 bytes" in asked[0]
        await c.call_tool("read_text_file", {"path": str(read)})
        written = await c.call_tool("write_file", {"path": str(read), "content": "changed\n"})
        assert not written.is_error and read.read_text() == "changed\n"
        # It wrote that version itself: writing again asks nothing.
        again = await c.call_tool("write_file", {"path": str(read), "content": "again\n"})
        assert not again.is_error and read.read_text() == "again\n"
        # Changed behind its back: asked again.
        read.write_text("someone else's\n")
        refused = await c.call_tool("write_file", {"path": str(read), "content": "mine\n"})
        assert text(refused).startswith("Nothing was changed") and read.read_text() == "someone else's\n"
    assert len(asked) == 2


async def test_a_retry_with_altered_state_is_refused_over_http(tmp_path: Path) -> None:
    top = tree(tmp_path)
    async with filesystem(tmp_path, "modern", "http", callback=answering("accept", [])) as c:
        first = await c.session.call_tool(
            "delete_path", {"path": str(top), "recursive": True}, allow_input_required=True
        )
        assert isinstance(first, InputRequiredResult) and first.request_state
        (key,) = first.input_requests
        answer = {key: ElicitResult(action="accept", content={"confirm": True})}
        altered = first.request_state[:-2] + ("xx" if not first.request_state.endswith("xx") else "yy")
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await c.session.call_tool(
                "delete_path",
                {"path": str(top), "recursive": True},
                input_responses=answer,
                request_state=altered,
            )
    assert (top / "notes.txt").exists()


async def test_two_processes_sharing_a_key_serve_one_question_across_them(tmp_path: Path) -> None:
    """The first round on one replica, the retry on another (as a load balancer may send them)."""
    top = tree(tmp_path)
    key_file = write_private(tmp_path / "state.key", KEY + "\n")
    flags = ("--request-state-key-file", str(key_file))
    arguments = {"path": str(top), "recursive": True}
    async with (
        http_server(SCRIPT, str(tmp_path), *flags) as one,
        http_server(SCRIPT, str(tmp_path), *flags) as two,
        http_server(SCRIPT, str(tmp_path)) as stranger,
    ):
        callback = answering("accept", [])
        async with connect_http(one.url, "modern", elicitation_callback=callback) as c:
            first = await c.session.call_tool("delete_path", arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult)
        (key,) = first.input_requests
        answer = {key: ElicitResult(action="accept", content={"confirm": True})}
        async with connect_http(stranger.url, "modern", elicitation_callback=callback) as c:
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await c.session.call_tool(
                    "delete_path", arguments, input_responses=answer, request_state=first.request_state
                )
        assert top.exists()
        async with connect_http(two.url, "modern", elicitation_callback=callback) as c:
            done = await c.session.call_tool(
                "delete_path", arguments, input_responses=answer, request_state=first.request_state
            )
    assert not done.is_error, text(done)
    assert not top.exists()


async def test_a_key_file_others_may_read_is_refused(tmp_path: Path) -> None:
    key_file = write_private(tmp_path / "state.key", KEY + "\n")
    key_file.chmod(0o644)
    with pytest.raises(RuntimeError, match="chmod 600"):
        async with http_server(SCRIPT, str(tmp_path), "--request-state-key-file", str(key_file)):
            pass


@pytest.mark.parametrize("era", ERAS)
async def test_a_copy_that_would_replace_files_asks_and_a_decline_keeps_them(
    tmp_path: Path, era: Era
) -> None:
    (tmp_path / "new.txt").write_text("new\n")
    (tmp_path / "old.txt").write_text("precious\n")
    asked: list[str] = []
    async with filesystem(tmp_path, era, "stdio", callback=answering("decline", asked)) as c:
        arguments = {
            "source": str(tmp_path / "new.txt"),
            "destination": str(tmp_path / "old.txt"),
            "overwrite": True,
        }
        kept = await c.call_tool("copy_file", arguments)
        assert text(kept).startswith("Nothing was changed")
        assert (tmp_path / "old.txt").read_text() == "precious\n"
        fresh = await c.call_tool(
            "copy_file", {"source": str(tmp_path / "new.txt"), "destination": str(tmp_path / "c.txt")}
        )
        assert not fresh.is_error and (tmp_path / "c.txt").read_text() == "new\n"
    assert len(asked) == 1 and f"replace the file {tmp_path}/old.txt (9 bytes" in asked[0]


async def test_a_state_is_bound_to_its_caller(tmp_path: Path) -> None:
    """Over HTTP with sign-in, the sealed state names its caller: another caller's retry with it
    is refused (each answers only their own questions)."""
    top = tree(tmp_path)
    tokens = write_private(tmp_path / "tokens.toml", "")
    tokens.write_text(
        '[[tokens]]\nuser = "alice"\ntoken = "alice-token-0123456789"\n\n'
        '[[tokens]]\nuser = "bob"\ntoken = "bob-token-0123456789ab"\n'
    )
    arguments = {"path": str(top), "recursive": True}
    callback = answering("accept", [])
    async with http_server(SCRIPT, str(tmp_path), "--tokens-file", str(tokens)) as running:
        async with connect_http(
            running.url, "modern", token="alice-token-0123456789", elicitation_callback=callback
        ) as c:
            first = await c.session.call_tool("delete_path", arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult)
        (key,) = first.input_requests
        answer = {key: ElicitResult(action="accept", content={"confirm": True})}
        async with connect_http(
            running.url, "modern", token="bob-token-0123456789ab", elicitation_callback=callback
        ) as c:
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await c.session.call_tool(
                    "delete_path", arguments, input_responses=answer, request_state=first.request_state
                )
        assert top.exists()
        async with connect_http(
            running.url, "modern", token="alice-token-0123456789", elicitation_callback=callback
        ) as c:
            done = await c.session.call_tool(
                "delete_path", arguments, input_responses=answer, request_state=first.request_state
            )
        assert not done.is_error, text(done)
    assert not top.exists()


@pytest.mark.parametrize("policy", ["auto", "destructive"])
async def test_a_stateless_handshake_client_cannot_be_asked(tmp_path: Path, policy: str) -> None:
    """`--stateless` HTTP carries no request to a handshake-era client, whatever it declared."""
    top = tree(tmp_path)
    asked: list[str] = []
    async with (
        http_server(SCRIPT, str(tmp_path), "--stateless", "--confirm", policy) as running,
        connect_http(running.url, "legacy", elicitation_callback=answering("decline", asked)) as c,
    ):
        result = await c.call_tool("delete_path", {"path": str(top), "recursive": True})
    assert asked == []
    if policy == "destructive":
        assert result.is_error and "--confirm" in text(result) and top.exists()
    else:
        assert not result.is_error and not top.exists()


@pytest.mark.parametrize("era", ERAS)
async def test_the_bundle_asks_with_its_shared_key_and_per_server_policy(tmp_path: Path, era: Era) -> None:
    """`mcp-batteries serve`: the key at the top level, the policy in the server's table."""
    top = tree(tmp_path / "files")
    key_file = write_private(tmp_path / "state.key", KEY + "\n")
    config = tmp_path / "bundle.toml"
    config.write_text(
        f'request_state_key_file = "{key_file}"\n'
        f'[filesystem]\ndirectories = ["{tmp_path / "files"}"]\nconfirm = "destructive"\n'
    )
    asked: list[str] = []
    with bundle_process("--config", str(config), "filesystem") as bundle:
        async with connect_http(
            bundle.url("filesystem"), era, elicitation_callback=answering("accept", asked)
        ) as c:
            done = await c.call_tool("delete_path", {"path": str(top), "recursive": True})
            assert not done.is_error, text(done)
        async with connect_http(bundle.url("filesystem"), era) as c:
            (tmp_path / "files" / "x.txt").write_text("x")
            refused = await c.call_tool("delete_path", {"path": str(tmp_path / "files" / "x.txt")})
            assert refused.is_error and "--confirm" in text(refused)
    assert not top.exists() and (tmp_path / "files" / "x.txt").exists()
    assert len(asked) == 1 and "2 files" in asked[0]
