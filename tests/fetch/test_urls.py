"""Malformed URLs: each is refused before any network traffic, with a message naming the problem."""

from __future__ import annotations

import pytest
from mcp_batteries.errors import AccessDenied, InvalidInput, UpstreamError
from mcp_fetch.client import Fetcher
from mcp_fetch.urls import MAX_URL_LENGTH, validated_url

from .conftest import Site, loopback_settings


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:99999/", "its port 99999 is out of range; ports are 1 to 65535"),
        ("http://example.com:0/", "its port 0 is out of range"),
        ("http://example.com:-1/", "its port -1 is out of range"),
        ("http://xn--zz.invalid/", "its label 'xn--zz' is not a valid internationalised (punycode) label"),
        ("http://☃.com/", "is not a valid URL (Invalid IDNA hostname"),
        ("http://user:secret@example.com/", "holds a user name or password"),
        ("http://a.com\\@b.com/", "holds a user name or password"),
        ("http://exa mple.com/", "its host 'exa mple.com' is not a valid host name"),
        ("http://%00/", "is not a valid host name"),
        ("http://a..b/", "empty label"),
        ("https://-bad-.com/", "starts or ends with a hyphen"),
        ("http://" + "a" * 64 + ".com/", "longer than 63 characters"),
        ("http://" + ".".join(["abcdefghij"] * 24) + "/", "a host name has at most 253"),
        ("http://[fe80::1%25eth0]/", "carries a zone id"),
        ("http:///path", "it has no host name"),
        ("http://", "it has no host name"),
        ("http://:80/", "it has no host name"),
        ("http://@/", "it has no host name"),
        ("http://[::1/", "is not a valid URL"),
        ("http://foo\x00bar/", "is not a valid URL"),
        ("", "it is empty"),
        ("   ", "it is empty"),
    ],
)
def test_malformed_urls_are_refused_with_a_specific_message(url: str, problem: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        validated_url(url)
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/x", "file:///etc/passwd", "javascript:alert(1)", "example.com", "//example.com/"],
)
def test_urls_that_are_not_absolute_http_are_refused(url: str) -> None:
    with pytest.raises(InvalidInput, match=r"only absolute http:// and https:// URLs can be fetched"):
        validated_url(url)


def test_huge_url_is_refused_without_repeating_it() -> None:
    url = "http://example.com/" + "a" * 100_000
    with pytest.raises(InvalidInput) as caught:
        validated_url(url)
    message = str(caught.value)
    assert f"at most {MAX_URL_LENGTH} are accepted" in message
    assert len(message) < 400


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Example.COM/a b#frag", "http://example.com/a%20b"),
        ("http://exämple.com/", "http://xn--exmple-cua.com/"),
        ("http://2130706433/", "http://2130706433/"),  # judged by the address it resolves to
        ("http://0x7f.1/", "http://0x7f.1/"),
        ("http://[::ffff:127.0.0.1]:8080/", "http://[::ffff:127.0.0.1]:8080/"),
        ("http://under_score.example/", "http://under_score.example/"),
        ("http://example.com./", "http://example.com./"),
    ],
)
def test_valid_urls_are_normalised(url: str, expected: str) -> None:
    assert validated_url(url) == expected


def test_malformed_redirect_target_names_the_redirect() -> None:
    with pytest.raises(UpstreamError, match=r"^http://a.example/ redirected to 'http://127.0.0.1:99999/'"):
        validated_url("http://127.0.0.1:99999/", redirected_from="http://a.example/")
    with pytest.raises(AccessDenied, match=r"only http:// and https:// redirects are followed"):
        validated_url("file:///etc/passwd", redirected_from="http://a.example/")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("location", "problem"),
    [
        ("http://127.0.0.1:99999/", "which cannot be fetched: its port 99999 is out of range"),
        ("http://xn--zz.invalid/", "redirected to a location that is not a valid URL (Invalid A-label)"),
        ("http://user:pw@127.0.0.1/", "holds a user name or password"),
        ("http://[fe80::1%25eth0]/", "zone id"),
        ("javascript:alert(1)", "redirected to a location that is not a valid URL"),
    ],
)
async def test_malformed_redirect_targets_get_specific_errors(
    site: Site, location: str, problem: str
) -> None:
    site.redirect("/go", location)
    client = Fetcher(loopback_settings(ignore_robots_txt=True))
    try:
        with pytest.raises(UpstreamError) as caught:
            await client.fetch(site.url("/go"))
    finally:
        await client.aclose()
    assert str(caught.value).startswith(f"{site.url('/go')} redirected to")
    assert problem in str(caught.value)
