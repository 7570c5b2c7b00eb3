"""mcp-fetch through real MCP clients: in-process (both eras), stdio subprocess and HTTP."""

from __future__ import annotations

import base64
import re
import threading
from typing import Any

import anyio
import pytest
from mcp.types import ImageContent, TextContent
from mcp_batteries.testing import ERAS, Era, connect, connect_http, http_server, stdio_params
from mcp_fetch import extract as extract_module
from mcp_fetch.client import FetchSettings
from mcp_fetch.config import FetchServerSettings
from mcp_fetch.server import build_server
from mcp_fetch.service import FetchService

from .conftest import PAGES, Site

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
NEXT_INDEX = re.compile(r"start_index of (\d+) to get more content")


def settings(**overrides: Any) -> FetchServerSettings:
    values: dict[str, Any] = {"allow_private": True, "connect_timeout": 2.0, "read_timeout": 10.0}
    values.update(overrides)
    return FetchServerSettings(**values)


def texts(result: Any) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def serve_article(site: Site) -> str:
    site.serve("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
    site.serve("/article", (PAGES / "article.html").read_bytes())
    return site.url("/article")


@pytest.mark.parametrize("era", ERAS)
async def test_tool_is_listed_like_the_reference(era: Era) -> None:
    async with connect(build_server(settings()).mcp, era) as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == ["fetch"]
        tool = tools[0]
        props = tool.input_schema["properties"]
        assert {"url", "max_length", "start_index", "raw", "format"} <= set(props)
        assert tool.input_schema["required"] == ["url"]
        assert props["max_length"]["default"] == 5000
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.open_world_hint is True
        assert tool.annotations.idempotent_hint is True
        assert tool.output_schema is None
        assert "JavaScript" in (tool.description or "")


@pytest.mark.parametrize("era", ERAS)
async def test_fetches_article_as_markdown(site: Site, era: Era) -> None:
    site.serve("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
    site.serve("/article", (PAGES / "article.html").read_bytes())
    site.redirect("/old", "/article")
    async with connect(build_server(settings()).mcp, era) as client:
        result = await client.call_tool("fetch", {"url": site.url("/old"), "max_length": 100_000})
    assert not result.is_error, texts(result)
    assert len(result.content) == 1  # no JSON echo of the text
    assert result.structured_content is None
    text = texts(result)
    assert text.startswith(f"Contents of {site.url('/article')}:\n")
    assert "Title: Why Tide Pools Matter" in text
    assert "# Why Tide Pools Matter" in text
    assert "Subscribe" not in text.split("\n", 2)[2][:200]  # navigation stripped from the start
    assert "<error>" not in text


@pytest.mark.parametrize("era", ERAS)
async def test_pages_with_start_index_without_refetching(site: Site, era: Era) -> None:
    url = serve_article(site)
    async with connect(build_server(settings()).mcp, era) as client:
        first = texts(await client.call_tool("fetch", {"url": url, "max_length": 400}))
        found = NEXT_INDEX.search(first)
        assert found, first
        assert first.endswith(
            f"<error>Content truncated. Call the fetch tool with a start_index of {found.group(1)} "
            "to get more content.</error>"
        )
        second = texts(
            await client.call_tool(
                "fetch", {"url": url, "max_length": 100_000, "start_index": int(found.group(1))}
            )
        )
    assert site.hits("/article") == 1
    assert second.startswith(f"Contents of {url}:")
    assert "<error>" not in second
    chunk1 = first.split("\n", 2)[2].split("\n\n<error>")[0]
    chunk2 = second.split("\n", 2)[2]
    assert chunk1 and chunk2 and chunk1 != chunk2


@pytest.mark.parametrize("era", ERAS)
async def test_image_comes_back_as_image_content(site: Site, era: Era) -> None:
    site.serve("/robots.txt", "", content_type="text/plain")
    site.serve("/logo.png", PNG, content_type="image/png")
    async with connect(build_server(settings()).mcp, era) as client:
        result = await client.call_tool("fetch", {"url": site.url("/logo.png")})
    assert not result.is_error, texts(result)
    images = [b for b in result.content if isinstance(b, ImageContent)]
    assert len(images) == 1
    assert images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data) == PNG


@pytest.mark.parametrize("era", ERAS)
async def test_loopback_is_refused_without_allow_private(site: Site, era: Era) -> None:
    url = serve_article(site)
    server = build_server(FetchServerSettings())
    async with connect(server.mcp, era) as client:
        result = await client.call_tool("fetch", {"url": url})
    assert result.is_error
    message = texts(result)
    assert message.startswith(f"Refused by the SSRF policy: {url}: 127.0.0.1 is a loopback address.")
    assert "--allow-private-host 127.0.0.1" in message and "--allow-private " in message
    assert site.hits("/article") == 0


@pytest.mark.parametrize("era", ERAS)
async def test_robots_txt_refusal_and_prompt_bypass(site: Site, era: Era) -> None:
    site.serve("/robots.txt", "User-agent: *\nDisallow: /private\n", content_type="text/plain")
    site.serve("/private/page", (PAGES / "article.html").read_bytes())
    async with connect(build_server(settings()).mcp, era) as client:
        result = await client.call_tool("fetch", {"url": site.url("/private/page")})
        assert result.is_error
        message = texts(result)
        assert "robots.txt" in message and "Disallow: /private" in message
        assert site.hits("/private/page") == 0

        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["fetch"]
        assert [a.name for a in prompts[0].arguments or []] == ["url"]
        prompt = await client.get_prompt("fetch", {"url": site.url("/private/page")})
    assert len(prompt.messages) == 1
    message_block = prompt.messages[0]
    assert message_block.role == "user"
    assert isinstance(message_block.content, TextContent)
    assert message_block.content.text.startswith(f"Contents of {site.url('/private/page')}:")
    assert "Why Tide Pools Matter" in message_block.content.text
    assert site.hits("/private/page") == 1


@pytest.mark.parametrize("era", ERAS)
async def test_prompt_reports_failure_as_message(site: Site, era: Era) -> None:
    async with connect(build_server(settings()).mcp, era) as client:
        prompt = await client.get_prompt("fetch", {"url": site.url("/missing")})
    content = prompt.messages[0].content
    assert isinstance(content, TextContent)
    assert content.text.startswith("Failed to fetch") and "404" in content.text


@pytest.mark.parametrize("era", ERAS)
async def test_other_requests_are_answered_while_a_page_converts(
    site: Site, era: Era, monkeypatch: pytest.MonkeyPatch
) -> None:
    paragraphs = "".join(
        f"<p>Paragraph {i} of a long generated page with some words.</p>" for i in range(20_000)
    )
    site.serve("/robots.txt", "", content_type="text/plain")
    site.serve("/big", f"<html><head><title>Big</title></head><body><main>{paragraphs}</main></body></html>")
    converting = threading.Event()
    release = threading.Event()
    real_convert = extract_module.convert_html

    def gated_convert(*args: Any, **kwargs: Any) -> Any:
        converting.set()
        release.wait(10)  # held until the test has had its other request answered
        return real_convert(*args, **kwargs)

    monkeypatch.setattr(extract_module, "convert_html", gated_convert)
    done = anyio.Event()
    results: list[Any] = []

    async with connect(build_server(settings()).mcp, era) as client:

        async def fetch_big() -> None:
            results.append(await client.call_tool("fetch", {"url": site.url("/big")}))
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(fetch_big)
            with anyio.fail_after(10):
                await anyio.to_thread.run_sync(converting.wait)
            tools = await client.list_tools()
            assert not done.is_set()  # answered while the conversion was still running
            release.set()
        assert [t.name for t in tools.tools] == ["fetch"]
    assert not results[0].is_error, texts(results[0])
    assert "Paragraph 0 of a long generated page" in texts(results[0])


@pytest.mark.parametrize("era", ERAS)
async def test_stdio_subprocess(site: Site, era: Era) -> None:
    url = serve_article(site)
    async with connect(
        stdio_params("mcp-batteries-fetch", "--allow-private", "--log-level", "error"), era
    ) as client:
        first = await client.call_tool("fetch", {"url": url, "max_length": 300})
        text = texts(first)
        assert not first.is_error, text
        assert text.startswith(f"Contents of {url}:\nTitle: Why Tide Pools Matter")
        found = NEXT_INDEX.search(text)
        assert found
        second = await client.call_tool("fetch", {"url": url, "start_index": int(found.group(1))})
        assert not second.is_error
        assert [t.name for t in (await client.list_tools()).tools] == ["fetch"]
    assert site.hits("/article") == 1


async def test_stdio_refuses_loopback_by_default(site: Site) -> None:
    url = serve_article(site)
    async with connect(stdio_params("mcp-batteries-fetch"), "legacy") as client:
        result = await client.call_tool("fetch", {"url": url})
    assert result.is_error and "--allow-private" in texts(result)


@pytest.mark.parametrize("era", ERAS)
async def test_http_transport(site: Site, era: Era) -> None:
    url = serve_article(site)
    async with (
        http_server("mcp-batteries-fetch", "--allow-private") as running,
        connect_http(running.url, era) as client,
    ):
        result = await client.call_tool("fetch", {"url": url, "format": "text", "max_length": 100_000})
        prompt = await client.get_prompt("fetch", {"url": url})
    assert not result.is_error, texts(result)
    assert texts(result).startswith(f"Contents of {url}:\nTitle: Why Tide Pools Matter")
    assert "# Why" not in texts(result)  # plain text, not Markdown
    assert "Why Tide Pools Matter" in prompt.messages[0].content.text  # type: ignore[union-attr]


async def test_bad_arguments_are_refused(site: Site) -> None:
    async with connect(build_server(settings()).mcp, "modern") as client:
        for arguments in (
            {"url": site.url("/"), "max_length": 0},
            {"url": site.url("/"), "max_length": 1_000_000},
            {"url": site.url("/"), "start_index": -1},
            {"url": site.url("/"), "format": "pdf"},
            {"url": "file:///etc/passwd"},
        ):
            result = await client.call_tool("fetch", arguments)
            assert result.is_error, arguments


async def test_overlapping_clients_share_one_fetcher(site: Site) -> None:
    """The lifespan runs once per in-process client; closing one must not close the other's Fetcher."""
    url = serve_article(site)
    server = build_server(settings())
    async with connect(server.mcp, "modern") as first:
        async with connect(server.mcp, "legacy") as second:
            assert not (await second.call_tool("fetch", {"url": url})).is_error
        result = await first.call_tool("fetch", {"url": url, "start_index": 10})
        assert not result.is_error, texts(result)
    async with connect(server.mcp, "modern") as again:  # reopened after the last client left
        assert not (await again.call_tool("fetch", {"url": url})).is_error


def test_flags_become_fetch_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_batteries.testing import parse_settings
    from mcp_fetch.config import fetch_settings

    parsed = parse_settings(
        FetchServerSettings,
        [
            "--allow-host",
            "intranet.example.com",
            "--allow-host",
            "10.0.0.0/8,192.168.1.5",
            "--max-redirects",
            "3",
        ],
        prog="mcp-fetch",
        description="",
    )
    converted = fetch_settings(parsed)
    assert converted.allow_hosts == ("intranet.example.com", "10.0.0.0/8", "192.168.1.5")
    assert converted.max_redirects == 3
    assert converted.allow_private is False and converted.ignore_robots_txt is False

    monkeypatch.setenv("MCP_FETCH_ALLOW_HOST", "a.example,b.example")
    monkeypatch.setenv("MCP_FETCH_IGNORE_ROBOTS_TXT", "true")
    from_env = fetch_settings(FetchServerSettings())
    assert from_env.allow_hosts == ("a.example", "b.example")
    assert from_env.ignore_robots_txt is True


MALFORMED_URLS = {
    "http://127.0.0.1:99999/": "port 99999 is out of range",
    "http://xn--zz.invalid/": "not a valid internationalised (punycode) label",
    "http://user:pw@127.0.0.1/": "user name or password",
    "http://exa mple.com/": "is not a valid host name",
    "http://example.com/" + "a" * 20_000: "characters long, and at most 8192 are accepted",
    "gopher://example.com/": "only absolute http:// and https:// URLs",
    "http://[fe80::1%25eth0]/": "zone id",
    "http:///nohost": "no host name",
}


@pytest.mark.parametrize("era", ERAS)
async def test_malformed_urls_get_specific_errors_and_the_next_call_works(site: Site, era: Era) -> None:
    url = serve_article(site)
    async with connect(build_server(settings()).mcp, era) as client:
        for bad, problem in MALFORMED_URLS.items():
            result = await client.call_tool("fetch", {"url": bad})
            assert result.is_error, bad
            assert problem in texts(result), texts(result)
            assert "Error executing tool" not in texts(result)
            good = await client.call_tool("fetch", {"url": url})
            assert not good.is_error, texts(good)


@pytest.mark.parametrize("era", ERAS)
async def test_a_page_in_a_hostile_charset_never_breaks_the_reply(site: Site, era: Era) -> None:
    # UTF-7 would decode `+2AA-` to a lone surrogate, which no JSON reply can carry.
    site.serve("/robots.txt", "", content_type="text/plain")
    site.serve(
        "/utf7",
        b"<html><head><title>T +2AA-</title></head><body><main><p>x +2AA- caf\xe9</p></main></body></html>",
        content_type="text/html; charset=utf-7",
    )
    async with connect(build_server(settings()).mcp, era) as client:
        for arguments in ({"url": site.url("/utf7")}, {"url": site.url("/utf7"), "raw": True}):
            result = await client.call_tool("fetch", arguments)
            assert not result.is_error, texts(result)
            assert "x +2AA- café" in texts(result)
        assert not (await client.call_tool("fetch", {"url": serve_article(site)})).is_error


@pytest.mark.parametrize("era", ERAS)
async def test_prompt_failure_for_a_huge_or_unencodable_url_is_a_bounded_message(era: Era) -> None:
    async with connect(build_server(settings()).mcp, era) as client:
        huge = await client.get_prompt("fetch", {"url": "http://example.com/" + "a" * 50_000})
        text = huge.messages[0].content.text  # type: ignore[union-attr]
        assert text.startswith("Failed to fetch http://example.com/aaa") and len(text) < 1000
        assert "at most 8192 are accepted" in text


async def test_prompt_failure_for_a_url_with_a_lone_surrogate_can_be_serialized() -> None:
    service = FetchService(FetchSettings())
    async with service.running():
        text = await service.prompt_text("http://example.com/\ud800")
    assert text.startswith("Failed to fetch http://example.com/\ufffd: ")
    text.encode("utf-8")
