"""The authentication layer's parts, in process: tokens file, JWKS cache, JWT checks, middleware."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
from mcp_batteries._core.identity import current_caller
from mcp_batteries._protocol import sdk
from mcp_batteries._signin.auth import (
    TOKENS_FILE_RECHECK_S,
    Authenticator,
    AuthMiddleware,
    ScopeNames,
    TokensFile,
    load_tokens_file,
    protected_resource_route,
)
from mcp_batteries._signin.oauth import (
    JwksKeys,
    KeysUnavailable,
    OAuthVerifier,
    Refusal,
    fetch_json,
    metadata_urls,
)
from mcp_batteries.errors import ConfigError
from mcp_batteries.testing import AUDIENCE, TestIssuer, write_private
from starlette.applications import Starlette
from starlette.types import Message, Receive, Scope, Send

pytestmark = pytest.mark.anyio

SCOPES = ScopeNames("mcp:read", "mcp:write")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with TestIssuer() as running:
        yield running


def verifier_for(issuer: TestIssuer, **options: Any) -> OAuthVerifier:
    keys = JwksKeys(issuer.issuer, None, **options)
    return OAuthVerifier(issuer.issuer, AUDIENCE, SCOPES, keys)


# -- tokens file -----------------------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    return write_private(tmp_path / "tokens.toml", text)


def test_a_tokens_file_maps_hashes_and_tokens_to_users(tmp_path: Path) -> None:
    secret = "0123456789abcdef-alice"
    path = write(
        tmp_path,
        f"""
[[tokens]]
user = "alice"
sha256 = "{hashlib.sha256(secret.encode()).hexdigest().upper()}"
workspaces = ["*"]

[[tokens]]
user = "ci-bot"
token = "0123456789abcdef-ci"
workspaces = ["builds"]
scopes = ["mcp:read", "deploy"]
""",
    )
    entries = load_tokens_file(path, SCOPES)
    alice = entries[hashlib.sha256(secret.encode()).digest()]
    bot = entries[hashlib.sha256(b"0123456789abcdef-ci").digest()]
    assert (alice.subject, alice.workspaces, alice.can_write) == ("user:alice", None, True)
    assert (bot.name, bot.workspaces, bot.can_write) == ("ci-bot", frozenset({"builds"}), False)
    assert bot.scopes == frozenset({"mcp:read", "deploy"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no [[tokens]] entries"),
        ("users = 1\n", "unknown key(s) users"),
        ("[[tokens]]\nuser = 'a'\n", "exactly one of 'token' or 'sha256'"),
        ("[[tokens]]\nuser = 'a'\ntoken = '0123456789abcdefg'\nsha256 = '" + "0" * 64 + "'\n", "exactly one"),
        ("[[tokens]]\ntoken = '0123456789abcdefg'\n", "'user' must be"),
        ('[[tokens]]\nuser = "a\\u0007"\ntoken = "0123456789abcdefg"\n', "'user' must be"),
        ("[[tokens]]\nuser = 'a'\ntoken = '0123456789abcdefg'\nscopes = ['admin']\n", "must include"),
        ("[[tokens]]\nuser = 'a'\ntoken = '0123456789abcdefg'\nworkspaces = []\n", "cannot be empty"),
        ("[[tokens]]\nuser = 'a'\ntoken = '0123456789abcdefg'\nworkspaces = 'x'\n", "list of non-empty"),
        (
            "[[tokens]]\nuser = 'a'\ntoken = '0123456789abcdefg'\n[[tokens]]\nuser = 'b'\n"
            "token = '0123456789abcdefg'\n",
            "repeats the token",
        ),
    ],
)
def test_every_mistake_in_a_tokens_file_is_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_tokens_file(write(tmp_path, text), SCOPES)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_tokens_file_that_is_not_utf8_or_missing_is_refused(tmp_path: Path) -> None:
    path = write_private(tmp_path / "tokens.toml", "")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_tokens_file(path, SCOPES)
    with pytest.raises(ConfigError, match="cannot read"):
        load_tokens_file(tmp_path / "missing.toml", SCOPES)


def test_an_edited_tokens_file_is_reloaded_and_a_broken_edit_keeps_the_old_tokens(tmp_path: Path) -> None:
    clock = Clock()
    path = write(tmp_path, "[[tokens]]\nuser = 'a'\ntoken = '0123456789abcdef-a'\n")
    tokens = TokensFile(path, SCOPES, clock=clock)
    digest_a = hashlib.sha256(b"0123456789abcdef-a").digest()
    digest_b = hashlib.sha256(b"0123456789abcdef-b").digest()
    path.write_text("[[tokens]]\nuser = 'b'\ntoken = '0123456789abcdef-b'\n# longer\n")
    assert not tokens.refresh()  # not checked again yet: no stat on every request
    clock.now += TOKENS_FILE_RECHECK_S
    assert tokens.refresh()
    assert tokens.lookup(digest_b) is not None and tokens.lookup(digest_a) is None
    path.write_text("[[tokens]\nbroken")
    clock.now += TOKENS_FILE_RECHECK_S
    assert not tokens.refresh()
    assert tokens.lookup(digest_b) is not None


async def test_the_authenticator_forgets_cached_tokens_when_the_file_changes(tmp_path: Path) -> None:
    clock = Clock()
    path = write(tmp_path, "[[tokens]]\nuser = 'a'\ntoken = '0123456789abcdef-a'\n")
    auth = Authenticator(scopes=SCOPES, tokens=TokensFile(path, SCOPES, clock=clock))
    assert (await auth.authenticate("0123456789abcdef-a")).access_token.subject == "user:a"
    path.write_text("[[tokens]]\nuser = 'b'\ntoken = '0123456789abcdef-b'\n")
    clock.now += TOKENS_FILE_RECHECK_S
    with pytest.raises(Refusal):
        await auth.authenticate("0123456789abcdef-a")


# -- JWKS cache ------------------------------------------------------------------------------------


class FakeIdp:
    """A fetch function serving a JWKS from a TestIssuer's keys, counting and optionally failing."""

    def __init__(self, issuer: TestIssuer) -> None:
        self.issuer = issuer
        self.fetches: list[str] = []
        self.failing = False
        self.gate: anyio.Event | None = None

    async def __call__(self, url: str) -> Any:
        self.fetches.append(url)
        if self.gate is not None:
            await self.gate.wait()
        if self.failing:
            raise KeysUnavailable(f"cannot fetch {url}: refused")
        return self.issuer.jwks()


