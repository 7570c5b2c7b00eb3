"""SSRF defences: address classification, resolve-once pinning, redirects, allow-lists."""

from __future__ import annotations

import ipaddress
import re

import anyio
import pytest
from mcp_batteries.errors import AccessDenied, InvalidInput, UpstreamError
from mcp_fetch.client import Fetcher, FetchSettings
from mcp_fetch.netguard import AddressPolicy, AddressRefused, IPAddress, classify_address

from .conftest import Site, loopback_settings

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.255.255.254",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "169.254.1.1",
        "100.64.0.1",
        "100.127.255.254",
        "0.0.0.0",
        "224.0.0.1",
        "224.0.1.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "192.0.2.1",
        "198.18.0.1",
        "::",
        "::1",
        "fe80::1",
        "fc00::1",
        "fd00:ec2::254",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "2002:7f00:1::",  # 6to4 wrapping 127.0.0.1
        "2002:a9fe:a9fe::",  # 6to4 wrapping 169.254.169.254
        "64:ff9b::7f00:1",  # NAT64 wrapping 127.0.0.1
        "64:ff9b::a00:1",  # NAT64 wrapping 10.0.0.1
        "2001:db8::1",
    ],
)
def test_non_public_addresses_are_classified_as_forbidden(address: str) -> None:
    assert classify_address(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert classify_address(ipaddress.ip_address(address)) is None


def test_metadata_endpoint_is_named_in_the_reason() -> None:
    assert "metadata" in (classify_address(ipaddress.ip_address("169.254.169.254")) or "")


def test_allow_list_accepts_names_wildcards_and_networks() -> None:
    policy = AddressPolicy.from_settings(["intranet.corp", "*.internal.test", "10.0.0.0/8"], False)
    loopback = ipaddress.ip_address("127.0.0.1")
    assert policy.refusal_reason("intranet.corp", loopback) is None
    assert policy.refusal_reason("INTRANET.corp.", loopback) is None
    assert policy.refusal_reason("wiki.internal.test", loopback) is None
    assert policy.refusal_reason("internal.test", loopback) is not None
    assert policy.refusal_reason("other.test", ipaddress.ip_address("10.9.8.7")) is None
    assert policy.refusal_reason("other.test", loopback) is not None


def test_allow_private_opens_every_address() -> None:
    policy = AddressPolicy.from_settings([], True)
    assert policy.refusal_reason("x", ipaddress.ip_address("169.254.169.254")) is None


async def test_loopback_ip_is_refused_without_allow_list(site: Site) -> None:
    site.serve("/", "<p>secret</p>")
    client = Fetcher(FetchSettings(ignore_robots_txt=True))
    try:
        with pytest.raises(AccessDenied) as caught:
            await client.fetch(site.url("/"))
    finally:
        await client.aclose()
    message = str(caught.value)
    assert "127.0.0.1 is a loopback address" in message
    assert "--allow-private-host 127.0.0.1" in message and "--allow-private " in message
    assert site.requests == []


@pytest.mark.parametrize("host", ["localhost", "2130706433", "0x7f.1", "127.1", "[::ffff:127.0.0.1]"])
async def test_odd_spellings_of_loopback_are_refused(site: Site, host: str) -> None:
    client = Fetcher(FetchSettings(ignore_robots_txt=True))
    try:
        with pytest.raises(AccessDenied):
            await client.fetch(f"http://{host}:{site.port}/")
    finally:
        await client.aclose()
    assert site.requests == []


async def test_octal_ip_spelling_is_rejected(site: Site) -> None:
    client = Fetcher(FetchSettings(ignore_robots_txt=True))
    try:
        with pytest.raises((AccessDenied, InvalidInput)):
            await client.fetch(f"http://0177.0.0.1:{site.port}/")
    finally:
        await client.aclose()
    assert site.requests == []


async def test_hostname_resolving_to_loopback_is_refused_without_allow_list(site: Site) -> None:
    site.serve("/", "<p>secret</p>")

    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]

    client = Fetcher(FetchSettings(ignore_robots_txt=True), resolver=resolver)
    try:
        with pytest.raises(AccessDenied) as caught:
            await client.fetch(f"http://innocent.example:{site.port}/")
    finally:
        await client.aclose()
    assert "innocent.example" in str(caught.value) and "resolves to 127.0.0.1" in str(caught.value)
    assert site.requests == []


