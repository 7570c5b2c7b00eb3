"""mcp-filesystem through real clients: parity with the reference, every tool, live resources.

`data/reference_tools.json` is the reference server's `tools/list` (npm
@modelcontextprotocol/server-filesystem), recorded with the SDK client; re-record it when the
reference changes.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
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
from mcp_filesystem.config import FilesystemSettings
from mcp_filesystem.server import build_server

pytestmark = pytest.mark.anyio

REFERENCE = json.loads((Path(__file__).parent / "data" / "reference_tools.json").read_text())["tools"]
WRITERS = {"write_file", "edit_file", "create_directory", "move_file", "copy_file", "delete_path"}


def png_bytes() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "work"
    (base / "src" / "pkg").mkdir(parents=True)
    (base / "src" / "pkg" / "mod.py").write_text("def hello():\n    return 'hello'\n")
    (base / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    (base / "pixel.png").write_bytes(png_bytes())
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    os.symlink(tmp_path / "secret.txt", base / "escape")
    return base


def server_for(root: Path, **overrides: Any) -> Any:
    return build_server(FilesystemSettings(directories=[str(root)], **overrides)).mcp


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_every_reference_tool_and_argument_is_offered() -> None:
    async with connect(build_server(FilesystemSettings(directories=["."])).mcp, "legacy") as client:
        ours = {t.name: t for t in (await client.list_tools()).tools}
    for reference in REFERENCE:
        name = reference["name"]
        assert name in ours, f"missing reference tool {name}"
        schema = ours[name].input_schema
        assert set(reference["inputSchema"].get("properties", {})) <= set(schema.get("properties", {})), name
        # Anything we require, the reference requires too: calls written for it keep working.
        assert set(schema.get("required", [])) <= set(reference["inputSchema"].get("required", [])), name
        assert (
            ours[name].annotations.read_only_hint
            == reference.get("annotations", {}).get("readOnlyHint", False)
            or name in WRITERS
        )
    assert {"copy_file", "delete_path", "grep"} <= set(ours)


@pytest.mark.parametrize("era", ERAS)
async def test_every_tool_works_in_process(root: Path, era: Era) -> None:
    async with connect(server_for(root), era) as c:

        async def call(name: str, **args: Any) -> str:
            result = await c.call_tool(name, args)
            assert not result.is_error, (name, text(result))
            return text(result)

        assert "line 1\n" in await call("read_text_file", path="notes.txt", head=2)
        assert "line 5000" in await call("read_text_file", path="notes.txt", tail=1)
        page = await call("read_text_file", path="notes.txt", offset=100, limit=3)
        assert "line 100\nline 101\nline 102" in page
        whole = await call("read_text_file", path="notes.txt")
        assert "offset=" in whole  # bounded, and says how to get the rest
        assert "line 1" in await call("read_file", path="notes.txt", head=1)
        media = await c.call_tool("read_media_file", {"path": "pixel.png"})
        assert media.content[0].type == "image" and media.content[0].mime_type == "image/png"
        multi = await call("read_multiple_files", paths=["src/pkg/mod.py", "missing.txt"])
        assert "def hello" in multi and "missing.txt: Error" in multi
        await call("write_file", path="new/../fresh.txt", content="fresh\n")
        diff = await call("edit_file", path="fresh.txt", edits=[{"oldText": "fresh", "newText": "edited"}])
        assert "-fresh" in diff and "+edited" in diff
        await call("create_directory", path="made/deep")
        await call("copy_file", source="fresh.txt", destination="made/copy.txt")
        await call("move_file", source="made/copy.txt", destination="made/deep/moved.txt")
        assert "[FILE] moved.txt" in await call("list_directory", path="made/deep")
        assert "Combined size" in await call("list_directory_with_sizes", path=".", sortBy="size")
        tree = json.loads((await call("directory_tree", path="src")).split("\n\n")[0])
        assert tree[0]["name"] == "pkg"
        assert "mod.py" in await call("search_files", path=".", pattern="**/*.py")
        assert "mod.py:2:" in await call("grep", path=".", pattern="return", include=["*.py"])
        assert "size" in (await call("get_file_info", path="notes.txt")).lower()
        assert str(root) in await call("list_allowed_directories")
        await call("delete_path", path="made", recursive=True)
        assert not (root / "made").exists()


@pytest.mark.parametrize("era", ERAS)
async def test_escapes_are_refused_through_the_client_naming_allowed_dirs(root: Path, era: Era) -> None:
    async with connect(server_for(root), era) as c:
        for name, args in [
            ("read_text_file", {"path": "escape"}),
            ("read_text_file", {"path": "../secret.txt"}),
            ("read_text_file", {"path": str(root) + "_evil/x"}),
            ("write_file", {"path": "escape", "content": "pwned"}),
            ("list_directory", {"path": "/"}),
            ("read_text_file", {"path": "a\x00b"}),
            ("list_directory_with_sizes", {"path": ".."}),
            ("directory_tree", {"path": ".."}),
            ("search_files", {"path": "..", "pattern": "secret*"}),
            ("grep", {"path": "..", "pattern": "SECRET"}),
            ("grep", {"path": "escape", "pattern": "SECRET"}),
            ("edit_file", {"path": "escape", "edits": [{"oldText": "TOP", "newText": "x"}]}),
            ("get_file_info", {"path": "../secret.txt"}),
            ("copy_file", {"source": "escape", "destination": "stolen.txt"}),
        ]:
            result = await c.call_tool(name, args)
            assert result.is_error, (name, args)
            assert "TOP SECRET" not in text(result)
        multi = text(await c.call_tool("read_multiple_files", {"paths": ["escape", "../secret.txt"]}))
        assert multi.count("Access denied") == 2 and "TOP SECRET" not in multi
    assert (root.parent / "secret.txt").read_text() == "TOP SECRET"


async def test_a_fifo_is_refused_not_hung_on(root: Path) -> None:
    os.mkfifo(root / "pipe")
    async with connect(server_for(root), "legacy") as c:
        with anyio.fail_after(10):
            result = await c.call_tool("read_text_file", {"path": "pipe"})
    assert result.is_error and "regular file" in text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_read_only_mode_offers_no_tool_that_writes(root: Path, era: Era) -> None:
    async with connect(server_for(root, read_only=True), era) as c:
        names = {t.name for t in (await c.list_tools()).tools}
    assert not names & WRITERS and "grep" in names


@pytest.mark.parametrize("era", ERAS)
async def test_files_are_resources_with_templates_pages_and_completion(root: Path, era: Era) -> None:
    async with connect(server_for(root), era) as c:
        listed = await c.list_resources()
        uris = {r.uri for r in listed.resources}
        assert (root / "notes.txt").as_uri() in uris
        templates = (await c.list_resource_templates()).resource_templates
        assert templates[0].uri_template == "file:///{+path}"
        image = await c.read_resource((root / "pixel.png").as_uri())
        assert image.contents[0].mime_type == "image/png" and hasattr(image.contents[0], "blob")
        py = await c.read_resource((root / "src/pkg/mod.py").as_uri())
        assert "def hello" in py.contents[0].text
        from mcp.types import ResourceTemplateReference

        done = await c.complete(
            ResourceTemplateReference(type="ref/resource", uri="file:///{+path}"),
            {"name": "path", "value": str(root).lstrip("/") + "/no"},
        )
        assert any(v.endswith("notes.txt") for v in done.completion.values)


async def live_roundtrip(client: Client, era: Era, heard: Notifications, target: Path) -> None:
    uri = target.as_uri()
    if era == "legacy":
        await legacy_subscribe(client, uri)
        target.write_text("changed by someone else\n")  # not through the server
        await heard.wait_method("notifications/resources/updated", uri)
        (target.parent / "appeared.txt").write_text("new")
        await heard.wait_method("notifications/resources/list_changed")
    else:
        async with client.listen(resource_subscriptions=[uri], resources_list_changed=True) as events:
            target.write_text("changed by someone else\n")
            kinds: set[str] = set()
            with anyio.fail_after(10):
                async for event in events:
                    kinds.add(type(event).__name__)
                    if kinds == {"ResourceUpdated"}:
                        (target.parent / "appeared.txt").write_text("new")
                    if kinds >= {"ResourceUpdated", "ResourcesListChanged"}:
                        break


@pytest.mark.parametrize("era", ERAS)
async def test_live_updates_over_stdio_for_changes_made_outside_the_server(root: Path, era: Era) -> None:
    heard = Notifications()
    async with connect(
        stdio_params("mcp-batteries-filesystem", str(root)), era, message_handler=heard
    ) as client:
        await live_roundtrip(client, era, heard, root / "notes.txt")


@pytest.mark.parametrize("era", ERAS)
async def test_live_updates_over_http_for_changes_made_outside_the_server(root: Path, era: Era) -> None:
    heard = Notifications()
    async with (
        http_server("mcp-batteries-filesystem", str(root)) as running,
        connect_http(running.url, era, message_handler=heard) as client,
    ):
        await client.list_tools()
        await live_roundtrip(client, era, heard, root / "notes.txt")


@pytest.mark.parametrize("era", ERAS)
async def test_http_serves_every_read_tool(root: Path, era: Era) -> None:
    async with (
        http_server("mcp-batteries-filesystem", str(root)) as running,
        connect_http(running.url, era) as c,
    ):
        result = await c.call_tool("grep", {"path": ".", "pattern": "hello"})
        assert "mod.py" in text(result)


async def test_server_answers_other_requests_while_a_long_walk_runs(tmp_path: Path) -> None:
    for d in range(300):
        folder = tmp_path / f"d{d}"
        folder.mkdir()
        for f in range(30):
            (folder / f"f{f}.txt").write_text("x")
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with connect(server_for(tmp_path), "legacy") as c:
        finished: list[str] = []

        async def walk() -> None:
            await c.call_tool("directory_tree", {"path": "."}, progress_callback=on_progress)
            finished.append("tree")

        async with anyio.create_task_group() as tg:
            tg.start_soon(walk)
            await c.list_tools()
            finished.append("list_tools")
    assert finished[0] == "list_tools"
    assert progress, "a long walk reports progress"


async def test_a_huge_root_is_watched_at_its_top_level_only_and_still_reports_list_changes(
    root: Path,
) -> None:
    server = build_server(FilesystemSettings(directories=[str(root)], watch_max_dirs=1))
    heard = Notifications()
    async with connect(server.mcp, "legacy", message_handler=heard) as client:
        await client.list_tools()  # the connection is now interested in list changes
        (root / "top-level-new.txt").write_text("x")
        await heard.wait_method("notifications/resources/list_changed")


async def test_without_watching_the_server_still_reports_its_own_writes(root: Path) -> None:
    # A network volume (watch = false): no watcher, but writes made through this server are
    # notified (and, with a change bus, published to the other replicas).
    server = build_server(FilesystemSettings(directories=[str(root)], watch=False))
    target = root / "notes.txt"
    async with (
        connect(server.mcp, "modern") as client,
        client.listen(resource_subscriptions=[target.as_uri()], resources_list_changed=True) as events,
    ):
        await client.call_tool(
            "edit_file", {"path": "notes.txt", "edits": [{"oldText": "line 4999", "newText": "one"}]}
        )
        await client.call_tool("create_directory", {"path": str(root / "made")})
        kinds: list[str] = []
        with anyio.fail_after(10):
            async for event in events:
                kinds.append(type(event).__name__)
                if "ResourcesListChanged" in kinds:
                    break
        assert kinds == ["ResourceUpdated", "ResourcesListChanged"]


async def test_roots_narrow_reads_listing_and_subscriptions(root: Path) -> None:
    from mcp import MCPError
    from mcp.types import ListRootsResult, Root

    async def only_src(_: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=(root / "src").as_uri())])

    async with connect(server_for(root), "legacy", list_roots_callback=only_src) as c:
        assert text(await c.call_tool("list_allowed_directories", {})).endswith(str(root / "src"))
        refused = await c.call_tool("read_text_file", {"path": str(root / "notes.txt")})
        assert refused.is_error and str(root / "src") in text(refused)
        assert not text(
            await c.call_tool("read_text_file", {"path": str(root / "src/pkg/mod.py")})
        ).startswith("Access")
        listed = {r.uri for r in (await c.list_resources()).resources}
        assert listed == {(root / "src/pkg/mod.py").as_uri()}
        with pytest.raises(MCPError) as caught:
            await legacy_subscribe(c, (root / "notes.txt").as_uri())
        assert caught.value.error.code == -32602


async def test_completion_stays_within_the_client_roots(root: Path) -> None:
    from mcp.types import ListRootsResult, ResourceTemplateReference, Root

    async def only_src(_: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=(root / "src").as_uri())])

    async with connect(server_for(root), "legacy", list_roots_callback=only_src) as c:
        done = await c.complete(
            ResourceTemplateReference(type="ref/resource", uri="file:///{+path}"),
            {"name": "path", "value": str(root).lstrip("/") + "/"},
        )
    values = done.completion.values
    assert values and all("/src" in v for v in values)
    assert not any(v.endswith("notes.txt") for v in values)


async def no_roots(_: Any) -> Any:
    """What the MCP Inspector answers to roots/list: it declares roots and lists none."""
    from mcp.types import ListRootsResult

    return ListRootsResult(roots=[])


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_client_whose_roots_list_is_empty_may_use_every_configured_directory(
    root: Path, transport: str
) -> None:
    args = (str(root), "--no-watch", "--log-level", "info")
    if transport == "stdio":
        async with connect(
            stdio_params("mcp-batteries-filesystem", *args), "legacy", list_roots_callback=no_roots
        ) as c:
            listed = text(await c.call_tool("list_allowed_directories", {}))
            read = await c.call_tool("read_text_file", {"path": "src/pkg/mod.py"})
    else:
        async with (
            http_server("mcp-batteries-filesystem", *args) as running,
            connect_http(running.url, "legacy", list_roots_callback=no_roots) as c,
        ):
            listed = text(await c.call_tool("list_allowed_directories", {}))
            read = await c.call_tool("read_text_file", {"path": "src/pkg/mod.py"})
            resource = await c.read_resource((root / "notes.txt").as_uri())
            assert resource.contents[0].text.startswith("line 1\n")  # type: ignore[union-attr]
        said = [line for line in running.stderr_lines if "narrows nothing" in line]
        assert len(said) == 1 and " INFO " in said[0], running.stderr_lines
    assert listed.endswith(str(root))
    assert not read.is_error and "def hello" in text(read)


async def test_roots_outside_every_allowed_directory_refuse_and_name_the_roots(
    root: Path, tmp_path: Path
) -> None:
    from mcp.types import ListRootsResult, Root

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def outside(_: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=elsewhere.as_uri())])

    async with connect(server_for(root), "legacy", list_roots_callback=outside) as c:
        refused = await c.call_tool("read_text_file", {"path": str(root / "notes.txt")})
        listed = text(await c.call_tool("list_allowed_directories", {}))
    assert refused.is_error
    for said in (text(refused), listed):
        assert str(elsewhere) in said and str(root) in said and "none of its roots" in said