async def test_unknown_key_ids_refetch_at_most_once_per_interval(issuer: TestIssuer) -> None:
    clock, idp = Clock(), FakeIdp(issuer)
    keys = JwksKeys(issuer.issuer, issuer.jwks_url, fetch=idp, refetch_interval=30, clock=clock)
    assert await keys.key("rsa-1", "RS256") is not None
    assert len(idp.fetches) == 1
    assert await keys.key("nope", "RS256") is None  # one refetch...
    assert await keys.key("nope-2", "RS256") is None  # ...then none within the interval
    assert len(idp.fetches) == 2
    issuer.add_key("rsa-2")
    assert await keys.key("rsa-2", "RS256") is None  # rate-limited still
    clock.now += 30
    assert await keys.key("rsa-2", "RS256") is not None
    assert len(idp.fetches) == 3


async def test_keys_are_refreshed_when_old_so_a_withdrawn_key_stops_working(issuer: TestIssuer) -> None:
    clock, idp = Clock(), FakeIdp(issuer)
    keys = JwksKeys(issuer.issuer, issuer.jwks_url, fetch=idp, max_age=900, clock=clock)
    assert await keys.key("ec-1", "ES256") is not None
    issuer.published.discard("ec-1")
    clock.now += 901
    assert await keys.key("ec-1", "ES256") is None
    assert len(idp.fetches) == 2


async def test_an_unreachable_issuer_is_retried_after_a_pause_and_old_keys_keep_working(
    issuer: TestIssuer,
) -> None:
    clock, idp = Clock(), FakeIdp(issuer)
    keys = JwksKeys(issuer.issuer, issuer.jwks_url, fetch=idp, retry_after_failure=5, max_age=60, clock=clock)
    idp.failing = True
    with pytest.raises(KeysUnavailable):
        await keys.key("rsa-1", "RS256")
    with pytest.raises(KeysUnavailable):
        await keys.key("rsa-1", "RS256")
    assert len(idp.fetches) == 1  # no second attempt inside the pause
    idp.failing = False
    clock.now += 5
    assert await keys.key("rsa-1", "RS256") is not None
    idp.failing = True
    clock.now += 61
    assert await keys.key("rsa-1", "RS256") is not None  # refresh failed: the old keys still verify


