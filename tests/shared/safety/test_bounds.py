"""The reply cap: every tool result, resource read and prompt is cut below it by the runtime, with a
note saying what was cut and how to get the rest, whatever the tool returned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp_batteries._safety.bounds import bound_reply, cut_text, encoded_size
from mcp_batteries.testing import ERAS, Era, connect, stdio_params

from ..hostile_server import FLOODS, HostileSettings, build_server, flood_text, stdio_command

pytestmark = pytest.mark.anyio

CAP = 1024 * 1024


def wire_size(result: Any) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def texts(blocks: list[Any]) -> list[str]:
    return [getattr(block, "text", "") for block in blocks]


# -- the bounding function ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["x" * 100_000, "é€😀" * 30_000, "line\n" * 20_000, '\x00\x1f"\\' * 30_000, "a\u2028b" * 40_000],
    ids=["ascii", "multibyte", "lines", "escaped", "separators"],
)
def test_cut_text_fits_the_budget_on_a_character_boundary(text: str) -> None:
    for budget in (3, 17, 1000, 65_537):
        kept = cut_text(text, budget)
        assert encoded_size(kept) <= budget and text.startswith(kept)
        assert kept.encode("utf-8").decode("utf-8") == kept
        assert encoded_size(text[: len(kept) + 1]) > budget or kept.endswith("\n")
    assert cut_text("short", 100) == "short"


def test_a_reply_within_the_cap_is_returned_as_it_is() -> None:
    result = {"content": [{"type": "text", "text": "fine"}], "isError": False}
    assert bound_reply("tools/call", result, CAP, subject="tool t", paging=None) is result


def test_every_part_of_a_cut_reply_is_accounted_for_in_the_note() -> None:
    image = {"type": "image", "data": "A" * 2_000_000, "mimeType": "image/png"}
    result = {
        "content": [{"type": "text", "text": "head"}, image, {"type": "text", "text": "tail"}],
        "structuredContent": {"rows": ["r"] * 300_000},
        "isError": False,
        "resultType": "complete",
    }
    cut = bound_reply("tools/call", result, CAP, subject="tool t", paging="pass offset")
    assert encoded_size(cut) < CAP
    assert cut["isError"] is True and "structuredContent" not in cut
    assert cut["content"][0] == {"type": "text", "text": "head"}
    note = cut["content"][-1]["text"]
    assert "item 2 (image/png" in note and "left out whole" in note and "1 more item left out" in note
    assert "structuredContent" in note and "To get the rest: pass offset." in note
    assert result["content"][1] is image  # the handler's own objects are not changed


def test_an_input_required_result_is_never_touched() -> None:
    result = {"resultType": "input_required", "inputRequests": {"x": {"a": "b" * (2 * CAP)}}}
    assert bound_reply("tools/call", result, CAP, subject="tool t", paging=None) is result


# -- tools, resources and prompts, in-process in both eras ---------------------------------------


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("kind", FLOODS)
async def test_a_tool_flood_is_cut_below_the_cap_with_a_note(era: Era, kind: str) -> None:
    async with connect(build_server(HostileSettings(max_result_bytes=CAP)).mcp, era) as client:
        result = await client.call_tool("flood", {"kind": kind})
    assert wire_size(result) < CAP
    shown = texts(result.content)
    note = shown[-1]
    assert (
        note.startswith('[The reply of tool "flood" was cut: it was ')
        and "reply cap of 1,048,576 bytes" in note
    )
    assert note.endswith(".]") and "To get the rest: call flood again with a smaller kind of flood" in note
    if kind in ("one_line", "lines", "multibyte", "small_structured"):
        original = flood_text("lines" if kind == "small_structured" else kind)
        assert len(shown[0]) > CAP // 8 and original.startswith(shown[0])
        assert f"of {len(original):,} characters" in note
        if kind in ("lines", "small_structured"):
            assert shown[0].endswith("\n")
    if kind == "image":
        assert len(result.content) == 1 and "(image/png) " in note and "left out whole" in note
    if kind == "mixed":
        assert shown[0] == "before" and "left out whole" in note and "1 more item left out" in note
    if kind == "structured":
        assert result.is_error and result.structured_content is None and "structuredContent" in note
    else:
        assert not result.is_error and result.structured_content is not None
    if kind == "small_structured":
        assert result.structured_content == {"lines": ["small"]}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("kind", ["one_line", "lines", "multibyte", "image"])
async def test_a_resource_flood_is_cut_below_the_cap_with_a_note(era: Era, kind: str) -> None:
    async with connect(build_server(HostileSettings(max_result_bytes=CAP)).mcp, era) as client:
        result = await client.read_resource(f"hostile://flood/{kind}")
    assert wire_size(result) < CAP
    note = result.contents[-1]
    assert note.mime_type == "text/plain" and str(note.uri) == f"hostile://flood/{kind}"
    assert "To get the rest: read hostile://flood/lines instead." in note.text  # type: ignore[union-attr]
    if kind == "image":
        assert len(result.contents) == 1 and "left out whole" in note.text  # type: ignore[union-attr]
    else:
        kept = result.contents[0].text  # type: ignore[union-attr]
        assert len(kept) > CAP // 8 and flood_text(kind).startswith(kept)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("kind", ["one_line", "multibyte", "image"])
async def test_a_prompt_flood_is_cut_below_the_cap_with_a_note(era: Era, kind: str) -> None:
    async with connect(build_server(HostileSettings(max_result_bytes=CAP)).mcp, era) as client:
        result = await client.get_prompt("flood_prompt", {"kind": kind})
    assert wire_size(result) < CAP
    note = result.messages[-1]
    assert note.role == "user" and "To get the rest: ask for a smaller prompt." in note.content.text  # type: ignore[union-attr]
    if kind == "image":
        assert "left out whole" in note.content.text and "1 more item left out" in note.content.text  # type: ignore[union-attr]
    else:
        kept = result.messages[0].content.text  # type: ignore[union-attr]
        assert len(kept) > CAP // 8 and flood_text(kind).startswith(kept)


# -- over stdio, as a subprocess -----------------------------------------------------------------


async def test_floods_are_cut_over_stdio_at_the_default_cap() -> None:
    async with connect(stdio_command(), "legacy") as client:
        tool = await client.call_tool("flood", {"kind": "one_line"})
        resource = await client.read_resource("hostile://flood/multibyte")
        prompt = await client.get_prompt("flood_prompt", {"kind": "lines"})
    default_cap = HostileSettings().max_result_bytes
    for result in (tool, resource, prompt):
        assert default_cap // 2 < wire_size(result) < default_cap
    assert "was cut" in texts(tool.content)[-1] and "was cut" in resource.contents[-1].text  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
async def test_a_real_server_over_stdio_is_cut_at_its_configured_cap_and_names_its_paging(
    tmp_path: Path, era: Era
) -> None:
    (tmp_path / "one-line.txt").write_text("z" * 200_000)  # within read_text_file's own limit
    cap = 16 * 1024
    params = stdio_params("mcp-batteries-filesystem", str(tmp_path), "--max-result-bytes", str(cap))
    async with connect(params, era) as client:
        tool = await client.call_tool("read_text_file", {"path": str(tmp_path / "one-line.txt")})
        resource = await client.read_resource(f"file://{tmp_path / 'one-line.txt'}")
    for result in (tool, resource):
        assert wire_size(result) < cap
    note = texts(tool.content)[-1]
    assert "of 200,000 characters" in note and "offset (the first line to show, from 1) and limit" in note
    assert "read_text_file and offset/limit" in resource.contents[-1].text  # type: ignore[union-attr]
    assert set(texts(tool.content)[0]) == {"z"}


@pytest.mark.parametrize("text", ["\x00" * 170_000, "é" * 170_000, "x" * 170_000, "\n" * 340_000])
def test_the_quick_check_never_lets_an_oversized_reply_through(text: str) -> None:
    cap = 2**20
    result = {"content": [{"type": "text", "text": text}], "isError": False, "_meta": {"k": "v"}}
    bounded = bound_reply("tools/call", result, cap, subject="tool t", paging=None)
    assert encoded_size(bounded) <= cap
    assert (bounded is result) == (encoded_size(result) <= cap)
