"""robots.txt: rules honoured per user agent, status-code semantics, caching, opt-outs."""

from __future__ import annotations

import pytest
from mcp_batteries.errors import AccessDenied
from mcp_fetch.client import Fetcher
from mcp_fetch.robots import product_token

from .conftest import Site, loopback_settings

pytestmark = pytest.mark.anyio

ROBOTS = """\
User-agent: *
Disallow: /private

User-agent: mcp-batteries-fetch
Disallow: /no-ai
Allow: /no-ai/ok
"""


def test_robots_token_is_taken_from_the_user_agent() -> None:
    assert (
        product_token("ModelContextProtocol/1.0 (mcp-batteries-fetch; +https://x)") == "mcp-batteries-fetch"
    )
    assert product_token("MyBot/2.0") == "MyBot"


@pytest.fixture
async def robots_site(site: Site) -> Site:
    site.serve("/robots.txt", ROBOTS, content_type="text/plain")
    for path in ("/no-ai/page", "/no-ai/ok", "/private/x", "/public"):
        site.serve(path, f"<main><p>Content of {path}</p></main>")
    return site


async def test_disallowed_path_is_refused_naming_rule_and_user_agent(robots_site: Site) -> None:
    client = Fetcher(loopback_settings())
    try:
        with pytest.raises(AccessDenied) as caught:
            await client.fetch(robots_site.url("/no-ai/page"))
    finally:
        await client.aclose()
    message = str(caught.value)
    assert "rule 'Disallow: /no-ai'" in message
    assert "user-agent 'mcp-batteries-fetch'" in message
    assert "--ignore-robots-txt" in message
    assert robots_site.hits("/no-ai/page") == 0


async def test_specific_group_overrides_the_wildcard_group(robots_site: Site) -> None:
    client = Fetcher(loopback_settings())
    try:
        # Our group has no "Disallow: /private", so the * group does not apply to us.
        assert "Content of /private/x" in (await client.fetch(robots_site.url("/private/x"))).content
        assert "Content of /no-ai/ok" in (await client.fetch(robots_site.url("/no-ai/ok"))).content
    finally:
        await client.aclose()


async def test_robots_is_fetched_once_per_origin(robots_site: Site) -> None:
    client = Fetcher(loopback_settings())
    try:
        await client.fetch(robots_site.url("/public"))
        await client.fetch(robots_site.url("/no-ai/ok"))
        with pytest.raises(AccessDenied):
            await client.fetch(robots_site.url("/no-ai/page"))
    finally:
        await client.aclose()
    assert robots_site.hits("/robots.txt") == 1


async def test_check_robots_false_and_ignore_setting_skip_robots(robots_site: Site) -> None:
    client = Fetcher(loopback_settings())
    ignoring = Fetcher(loopback_settings(ignore_robots_txt=True))
    try:
        assert "Content" in (await client.fetch(robots_site.url("/no-ai/page"), check_robots=False)).content
        assert "Content" in (await ignoring.fetch(robots_site.url("/no-ai/page"))).content
    finally:
        await client.aclose()
        await ignoring.aclose()
    assert robots_site.hits("/robots.txt") == 0


@pytest.mark.parametrize("status", [401, 403])
async def test_robots_auth_errors_disallow_everything(site: Site, status: int) -> None:
    site.serve("/robots.txt", "no", status=status, content_type="text/plain")
    site.serve("/page", "<p>x</p>")
    client = Fetcher(loopback_settings())
    try:
        with pytest.raises(AccessDenied, match=rf"HTTP {status}.*--ignore-robots-txt"):
            await client.fetch(site.url("/page"))
    finally:
        await client.aclose()


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_robots_server_errors_disallow_everything(site: Site, status: int) -> None:
    site.serve("/robots.txt", "oops", status=status, content_type="text/plain")
    site.serve("/page", "<p>x</p>")
    client = Fetcher(loopback_settings())
    try:
        with pytest.raises(AccessDenied, match=r"unreachable"):
            await client.fetch(site.url("/page"))
    finally:
        await client.aclose()
    assert site.hits("/page") == 0


async def test_missing_robots_allows_everything(site: Site) -> None:
    site.serve("/page", "<main><p>Welcome</p></main>")  # /robots.txt is a 404
    client = Fetcher(loopback_settings())
    try:
        assert "Welcome" in (await client.fetch(site.url("/page"))).content
    finally:
        await client.aclose()
    assert site.hits("/robots.txt") == 1


async def test_robots_redirect_target_is_checked_at_every_hop(robots_site: Site) -> None:
    robots_site.redirect("/public-link", "/no-ai/page")
    client = Fetcher(loopback_settings())
    try:
        with pytest.raises(AccessDenied, match="Disallow: /no-ai"):
            await client.fetch(robots_site.url("/public-link"))
    finally:
        await client.aclose()
    assert robots_site.hits("/no-ai/page") == 0


async def test_robots_fetch_is_subject_to_the_address_policy(site: Site) -> None:
    # Target allowed by name, but its robots.txt redirects to a loopback address that is not allowed.
    import ipaddress

    from mcp_fetch.client import FetchSettings
    from mcp_fetch.netguard import IPAddress

    site.redirect("/robots.txt", site.url("/internal-robots"))
    site.serve("/internal-robots", "User-agent: *\nAllow: /\n", content_type="text/plain")
    site.serve("/page", "<p>x</p>")

    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]

    client = Fetcher(FetchSettings(allow_hosts=("public.example",)), resolver=resolver)
    try:
        with pytest.raises(AccessDenied, match="unreachable"):
            await client.fetch(f"http://public.example:{site.port}/page")
    finally:
        await client.aclose()
    assert site.hits("/internal-robots") == 0
