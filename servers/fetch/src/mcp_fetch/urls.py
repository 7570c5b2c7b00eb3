"""What a fetchable URL is, and what a host name is: one parser for URLs, redirect targets and the
operator's --allow-private-host entries.

httpx parses URLs (non-ASCII host names become IDNA A-labels, spaces in paths are percent-encoded),
but it accepts much that no server could ever answer, and some of it only fails later, deep inside
the HTTP stack, as an exception with no useful message (a port above 65535, an A-label that is not
valid punycode). Everything is checked here instead, before any network traffic, and each problem
gets its own message:

- only absolute http:// and https:// URLs, at most MAX_URL_LENGTH characters;
- no user name or password (``user:pass@``): this tool sends no credentials, and userinfo is the
  classic way to make a URL look like it points somewhere it does not (``http://a.com\\@b.com/``);
- a port, if given, in 1..65535;
- the host is an IPv4 address, an IPv6 literal without a zone id (``%eth0`` names a local network
  interface, never a place on the internet), or a host name: dot-separated labels of letters,
  digits, hyphens and underscores (underscores occur in real internal names), no label starting or
  ending with a hyphen, at most 63 characters a label and 253 in all, and every ``xn--`` label
  valid punycode. Numeric spellings such as ``2130706433`` or ``0x7f.1`` are names by these rules;
  the resolver turns them into the address they mean, and the address policy judges that address.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote

import httpx
import idna
from mcp_batteries.errors import AccessDenied, InvalidInput, UpstreamError

#: RFC 9110 asks for at least 8000 octets; longer URLs are refused by most servers anyway.
MAX_URL_LENGTH = 8192
#: How much of an over-long or unparsable URL an error message repeats.
_SHOWN = 200

_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$", re.IGNORECASE)


def shorten(text: str, limit: int = _SHOWN) -> str:
    """text, cut to `limit` characters with an ellipsis, for repeating it in a message."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_host_name(name: str) -> str:
    """`name` (ASCII) lower-cased without its trailing dot, or ValueError saying what is wrong."""
    text = name[:-1] if name.endswith(".") else name
    if not text:
        raise ValueError("it is empty")
    if len(text) > 253:
        raise ValueError(f"it is {len(text)} characters long; a host name has at most 253")
    for label in text.split("."):
        if not label:
            raise ValueError("it has an empty label (two dots in a row, or a leading dot)")
        if len(label) > 63:
            raise ValueError(f"its label {shorten(label, 40)!r} is longer than 63 characters")
        if not _LABEL.match(label):
            raise ValueError(
                f"its label {label!r} holds characters other than letters, digits, hyphens and "
                "underscores, or starts or ends with a hyphen"
            )
        if label[:4].lower() == "xn--":
            try:
                idna.decode(label)
            except (idna.IDNAError, UnicodeError, IndexError) as exc:
                raise ValueError(
                    f"its label {label!r} is not a valid internationalised (punycode) label ({exc})"
                ) from exc
    return text.lower()


def ascii_host_name(name: str) -> str:
    """A host name as typed (possibly Unicode) in its ASCII form, checked; ValueError if it is none."""
    if not name.isascii():
        try:
            name = idna.encode(name, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError) as exc:
            raise ValueError(f"it is not a valid internationalised domain name ({exc})") from exc
    return check_host_name(name)


def _host_problem(raw_host: str) -> str | None:
    """Why the URL's host (as httpx holds it: ASCII, percent-encoded) is unusable, or None."""
    if ":" in raw_host:  # httpx only keeps a colon in an IPv6 literal
        if "%" in raw_host:
            return (
                "its IPv6 address carries a zone id (the part after %), which names a network interface "
                "of this machine; such link-local addresses are never fetched"
            )
        try:
            ipaddress.IPv6Address(raw_host)
        except ValueError:
            return "its host is not a valid IPv6 address"
        return None
    try:
        ipaddress.IPv4Address(raw_host)
        return None
    except ValueError:
        pass
    try:
        check_host_name(raw_host)
    except ValueError as exc:
        return f"its host {unquote(raw_host)!r} is not a valid host name: {exc}"
    return None


