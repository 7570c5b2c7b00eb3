"""HTTPS through the pinned connection: the connection goes to a checked IP address, but SNI and the
certificate check use the URL's host name. A local TLS server with a certificate from a throw-away CA,
trusted through SSL_CERT_FILE (which the fetcher honours, as an operator with an internal CA would use)."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp.types import TextContent
from mcp_batteries.errors import UpstreamError
from mcp_batteries.testing import connect, stdio_params
from mcp_fetch.client import Fetcher
from mcp_fetch.netguard import IPAddress

from .conftest import loopback_settings

pytestmark = pytest.mark.anyio

PAGE = b"<html><head><title>Secure</title></head><body><main><p>Served over TLS.</p></main></body></html>"


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_certificates(directory: Path, dns_names: list[str]) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) as PEM files; the server's names in its SAN."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("mcp-fetch test CA"))
        .issuer_name(_name("mcp-fetch test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return ca_file, cert_file, key_file


@dataclass
class TLSSite:
    port: int
    ca_file: Path
    server_names: list[str | None] = field(default_factory=list)  # SNI of every handshake
    hosts: list[str] = field(default_factory=list)  # Host header of every request

    def url(self, host: str, path: str = "/") -> str:
        return f"https://{host}:{self.port}{path}"


@pytest.fixture
def tls_site(tmp_path: Path) -> Iterator[TLSSite]:
    ca_file, cert_file, key_file = _write_certificates(tmp_path, ["pinned.example", "localhost"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    state = TLSSite(0, ca_file)

    def remember_sni(sock: ssl.SSLObject, server_name: str | None, ctx: ssl.SSLContext) -> None:
        state.server_names.append(server_name)

    context.sni_callback = remember_sni  # type: ignore[assignment]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            state.hosts.append(self.headers.get("Host", ""))
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


async def _to_loopback(host: str, port: int) -> list[IPAddress]:
    return [ipaddress.ip_address("127.0.0.1")]


async def test_certificate_is_checked_against_the_url_host_while_connecting_to_the_pinned_ip(
    tls_site: TLSSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_site.ca_file))
    client = Fetcher(loopback_settings(ignore_robots_txt=True), resolver=_to_loopback)
    try:
        result = await client.fetch(tls_site.url("pinned.example", "/page"))
    finally:
        await client.aclose()
    assert "Served over TLS." in result.content
    assert tls_site.server_names == ["pinned.example"]
    assert tls_site.hosts == [f"pinned.example:{tls_site.port}"]


@pytest.mark.parametrize("host", ["impostor.example", "127.0.0.1"])
async def test_certificate_for_another_name_is_refused(
    tls_site: TLSSite, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_site.ca_file))
    client = Fetcher(loopback_settings(ignore_robots_txt=True), resolver=_to_loopback)
    try:
        with pytest.raises(UpstreamError) as caught:
            await client.fetch(tls_site.url(host))
    finally:
        await client.aclose()
    message = str(caught.value)
    assert "TLS certificate could not be verified" in message
    assert "mismatch" in message.lower()
    assert tls_site.hosts == []  # no request was sent


async def test_certificate_from_an_untrusted_ca_is_refused(
    tls_site: TLSSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    client = Fetcher(loopback_settings(ignore_robots_txt=True), resolver=_to_loopback)
    try:
        with pytest.raises(UpstreamError, match="TLS certificate could not be verified"):
            await client.fetch(tls_site.url("pinned.example"))
    finally:
        await client.aclose()
    assert tls_site.hosts == []


async def test_https_through_the_console_script(tls_site: TLSSite) -> None:
    params = stdio_params(
        "mcp-batteries-fetch",
        "--allow-private-host",
        "localhost",
        "--ignore-robots-txt",
        env={"SSL_CERT_FILE": str(tls_site.ca_file)},
    )
    async with connect(params, "legacy") as client:
        result = await client.call_tool("fetch", {"url": tls_site.url("localhost", "/page")})
    text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
    assert not result.is_error, text
    assert "Served over TLS." in text
    assert tls_site.server_names == ["localhost"]
