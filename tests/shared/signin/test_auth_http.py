"""Authentication over real HTTP: static token, tokens file and OAuth, through real clients.

The servers run as subprocesses (`mcp-batteries-filesystem`, and a small `whoami` server whose
tool reports `current_caller()`); the OAuth issuer (keys, JWKS, metadata) runs in the test on
127.0.0.1 (`mcp_batteries._testing.oauth_issuer.TestIssuer`).
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._signin.auth import ScopeNames, build_authenticator, load_tokens_file
from mcp_batteries.errors import ConfigError
from mcp_batteries.testing import (
    AUDIENCE,
    ERAS,
    MCP_POST_HEADERS,
    RAW_INITIALIZE,
    Era,
    TestIssuer,
    client_mode,
    connect_http,
    http_server,
    script_path,
    write_private,
)

pytestmark = pytest.mark.anyio

WHOAMI_SERVER = '''
"""A test server whose tools report the caller, as every server reads it: current_caller()."""
from typing import Any

from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.cli import fail, parse_settings
from mcp_batteries.errors import ConfigError
from mcp_batteries._core.identity import current_caller
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._transport.run import run


class WhoamiSettings(ServerSettings):
    server_name = "whoami"


def build(settings: WhoamiSettings) -> BatteriesServer:
    server = BatteriesServer(settings, instructions="Reports who is calling.")

    @server.tool(title="Who am I", read_only=True)
    async def whoami() -> dict[str, Any]:
        """The caller as the server sees it."""
        caller = current_caller()
        return {
            "subject": caller.subject,
            "name": caller.name,
            "source": caller.source,
            "scopes": sorted(caller.scopes),
            "workspaces": None if caller.workspaces is None else sorted(caller.workspaces),
            "can_write": caller.can_write,
        }

    @server.tool(title="Scribble", read_only=False)
    async def scribble() -> str:
        """Pretends to change something."""
        return "scribbled by " + current_caller().name

    return server


settings = parse_settings(WhoamiSettings, prog="whoami")
try:
    run(build(settings), script="whoami")
except ConfigError as exc:
    fail(str(exc), prog="whoami")
'''


@pytest.fixture
def whoami(tmp_path: Path) -> str:
    """An executable `whoami` server script (its path works wherever a console script name does)."""
    script = tmp_path / "whoami"
    script.write_text(f"#!{sys.executable}\n{WHOAMI_SERVER}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with TestIssuer() as running:
        yield running


def oauth_args(issuer: TestIssuer, *extra: str) -> tuple[str, ...]:
    return ("--oauth-issuer", issuer.issuer, "--oauth-audience", AUDIENCE, *extra)


async def whoami_over(url: str, era: Era, token: str) -> dict[str, Any]:
    async with connect_http(url, era, token=token) as client:
        result = await client.call_tool("whoami", {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def challenge_params(header: str) -> dict[str, str]:
    assert header.startswith("Bearer ")
    params: dict[str, str] = {}
    for part in header[len("Bearer ") :].split('", '):
        key, _, value = part.partition("=")
        params[key.strip()] = value.strip().strip('"')
    return params


async def post(url: str, body: Any, token: str | None = None, session: str | None = None) -> httpx.Response:
    headers = dict(MCP_POST_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = "2025-06-18"
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url, json=body, headers=headers)


async def open_session(url: str, token: str) -> str:
    """A legacy (handshake) session opened with `token`; its id."""
    response = await post(url, RAW_INITIALIZE, token)
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    initialized = await post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, token, session)
    assert initialized.status_code == 202
    return session


@asynccontextmanager
async def switchable_client(url: str, token: str) -> AsyncIterator[tuple[Client, httpx2.AsyncClient]]:
    """A legacy client whose bearer token the test can change between requests of one session."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=client_mode("legacy")) as client,
    ):
        yield client, http


# -- OAuth ---------------------------------------------------------------------------------------


