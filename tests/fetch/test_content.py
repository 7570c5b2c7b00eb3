"""Content types, sniffing, charsets, raw/format semantics, paging and the page cache."""

from __future__ import annotations

import json

import pytest
from mcp_batteries.errors import InvalidInput
from mcp_fetch.body import decode_text, sniff
from mcp_fetch.client import Fetcher
from mcp_fetch.paging import page

from .conftest import PAGES, Site, loopback_settings

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
ARTICLE = (
    "<html><head><title>Doc</title></head>"
    "<body><main><h1>Heading</h1><p>Body <b>text</b>.</p></main></body></html>"
)


@pytest.fixture
async def client() -> Fetcher:  # type: ignore[misc]
    fetcher = Fetcher(loopback_settings(ignore_robots_txt=True))
    yield fetcher
    await fetcher.aclose()


async def test_markdown_text_html_and_raw_formats(site: Site, client: Fetcher) -> None:
    site.serve("/a", ARTICLE)
    markdown = await client.fetch(site.url("/a"))
    text = await client.fetch(site.url("/a"), format="text")
    html = await client.fetch(site.url("/a"), format="html")
    raw = await client.fetch(site.url("/a"), raw=True)
    assert markdown.content == "# Heading\n\nBody **text**.\n"
    assert text.content == "Heading\n\nBody text.\n"
    assert html.content.startswith("<main><h1>Heading</h1>")
    assert raw.content == ARTICLE
    assert {r.title for r in (markdown, text, html, raw)} == {"Doc"}
    assert markdown.status == 200 and markdown.content_type == "text/html"


async def test_json_is_indented_and_raw_json_is_returned_as_is(site: Site, client: Fetcher) -> None:
    body = json.dumps({"answer": 42, "items": [1, 2]})
    site.serve("/api", body, content_type="application/json")
    result = await client.fetch(site.url("/api"))
    assert result.content.startswith('```json\n{\n  "answer": 42,')
    assert result.outline == "Document: JSON document."
    raw = await client.fetch(site.url("/api"), raw=True)
    assert raw.content == body
    assert raw.notice is None


async def test_image_is_returned_as_bytes(site: Site, client: Fetcher) -> None:
    site.serve("/p.png", PNG, content_type="image/png")
    result = await client.fetch(site.url("/p.png"))
    assert result.image == PNG and result.image_mime == "image/png" and result.content == ""


async def test_binary_content_that_is_no_document_is_refused_with_a_clear_explanation(
    site: Site, client: Fetcher
) -> None:
    site.serve("/blob", b"\x00\x01binary", content_type="application/x-thing")
    with pytest.raises(InvalidInput, match=r"application/x-thing .* cannot be converted to text"):
        await client.fetch(site.url("/blob"))


async def test_html_without_content_type_is_sniffed(site: Site, client: Fetcher) -> None:
    site.serve("/untyped", "<!DOCTYPE html><html><body><main><p>Sniffed as HTML.</p></main></body></html>",
               content_type="application/octet-stream")  # fmt: skip
    result = await client.fetch(site.url("/untyped"))
    assert result.content_type == "text/html"
    assert result.content == "Sniffed as HTML.\n"


def test_sniffing_recognises_images_pdf_and_text() -> None:
    assert sniff(PNG) == "image/png"
    assert sniff(b"GIF89a....") == "image/gif"
    assert sniff(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert sniff(b"%PDF-1.4") == "application/pdf"
    assert sniff(b"  <html lang=en>") == "text/html"
    assert sniff(b"plain words") == "text/plain"
    assert sniff(b"\x00\x01\x02\xff") is None


async def test_windows_1252_page_declared_in_meta_is_decoded(site: Site, client: Fetcher) -> None:
    site.serve("/cp", (PAGES / "windows1252.html").read_bytes(), content_type="text/html")
    result = await client.fetch(site.url("/cp"))
    assert "Crème brûlée costs 5 € — “quoted”" in result.content
    assert result.title == "Café menu"


async def test_shift_jis_page_declared_in_header_is_decoded(site: Site, client: Fetcher) -> None:
    html = "<html><body><main><h1>日本語のページ</h1><p>こんにちは、世界。</p></main></body></html>"
    site.serve("/sjis", html.encode("shift_jis"), content_type="text/html; charset=Shift_JIS")
    result = await client.fetch(site.url("/sjis"))
    assert "# 日本語のページ" in result.content and "こんにちは、世界。" in result.content


def test_charset_precedence_bom_header_meta_then_fallbacks() -> None:
    meta = '<meta charset="windows-1252"><p>caf\xe9</p>'.encode("latin-1")
    assert decode_text(meta, None, is_html=True)[0].endswith("café</p>")
    assert decode_text("é".encode("cp1252"), "iso-8859-1", is_html=False)[0] == "é"
    assert decode_text("\ufeffhé".encode(), "iso-8859-1", is_html=False)[0] == "hé"
    assert decode_text("€".encode("cp1252"), None, is_html=False)[0] == "€"
    assert decode_text("ü".encode(), None, is_html=False)[0] == "ü"
    assert decode_text(b"x", "no-such-charset", is_html=False)[0] == "x"


def test_paging_cuts_at_line_breaks_and_reports_the_next_index() -> None:
    text = "".join(f"line {n:03d}\n" for n in range(100))  # 9 chars per line
    first = page(text, 0, 48)  # the newline at index 44 lies in the look-back window
    assert first.content == text[:45] and first.next_start_index == 45 and first.truncated
    last = page(text, 891, 50)
    assert last.content == text[891:] and last.next_start_index is None and not last.truncated


def test_paging_past_the_end_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="past the end"):
        page("short", 10, 5)
    with pytest.raises(InvalidInput, match="max_length"):
        page("short", 0, 0)


