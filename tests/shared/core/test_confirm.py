"""Confirmation before destruction (`mcp_batteries._core.confirm`), on a small server in-process,
in both eras: the policies, the answers, altered state, and the request-state keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, InputRequiredResult
from mcp_batteries._core.request_state import KEY_ENV, load_keys
from mcp_batteries.definition import ServerSettings
from mcp_batteries.errors import ConfigError
from mcp_batteries.server import BatteriesServer, Consent
from mcp_batteries.testing import ERAS, Era, connect, write_private

pytestmark = pytest.mark.anyio

KEY = "k" * 64


class ToySettings(ServerSettings):
    server_name = "toy"


class Toy:
    """A server whose `drop` tool destroys `name` from `self.things` (asking first)."""

    def __init__(self, **settings: Any) -> None:
        self.things = {"precious", "junk"}
        self.loss = "delete {name}"
        self.described = 0
        self.server = BatteriesServer(ToySettings(**settings), instructions="toy")
        toy = self

        async def what_is_lost(name: str) -> str | None:
            toy.described += 1
            return toy.loss.format(name=name) if name in toy.things else None

        @self.server.tool(title="Drop", read_only=False, destructive=True, confirm=what_is_lost)
        async def drop(name: str, consent: Consent, ctx: Context[Any, Any]) -> str:
            if not consent.go_ahead:
                return consent.refusal
            toy.things.discard(name)
            return f"dropped {name}"

        self.server.check_tool_lists()


def answering(action: str, content: dict[str, Any] | None = None, asked: list[str] | None = None) -> Any:
    async def callback(_ctx: Any, params: Any) -> ElicitResult:
        if asked is not None:
            asked.append(params.message)
        return ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return callback


@pytest.mark.parametrize("era", ERAS)
async def test_an_accepted_question_names_the_loss_and_the_tool_goes_ahead(era: Era) -> None:
    toy = Toy()
    asked: list[str] = []
    async with connect(
        toy.server.mcp, era, elicitation_callback=answering("accept", {"confirm": True}, asked)
    ) as c:
        result = await c.call_tool("drop", {"name": "precious"})
    assert not result.is_error
    assert toy.things == {"junk"}
    assert asked == ["drop would delete precious\n\nThis cannot be undone. Go ahead?"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("action", "content", "why"),
    [
        ("decline", None, "the user declined"),
        ("cancel", None, "the user cancelled"),
        ("accept", {"confirm": False}, "without ticking"),
    ],
)
async def test_anything_but_a_ticked_accept_destroys_nothing(
    era: Era, action: str, content: dict[str, Any] | None, why: str
) -> None:
    toy = Toy()
    async with connect(toy.server.mcp, era, elicitation_callback=answering(action, content)) as c:
        result = await c.call_tool("drop", {"name": "precious"})
    assert not result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Nothing was changed: ") and why in text and "delete precious" in text
    assert toy.things == {"precious", "junk"}


@pytest.mark.parametrize("era", ERAS)
async def test_nothing_to_lose_asks_nothing(era: Era) -> None:
    toy = Toy(confirm="destructive")
    asked: list[str] = []
    async with connect(toy.server.mcp, era, elicitation_callback=answering("decline", asked=asked)) as c:
        result = await c.call_tool("drop", {"name": "absent"})
    assert not result.is_error and asked == []


@pytest.mark.parametrize("era", ERAS)
async def test_auto_lets_a_client_that_cannot_be_asked_act_as_before(era: Era) -> None:
    toy = Toy()
    async with connect(toy.server.mcp, era) as c:
        result = await c.call_tool("drop", {"name": "precious"})
    assert not result.is_error and toy.things == {"junk"}
    assert toy.described == 0  # no question, so what would be lost is not even worked out


@pytest.mark.parametrize("era", ERAS)
async def test_destructive_refuses_a_client_that_cannot_be_asked_and_names_the_flag(era: Era) -> None:
    toy = Toy(confirm="destructive")
    async with connect(toy.server.mcp, era) as c:
        result = await c.call_tool("drop", {"name": "precious"})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "--confirm" in text and "Nothing was changed" in text and "delete precious" in text
    assert toy.things == {"precious", "junk"}


@pytest.mark.parametrize("era", ERAS)
async def test_never_asks_nobody(era: Era) -> None:
    toy = Toy(confirm="destructive", confirm_tools=["drop=never"])
    asked: list[str] = []
    async with connect(toy.server.mcp, era, elicitation_callback=answering("decline", asked=asked)) as c:
        result = await c.call_tool("drop", {"name": "precious"})
    assert not result.is_error and asked == [] and toy.things == {"junk"} and toy.described == 0


def test_confirm_tools_must_name_tools_that_ask() -> None:
    with pytest.raises(ConfigError, match="never ask before destroying"):
        Toy(confirm_tools=["nosuch=never"])
    with pytest.raises(ValueError, match="TOOL=POLICY"):
        ToySettings(confirm_tools=["drop=sometimes"])


async def first_round(client: Any, name: str = "precious") -> InputRequiredResult:
    first = await client.session.call_tool("drop", {"name": name}, allow_input_required=True)
    assert isinstance(first, InputRequiredResult)
    assert first.request_state
    return first


def accepted(first: InputRequiredResult) -> dict[str, Any]:
    (key,) = first.input_requests
    return {key: ElicitResult(action="accept", content={"confirm": True})}


async def test_a_retry_whose_state_was_altered_is_refused() -> None:
    toy = Toy()
    async with connect(
        toy.server.mcp, "modern", elicitation_callback=answering("accept", {"confirm": True})
    ) as c:
        first = await first_round(c)
        state = first.request_state
        assert state is not None
        tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await c.session.call_tool(
                "drop",
                {"name": "precious"},
                input_responses=accepted(first),
                request_state=tampered,
                allow_input_required=True,
            )
        # Nor may the state of one call be replayed for another call's arguments.
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await c.session.call_tool(
                "drop",
                {"name": "junk"},
                input_responses=accepted(first),
                request_state=state,
                allow_input_required=True,
            )
    assert toy.things == {"precious", "junk"}


async def test_an_answer_counts_only_for_the_loss_it_was_shown() -> None:
    toy = Toy()
    async with connect(
        toy.server.mcp, "modern", elicitation_callback=answering("accept", {"confirm": True})
    ) as c:
        first = await first_round(c)
        toy.loss = "delete {name} and its 3 children"  # what would be lost changed meanwhile
        again = await c.session.call_tool(
            "drop",
            {"name": "precious"},
            input_responses=accepted(first),
            request_state=first.request_state,
            allow_input_required=True,
        )
    assert isinstance(again, InputRequiredResult)  # asked again, with the new loss
    (request,) = again.input_requests.values()
    assert "3 children" in request.params.message  # type: ignore[union-attr]
    assert toy.things == {"precious", "junk"}


async def test_a_retry_reaches_another_server_sharing_the_key(tmp_path: Path) -> None:
    key_file = write_private(tmp_path / "key", KEY + "\n")
    one, two = Toy(request_state_key_file=key_file), Toy(request_state_key_file=key_file)
    stranger = Toy()
    callback = answering("accept", {"confirm": True})
    async with connect(one.server.mcp, "modern", elicitation_callback=callback) as c:
        first = await first_round(c)
    async with connect(stranger.server.mcp, "modern", elicitation_callback=callback) as c:
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await c.session.call_tool(
                "drop",
                {"name": "precious"},
                input_responses=accepted(first),
                request_state=first.request_state,
            )
    async with connect(two.server.mcp, "modern", elicitation_callback=callback) as c:
        result = await c.session.call_tool(
            "drop", {"name": "precious"}, input_responses=accepted(first), request_state=first.request_state
        )
    assert not result.is_error
    assert two.things == {"junk"} and one.things == stranger.things == {"precious", "junk"}


def test_keys_come_from_a_private_file_first_line_sealing(tmp_path: Path) -> None:
    key_file = write_private(tmp_path / "keys", f"# rotated 2026-11\n{KEY}\n\n{'o' * 40}\n")
    assert load_keys(key_file) == [KEY, "o" * 40]
    key_file.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_keys(key_file)


def test_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, f"{KEY}, {'o' * 40}")
    assert load_keys(None) == [KEY, "o" * 40]
    monkeypatch.setenv(KEY_ENV, "short")
    with pytest.raises(ConfigError, match="at least 32 characters"):
        load_keys(None)
    monkeypatch.delenv(KEY_ENV)
    assert load_keys(None) == []


def test_an_empty_key_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="holds no key"):
        load_keys(write_private(tmp_path / "keys", "\n"))


def test_in_the_bundle_the_key_is_shared_and_the_policy_is_per_server(tmp_path: Path) -> None:
    from mcp_batteries._bundle.configfile import parse_serve_args

    key_file = write_private(tmp_path / "state.key", KEY + "\n")
    config = tmp_path / "bundle.toml"
    config.write_text(
        f'request_state_key_file = "{key_file}"\n'
        f'[filesystem]\ndirectories = ["{tmp_path}"]\nconfirm = "destructive"\n'
        "[sql]\nconfirm_tools = ['execute=never']\n"
    )
    bundle = parse_serve_args(["--config", str(config), "filesystem", "sql"])
    files, sql = bundle.servers["filesystem"][1], bundle.servers["sql"][1]
    assert files.request_state_key_file == sql.request_state_key_file == key_file
    assert (files.confirm, files.confirm_policy("delete_path")) == ("destructive", "destructive")
    assert (sql.confirm, sql.confirm_policy("execute")) == ("auto", "never")


@pytest.mark.parametrize("era", ERAS)
async def test_a_describer_may_be_synchronous_and_take_the_context(era: Era) -> None:
    server = BatteriesServer(ToySettings(), instructions="toy")
    seen: list[str | None] = []

    def describe(path: str, ctx: Context[Any, Any]) -> str:
        seen.append(ctx.protocol_version)
        return f"erase {path}"

    @server.tool(title="Erase", read_only=False, destructive=True, confirm=describe)
    async def erase(path: str, ctx: Context[Any, Any], consent: Consent) -> str:
        return "erased" if consent.go_ahead else consent.refusal

    asked: list[str] = []
    async with connect(server.mcp, era, elicitation_callback=answering("decline", asked=asked)) as c:
        result = await c.call_tool("erase", {"path": "/x"})
    assert (
        result.content[0].text
        == "Nothing was changed: the user declined. erase would have done this: erase /x"
    )  # type: ignore[union-attr]
    assert (
        asked == ["erase would erase /x\n\nThis cannot be undone. Go ahead?"] and seen and seen[0] is not None
    )


def test_a_tool_registered_with_confirm_needs_one_consent_parameter() -> None:
    server = BatteriesServer(ToySettings(), instructions="toy")

    async def describe(path: str) -> str:
        return path

    with pytest.raises(TypeError, match="exactly one parameter annotated Consent"):

        @server.tool(title="Erase", read_only=False, destructive=True, confirm=describe)
        async def erase(path: str) -> str:
            return path