def validated_url(url: str, *, redirected_from: str | None = None) -> str:
    """`url` normalised (no fragment), or an error saying exactly what is wrong and what is accepted.

    A URL the model gave is rejected with InvalidInput; a redirect target the server sent with
    UpstreamError naming the redirect (AccessDenied for a scheme we refuse to follow).
    """
    text = url.strip()

    def problem(reason: str) -> Exception:
        if redirected_from is not None:
            return UpstreamError(
                f"{redirected_from} redirected to {shorten(text)!r}, which cannot be fetched: {reason}."
            )
        return InvalidInput(f"{shorten(text)!r} cannot be fetched: {reason}.")

    if not text:
        raise problem("it is empty; give an absolute http:// or https:// URL")
    if len(text) > MAX_URL_LENGTH:
        raise problem(f"it is {len(text)} characters long, and at most {MAX_URL_LENGTH} are accepted")
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError, UnicodeError, idna.IDNAError) as exc:
        raise problem(f"it is not a valid URL ({exc}); give an absolute http:// or https:// URL") from exc
    if parsed.scheme not in ("http", "https"):
        scheme = f"{parsed.scheme}:" if parsed.scheme else "no scheme"
        if redirected_from is not None:
            raise AccessDenied(
                f"{redirected_from} redirected to {shorten(text)}, which uses {scheme}; only http:// and "
                "https:// redirects are followed."
            )
        raise InvalidInput(
            f"{shorten(text)!r} uses {scheme}; only absolute http:// and https:// URLs can be fetched."
        )
    raw_host = parsed.raw_host.decode("ascii", errors="replace")
    if not raw_host:
        raise problem("it has no host name; give an absolute URL such as https://example.com/page")
    if parsed.userinfo:
        raise problem(
            "it holds a user name or password (the part before @ in the host); this tool sends no "
            "credentials, so remove that part"
        )
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise problem(f"its port {parsed.port} is out of range; ports are 1 to 65535")
    host_problem = _host_problem(raw_host)
    if host_problem is not None:
        raise problem(host_problem)
    return str(parsed.copy_with(fragment=None))


def url_host(url: str) -> str:
    """The host of a URL that `validated_url` accepted, in ASCII as it is resolved (no brackets)."""
    return httpx.URL(url).raw_host.decode("ascii")


def url_port(url: str) -> int:
    parsed = httpx.URL(url)
    return parsed.port or (443 if parsed.scheme == "https" else 80)


def normalise_allow_entry(entry: str) -> str:
    """One --allow-private-host entry in canonical form, or ValueError saying what is wrong.

    Accepted: a CIDR network (``10.0.0.0/8``, ``fd00::/8``), an IP address (IPv6 with or without
    brackets), a host name (Unicode names are converted to their IDNA form, as URLs are), or
    ``*.`` followed by a host name for every subdomain.
    """
    text = entry.strip()
    if not text:
        raise ValueError("an empty entry; give a host name, an IP address or a CIDR network")
    if "://" in text:
        raise ValueError(f"{text!r} looks like a URL; give only its host name (e.g. intranet.example.com)")
    if "/" in text:
        address, _, prefix = text.partition("/")
        try:
            parsed_address = ipaddress.ip_address(address.strip("[]"))
        except ValueError:
            raise ValueError(
                f"{text!r} is not a CIDR network: {address!r} is not an IP address "
                "(a network is written like 10.0.0.0/8 or fd00::/8)"
            ) from None
        bits = parsed_address.max_prefixlen
        if not prefix.isdigit() or not 0 <= int(prefix) <= bits:
            raise ValueError(
                f"{text!r} is not a CIDR network: the prefix length must be a number from 0 to {bits} "
                f"for an IPv{parsed_address.version} address"
            )
        return str(ipaddress.ip_network(f"{parsed_address}/{prefix}", strict=False))
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        pass
    if text.count(":") == 1 and text.rsplit(":", 1)[1].isdigit():
        raise ValueError(f"{text!r} has a port; give the host name alone ({text.rsplit(':', 1)[0]})")
    wildcard = text.startswith("*.")
    try:
        name = ascii_host_name(text[2:] if wildcard else text)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a host name, an IP address or a CIDR network: {exc}") from None
    return f"*.{name}" if wildcard else name