async def test_hostname_with_one_private_address_among_public_ones_is_refused(site: Site) -> None:
    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("93.184.215.14"), ipaddress.ip_address("10.0.0.5")]

    client = Fetcher(FetchSettings(ignore_robots_txt=True), resolver=resolver)
    try:
        with pytest.raises(
            AccessDenied, match=r"resolves to 10\.0\.0\.5, which is a private-network address"
        ):
            await client.fetch("http://mixed.example/")
    finally:
        await client.aclose()


async def test_connection_goes_to_the_address_resolved_once_with_the_real_host_header(site: Site) -> None:
    site.serve("/page", "<h1>Pinned</h1><p>Reached through the checked address.</p>")
    lookups: list[str] = []
    answers = iter(["127.0.0.1", "10.66.66.66"])  # a rebinding DNS server would change its answer

    async def resolver(host: str, port: int) -> list[IPAddress]:
        lookups.append(host)
        return [ipaddress.ip_address(next(answers))]

    client = Fetcher(
        loopback_settings(ignore_robots_txt=True, allow_hosts=("127.0.0.0/8",)), resolver=resolver
    )
    try:
        result = await client.fetch(f"http://pinned.example:{site.port}/page")
    finally:
        await client.aclose()
    assert "Reached through the checked address." in result.content
    assert lookups == ["pinned.example"]
    assert site.requests[0][1]["host"] == f"pinned.example:{site.port}"


async def test_redirect_to_loopback_is_refused_without_allow_list(site: Site) -> None:
    site.redirect("/go", site.url("/secret"))
    site.serve("/secret", "<p>internal</p>")

    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]

    # Only the name "public.example" is allowed (it stands in for a public site); 127.0.0.1 is not.
    client = Fetcher(
        FetchSettings(ignore_robots_txt=True, allow_hosts=("public.example",)), resolver=resolver
    )
    try:
        with pytest.raises(AccessDenied, match="loopback"):
            await client.fetch(f"http://public.example:{site.port}/go")
    finally:
        await client.aclose()
    assert site.hits("/go") == 1
    assert site.hits("/secret") == 0


async def test_redirect_to_hostname_resolving_to_metadata_address_is_refused(site: Site) -> None:
    site.redirect("/go", "http://metadata.google.internal/computeMetadata/v1/")

    async def resolver(host: str, port: int) -> list[IPAddress]:
        address = "169.254.169.254" if host == "metadata.google.internal" else "127.0.0.1"
        return [ipaddress.ip_address(address)]

    client = Fetcher(
        FetchSettings(ignore_robots_txt=True, allow_hosts=("public.example",)), resolver=resolver
    )
    try:
        with pytest.raises(AccessDenied, match="cloud metadata"):
            await client.fetch(f"http://public.example:{site.port}/go")
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://example.com/", "data:text/html,<p>x</p>"]
)
async def test_non_http_schemes_are_refused(url: str) -> None:
    client = Fetcher(FetchSettings())
    try:
        with pytest.raises(InvalidInput, match=r"only absolute http:// and https://"):
            await client.fetch(url)
    finally:
        await client.aclose()


async def test_redirect_to_file_scheme_is_refused(site: Site) -> None:
    site.redirect("/go", "file:///etc/passwd")
    client = Fetcher(loopback_settings(ignore_robots_txt=True))
    try:
        with pytest.raises(AccessDenied, match=r"file:.*only http:// and https:// redirects"):
            await client.fetch(site.url("/go"))
    finally:
        await client.aclose()


async def test_allow_private_reaches_loopback(site: Site) -> None:
    site.serve("/", "<main><p>Private but allowed by the operator.</p></main>")
    client = Fetcher(FetchSettings(allow_private=True, ignore_robots_txt=True))
    try:
        result = await client.fetch(site.url("/"))
    finally:
        await client.aclose()
    assert "allowed by the operator" in result.content


async def test_unresolvable_host_is_an_upstream_error() -> None:
    async def resolver(host: str, port: int) -> list[IPAddress]:
        raise UpstreamError(f"Could not resolve the host name {host!r}")

    client = Fetcher(FetchSettings(ignore_robots_txt=True), resolver=resolver)
    try:
        with pytest.raises(UpstreamError, match="Could not resolve"):
            await client.fetch("http://nowhere.invalid/")
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    ("url", "address_class"),
    [
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 is a cloud metadata endpoint (link-local)",
        ),
        ("http://10.0.0.1/", "10.0.0.1 is a private-network address"),
        ("http://127.0.0.1:8080/admin", "127.0.0.1 is a loopback address"),
        ("http://[::1]/", "::1 is a loopback address"),
        ("http://100.64.0.1/", "100.64.0.1 is a carrier-grade NAT address"),
        ("http://169.254.1.1/", "169.254.1.1 is a link-local address"),
        (
            "http://[::ffff:169.254.169.254]/",
            "::ffff:a9fe:a9fe is an IPv6 address embedding 169.254.169.254, which is a cloud metadata",
        ),
    ],
)
async def test_policy_refusal_is_reported_as_such_before_robots_txt_is_consulted(
    url: str, address_class: str
) -> None:
    client = Fetcher(FetchSettings())  # robots.txt honoured: the policy must still come first
    try:
        with anyio.fail_after(5), pytest.raises(AddressRefused) as caught:
            await client.fetch(url)
    finally:
        await client.aclose()
    message = str(caught.value)
    assert message.startswith(f"Refused by the SSRF policy: {url}: {address_class}")
    assert "--allow-private-host " in message and "--allow-private (" in message
    assert "robots.txt" not in message


