"""Database specs from the command line and the default file (redaction: tests/shared/test_redact.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_batteries.errors import ConfigError
from mcp_batteries.safety import redact_url
from mcp_sql.mysql_target import parse_mysql_url
from mcp_sql.urls import parse_database_specs, parse_url


def test_no_arguments_gives_the_default_file_in_xdg_data_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    specs = parse_database_specs([])
    assert specs == {"main": f"sqlite:///{tmp_path}/mcp-batteries/sql/default.db"}
    assert not (tmp_path / "mcp-batteries").exists()  # created by open_database, not by parsing


def test_default_file_falls_back_to_local_share(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_database_specs([])["main"].endswith(f"{tmp_path}/.local/share/mcp-batteries/sql/default.db")


def test_unnamed_url_is_main_and_named_specs_keep_their_names(tmp_path: Path) -> None:
    specs = parse_database_specs(
        [str(tmp_path / "a.db"), "shop=postgresql://u:pw@db.example:5432/shop?sslmode=require"]
    )
    assert specs == {
        "shop": "postgresql://u:pw@db.example:5432/shop?sslmode=require",
        "main": f"sqlite:///{tmp_path}/a.db",
    }


def test_second_unnamed_database_gets_a_derived_name(tmp_path: Path) -> None:
    specs = parse_database_specs([str(tmp_path / "a.db"), "postgres://h/analytics"])
    assert specs["main"].endswith("/a.db") and specs["analytics"] == "postgresql://h/analytics"


def test_duplicate_names_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="twice"):
        parse_database_specs(["x=a.db", "x=b.db"])


@pytest.mark.parametrize(
    ("url", "dialect", "suffix"),
    [
        ("sqlite:////abs/dir/x.db", "sqlite", "/abs/dir/x.db"),
        ("sqlite:/abs/x.db", "sqlite", "/abs/x.db"),
        ("file:/abs/x.db", "sqlite", "/abs/x.db"),
        ("/abs/y.sqlite", "sqlite", "/abs/y.sqlite"),
        ("postgresql+asyncpg://u@h/db", "postgresql", None),
    ],
)
def test_url_forms_are_recognised(url: str, dialect: str, suffix: str | None) -> None:
    parsed = parse_url(url)
    assert parsed.dialect == dialect
    if suffix:
        assert str(parsed.sqlite_path) == suffix
    else:
        assert parsed.dsn == "postgresql://u@h/db"


def test_relative_sqlite_url_resolves_against_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_url("sqlite:///rel.db").sqlite_path == tmp_path / "rel.db"


@pytest.mark.parametrize("url", ["oracle://h/db", "sqlite://", "sqlite:///:memory:", ""])
def test_unsupported_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        parse_url(url)


# -- MySQL / MariaDB --------------------------------------------------------------------------------
def test_mysql_and_mariadb_urls_are_recognised_and_named() -> None:
    specs = parse_database_specs(["mysql://u:pw@db:3306/shop", "mariadb+asyncmy://u@h/crm"])
    assert specs == {"main": "mysql://u:pw@db:3306/shop", "crm": "mariadb://u@h/crm"}
    assert parse_url("mysql+asyncmy://h/x").dialect == "mysql"


def test_mysql_target_reads_user_password_database_and_tls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    target = parse_mysql_url("mysql://app:s%40cret@db.example:3307/shop?ssl-mode=verify_identity")
    assert (target.host, target.port, target.user, target.password, target.database) == (
        "db.example",
        3307,
        "app",
        "s@cret",
        "shop",
    )
    assert target.ssl_mode == "VERIFY_IDENTITY" and "s@cret" not in repr(target)
    context = target.ssl_context()
    assert context is not None and context.check_hostname
    assert parse_mysql_url("mysql://h/x?ssl-mode=REQUIRED").ssl_context().check_hostname is False  # type: ignore[union-attr]
    assert parse_mysql_url("mysql://h/x").ssl_context() is None
    assert target.redacted == "mysql://***@db.example:3307/shop?ssl-mode=verify_identity"


def test_mysql_unix_socket_as_host_or_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert (
        parse_mysql_url("mysql://u@%2Frun%2FMySQLd%2Fmysqld.sock/app").unix_socket
        == "/run/MySQLd/mysqld.sock"
    )
    assert parse_mysql_url("mariadb://u@localhost/app?unix_socket=/tmp/m.sock").unix_socket == "/tmp/m.sock"


def test_mysql_password_from_env_then_option_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".my.cnf").write_text("[client]\nuser=fileuser\npassword='from-file'\nport=3310\n")
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    default = parse_mysql_url("mysql://h/db")
    assert (default.user, default.password, default.port) == ("fileuser", "from-file", 3310)
    monkeypatch.setenv("MYSQL_PWD", "from-env")
    assert parse_mysql_url("mysql://h/db").password == "from-env"
    assert parse_mysql_url("mysql://u:from-url@h/db").password == "from-url"
    other = tmp_path / "other.cnf"
    other.write_text("[mcp]\nuser=grouped\n")
    assert parse_mysql_url(f"mysql://h/db?option-file={other}&option-group=mcp").user == "grouped"


@pytest.mark.parametrize(
    "url",
    ["mysql://h/db?sslmode=sometimes", "mysql://h/db?nope=1", "mysql://h/db?option-file=/nonexistent.cnf"],
)
def test_bad_mysql_options_are_config_errors(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError):
        parse_mysql_url(url)


def test_redaction_hides_mysql_passwords_in_query_options() -> None:
    # The user name is hidden too (it can be a token); the TLS mode says how, not with what.
    assert redact_url("mysql://u@h/db?password=secret&ssl-mode=REQUIRED") == (
        "mysql://***@h/db?password=***&ssl-mode=REQUIRED"
    )
