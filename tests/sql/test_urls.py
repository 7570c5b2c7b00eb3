"""Database specs from the command line and the default file (redaction: tests/shared/test_redact.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_batteries.errors import ConfigError
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


@pytest.mark.parametrize("url", ["mysql://h/db", "sqlite://", "sqlite:///:memory:", ""])
def test_unsupported_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        parse_url(url)
