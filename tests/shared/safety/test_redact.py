"""The one redaction: every secret a URL, a DSN or a free text can carry, in a table of hostile cases."""

from __future__ import annotations

import logging

import pytest
from mcp_batteries._safety.redact import (
    HIDDEN,
    KNOWN,
    RedactingFormatter,
    redact_text,
    redact_url,
    remember_secrets,
)
from mcp_batteries.testing import ERAS, Era, connect


@pytest.fixture(autouse=True)
def no_known_secrets() -> None:
    """Each test starts with no remembered secrets (the root conftest restores them after)."""
    KNOWN.clear()


# (what is configured, what may be shown, the secrets that must not appear)
URL_CASES = [
    # user info: password, token as user name, both, characters that break naive parsing
    ("postgresql://u:secret@h:5432/db", "postgresql://***@h:5432/db", ["secret"]),
    ("https://ghp_abcdef0123456789@github.com/o/r.git", "https://***@github.com/o/r.git", ["ghp_"]),
    ("https://ghp_tok:x-oauth-basic@github.com/o/r", "https://***@github.com/o/r", ["ghp_tok", "oauth"]),
    ("https://oauth2:glpat-XYZ@gitlab.com/g/p.git", "https://***@gitlab.com/g/p.git", ["glpat", "oauth2"]),
    ("https://u:p@ss@word@h/x", "https://***@h/x", ["ss", "word@"]),
    ("https://u:pa:ss@h/x", "https://***@h/x", ["pa:ss"]),
    ("postgresql://u:p%40ss%3Aw@h/db", "postgresql://***@h/db", ["p%40", "ss"]),
    ("postgresql://postgres@h/db", "postgresql://***@h/db", ["postgres@"]),
    # a password with "/", "?" or "#" breaks the URL: nothing after the scheme is shown
    ("postgresql://u:pa/ss@host/db", "postgresql://***", ["pa", "ss"]),
    ("postgresql://u:12/34@host/db", "postgresql://***", ["12/34", "34@"]),
    ("postgresql://u:pa?ss@host/db", "postgresql://***", ["pa?", "ss@"]),
    ("postgresql://u:pa#ss@host/db", "postgresql://***", ["pa#", "ss@"]),
    ("https://abc/def@host/x", "https://***", ["abc", "def"]),
    ("https://h:notaport@h/x", "https://***@h/x", ["notaport"]),
    ("https://host[:port]/ in a sentence", "https://host[:port]/ in a sentence", []),
    # query and fragment: only known-harmless parameters keep their values (any case, encoded)
    (
        "postgresql://h/db?password=s3&sslmode=require",
        "postgresql://h/db?password=***&sslmode=require",
        ["s3"],
    ),
    ("postgresql://h/db?PassWord=s3", "postgresql://h/db?PassWord=***", ["s3"]),
    ("postgresql://h/db?pass%77ord=s3", "postgresql://h/db?pass%77ord=***", ["s3"]),
    (
        "postgresql://h/db?passfile=/p&sslpassword=k&sslkey=/k.pem",
        "postgresql://h/db?passfile=***&sslpassword=***&sslkey=***",
        ["/p", "=k", "k.pem"],
    ),
    (
        "https://h/x?access_token=t1;api_key=t2&sig=t3&X-Amz-Signature=t4",
        "https://h/x?access_token=***;api_key=***&sig=***&X-Amz-Signature=***",
        ["t1", "t2", "t3", "t4"],
    ),
    (
        "https://h/x?token=t&secret=s&key=k&apikey=a&auth=z",
        "https://h/x?token=***&secret=***&key=***&apikey=***&auth=***",
        ["=t", "=s", "=k", "=a", "=z"],
    ),
    (
        "https://h/x?unknown_param=v1&application_name=app",
        "https://h/x?unknown_param=***&application_name=app",
        ["v1"],
    ),
    ("https://h/x?bare-token-value", "https://h/x?***", ["bare"]),
    ("https://h/x?a%3Db=1", "https://h/x?***=***", ["a%3D", "=1"]),
    ("https://h/x#access_token=t5&state=s", "https://h/x#access_token=***&state=***", ["t5", "=s"]),
    ("https://h/x#section", "https://h/x#***", ["section"]),
    (
        "jdbc:postgresql://h/db?user=x&password=y",
        "jdbc:postgresql://h/db?user=***&password=***",
        ["=x", "=y"],
    ),
    # libpq key=value strings, quoted values included; an unterminated quote hides the rest
    (
        "host=db password=secret user=x sslmode=require",
        "host=db password=*** user=*** sslmode=require",
        ["secret", "=x"],
    ),
    ("host=db password='a b\\' c' port=5", "host=db password=*** port=5", ["a b", "c'"]),
    ("host=db password='never ends port=5", "host=db password=***", ["never", "ends", "port=5"]),
    ("host=db !garbage password=x", "host=db ***", ["garbage", "=x"]),
    # what stays visible: hosts, ports, paths, IPv6, multi-host, scp-like git remotes
    ("postgresql://h1:5432,h2:5433/db", "postgresql://h1:5432,h2:5433/db", []),
    ("postgresql://[::1]:5432/db", "postgresql://[::1]:5432/db", []),
    ("https://registry.npmjs.org/@types/node", "https://registry.npmjs.org/@types/node", []),
    ("git@github.com:o/r.git", "git@github.com:o/r.git", []),
    ("ssh://git@h/x", "ssh://git@h/x", []),
    ("ghp_x1@github.com:o/r.git", "***@github.com:o/r.git", ["ghp_x1"]),
    ("sqlite:////home/me/a@b.db", "sqlite:////home/me/a@b.db", []),
    ("/plain/path.db", "/plain/path.db", []),
    ("file:///area/repo", "file:///area/repo", []),
    ("tok:en/x@host", "***@host", ["tok", "en/x"]),
]