async def test_oauth_refuses_each_bad_token_with_401_and_the_resource_metadata_challenge(
    tree: Path, issuer: TestIssuer
) -> None:
    issuer.add_key("unpublished", publish=False)
    valid = issuer.mint()
    bad_tokens = {
        "expired": issuer.mint(exp_in=-3600),
        "not yet valid": issuer.mint(nbf_in=3600),
        "wrong audience": issuer.mint(aud="https://other.example/mcp"),
        "wrong issuer": issuer.mint(iss="https://evil.example"),
        "unknown key": issuer.mint("unpublished"),
        "alg none": issuer.mint_unsigned(),
        "HS256 signed with the public key": issuer.mint_hs256_with_public_key(),
        "tampered payload": issuer.tamper(valid, sub="root"),
        "not a JWT": "definitely-not-a-token",
        "no expiry": issuer.mint(exp_in=None),
    }
    async with http_server("mcp-batteries-filesystem", str(tree), *oauth_args(issuer)) as running:
        expected_metadata = f"{running.base_url}/.well-known/oauth-protected-resource/mcp"
        missing = await post(running.url, RAW_INITIALIZE)
        assert missing.status_code == 401
        params = challenge_params(missing.headers["www-authenticate"])
        assert params["resource_metadata"] == expected_metadata
        assert "error" not in params  # no credentials: no error code (RFC 6750 section 3.1)
        for what, token in bad_tokens.items():
            response = await post(running.url, RAW_INITIALIZE, token)
            assert response.status_code == 401, what
            params = challenge_params(response.headers["www-authenticate"])
            assert params["error"] == "invalid_token", what
            assert params["resource_metadata"] == expected_metadata, what
            assert response.json()["error"]["message"].startswith("Unauthorized: "), what
        assert (await post(running.url, RAW_INITIALIZE, valid)).status_code == 200


async def test_protected_resource_metadata_names_the_issuer_and_the_scopes(
    tree: Path, issuer: TestIssuer
) -> None:
    async with (
        http_server("mcp-batteries-filesystem", str(tree), *oauth_args(issuer)) as running,
        httpx.AsyncClient() as http,
    ):
        metadata = await http.get(running.base_url + "/.well-known/oauth-protected-resource/mcp")
        public = await http.get(
            running.base_url.replace("127.0.0.1", "localhost") + "/.well-known/oauth-protected-resource/mcp"
        )
        root = await http.get(running.base_url + "/.well-known/oauth-protected-resource")
    assert metadata.status_code == 200
    assert metadata.json() == {
        "resource": running.url,
        "authorization_servers": [issuer.issuer],
        "scopes_supported": ["mcp:read", "mcp:write"],
        "bearer_methods_supported": ["header"],
    }
    assert root.json() == metadata.json()  # where clients look without the challenge's hint
    # The resource is named as the client reached it (or by --public-url behind a proxy).
    assert public.json()["resource"] == running.url.replace("127.0.0.1", "localhost")


@pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])
async def test_valid_tokens_of_every_key_type_reach_the_tool_as_their_caller(
    whoami: str, issuer: TestIssuer, stateless: bool
) -> None:
    extra = ("--stateless",) if stateless else ()
    async with http_server(whoami, *oauth_args(issuer, *extra)) as running:
        for era in ERAS:
            for kid, alg in (("rsa-1", "RS256"), ("rsa-1", "PS256"), ("ec-1", "ES256"), ("ed-1", "EdDSA")):
                token = issuer.mint(kid, alg=alg, sub=f"user-{alg}", extra={"preferred_username": "Alice"})
                seen = await whoami_over(running.url, era, token)
                assert seen == {
                    "subject": f"oauth:{issuer.issuer}#user-{alg}",
                    "name": "Alice",
                    "source": "oauth",
                    "scopes": ["mcp:read", "mcp:write"],
                    "workspaces": None,
                    "can_write": True,
                }