async def test_requests_arriving_during_a_refetch_wait_for_it_instead_of_being_refused(
    issuer: TestIssuer,
) -> None:
    clock, idp = Clock(), FakeIdp(issuer)
    keys = JwksKeys(issuer.issuer, issuer.jwks_url, fetch=idp, clock=clock)
    await keys.key("rsa-1", "RS256")
    issuer.add_key("rsa-2")
    idp.gate = anyio.Event()
    found: list[Any] = []

    async def look() -> None:
        found.append(await keys.key("rsa-2", "RS256"))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(look)
        await anyio.wait_all_tasks_blocked()
        idp.gate.set()
    assert len(found) == 5 and all(key is not None for key in found)
    assert len(idp.fetches) == 2


def test_issuer_metadata_is_looked_for_where_the_mcp_spec_says() -> None:
    assert metadata_urls("https://idp.example") == [
        "https://idp.example/.well-known/oauth-authorization-server",
        "https://idp.example/.well-known/openid-configuration",
    ]
    assert metadata_urls("https://idp.example/tenant/") == [
        "https://idp.example/.well-known/oauth-authorization-server/tenant",
        "https://idp.example/.well-known/openid-configuration/tenant",
        "https://idp.example/tenant/.well-known/openid-configuration",
    ]


async def test_metadata_naming_another_issuer_is_not_trusted(issuer: TestIssuer) -> None:
    async def lying(url: str) -> Any:
        document = await fetch_json(url)
        if "well-known" in url:
            document["issuer"] = "https://evil.example"
        return document

    keys = JwksKeys(issuer.issuer, None, fetch=lying)
    with pytest.raises(KeysUnavailable, match="names issuer"):
        await keys.key("rsa-1", "RS256")


# -- JWT checks ------------------------------------------------------------------------------------


async def test_a_valid_token_becomes_an_oauth_caller_with_its_scopes(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer)
    caller, expires = await verifier.verify(issuer.mint(scope="mcp:read extra", extra={"email": "a@x"}))
    assert caller.subject == f"oauth:{issuer.issuer}#alice" and caller.name == "a@x"
    assert caller.scopes == {"mcp:read", "extra"} and not caller.can_write
    assert caller.claims["iss"] == issuer.issuer and expires > 0
    # `scp` as a list (Okta, Entra) and `aud` as a list that includes ours.
    caller, _ = await verifier.verify(
        issuer.mint(scope=None, aud=["x", AUDIENCE], extra={"scp": ["mcp:write"]})
    )
    assert caller.can_write


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        # RS256-signed, naming an EC key: the key type does not fit the algorithm.
        (lambda i: i.mint("rsa-1", header={"kid": "ec-1"}), "key the issuer does not publish"),
        (lambda i: jwt.encode(i.claims(), "a-shared-secret-of-32-bytes-long!", algorithm="HS256"), "'HS256'"),
        (lambda i: i.mint("rsa-1", header={"crit": ["exp"]}), "well-formed JWT"),
        (lambda i: i.mint(extra={"sub": None}), "'sub' claim"),
        (lambda i: i.mint(aud=None), "'aud' claim"),
        (lambda i: i.mint(exp_in=-3600), "expired"),
        (lambda i: i.mint(nbf_in=3600), "not valid yet"),
        (lambda i: i.mint(iss="https://evil.example"), "another issuer"),
        (lambda i: i.mint(aud="https://other.example"), "audience"),
        (lambda i: i.mint_unsigned(), "'none'"),
        (lambda i: i.mint_hs256_with_public_key(), "'HS256'"),
        (lambda i: i.tamper(i.mint(scope="mcp:read"), scope="mcp:read mcp:write"), "signature"),
        (lambda i: "a.b", "well-formed JWT"),
        (lambda i: "x" * 20000, "too long"),
    ],
)
async def test_each_bad_token_is_refused_as_invalid_with_its_reason(
    issuer: TestIssuer, make: Any, reason: str
) -> None:
    with pytest.raises(Refusal) as refused:
        await verifier_for(issuer).verify(make(issuer))
    assert (refused.value.status, refused.value.error) == (401, "invalid_token")
    assert reason in refused.value.description