async def test_name_resolving_to_a_private_address_is_refused_without_asking_for_robots_txt(
    site: Site,
) -> None:
    site.serve("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
    lookups: list[str] = []

    async def resolver(host: str, port: int) -> list[IPAddress]:
        lookups.append(host)
        return [ipaddress.ip_address("127.0.0.1")]

    client = Fetcher(FetchSettings(), resolver=resolver)
    try:
        with pytest.raises(AddressRefused) as caught:
            await client.fetch(f"http://wiki.corp.example:{site.port}/page")
    finally:
        await client.aclose()
    assert str(caught.value).startswith(
        f"Refused by the SSRF policy: http://wiki.corp.example:{site.port}/page: the host "
        "wiki.corp.example resolves to 127.0.0.1, which is a loopback address."
    )
    assert "--allow-private-host wiki.corp.example" in str(caught.value)
    assert site.requests == []  # not even robots.txt
    assert lookups == ["wiki.corp.example"]


async def test_redirect_to_a_refused_address_says_it_was_a_redirect_and_from_where(site: Site) -> None:
    site.serve("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
    site.redirect("/go", "http://169.254.169.254/latest/meta-data/")

    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]

    client = Fetcher(FetchSettings(allow_hosts=("public.example",)), resolver=resolver)
    start = f"http://public.example:{site.port}/go"
    try:
        with pytest.raises(AddressRefused) as caught:
            await client.fetch(start)
    finally:
        await client.aclose()
    assert str(caught.value).startswith(
        f"Refused by the SSRF policy: {start} redirected to http://169.254.169.254/latest/meta-data/, "
        "and 169.254.169.254 is a cloud metadata endpoint (link-local)."
    )
    assert [path for path, _ in site.requests] == ["/robots.txt", "/go"]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("10.0.0.0/33", "prefix length must be a number from 0 to 32"),
        ("fd00::/129", "from 0 to 128"),
        ("not a host", "is not a host name, an IP address or a CIDR network"),
        ("intranet:8080", "has a port"),
        ("http://intranet/", "looks like a URL"),
        ("-bad-.example", "starts or ends with a hyphen"),
        ("a..b", "empty label"),
        ("xn--zz.example", "not a valid internationalised"),
    ],
)
def test_invalid_allow_list_entries_are_refused(entry: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        AddressPolicy.from_settings([entry], False)


def test_allow_list_entries_are_normalised() -> None:
    policy = AddressPolicy.from_settings(
        ["Intranet.Example.", "[::1]", "10.1.2.3/8", "bücher.example", "*.Corp.example"], False
    )
    assert policy.allowed_names == frozenset({"intranet.example", "xn--bcher-kva.example", "*.corp.example"})
    assert [str(n) for n in policy.allowed_networks] == ["::1/128", "10.0.0.0/8"]


async def test_through_a_proxy_each_target_is_still_checked_before_the_request(site: Site) -> None:
    # The test site plays the proxy: it receives absolute-form request targets.
    site.serve("http://public.example/page", "<main><p>Relayed by the proxy.</p></main>")
    site.redirect("http://public.example/go", "http://internal.example/secret")

    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("93.184.215.14" if host == "public.example" else "10.0.0.5")]

    client = Fetcher(FetchSettings(ignore_robots_txt=True, proxy=site.url()), resolver=resolver)
    try:
        result = await client.fetch("http://public.example/page")
        with pytest.raises(AddressRefused) as caught:
            await client.fetch("http://public.example/go")
    finally:
        await client.aclose()
    assert "Relayed by the proxy." in result.content
    assert str(caught.value).startswith(
        "Refused by the SSRF policy: http://public.example/go redirected to http://internal.example/secret, "
        "and the host internal.example resolves to 10.0.0.5, which is a private-network address."
    )
    assert [path for path, _ in site.requests] == ["http://public.example/page", "http://public.example/go"]
