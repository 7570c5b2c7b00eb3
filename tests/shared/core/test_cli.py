"""Settings from flags, environment and TOML, and one-line errors with exit status 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mcp_batteries._core.cli import parse_settings
from mcp_batteries.testing import script_path

from ..conftest import DemoSettings


def test_defaults_are_stdio_on_loopback() -> None:
    s = parse_settings(DemoSettings, [])
    assert (s.transport, s.host, s.path, s.read_only, s.tools) == ("stdio", "127.0.0.1", "/mcp", False, None)


def test_flags_beat_environment_which_beats_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "demo.toml"
    config.write_text('port = 7000\nlog_level = "debug"\ndisable_tools = ["a", "b"]\nread_only = true\n')
    monkeypatch.setenv("MCP_DEMO_PORT", "7100")
    monkeypatch.setenv("MCP_DEMO_LOG_LEVEL", "info")
    s = parse_settings(DemoSettings, ["--config", str(config), "--port", "7200", "--transport", "http"])
    assert s.port == 7200  # flag
    assert s.log_level == "info"  # environment over TOML
    assert s.disable_tools == ["a", "b"] and s.read_only is True  # TOML over defaults


def test_tool_lists_accept_commas_and_repetition(monkeypatch: pytest.MonkeyPatch) -> None:
    s = parse_settings(DemoSettings, ["--tools", "look,change", "--tools", "crash"])
    assert s.tools == ["look", "change", "crash"]
    monkeypatch.setenv("MCP_DEMO_DISABLE_TOOLS", "x, y")
    assert parse_settings(DemoSettings, []).disable_tools == ["x", "y"]


def test_config_file_can_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "c.toml"
    config.write_text('host = "0.0.0.0"\n')
    monkeypatch.setenv("MCP_DEMO_CONFIG", str(config))
    assert parse_settings(DemoSettings, []).host == "0.0.0.0"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--port", "70000"], "--port: Input should be less than or equal to 65535 (got '70000')"),
        (["--transport", "carrier-pigeon"], "argument --transport: invalid choice"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--path", "mcp"], "--path: Value error, must start with '/'"),
        (["--config", "/nonexistent.toml"], "--config: no such file: /nonexistent.toml"),
    ],
)
def test_bad_configuration_is_one_line_on_stderr_and_exit_2(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_settings(DemoSettings, argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err


def test_bad_environment_value_is_one_line_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_DEMO_READ_ONLY", "perhaps")
    with pytest.raises(SystemExit):
        parse_settings(DemoSettings, [])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MCP_DEMO_READ_ONLY" in err


def test_a_real_server_rejects_bad_config_without_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [script_path("mcp-batteries-filesystem"), str(tmp_path / "missing-dir")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and "does not exist" in done.stderr


def test_a_service_that_cannot_start_is_one_line_and_exit_2_not_a_traceback() -> None:
    initialize = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    done = subprocess.run(
        [script_path("mcp-batteries-sql"), "postgresql://nobody@127.0.0.1:9/nowhere"],
        input=initialize, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    # The user name is hidden too (it may be a token): mcp_batteries._safety.redact.
    assert "cannot connect to postgresql://***@127.0.0.1:9/nowhere" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().count("\n") == 0


def test_http_options_without_http_transport_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_settings(DemoSettings, ["--port", "9000"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--port only applies to HTTP; add --transport http" in err
    assert parse_settings(DemoSettings, ["--port", "9000", "--transport", "http"]).port == 9000


def test_a_toml_syntax_error_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "broken.toml"
    config.write_text('port = "unterminated\n')
    with pytest.raises(SystemExit):
        parse_settings(DemoSettings, ["--config", str(config)])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{config} is not valid TOML" in err and "line 1" in err


def test_a_toml_key_typo_is_reported_as_a_key_of_that_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "typo.toml"
    config.write_text("read_onyl = true\n")
    with pytest.raises(SystemExit):
        parse_settings(DemoSettings, ["--config", str(config)])
    err = capsys.readouterr().err
    assert f"unknown setting 'read_onyl' in {config}" in err and "--read-onyl" not in err


def test_a_bad_value_names_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("port = 99999\n")
    with pytest.raises(SystemExit):
        parse_settings(DemoSettings, ["--config", str(config)])
    assert f"port in {config}: Input should be less than or equal to 65535" in capsys.readouterr().err
    monkeypatch.setenv("MCP_DEMO_PORT", "-1")
    with pytest.raises(SystemExit):
        parse_settings(DemoSettings, [])
    assert "MCP_DEMO_PORT: Input should be greater than or equal to 0" in capsys.readouterr().err


def test_help_shows_defaults_real_placeholders_and_no_negated_off_switches() -> None:
    from mcp_batteries._core.cli import build_parser

    text = build_parser(DemoSettings, prog="mcp-batteries-demo", description="Demo.").format_help()
    assert "(default: 8000)" in text and "--port N" in text and "--host ADDRESS" in text
    assert "VALUE" not in text and "Repeatable" not in text
    assert "--no-insecure-no-auth" not in text and "--no-read-only" not in text
    assert "MCP_DEMO_READ_ONLY=true" in text


def test_an_advertised_url_is_a_base_url_without_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    s = parse_settings(DemoSettings, ["--transport", "http", "--advertise-url", "http://10.0.0.2:8000/"])
    assert s.advertise_url == "http://10.0.0.2:8000"
    with pytest.raises(SystemExit) as exited:
        parse_settings(DemoSettings, ["--transport", "http", "--advertise-url", "http://10.0.0.2:8000/mcp"])
    assert exited.value.code == 2
    assert "must be http://HOST:PORT" in capsys.readouterr().err