async def test_a_token_with_neither_scope_is_forbidden(issuer: TestIssuer) -> None:
    with pytest.raises(Refusal) as refused:
        await verifier_for(issuer).verify(issuer.mint(scope="openid profile"))
    assert (refused.value.status, refused.value.error) == (403, "insufficient_scope")


async def test_a_token_without_key_id_needs_exactly_one_fitting_key(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer)
    header = jwt.get_unverified_header(issuer.mint("ec-1"))
    assert header["kid"] == "ec-1"
    no_kid = jwt.encode(issuer.claims(), issuer._keys["ec-1"][1], algorithm="ES256")
    assert (await verifier.verify(no_kid))[0].source == "oauth"  # the only EC key
    issuer.add_key("ec-2", "EC")
    fresh = verifier_for(issuer)
    with pytest.raises(Refusal, match="does not publish"):
        await fresh.verify(no_kid)


# -- the middleware and the metadata route ---------------------------------------------------------


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers with the body it received and the caller it sees."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    data = json.dumps({"body": body.decode(), "caller": current_caller().subject}).encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": data})


async def call(
    app: Any, chunks: list[bytes], token: str | None, path: str = "/mcp"
) -> tuple[int, dict[str, str], Any]:
    headers = [(b"host", b"127.0.0.1:9")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers, "scheme": "http"}
    incoming: list[Message] = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    response_headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], response_headers, json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


async def test_a_read_only_callers_body_is_peeked_and_handed_on_byte_for_byte(issuer: TestIssuer) -> None:
    auth = Authenticator(scopes=SCOPES, oauth=verifier_for(issuer))
    app = AuthMiddleware(echo_app, auth, resource_path="/tasks/mcp", writing_tools={"scribble"})
    reader = issuer.mint(scope="mcp:read")
    reading = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "look"}}
    ).encode()
    status, _, body = await call(app, [reading[:10], reading[10:30], reading[30:]], reader)
    assert status == 200 and body == {"body": reading.decode(), "caller": f"oauth:{issuer.issuer}#alice"}
    writing = reading.replace(b"look", b"scribble")
    status, headers, body = await call(app, [writing[:5], writing[5:]], reader)
    assert status == 403 and body["id"] == 1
    assert 'error="insufficient_scope"' in headers["www-authenticate"]
    assert "http://127.0.0.1:9/.well-known/oauth-protected-resource/tasks/mcp" in headers["www-authenticate"]
    status, _, body = await call(app, [writing], issuer.mint())  # the write scope: untouched
    assert status == 200 and body["body"] == writing.decode()
    assert sdk.auth_context_var.get() is None  # reset after the request


async def test_the_metadata_route_serves_any_mount_path_for_a_bundle(issuer: TestIssuer) -> None:
    auth = Authenticator(scopes=SCOPES, oauth=verifier_for(issuer), public_url="https://mcp.example.com/")
    host = Starlette(routes=[protected_resource_route(auth, "/tasks/mcp")])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=host), base_url="http://x") as http:
        response = await http.get("/.well-known/oauth-protected-resource/tasks/mcp")
        preflight = await http.options("/.well-known/oauth-protected-resource/tasks/mcp")
    assert response.json()["resource"] == "https://mcp.example.com/tasks/mcp"
    assert response.headers["access-control-allow-origin"] == "*"
    assert preflight.status_code == 204


async def test_a_forged_host_header_never_reaches_the_challenge(issuer: TestIssuer) -> None:
    auth = Authenticator(scopes=SCOPES, oauth=verifier_for(issuer))
    app = AuthMiddleware(echo_app, auth, resource_path="/mcp")
    scope = {"type": "http", "headers": [(b"host", b'evil"x, error="y')], "server": ("127.0.0.1", 8000)}
    assert auth.base_url(scope) == "http://127.0.0.1:8000"
    status, headers, _ = await call(app, [b"{}"], None)
    assert status == 401 and headers["www-authenticate"].count('"') % 2 == 0