@pytest.mark.parametrize("era", ERAS)
async def test_a_read_scope_sees_the_server_as_read_only_and_is_told_which_scope_writing_needs(
    tree: Path, issuer: TestIssuer, era: Era
) -> None:
    reader = issuer.mint(scope="mcp:read")
    writer = issuer.mint(scope="mcp:read mcp:write")
    async with http_server("mcp-batteries-filesystem", str(tree), *oauth_args(issuer)) as running:
        async with connect_http(running.url, era, token=reader) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "read_text_file" in names
            assert not names & {"write_file", "edit_file", "move_file", "create_directory"}
            with pytest.raises(MCPError) as refused:
                await client.call_tool("write_file", {"path": "b.txt", "content": "x"})
            assert "'mcp:write'" in str(refused.value)
            # The refusal did not break the connection.
            assert not (await client.call_tool("read_text_file", {"path": "a.txt"})).is_error
        assert not (tree / "b.txt").exists()
        async with connect_http(running.url, era, token=writer) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "write_file" in names
            assert not (await client.call_tool("write_file", {"path": "b.txt", "content": "x"})).is_error
        assert (tree / "b.txt").read_text() == "x"


async def test_a_read_scope_calling_a_writing_tool_gets_403_insufficient_scope(
    tree: Path, issuer: TestIssuer
) -> None:
    reader = issuer.mint(scope="mcp:read")
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "b.txt", "content": "x"}},
    }
    async with http_server("mcp-batteries-filesystem", str(tree), *oauth_args(issuer)) as running:
        session = await open_session(running.url, reader)
        refused = await post(running.url, call, reader, session)
        reading = await post(
            running.url,
            {**call, "params": {"name": "read_text_file", "arguments": {"path": "a.txt"}}},
            reader,
            session,
        )
        no_scope = await post(running.url, RAW_INITIALIZE, issuer.mint(scope="profile email"))
    assert refused.status_code == 403
    params = challenge_params(refused.headers["www-authenticate"])
    assert params["error"] == "insufficient_scope"
    assert "mcp:write" in params["scope"].split()
    assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
    assert refused.json()["id"] == 7 and "'mcp:write'" in refused.json()["error"]["message"]
    assert reading.status_code == 200
    assert not (tree / "b.txt").exists()
    assert no_scope.status_code == 403
    assert challenge_params(no_scope.headers["www-authenticate"])["error"] == "insufficient_scope"


async def test_a_new_signing_key_is_picked_up_and_unknown_keys_refetch_at_most_once_per_interval(
    whoami: str, issuer: TestIssuer
) -> None:
    async with http_server(whoami, *oauth_args(issuer)) as running:
        assert (await whoami_over(running.url, "legacy", issuer.mint("rsa-1")))["source"] == "oauth"
        assert issuer.jwks_hits == 1
        issuer.add_key("rsa-2")  # the issuer rotates: a new key appears in its JWKS
        assert (await whoami_over(running.url, "modern", issuer.mint("rsa-2", sub="bob")))[
            "subject"
        ].endswith("#bob")
        assert issuer.jwks_hits == 2
        issuer.add_key("forged", publish=False)
        for _ in range(20):  # a flood of unknown key ids does not hammer the issuer
            assert (await post(running.url, RAW_INITIALIZE, issuer.mint("forged"))).status_code == 401
        assert issuer.jwks_hits == 2
        assert (await post(running.url, RAW_INITIALIZE, issuer.mint("rsa-2"))).status_code == 200


async def test_openid_metadata_and_an_explicit_jwks_url_are_found_too(whoami: str) -> None:
    with TestIssuer(metadata="openid", path="/tenant-1") as oidc:
        async with http_server(whoami, *oauth_args(oidc)) as running:
            assert (await whoami_over(running.url, "legacy", oidc.mint()))["source"] == "oauth"
        assert oidc.metadata_hits == 1
    with TestIssuer(metadata="oauth") as plain:
        async with http_server(whoami, *oauth_args(plain, "--oauth-jwks-url", plain.jwks_url)) as running:
            assert (await whoami_over(running.url, "modern", plain.mint("ec-1")))["source"] == "oauth"
        assert plain.metadata_hits == 0 and plain.jwks_hits == 1


async def test_an_unreachable_issuer_is_a_503_not_a_bad_token(whoami: str) -> None:
    with TestIssuer() as gone:
        token = gone.mint()
        url = gone.issuer
    async with http_server(whoami, "--oauth-issuer", url, "--oauth-audience", AUDIENCE) as running:
        response = await post(running.url, RAW_INITIALIZE, token)
    assert response.status_code == 503
    assert "www-authenticate" not in response.headers


