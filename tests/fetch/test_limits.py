"""Download size cap, decompression bombs, timeouts that trickling cannot defeat, redirect limits."""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler

import anyio
import pytest
from mcp_batteries.errors import LimitExceeded, UpstreamError
from mcp_fetch.body import BodyTooLarge, BoundedDecoder
from mcp_fetch.client import Fetcher

from .conftest import Site, loopback_settings

pytestmark = pytest.mark.anyio


def _chunked(request: BaseHTTPRequestHandler, content_type: str = "text/html") -> None:
    request.send_response(200)
    request.send_header("Content-Type", content_type)
    request.send_header("Transfer-Encoding", "chunked")
    request.end_headers()


def _write_chunk(request: BaseHTTPRequestHandler, data: bytes) -> None:
    request.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    request.wfile.flush()


async def test_oversized_declared_body_is_refused_naming_the_cap(site: Site) -> None:
    site.serve("/big", b"x" * 200_000, content_type="text/plain")
    client = Fetcher(loopback_settings(ignore_robots_txt=True, max_download_bytes=100_000))
    try:
        with pytest.raises(LimitExceeded, match=r"larger than the 98 KiB download limit"):
            await client.fetch(site.url("/big"))
    finally:
        await client.aclose()


async def test_endless_chunked_body_is_cut_off_while_streaming(site: Site) -> None:
    sent = {"bytes": 0}

    def endless(request: BaseHTTPRequestHandler) -> None:
        _chunked(request, "text/plain")
        for _ in range(10_000):  # 640 MB if nobody stops reading
            _write_chunk(request, b"a" * 65536)
            sent["bytes"] += 65536

    site.handle("/endless", endless)
    client = Fetcher(loopback_settings(ignore_robots_txt=True, max_download_bytes=256 * 1024))
    try:
        with pytest.raises(LimitExceeded, match="download limit"):
            await client.fetch(site.url("/endless"))
    finally:
        await client.aclose()
    # The client hung up long before the server could send everything.
    assert sent["bytes"] < 50 * 1024 * 1024