async def test_paging_through_a_long_page_does_not_refetch_it(site: Site, client: Fetcher) -> None:
    paragraphs = "".join(f"<p>Paragraph number {n} says something worth reading.</p>" for n in range(200))
    site.serve("/long", f"<html><body><main>{paragraphs}</main></body></html>")
    chunks = []
    start: int | None = 0
    while start is not None:
        result = await client.fetch(site.url("/long"), start_index=start, max_length=1000)
        chunks.append(result.content)
        start = result.next_start_index
    assert len(chunks) > 5
    assert "".join(chunks) == (await client.fetch(site.url("/long"), max_length=10**9)).content
    assert site.hits("/long") == 1


async def test_no_store_pages_are_not_cached(site: Site, client: Fetcher) -> None:
    site.serve("/fresh", ARTICLE, headers={"Cache-Control": "no-store"})
    await client.fetch(site.url("/fresh"))
    await client.fetch(site.url("/fresh"))
    assert site.hits("/fresh") == 2


async def test_stale_page_is_revalidated_with_its_etag(site: Site, client: Fetcher) -> None:
    def respond(request) -> None:  # type: ignore[no-untyped-def]
        if request.headers.get("If-None-Match") == '"v1"':
            request.send_response(304)
            request.send_header("ETag", '"v1"')
            request.send_header("Cache-Control", "max-age=0")
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        body = ARTICLE.encode()
        request.send_response(200)
        request.send_header("Content-Type", "text/html")
        request.send_header("ETag", '"v1"')
        request.send_header("Cache-Control", "max-age=0")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    site.handle("/etag", respond)
    first = await client.fetch(site.url("/etag"))
    second = await client.fetch(site.url("/etag"))
    assert not first.from_cache and second.from_cache and second.content == first.content
    assert [headers.get("if-none-match") for path, headers in site.requests] == [None, '"v1"']


async def test_cache_is_bounded_by_entry_count(site: Site) -> None:
    client = Fetcher(loopback_settings(ignore_robots_txt=True, cache_entries=2))
    try:
        for name in ("a", "b", "c", "a"):
            site.serve(f"/{name}", ARTICLE)
            await client.fetch(site.url(f"/{name}"))
    finally:
        await client.aclose()
    assert site.hits("/a") == 2 and site.hits("/b") == 1


# `+2AA-` is a lone surrogate in UTF-7; `\ud800` one in unicode_escape; 0xE9 is é in windows-1252.
HOSTILE_BODY = b"<p>+2AA- \\ud800 caf\xe9</p>"


@pytest.mark.parametrize(
    "label",
    ["utf-7", "unicode_escape", "raw_unicode_escape", "base64", "hex", "rot13", "zlib", "idna", "punycode",
     "utf-32", "x-user-defined", "replacement", "no-such-charset", "", "utf-8"],
)  # fmt: skip
def test_a_charset_that_is_not_a_web_encoding_never_breaks_decoding(label: str) -> None:
    text, codec = decode_text(HOSTILE_BODY, label, is_html=True)
    text.encode("utf-8")  # serializable: no lone surrogates
    assert text == "<p>+2AA- \\ud800 café</p>"
    assert codec == "cp1252"


def test_mislabelled_pages_are_decoded_as_what_they_are() -> None:
    utf8 = "Ünïcödé – “quoted”".encode()
    assert decode_text(utf8, "iso-8859-1", is_html=False) == ("Ünïcödé – “quoted”", "utf-8")
    assert decode_text("café crème".encode("cp1252"), "utf-8", is_html=False) == ("café crème", "cp1252")
    mostly_utf8 = "naïve façade ".encode() * 5 + b"\xff"
    assert decode_text(mostly_utf8, "utf-8", is_html=False) == ("naïve façade " * 5 + "\ufffd", "utf-8")


def test_declarations_in_the_document_are_honoured() -> None:
    xml = '<?xml version="1.0" encoding="koi8-r"?><a>Привет</a>'.encode("koi8_r")
    assert decode_text(xml, None, is_html=False) == (
        '<?xml version="1.0" encoding="koi8-r"?><a>Привет</a>',
        "koi8-r",
    )
    jis = "こんにちは".encode("iso2022_jp")  # ASCII bytes that are another encoding's escapes
    assert decode_text(jis, "iso-2022-jp", is_html=False) == ("こんにちは", "iso2022_jp")
    sjis = '<meta charset="shift_jis"><p>日本語</p>'.encode("cp932")
    assert decode_text(sjis, None, is_html=True)[0] == '<meta charset="shift_jis"><p>日本語</p>'


@pytest.mark.parametrize("raw", [False, True])
@pytest.mark.parametrize("label", ["utf-7", "unicode_escape", "base64"])
async def test_pages_with_hostile_charsets_come_back_as_text(
    site: Site, client: Fetcher, label: str, raw: bool
) -> None:
    site.serve("/odd", b"<html><body><main>" + HOSTILE_BODY + b"</main></body></html>",
               content_type=f"text/html; charset={label}")  # fmt: skip
    result = await client.fetch(site.url("/odd"), raw=raw)
    assert "café" in result.content
    result.content.encode("utf-8")