@pytest.mark.parametrize(("url", "shown", "secrets"), URL_CASES, ids=[case[0] for case in URL_CASES])
def test_redact_url_shows_only_what_is_known_to_be_harmless(url: str, shown: str, secrets: list[str]) -> None:
    assert redact_url(url) == shown
    for secret in secrets:
        assert secret not in redact_url(url)


def test_redact_text_redacts_every_url_and_password_pair_in_free_text() -> None:
    text = (
        "cannot connect to postgresql://u:pw1@h/db?password=pw2 (fatal); retried "
        "https://ghp_tok3@github.com/o/r.git; dsn host=h password='pw4 x' PGPASSWORD=pw5 "
        "api_key=pw6 sslpassword=pw7"
    )
    shown = redact_text(text)
    for secret in ("pw1", "pw2", "ghp_tok3", "pw4", "pw5", "pw6", "pw7"):
        assert secret not in shown, shown
    assert "postgresql://***@h/db?password=***" in shown and "github.com/o/r.git" in shown
    assert redact_text("offset=5 and head=10") == "offset=5 and head=10"
    assert redact_text("no secrets here") == "no secrets here"


def test_configured_secrets_are_hidden_where_a_driver_quotes_a_piece_of_them() -> None:
    # asyncpg reads "hunter2@in:userinfo" wrongly and quotes the tail: "invalid port 'userinfo@h:9'".
    remember_secrets("postgresql://ghp_0123456789abcdefXYZ:hunter2@in:userinfo@h:9/db?password=qs%2Dvalue")
    quoted = "invalid literal for int(): 'userinfo@h:9'; user ghp_0123456789abcdefXYZ; qs-value; hunter2"
    assert (
        redact_text(quoted) == f"invalid literal for int(): '{HIDDEN}@h:9'; user {HIDDEN}; {HIDDEN}; {HIDDEN}"
    )
    # ordinary words that merely contain a piece stay (boundaries), as do short user names
    remember_secrets("postgresql://postgres:longpassword@h/db")
    assert redact_text("postgresql://postgres@h/postgres") == "postgresql://***@h/postgres"


def test_every_log_line_passes_through_the_redaction(caplog: pytest.LogCaptureFixture) -> None:
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "cannot open %s", ("https://u:pw9@h/",), None)
    try:
        raise RuntimeError("driver said: password=pw10")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    line = RedactingFormatter("%(message)s").format(record)
    assert "pw9" not in line and "pw10" not in line and "https://***@h/" in line


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_domain_errors_reach_the_client_through_the_redaction(era: Era) -> None:
    from typing import ClassVar

    from mcp_batteries._core.app import BatteriesServer
    from mcp_batteries._core.settings import ServerSettings
    from mcp_batteries.errors import NotFound, UpstreamError

    class Settings(ServerSettings):
        server_name: ClassVar[str] = "leaky"
        distribution: ClassVar[str | None] = "mcp-batteries"

    server = BatteriesServer(Settings(), instructions="quotes URLs in its errors")

    @server.tool(title="Fetch", read_only=True)
    async def fetch() -> str:
        """Fails as git does."""
        raise UpstreamError("fatal: unable to access 'https://ghp_leak1@github.com/o/r.git/': 403")

    async def read(session: object, uri: str) -> tuple[str, str]:
        raise NotFound("no database at postgresql://u:leak2@h/db?password=leak3")

    server.read_resources_with("leaky://", read)
    async with connect(server.mcp, era) as client:
        failed = await client.call_tool("fetch", {})
        with pytest.raises(Exception, match="postgresql") as refused:
            await client.read_resource("leaky://x")
    shown = failed.content[0].text + str(refused.value)  # type: ignore[union-attr]
    assert failed.is_error and "https://***@github.com/o/r.git/" in shown
    for secret in ("leak1", "leak2", "leak3"):
        assert secret not in shown


def test_only_urls_in_settings_are_remembered_not_paths_or_names() -> None:
    for value in ("/home/me/mail@archive/docs", "data=1.db", "shop=postgresql://u:pw-in-spec@h/shop"):
        remember_secrets(value)
    assert KNOWN.words == {"pw-in-spec"}
    assert redact_text("reading /home/me/mail@archive/docs and postgresql here") == (
        "reading /home/me/mail@archive/docs and postgresql here"
    )


@pytest.mark.parametrize(
    "text",
    [
        "q" * 300_000,
        "a:" * 150_000,
        "a://" * 75_000,
        "a:// " * 60_000,
        ("x" * 250 + "://") * 1_000,
        "password=" * 30_000,
        "k" * 300_000 + "=v",
        "'" * 100_000 + "token='" + "\\" * 100_000,
        "@" * 300_000,
    ],
    ids=["letters", "colons", "marks", "spaced-marks", "long-schemes", "pairs", "long-key", "quotes", "ats"],
)
def test_redaction_finishes_on_hostile_text(text: str) -> None:
    # A 300,000-character argument echoed in an error stalled a server for minutes (patterns that
    # backtracked quadratically); every pattern is now linear, and each of these takes well under
    # two seconds (measured: 0.1-1.6 s on this machine).
    remember_secrets("postgresql://u:known-password@h/db")
    assert len(redact_text(text)) <= len(text) + 3 * text.count("://")
    assert redact_url(text)