async def test_oauth_workspaces_come_from_the_configured_claim(whoami: str, issuer: TestIssuer) -> None:
    token = issuer.mint(extra={"groups": ["team-a", "shared"]})
    async with http_server(whoami, *oauth_args(issuer, "--oauth-workspaces-claim", "groups")) as running:
        assert (await whoami_over(running.url, "legacy", token))["workspaces"] == ["shared", "team-a"]


# -- tokens file ---------------------------------------------------------------------------------

ALICE = "alice-token-0123456789"
ALICE_READER = "alice-reader-0123456789"
BOB = "bob-token-0123456789abc"


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = write_private(tmp_path / "tokens.toml", "")
    path.write_text(
        f"""
[[tokens]]
user = "alice"
sha256 = "{hashlib.sha256(ALICE.encode()).hexdigest()}"
workspaces = ["team-a", "shared"]

[[tokens]]
user = "alice"
token = "{ALICE_READER}"
workspaces = ["team-a", "shared"]
scopes = ["mcp:read"]

[[tokens]]
user = "bob"
sha256 = "{hashlib.sha256(BOB.encode()).hexdigest()}"
workspaces = ["team-b"]
"""
    )
    return path


@pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])
async def test_each_user_of_the_tokens_file_sees_its_own_identity(
    whoami: str, tokens_file: Path, stateless: bool
) -> None:
    extra = ("--stateless",) if stateless else ()
    async with http_server(whoami, "--tokens-file", str(tokens_file), *extra) as running:
        for era in ERAS:
            alice = await whoami_over(running.url, era, ALICE)
            bob = await whoami_over(running.url, era, BOB)
            assert alice == {
                "subject": "user:alice",
                "name": "alice",
                "source": "tokens-file",
                "scopes": ["mcp:read", "mcp:write"],
                "workspaces": ["shared", "team-a"],
                "can_write": True,
            }
            assert (bob["subject"], bob["workspaces"], bob["can_write"]) == ("user:bob", ["team-b"], True)
            refused = await post(running.url, RAW_INITIALIZE, "not-in-the-file")
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"].startswith('Bearer realm="mcp"')


async def test_a_session_opened_by_one_user_cannot_be_used_by_another(whoami: str, tokens_file: Path) -> None:
    list_tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with http_server(whoami, "--tokens-file", str(tokens_file)) as running:
        session = await open_session(running.url, ALICE)
        as_bob = await post(running.url, list_tools, BOB, session)
        as_nobody = await post(running.url, list_tools, None, session)
        as_alice = await post(running.url, list_tools, ALICE, session)
    assert as_bob.status_code == 404  # exactly as if the session did not exist
    assert as_nobody.status_code == 401
    assert as_alice.status_code == 200


async def test_each_request_of_a_session_is_seen_as_the_credential_that_sent_it(
    whoami: str, tokens_file: Path
) -> None:
    # Alice's two tokens are one principal, so they share her session; the auth context reaches
    # each handler per request (not frozen at the session's first), so scopes follow the token.
    async with (
        http_server(whoami, "--tokens-file", str(tokens_file)) as running,
        switchable_client(running.url, ALICE) as (client, http),
    ):
        assert (await client.call_tool("whoami", {})).structured_content["can_write"] is True  # type: ignore[index]
        assert not (await client.call_tool("scribble", {})).is_error
        http.headers["Authorization"] = f"Bearer {ALICE_READER}"
        assert (await client.call_tool("whoami", {})).structured_content["can_write"] is False  # type: ignore[index]
        assert "scribble" not in {tool.name for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("scribble", {})
        assert refused.is_error
        assert "needs the 'mcp:write' scope" in refused.content[0].text  # type: ignore[union-attr]
        http.headers["Authorization"] = f"Bearer {ALICE}"
        assert not (await client.call_tool("scribble", {})).is_error


# -- static token --------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_the_static_token_is_one_caller_named_token_with_a_plain_challenge(
    whoami: str, era: Era
) -> None:
    async with http_server(whoami, env={"MCP_AUTH_TOKEN": "s3cret"}) as running:
        seen = await whoami_over(running.url, era, "s3cret")
        refused = await post(running.url, RAW_INITIALIZE, "s3cre")
        async with httpx.AsyncClient() as http:
            no_metadata = await http.get(running.base_url + "/.well-known/oauth-protected-resource/mcp")
    assert (seen["subject"], seen["name"], seen["source"], seen["can_write"]) == (
        "token",
        "token",
        "token",
        True,
    )
    assert refused.status_code == 401
    assert "resource_metadata" not in refused.headers["www-authenticate"]
    assert refused.headers["www-authenticate"].startswith('Bearer realm="mcp"')
    assert no_metadata.status_code == 401  # no OAuth discovery for a shared secret


