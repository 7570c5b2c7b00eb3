"""Names that are not clean text (bytes that are not UTF-8, newlines, escape sequences, bidi
controls): shown in one reversible quoted form everywhere, accepted back in that form, carried
percent-encoded in file:// URIs. Before, a name of bytes `bad\\xff\\xfename.txt` killed the server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.safety import AllowedDirectories, quote_name, quote_path
from mcp_batteries.testing import (
    ERAS,
    Era,
    Notifications,
    connect,
    connect_http,
    http_server,
    legacy_subscribe,
    stdio_params,
)
from mcp_filesystem import catalog, grep, reading, walking, writing
from mcp_filesystem.info import get_file_info

BAD = os.fsdecode(b"bad\xff\xfename.txt")  # not UTF-8
ODD = ["line\nbreak.txt", "esc\x1b[31mred.txt", "evil\u202etxt.exe", 'say "hi".txt']


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = (tmp_path / "names").resolve()
    (base / "sub").mkdir(parents=True)
    for name in [BAD, *ODD]:
        (base / name).write_bytes(b"hello needle\n")
    (base / "sub" / BAD).write_bytes(b"deep needle\n")
    return base


def test_quoted_form_is_the_documented_git_style() -> None:
    assert quote_name(BAD) == '"bad\\377\\376name.txt"'
    assert quote_name("line\nbreak.txt") == '"line\\nbreak.txt"'
    assert quote_name("esc\x1b[31mred.txt") == '"esc\\033[31mred.txt"'
    assert quote_name("evil\u202etxt.exe") == '"evil\\342\\200\\256txt.exe"'


def _serializable(text: str) -> None:
    text.encode("utf-8")  # no lone surrogates left: the JSON encoder would fail on them
    assert "\x1b" not in text and "\u202e" not in text


def test_listings_show_every_odd_name_quoted(root: Path) -> None:
    allowed = AllowedDirectories([root])
    listing = walking.list_directory(allowed, ".").text
    sized = walking.list_directory_with_sizes(allowed, ".").text
    tree = walking.directory_tree(allowed, ".")
    found = walking.search_files(allowed, ".", "**/*.t*").text
    hits = grep.grep(allowed, ".", "needle").text
    for text in (listing, sized, tree.text, found, hits):
        _serializable(text)
    for name in [BAD, *ODD]:
        assert f"[FILE] {quote_name(name)}" in listing
        assert quote_name(name) in sized
    names = {e["name"] for e in json.loads(tree.json_text)}
    assert {quote_name(n) for n in [BAD, *ODD]} <= names
    assert quote_path(root / "sub" / BAD) in found.splitlines()
    assert f"{quote_path('sub/' + BAD)}:1:deep needle" in hits.splitlines()


def test_every_path_argument_takes_the_quoted_form_back(root: Path) -> None:
    allowed = AllowedDirectories([root])
    shown = quote_name(BAD)
    assert reading.read_text_file(allowed, shown).text == "hello needle\n"
    assert reading.read_text_file(allowed, f"sub/{shown}").text == "deep needle\n"  # a quoted component
    assert "hello" in (reading.read_multiple_files(allowed, [shown]).results[0].text or "")
    assert get_file_info(allowed, shown).path == quote_path(root / BAD)
    assert "hello" in grep.grep(allowed, shown, "hello").text
    copied = writing.copy_file_reply(allowed, shown, '"copy\\377.txt"', False, False)
    assert copied.startswith(f'Copied {shown} to "copy\\377.txt"')
    assert (root / os.fsdecode(b"copy\xff.txt")).read_bytes() == b"hello needle\n"
    writing.move_file(allowed, '"copy\\377.txt"', '"moved\\nhere.txt"')
    assert (root / "moved\nhere.txt").exists()
    assert (
        writing.delete_path_reply(allowed, '"moved\\nhere.txt"', False) == 'Deleted file "moved\\nhere.txt"'
    )
    writing.write_file(allowed, '"new\\033.txt"', "x")
    assert (root / "new\x1b.txt").read_text() == "x"


def test_errors_name_odd_paths_in_the_quoted_form(root: Path) -> None:
    from mcp_batteries.errors import NotFound

    with pytest.raises(NotFound) as caught:
        reading.read_text_file(AllowedDirectories([root]), '"missing\\377\\n.txt"')
    missing = root / os.fsdecode(b"missing\xff\n.txt")
    assert str(caught.value) == f"{quote_path(missing)} does not exist"
    _serializable(str(caught.value))


def test_resource_uris_carry_names_percent_encoded_and_read_back(root: Path) -> None:
    allowed = AllowedDirectories([root])
    page, _ = catalog.list_page(allowed, None)
    by_title = {f.title: f for f in page}
    listed = by_title[quote_path(root / BAD)]
    assert listed.name == quote_name(BAD)
    assert listed.uri == root.as_uri() + "/bad%FF%FEname.txt"
    assert listed.title == quote_path(root / BAD)
    assert catalog.read_resource(allowed, listed.uri) == ("hello needle\n", "text/plain")
    newline = by_title[quote_path(root / "line\nbreak.txt")]
    assert newline.uri.endswith("/line%0Abreak.txt")
    assert catalog.read_resource(allowed, newline.uri)[0] == "hello needle\n"
    catalog.check_subscription(allowed, listed.uri)


def test_completion_offers_odd_names_percent_encoded(root: Path) -> None:
    values = catalog.complete_path(AllowedDirectories([root]), str(root).lstrip("/") + "/ba")
    assert values == [str(root).lstrip("/") + "/bad%FF%FEname.txt"]


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def _round_trip(client: Any, root: Path) -> None:
    """What a user does with such a file through a real client: list, read, move, delete."""
    for tool, args in [
        ("list_directory", {"path": "."}),
        ("list_directory_with_sizes", {"path": "."}),
        ("directory_tree", {"path": "."}),
        ("search_files", {"path": ".", "pattern": "**/bad*"}),
        ("grep", {"path": ".", "pattern": "needle"}),
    ]:
        result = await client.call_tool(tool, args)
        assert not result.is_error, (tool, _text(result))
        text = _text(result)
        if tool == "directory_tree":
            text = " ".join(e["name"] for e in json.loads(text.split("\n\n")[0]))
        assert "bad\\377\\376name.txt" in text, tool
    shown = quote_name(BAD)
    assert _text(await client.call_tool("read_text_file", {"path": shown})) == "hello needle\n"
    moved = await client.call_tool("move_file", {"source": shown, "destination": '"renamed\\377.txt"'})
    assert not moved.is_error, _text(moved)
    gone = await client.call_tool("delete_path", {"path": '"renamed\\377.txt"'})
    assert not gone.is_error and not (root / os.fsdecode(b"renamed\xff.txt")).exists()
    uri = (root / "sub").as_uri() + "/bad%FF%FEname.txt"
    assert uri in {r.uri for r in (await client.list_resources()).resources}
    assert (await client.read_resource(uri)).contents[0].text == "deep needle\n"


# Watching is off in the two round trips below: the runtime's file watcher (watchfiles) dies on a
# change to a name that is not UTF-8 and takes the process with it, which the test after them shows.


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_odd_names_round_trip_over_stdio(root: Path, era: Era) -> None:
    async with connect(stdio_params("mcp-batteries-filesystem", str(root), "--no-watch"), era) as client:
        await _round_trip(client, root)
        assert (await client.list_tools()).tools  # the process is alive and answering


@pytest.mark.anyio
async def test_renaming_to_a_non_utf8_name_in_a_watched_tree_keeps_the_server_alive(root: Path) -> None:
    heard = Notifications()
    async with connect(
        stdio_params("mcp-batteries-filesystem", str(root)), "legacy", message_handler=heard
    ) as client:
        await client.list_tools()  # a legacy connection wants list changes: the tree is watched
        moved = await client.call_tool(
            "move_file", {"source": quote_name(BAD), "destination": '"renamed\\377.txt"'}
        )
        assert not moved.is_error
        await heard.wait_method("notifications/resources/list_changed", timeout=5)
        assert (await client.call_tool("list_directory", {"path": "."})).content


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_odd_names_round_trip_over_http(root: Path, era: Era) -> None:
    async with (
        http_server("mcp-batteries-filesystem", str(root), "--no-watch") as running,
        connect_http(running.url, era) as client,
    ):
        await _round_trip(client, root)


@pytest.mark.anyio
async def test_subscribing_to_an_odd_name_hears_its_changes(root: Path) -> None:
    heard = Notifications()
    uri = root.as_uri() + "/bad%FF%FEname.txt"
    async with connect(
        stdio_params("mcp-batteries-filesystem", str(root)), "legacy", message_handler=heard
    ) as client:
        await legacy_subscribe(client, uri)
        (root / BAD).write_bytes(b"changed\n")
        await heard.wait_method("notifications/resources/updated", uri, timeout=5)
