"""`mcp-batteries config`: each client's documented shape, and merging into its file safely.

The shapes checked here are the ones each client documents (see `mcp_batteries._bundle.clients`):
Claude Desktop's `mcpServers` (stdio only, the `mcp-remote` bridge for remote servers), Claude
Code's `.mcp.json` (`type: http` + `${VAR}`), Cursor's `${env:VAR}`, VS Code's top-level `servers`
with `inputs`, Cline's `streamableHttp` with `disabled`/`autoApprove`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries._bundle.clients import (
    CLIENTS,
    config_main,
    default_file,
    entries_for,
    merge_entries,
    write_entries,
)
from mcp_batteries.testing import script_path

URL = "https://mcp.example.com"


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run_config(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Ran:
    """`mcp-batteries config ARGS`, in this process (the console script itself: see the last test)."""
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    saved = {name: os.environ.get(name) for name in env or {}}
    os.environ.update(env or {})
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = config_main(list(args))
            except SystemExit as exit:
                code = int(exit.code or 0)
    finally:
        os.chdir(previous)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return Ran(code, out.getvalue(), err.getvalue())


# -- the shapes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("client", ["claude-desktop", "cursor", "claude-code", "cline"])
def test_stdio_entries_run_each_server_with_uvx_by_its_published_name(client: str) -> None:
    document = entries_for(client, {"filesystem": ["/home/me/project"], "sql": []}).document()
    assert list(document) == ["mcpServers"]
    filesystem = document["mcpServers"]["filesystem"]
    assert filesystem["command"] == "uvx"
    assert filesystem["args"] == ["mcp-batteries-filesystem", "/home/me/project"]
    assert document["mcpServers"]["sql"]["args"] == ["mcp-batteries-sql"]
    expected_keys = {
        "claude-desktop": {"command", "args"},
        "cursor": {"command", "args"},
        "claude-code": {"type", "command", "args"},
        "cline": {"command", "args", "disabled", "autoApprove"},
    }[client]
    assert set(filesystem) == expected_keys
    if client == "claude-code":
        assert filesystem["type"] == "stdio"
    if client == "cline":
        assert filesystem["disabled"] is False and filesystem["autoApprove"] == []


def test_vscode_uses_top_level_servers_with_a_type() -> None:
    document = entries_for("vscode", {"fetch": []}).document()
    assert document == {
        "servers": {"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-batteries-fetch"]}}
    }


def test_claude_code_remote_entries_reference_the_token_variable() -> None:
    document = entries_for("claude-code", {"sql": []}, http=URL, token_env="TEAM_TOKEN").document()
    assert document == {
        "mcpServers": {
            "sql": {
                "type": "http",
                "url": "https://mcp.example.com/sql/mcp",
                "headers": {"Authorization": "Bearer ${TEAM_TOKEN}"},
            }
        }
    }


def test_cursor_remote_entries_use_its_env_syntax() -> None:
    document = entries_for("cursor", {"sql": []}, http=URL).document()
    assert document["mcpServers"]["sql"] == {
        "url": "https://mcp.example.com/sql/mcp",
        "headers": {"Authorization": "Bearer ${env:MCP_AUTH_TOKEN}"},
    }


def test_vscode_remote_entries_prompt_for_the_token_as_a_password_input() -> None:
    document = entries_for(
        "vscode", {"fetch": [], "sql": []}, http=URL, token_env="MCP_AUTH_TOKEN"
    ).document()
    assert document["servers"]["fetch"] == {
        "type": "http",
        "url": "https://mcp.example.com/fetch/mcp",
        "headers": {"Authorization": "Bearer ${input:mcp-auth-token}"},
    }
    assert document["inputs"] == [
        {
            "type": "promptString",
            "id": "mcp-auth-token",
            "description": "Bearer token for the MCP Batteries server (as in $MCP_AUTH_TOKEN)",
            "password": True,
        }
    ]


def test_cline_remote_entries_are_streamable_http_not_sse() -> None:
    entry = entries_for("cline", {"sql": []}, http=URL).document()["mcpServers"]["sql"]
    # Without "type", Cline takes a url entry for the old SSE transport.
    assert entry["type"] == "streamableHttp" and entry["url"] == "https://mcp.example.com/sql/mcp"
    assert entry["disabled"] is False and entry["autoApprove"] == []


def test_claude_desktop_reaches_remote_servers_through_the_documented_bridge() -> None:
    entry = entries_for("claude-desktop", {"sql": []}, http=URL).document()["mcpServers"]["sql"]
    assert entry["command"] == "npx"
    # No space inside an argument (it breaks on Windows): the header value travels in env.
    assert entry["args"] == [
        "-y",
        "mcp-remote",
        "https://mcp.example.com/sql/mcp",
        "--header",
        "Authorization:${AUTH_HEADER}",
    ]
    assert all(" " not in arg for arg in entry["args"])
    assert entry["env"] == {"AUTH_HEADER": "Bearer ${MCP_AUTH_TOKEN}"}


@pytest.mark.parametrize("client", CLIENTS)
def test_no_token_entries_carry_no_authorization(client: str) -> None:
    document = entries_for(client, {"sql": []}, http=URL, token_env=None).document()
    assert "Authorization" not in json.dumps(document) and "inputs" not in document


@pytest.mark.parametrize("client", CLIENTS)
def test_the_token_itself_never_appears_in_any_entry(client: str) -> None:
    done = run_config(client, "sql", "--http", URL, env={"MCP_AUTH_TOKEN": "the-real-secret-value"})
    assert done.returncode == 0, done.stderr
    assert "the-real-secret-value" not in done.stdout
    assert "MCP_AUTH_TOKEN" in done.stdout or "mcp-auth-token" in done.stdout


# -- where the files are ---------------------------------------------------------------------------


def test_default_files_follow_each_clients_documented_location(tmp_path: Path) -> None:
    home = Path("/home/me")
    mac = {
        client: default_file(client, platform="darwin", home=home, environ={}, cwd=tmp_path)
        for client in CLIENTS
    }
    assert mac["claude-desktop"] == home / "Library/Application Support/Claude/claude_desktop_config.json"
    assert mac["vscode"] == home / "Library/Application Support/Code/User/mcp.json"
    storage = home / "Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev"
    assert mac["cline"] == storage / "settings/cline_mcp_settings.json"
    assert mac["cursor"] == home / ".cursor/mcp.json"
    assert mac["claude-code"] == tmp_path / ".mcp.json"
    windows = default_file(
        "claude-desktop", platform="win32", home=home, environ={"APPDATA": "C:/Users/me/AppData/Roaming"}
    )
    assert windows == Path("C:/Users/me/AppData/Roaming/Claude/claude_desktop_config.json")
    linux = default_file("vscode", platform="linux", home=home, environ={"XDG_CONFIG_HOME": "/xdg"})
    assert linux == Path("/xdg/Code/User/mcp.json")


# -- merging -----------------------------------------------------------------------------------------


def existing_config() -> dict[str, Any]:
    return {
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {
            "github": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-github"],
                "env": {"X": "1"},
            },
            "filesystem": {"command": "npx", "args": ["old"]},
        },
    }


def test_merging_replaces_our_entries_and_keeps_every_other_key_and_server() -> None:
    entries = entries_for("claude-desktop", {"filesystem": ["/p"]})
    merged = merge_entries(existing_config(), entries)
    assert merged["globalShortcut"] == "Ctrl+Space"
    assert merged["mcpServers"]["github"] == existing_config()["mcpServers"]["github"]
    assert merged["mcpServers"]["filesystem"] == {
        "command": "uvx",
        "args": ["mcp-batteries-filesystem", "/p"],
    }
    assert list(merged["mcpServers"]) == ["github", "filesystem"]  # order kept


def test_vscode_inputs_are_merged_by_id() -> None:
    document = {"servers": {}, "inputs": [{"type": "promptString", "id": "other", "password": True}]}
    entries = entries_for("vscode", {"sql": []}, http=URL)
    once = merge_entries(document, entries)
    twice = merge_entries(once, entries)
    assert [item["id"] for item in twice["inputs"]] == ["other", "mcp-auth-token"]


def test_write_creates_backup_first_replaces_atomically_and_is_idempotent(tmp_path: Path) -> None:
    target = tmp_path / "claude_desktop_config.json"
    target.write_text(json.dumps(existing_config()))
    os.chmod(target, 0o600)
    entries = entries_for("claude-desktop", {"filesystem": ["/p"], "sql": []})
    first = write_entries(target, entries)
    assert first.changed and first.backup is not None
    assert json.loads(first.backup.read_text()) == existing_config()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    written = target.read_text()
    second = write_entries(target, entries)
    assert not second.changed and second.backup is None
    assert target.read_text() == written
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".bak")) == [first.backup.name]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_write_creates_a_missing_file_and_its_folders(tmp_path: Path) -> None:
    target = tmp_path / ".cursor" / "mcp.json"
    result = write_entries(target, entries_for("cursor", {"fetch": []}))
    assert result.changed and result.backup is None
    assert json.loads(target.read_text()) == {
        "mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-batteries-fetch"]}}
    }


def test_a_symlinked_config_stays_a_link_and_its_target_changes(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "mcp.json"
    link.symlink_to(real)
    write_entries(link, entries_for("cursor", {"fetch": []}))
    assert link.is_symlink()
    assert "mcp-batteries-fetch" in real.read_text()


def test_a_filled_in_secret_survives_a_later_write(tmp_path: Path) -> None:
    target = tmp_path / "claude_desktop_config.json"
    entries = entries_for("claude-desktop", {"sql": []}, http=URL)
    write_entries(target, entries)
    document = json.loads(target.read_text())
    document["mcpServers"]["sql"]["env"]["AUTH_HEADER"] = "Bearer filled-in-by-the-person"
    target.write_text(json.dumps(document))
    assert not write_entries(target, entries).changed
    assert (
        json.loads(target.read_text())["mcpServers"]["sql"]["env"]["AUTH_HEADER"]
        == "Bearer filled-in-by-the-person"
    )


def test_a_file_with_comments_is_left_alone_with_one_clear_line(tmp_path: Path) -> None:
    target = tmp_path / "mcp.json"
    original = '{\n  // my servers\n  "servers": {}\n}\n'
    target.write_text(original)
    done = run_config("vscode", "fetch", "--write", "--file", str(target))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "not plain JSON" in done.stderr
    assert target.read_text() == original


# -- the command -------------------------------------------------------------------------------------


def test_the_command_writes_to_the_clients_file_twice_without_change(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    first = run_config("claude-code", "filesystem", "--write", "--", "project", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    written = json.loads((tmp_path / ".mcp.json").read_text())
    assert written["mcpServers"]["filesystem"]["args"] == [
        "mcp-batteries-filesystem",
        str(tmp_path / "project"),
    ]
    assert json.loads(first.stdout) == {"mcpServers": written["mcpServers"]}
    second = run_config("claude-code", "filesystem", "--write", "--", "project", cwd=tmp_path)
    assert second.returncode == 0 and "already up to date" in second.stderr
    assert not list(tmp_path.glob("*.bak"))


def test_server_arguments_come_from_the_bundles_file(tmp_path: Path) -> None:
    config = tmp_path / "team.toml"
    config.write_text(
        'host = "0.0.0.0"\n[filesystem]\ndirectories = ["/srv/a", "/srv/b"]\nread_only = true\n'
        "watch = false\n[sql]\ndatabases = ['sqlite:///x.db']\nmax_rows = 50\n"
    )
    done = run_config("cursor", "filesystem", "sql", "--config", str(config))
    assert done.returncode == 0, done.stderr
    servers = json.loads(done.stdout)["mcpServers"]
    assert servers["filesystem"]["args"] == [
        "mcp-batteries-filesystem",
        "/srv/a",
        "/srv/b",
        "--read-only",
        "--no-watch",
    ]
    assert servers["sql"]["args"] == ["mcp-batteries-sql", "sqlite:///x.db", "--max-rows", "50"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("No_Such",), "No_Such: not a server name"),
        (("sql", "--http", "ftp://x"), "--http ftp://x: give the bundle's base URL"),
        (("sql", "--http", f"{URL}/sql/mcp"), "not a server's endpoint"),
        (("sql", "fetch", "--", "x"), "arguments after -- go to one server"),
        (("sql", "--file", "x.json"), "--file names the file --write merges into"),
        (("sql", "--http", URL, "--token-env", "NOT A NAME"), "--token-env"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(args: tuple[str, ...], expected: str) -> None:
    done = run_config("cursor", *args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr


def test_the_console_script_prints_the_entries_and_fails_with_exit_2() -> None:
    done = subprocess.run(
        [script_path("mcp-batteries"), "config", "vscode", "fetch"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["servers"]["fetch"]["args"] == ["mcp-batteries-fetch"]
    wrong = subprocess.run(
        [script_path("mcp-batteries"), "config", "zed"], capture_output=True, text=True, timeout=60
    )
    assert wrong.returncode == 2 and "invalid choice: 'zed'" in wrong.stderr


def test_a_server_not_installed_here_can_be_configured_with_a_note() -> None:
    done = run_config("cursor", "weather", "--http", URL)
    assert done.returncode == 0
    assert json.loads(done.stdout)["mcpServers"]["weather"]["url"] == "https://mcp.example.com/weather/mcp"
    assert "note: weather not installed here" in done.stderr