async def test_without_authentication_the_caller_is_the_local_user(whoami: str) -> None:
    async with http_server(whoami) as running:
        seen = await whoami_over(running.url, "legacy", "ignored")
    assert seen["source"] == "local" and seen["subject"].startswith("local:")


# -- configuration -------------------------------------------------------------------------------


def run_config(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MCP_AUTH_TOKEN"}
    return subprocess.run(
        [script_path("mcp-batteries-filesystem"), ".", "--transport", "http", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[[tokens]]\nuser = 'a'\ntoken = 'short'\n", "at least 16 characters"),
        ("[[tokens]\n", "not valid TOML"),
        ("[[tokens]]\nuser = 'a'\nsha256 = 'abc'\n", "64 hexadecimal digits"),
        ("[[tokens]]\nuser = 'a'\ntoken = '0123456789abcdef'\nrole = 'admin'\n", "unknown key(s) role"),
    ],
)
def test_a_malformed_tokens_file_is_one_line_and_exit_2(tmp_path: Path, content: str, message: str) -> None:
    path = write_private(tmp_path / "tokens.toml", content)
    done = run_config("--tokens-file", str(path))
    assert done.returncode == 2
    assert message in done.stderr and str(path) in done.stderr
    assert done.stderr.strip().count("\n") == 0


@pytest.mark.parametrize("flag", ["--tokens-file", "--auth-token-file"])
def test_a_secret_file_others_may_read_or_write_is_refused_at_start_with_the_fix(
    tmp_path: Path, flag: str
) -> None:
    content = '[[tokens]]\nuser = "a"\ntoken = "0123456789abcdef"\n' if flag == "--tokens-file" else "tok" * 8
    path = write_private(tmp_path / "secret file", content)
    path.chmod(0o644)
    done = run_config(flag, str(path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert f"{flag} {path}" in done.stderr and "mode 0644" in done.stderr
    assert f"chmod 600 '{path}'" in done.stderr
    # Every permission for the group or others counts; the owner's own do not.
    settings = {"--tokens-file": "tokens_file", "--auth-token-file": "auth_token_file"}[flag]
    for mode in (0o640, 0o604, 0o620, 0o602, 0o610, 0o601, 0o666):
        path.chmod(mode)
        with pytest.raises(ConfigError, match=f"mode {mode:04o}.*chmod 600"):
            build_authenticator(ServerSettings(**{settings: path}))
    for mode in (0o600, 0o400, 0o700):
        path.chmod(mode)
        assert build_authenticator(ServerSettings(**{settings: path})) is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--oauth-issuer", "https://idp.example"), "needs --oauth-audience"),
        (("--oauth-issuer", "http://idp.example", "--oauth-audience", "a"), "must be an https:// URL"),
        (("--oauth-audience", "a"), "need(s) --oauth-issuer"),
        (
            ("--oauth-issuer", "https://idp.example", "--oauth-audience", "a", "--public-url", "https://x/y"),
            "scheme://host[:port] only",
        ),
    ],
)
def test_incomplete_oauth_configuration_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = run_config(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stderr.strip().count("\n") == 0


def test_the_documented_tokens_file_example_parses(tmp_path: Path) -> None:
    docs = Path(__file__).parents[3] / "docs" / "configuration.md"
    text = docs.read_text()
    start = text.index("```toml\n# tokens.toml")
    example = text[start + len("```toml\n") : text.index("```", start + 7)]
    path = write_private(tmp_path / "tokens.toml", example)
    entries = load_tokens_file(path, ScopeNames("mcp:read", "mcp:write"))
    assert {caller.name for caller in entries.values()} >= {"alice", "ci-bot"}
