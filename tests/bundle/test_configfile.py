"""The bundle's one TOML file: top level for the bundle, a table per server; the single server's
precedence (flags > environment > file > defaults) for both; mistakes are one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_batteries._bundle.configfile import BUNDLE_FIELDS, parse_serve_args
from mcp_batteries._entry.definition import discover


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bundle.toml"
    path.write_text(text)
    return str(path)


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        parse_serve_args(list(argv))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mcp-batteries serve: error: ")
    return err


def test_each_server_gets_its_table_and_the_bundles_listener(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        'host = "0.0.0.0"\nport = 9000\nstateless = true\ninsecure_no_auth = true\n'
        f'[filesystem]\ndirectories = ["{tmp_path}"]\nread_only = true\n'
        "[sql]\nmax_rows = 7\ntools = ['query']\n",
    )
    bundle = parse_serve_args(["--config", config])
    assert (bundle.settings.host, bundle.settings.port, bundle.settings.stateless) == ("0.0.0.0", 9000, True)
    files = bundle.servers["filesystem"][1]
    sql = bundle.servers["sql"][1]
    assert files.directories == [str(tmp_path)] and files.read_only  # type: ignore[attr-defined]
    assert sql.max_rows == 7 and sql.tools == ["query"]  # type: ignore[attr-defined]
    for name, (_, settings) in bundle.servers.items():
        assert settings.transport == "http" and settings.path == f"/{name}/mcp"
        assert (settings.host, settings.stateless, settings.insecure_no_auth) == ("0.0.0.0", True, True)


def test_flags_beat_the_environment_which_beats_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(tmp_path, "port = 9000\n[sql]\nmax_rows = 7\nstatement_timeout = 3.0\n")
    assert parse_serve_args(["--config", config]).settings.port == 9000
    monkeypatch.setenv("MCP_BATTERIES_PORT", "9100")
    monkeypatch.setenv("MCP_SQL_MAX_ROWS", "11")
    bundle = parse_serve_args(["--config", config])
    assert bundle.settings.port == 9100
    sql = bundle.servers["sql"][1]
    assert sql.max_rows == 11 and sql.statement_timeout == 3.0  # type: ignore[attr-defined]
    assert parse_serve_args(["--config", config, "--port", "9200"]).settings.port == 9200


def test_the_file_can_come_from_the_environment_and_name_the_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "MCP_BATTERIES_CONFIG", write(tmp_path, 'servers = ["sql"]\n[fetch]\nmax_redirects = 2\n')
    )
    bundle = parse_serve_args([])
    assert list(bundle.servers) == ["sql"] and bundle.skipped == ("fetch",)
    assert list(parse_serve_args(["fetch"]).servers) == ["fetch"]


def test_the_bundles_own_settings_are_the_http_and_sign_in_ones() -> None:
    assert {"host", "port", "stateless", "auth_token_file", "oauth_issuer", "allowed_hosts"} <= BUNDLE_FIELDS
    assert not {"read_only", "tools", "disable_tools", "path", "transport"} & BUNDLE_FIELDS


def test_unknown_servers_and_keys_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    installed = ", ".join(discover())
    assert f"unknown server(s) nosuch; installed servers: {installed}" in refusal(capsys, "nosuch")
    err = refusal(capsys, "--config", write(tmp_path, "[nosuch]\nx = 1\n"))
    assert "unknown server [nosuch] in " in err
    err = refusal(capsys, "--config", write(tmp_path, "[sql]\nmax_row = 1\n"))
    assert "unknown setting 'max_row' in [sql] of " in err and "max_rows" in err
    err = refusal(capsys, "--config", write(tmp_path, "colour = 'blue'\n"))
    assert "unknown bundle setting 'colour'" in err


def test_settings_in_the_wrong_place_say_where_they_belong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refusal(capsys, "--config", write(tmp_path, "[sql]\nport = 1\n"))
    assert "'port' in [sql] of " in err and "set it at the top level" in err
    err = refusal(capsys, "--config", write(tmp_path, "read_only = true\n"))
    assert "'read_only' at the top level" in err and "put it in a server's table" in err
    err = refusal(capsys, "--config", write(tmp_path, "[sql]\npath = '/x'\n"))
    assert "unknown setting 'path' in [sql]" in err


def test_bad_values_name_the_server_and_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(tmp_path, "[sql]\nmax_rows = 0\n")
    err = refusal(capsys, "--config", config)
    assert f"max_rows in [sql] of {config}: Input should be greater than or equal to 1 (got 0)" in err
    err = refusal(capsys, "--config", write(tmp_path, "port = 'x'\n"))
    assert "port" in err
    err = refusal(capsys, "--config", str(tmp_path / "missing.toml"))
    assert "no such file" in err
    err = refusal(capsys, "--config", write(tmp_path, "port = \n"))
    assert "not valid TOML" in err