async def test_gzip_bomb_is_refused_without_decompressing_it_all(site: Site) -> None:
    bomb = gzip.compress(b"\0" * (10 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 20_000
    site.serve("/bomb", bomb, headers={"Content-Encoding": "gzip"})
    client = Fetcher(loopback_settings(ignore_robots_txt=True, max_download_bytes=512 * 1024))
    try:
        with pytest.raises(LimitExceeded, match="download limit"):
            await client.fetch(site.url("/bomb"))
    finally:
        await client.aclose()


async def test_gzip_bomb_within_the_cap_trips_the_ratio_guard(site: Site) -> None:
    bomb = gzip.compress(b"\0" * (8 * 1024 * 1024), compresslevel=9)
    site.serve("/bomb", bomb, headers={"Content-Encoding": "gzip"})
    client = Fetcher(loopback_settings(ignore_robots_txt=True))  # 10 MiB cap
    try:
        with pytest.raises(LimitExceeded, match="decompression bomb"):
            await client.fetch(site.url("/bomb"))
    finally:
        await client.aclose()


def test_bounded_decoder_never_produces_more_than_the_cap_plus_one() -> None:
    decoder = BoundedDecoder("gzip", limit=1000)
    produced = 0
    with pytest.raises(BodyTooLarge):
        produced += len(decoder.feed(gzip.compress(b"\0" * 10_000_000)))
    assert decoder.decoded_bytes <= 1001
    assert produced == 0


def test_bounded_decoder_handles_raw_deflate_and_concatenated_gzip_members() -> None:
    raw = zlib.compressobj(wbits=-15)
    raw_deflate = raw.compress(b"hello deflate") + raw.flush()
    assert BoundedDecoder("deflate", 1000).feed(raw_deflate) == b"hello deflate"
    two_members = gzip.compress(b"first ") + gzip.compress(b"second")
    assert BoundedDecoder("gzip", 1000).feed(two_members) == b"first second"


async def test_gzip_page_is_decoded(site: Site) -> None:
    page = "<main><h1>Compressed</h1><p>" + "Gzip works fine. " * 50 + "</p></main>"
    site.serve("/gz", gzip.compress(page.encode()), headers={"Content-Encoding": "gzip"})
    client = Fetcher(loopback_settings(ignore_robots_txt=True))
    try:
        result = await client.fetch(site.url("/gz"))
    finally:
        await client.aclose()
    assert result.content.startswith("# Compressed")
    assert site.requests[0][1]["accept-encoding"] == "gzip, deflate"


async def test_unsupported_content_encoding_is_an_upstream_error(site: Site) -> None:
    site.serve("/br", b"\x1b\x00\x00", headers={"Content-Encoding": "br"})
    client = Fetcher(loopback_settings(ignore_robots_txt=True))
    try:
        with pytest.raises(UpstreamError, match="'br'"):
            await client.fetch(site.url("/br"))
    finally:
        await client.aclose()


async def test_trickled_body_hits_the_overall_deadline(site: Site) -> None:
    def trickle(request: BaseHTTPRequestHandler) -> None:
        _chunked(request)
        for _ in range(200):  # one byte every 50 ms: never idle long enough for a per-read timeout
            _write_chunk(request, b"<")
            time.sleep(0.05)

    site.handle("/slow", trickle)
    client = Fetcher(loopback_settings(ignore_robots_txt=True, connect_timeout=0.5, read_timeout=1.0))
    started = time.monotonic()
    try:
        with anyio.fail_after(5), pytest.raises(LimitExceeded, match=r"did not finish within 1.5 s"):
            await client.fetch(site.url("/slow"))
    finally:
        await client.aclose()
    assert time.monotonic() - started < 3


async def test_silent_server_hits_the_read_timeout(site: Site) -> None:
    release = threading.Event()

    def silent(request: BaseHTTPRequestHandler) -> None:
        release.wait(10)  # the test releases it at the end; no response within the read timeout

    site.handle("/silent", silent)
    client = Fetcher(loopback_settings(ignore_robots_txt=True, connect_timeout=5.0, read_timeout=0.3))
    try:
        with anyio.fail_after(5), pytest.raises(LimitExceeded, match=r"read timeout of 0.3 s"):
            await client.fetch(site.url("/silent"))
    finally:
        release.set()
        await client.aclose()


async def test_redirect_chain_is_followed_and_final_url_reported(site: Site) -> None:
    site.redirect("/a", "/b", status=301)
    site.redirect("/b", site.url("/c"), status=307)
    site.serve("/c", "<main><p>Arrived after two hops.</p></main>")
    client = Fetcher(loopback_settings(ignore_robots_txt=True))
    try:
        result = await client.fetch(site.url("/a"))
    finally:
        await client.aclose()
    assert result.url == site.url("/a")
    assert result.final_url == site.url("/c")
    assert "Arrived after two hops." in result.content


async def test_redirect_loop_is_detected(site: Site) -> None:
    site.redirect("/ping", "/pong")
    site.redirect("/pong", "/ping")
    client = Fetcher(loopback_settings(ignore_robots_txt=True))
    try:
        with pytest.raises(UpstreamError, match="redirects in a loop"):
            await client.fetch(site.url("/ping"))
    finally:
        await client.aclose()
    assert site.hits("/ping") == 1


async def test_too_many_redirects_hit_the_hop_limit(site: Site) -> None:
    for hop in range(5):
        site.redirect(f"/hop{hop}", f"/hop{hop + 1}")
    client = Fetcher(loopback_settings(ignore_robots_txt=True, max_redirects=3))
    try:
        with pytest.raises(LimitExceeded, match="more than 3 times"):
            await client.fetch(site.url("/hop0"))
    finally:
        await client.aclose()


async def test_http_error_status_is_an_upstream_error_with_the_status(site: Site) -> None:
    site.serve("/gone", "This page was removed.", status=410, content_type="text/plain")
    client = Fetcher(loopback_settings(ignore_robots_txt=True))
    try:
        with pytest.raises(UpstreamError, match=r"HTTP 410 Gone.*This page was removed"):
            await client.fetch(site.url("/gone"))
    finally:
        await client.aclose()


async def test_refused_connection_is_an_upstream_error(site: Site) -> None:
    client = Fetcher(loopback_settings(ignore_robots_txt=True))
    try:
        with pytest.raises(UpstreamError, match="failed: ConnectError"):
            await client.fetch("http://127.0.0.1:1/")
    finally:
        await client.aclose()
