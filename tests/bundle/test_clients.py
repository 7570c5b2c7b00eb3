"""`mcp-batteries config`: each client's documented shape, and merging into its file safely.

The shapes checked here are the ones each client documents (sources in
`mcp_batteries._bundle.client_table`). That the written entries actually start and answer, launched
as each client launches them, is `test_client_launch.py`.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries._bundle.client_table import CLIENTS, Places
from mcp_batteries._bundle.clients import (
    ClientEntries,
    default_file,
    entries_for,
    merge_entries,
    write_entries,
)
from mcp_batteries._bundle.launch import Launch
from mcp_batteries.testing import script_path
from ruamel.yaml import YAML

from .conftest import ROOT, client_home, run_config

URL = "https://mcp.example.com"


def published(*names: str) -> dict[str, Launch]:
    return {name: Launch("uvx", (f"mcp-batteries-{name}",), "published", "") for name in names}


def stdio(client: str, servers: dict[str, list[str]]) -> ClientEntries:
    return entries_for(client, servers, launches=published(*servers))


def document(entries: ClientEntries) -> Any:
    text = entries.render()
    if entries.client.format == "toml":
        return tomllib.loads(text)
    if entries.client.format == "yaml":
        return YAML(typ="safe").load(text)
    return json.loads(text)


# -- the shapes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("client", ["claude-desktop", "cursor", "claude-code", "cline", "windsurf", "gemini"])
def test_stdio_entries_in_mcp_servers_run_the_command_with_the_servers_arguments(client: str) -> None:
    shown = document(stdio(client, {"filesystem": ["/home/me/project"], "sql": []}))
    assert list(shown) == ["mcpServers"]
    filesystem = shown["mcpServers"]["filesystem"]
    assert filesystem["command"] == "uvx"
    assert filesystem["args"] == ["mcp-batteries-filesystem", "/home/me/project"]
    assert shown["mcpServers"]["sql"]["args"] == ["mcp-batteries-sql"]
    expected_keys = {
        "claude-code": {"type", "command", "args"},
        "cline": {"command", "args", "disabled", "autoApprove"},
    }
    assert set(filesystem) == expected_keys.get(client, {"command", "args"})


def test_vscode_uses_top_level_servers_with_a_type() -> None:
    assert document(stdio("vscode", {"fetch": []})) == {
        "servers": {"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-batteries-fetch"]}}
    }


def test_zed_goose_and_codex_stdio_entries_take_their_own_shapes() -> None:
    assert document(stdio("zed", {"fetch": []})) == {
        "context_servers": {"fetch": {"command": "uvx", "args": ["mcp-batteries-fetch"], "env": {}}}
    }
    goose = document(stdio("goose", {"fetch": []}))["extensions"]["fetch"]
    assert goose["type"] == "stdio" and goose["name"] == "fetch" and goose["enabled"] is True
    assert goose["cmd"] == "uvx" and goose["args"] == ["mcp-batteries-fetch"] and goose["envs"] == {}
    assert document(stdio("codex", {"fetch": []})) == {
        "mcp_servers": {"fetch": {"command": "uvx", "args": ["mcp-batteries-fetch"]}}
    }


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        (
            "claude-code",
            {"type": "http", "url": f"{URL}/sql/mcp", "headers": {"Authorization": "Bearer ${TEAM}"}},
        ),
        ("cursor", {"url": f"{URL}/sql/mcp", "headers": {"Authorization": "Bearer ${env:TEAM}"}}),
        ("windsurf", {"serverUrl": f"{URL}/sql/mcp", "headers": {"Authorization": "Bearer ${env:TEAM}"}}),
        ("gemini", {"httpUrl": f"{URL}/sql/mcp", "headers": {"Authorization": "Bearer ${TEAM}"}}),
        (
            "vscode",
            {"type": "http", "url": f"{URL}/sql/mcp", "headers": {"Authorization": "Bearer ${input:team}"}},
        ),
    ],
)
def test_clients_that_expand_variables_get_a_reference_to_the_token(
    client: str, expected: dict[str, Any]
) -> None:
    shown = document(entries_for(client, {"sql": []}, http=URL, token_env="TEAM"))
    assert shown["servers" if client == "vscode" else "mcpServers"]["sql"] == expected


def test_codex_names_the_token_variable_and_vscode_prompts_for_it_as_a_password() -> None:
    codex = document(entries_for("codex", {"sql": []}, http=URL, token_env="TEAM"))
    assert codex == {"mcp_servers": {"sql": {"url": f"{URL}/sql/mcp", "bearer_token_env_var": "TEAM"}}}
    vscode = document(entries_for("vscode", {"fetch": [], "sql": []}, http=URL))
    assert vscode["inputs"] == [
        {
            "type": "promptString",
            "id": "mcp-auth-token",
            "description": "Bearer token for the MCP Batteries server (as in $MCP_AUTH_TOKEN)",
            "password": True,
        }
    ]


def test_claude_desktop_reaches_remote_servers_through_mcp_remote_with_the_header_value_in_env() -> None:
    entry = document(entries_for("claude-desktop", {"sql": []}, http=URL, token="t0k"))["mcpServers"]["sql"]
    # No space inside an argument (it breaks on Windows); mcp-remote expands ${AUTH_HEADER} from env,
    # once: the value itself must be the header, not another reference.
    assert entry == {
        "command": "npx",
        "args": ["-y", "mcp-remote", f"{URL}/sql/mcp", "--header", "Authorization:${AUTH_HEADER}"],
        "env": {"AUTH_HEADER": "Bearer t0k"},
    }
    plain_http = entries_for("claude-desktop", {"sql": []}, http="http://10.0.0.5:8000", token_env=None)
    assert "--allow-http" in document(plain_http)["mcpServers"]["sql"]["args"]


@pytest.mark.parametrize("client", ["claude-desktop", "cline", "zed", "goose"])
def test_clients_that_expand_nothing_never_get_a_reference_that_would_reach_the_server_as_text(
    client: str,
) -> None:
    printed = entries_for(client, {"sql": []}, http=URL).render()
    assert "${MCP_AUTH_TOKEN}" not in printed and "<the token from $MCP_AUTH_TOKEN>" in printed
    written = entries_for(client, {"sql": []}, http=URL, token="t0k")
    assert written.secret and "Bearer t0k" in written.render()


def test_cline_remote_entries_are_streamable_http_not_sse() -> None:
    entry = document(entries_for("cline", {"sql": []}, http=URL))["mcpServers"]["sql"]
    # Without "type", Cline takes a url entry for the old SSE transport.
    assert entry["type"] == "streamableHttp" and entry["url"] == f"{URL}/sql/mcp"
    assert entry["disabled"] is False and entry["autoApprove"] == []


@pytest.mark.parametrize("client", CLIENTS)
def test_no_token_entries_carry_no_authorization(client: str) -> None:
    text = entries_for(client, {"sql": []}, http=URL, token_env=None).render()
    assert "Authorization" not in text and "bearer" not in text and "inputs" not in text


@pytest.mark.parametrize("client", CLIENTS)
def test_the_token_itself_is_never_printed(client: str, tmp_path: Path) -> None:
    env = {**client_home(tmp_path), "MCP_AUTH_TOKEN": "the-real-secret-value"}
    done = run_config(client, "sql", "--http", URL, env=env)
    assert done.returncode == 0, done.stderr
    assert "the-real-secret-value" not in done.stdout
    assert "MCP_AUTH_TOKEN" in done.stdout or "mcp-auth-token" in done.stdout


# -- where the files are ---------------------------------------------------------------------------


def test_default_files_follow_each_clients_documented_location(tmp_path: Path) -> None:
    home = Path("/home/me")
    mac = {client: default_file(client, Places("darwin", home, {}, tmp_path)) for client in CLIENTS}
    assert mac["claude-desktop"] == home / "Library/Application Support/Claude/claude_desktop_config.json"
    assert mac["vscode"] == home / "Library/Application Support/Code/User/mcp.json"
    storage = home / "Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev"
    assert mac["cline"] == storage / "settings/cline_mcp_settings.json"
    assert mac["cursor"] == home / ".cursor/mcp.json"
    assert mac["claude-code"] == tmp_path / ".mcp.json"
    assert mac["windsurf"] == home / ".codeium/windsurf/mcp_config.json"
    assert mac["zed"] == home / ".config/zed/settings.json"
    assert mac["goose"] == home / ".config/goose/config.yaml"
    assert mac["codex"] == home / ".codex/config.toml"
    assert mac["gemini"] == home / ".gemini/settings.json"
    windows = Places("win32", home, {"APPDATA": "C:/Users/me/AppData/Roaming"}, tmp_path)
    assert default_file("claude-desktop", windows) == Path(
        "C:/Users/me/AppData/Roaming/Claude/claude_desktop_config.json"
    )
    assert default_file("goose", windows) == Path(
        "C:/Users/me/AppData/Roaming/Block/goose/config/config.yaml"
    )
    assert default_file("zed", windows) == Path("C:/Users/me/AppData/Roaming/Zed/settings.json")
    linux = Places("linux", home, {"XDG_CONFIG_HOME": "/xdg", "CODEX_HOME": "/codex"}, tmp_path)
    assert default_file("vscode", linux) == Path("/xdg/Code/User/mcp.json")
    assert default_file("codex", linux) == Path("/codex/config.toml")


# -- merging -----------------------------------------------------------------------------------------


EXISTING = {
    "globalShortcut": "Ctrl+Space",
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"X": "1"},
        },
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/notes"],
        },
    },
}


def test_merging_keeps_every_other_key_and_server_in_order() -> None:
    text, replaced = merge_entries(json.dumps(EXISTING, indent=4), stdio("claude-desktop", {"sql": []}))
    merged = json.loads(text)
    assert replaced == {}
    assert merged["globalShortcut"] == "Ctrl+Space"
    assert merged["mcpServers"]["github"] == EXISTING["mcpServers"]["github"]
    assert list(merged["mcpServers"]) == ["github", "filesystem", "sql"]
    assert '\n    "globalShortcut"' in text  # the person's indentation is kept


def test_a_different_entry_of_the_same_name_is_shown_and_kept_without_force(tmp_path: Path) -> None:
    target = tmp_path / "claude_desktop_config.json"
    original = json.dumps(EXISTING, indent=2)
    target.write_text(original)
    (tmp_path / "project").mkdir()
    args = ("claude-desktop", "filesystem", "--write", "--file", str(target), "--", str(tmp_path / "project"))
    refused = run_config(*args)
    assert refused.returncode == 2
    assert "already has a different 'filesystem'" in refused.stderr and "/Users/me/notes" in refused.stderr
    assert "'filesystem' would be replaced: nothing written; add --force" in refused.stderr
    assert target.read_text() == original and not list(tmp_path.glob("*.bak"))
    forced = run_config(*args[:-2], "--force", "--", str(tmp_path / "project"))
    assert forced.returncode == 0, forced.stderr
    assert "replacing 'filesystem'" in forced.stderr and "/Users/me/notes" in forced.stderr
    assert json.loads(target.read_text())["mcpServers"]["github"] == EXISTING["mcpServers"]["github"]
    [backup] = tmp_path.glob("*.bak")
    assert backup.read_text() == original and stat.S_IMODE(backup.stat().st_mode) == 0o600


def test_what_a_replaced_entry_shows_hides_its_secrets() -> None:
    from mcp_batteries._bundle.clients import shown

    text = shown({"command": "x", "args": ["postgresql://me:pw@db/app"], "env": {"TOKEN": "abc"}})
    assert "pw" not in text and "abc" not in text and "me:<hidden>@db" in text


def test_vscode_inputs_are_merged_by_id() -> None:
    existing = {"servers": {}, "inputs": [{"type": "promptString", "id": "other", "password": True}]}
    entries = entries_for("vscode", {"sql": []}, http=URL)
    once, _ = merge_entries(json.dumps(existing), entries)
    twice, _ = merge_entries(once, entries)
    assert twice == once
    assert [item["id"] for item in json.loads(twice)["inputs"]] == ["other", "mcp-auth-token"]


def test_write_creates_backup_first_replaces_atomically_and_is_idempotent(tmp_path: Path) -> None:
    target = tmp_path / "claude_desktop_config.json"
    target.write_text(json.dumps(EXISTING))
    os.chmod(target, 0o640)
    entries = stdio("claude-desktop", {"sql": [], "fetch": []})
    first = write_entries(target, entries)
    assert first.changed and first.backup is not None
    assert json.loads(first.backup.read_text()) == EXISTING
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # no token in it: its mode is kept
    written = target.read_text()
    second = write_entries(target, entries)
    assert not second.changed and second.backup is None
    assert target.read_text() == written
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".bak")) == [first.backup.name]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_write_creates_a_missing_file_and_its_folders(tmp_path: Path) -> None:
    target = tmp_path / ".cursor" / "mcp.json"
    result = write_entries(target, stdio("cursor", {"fetch": []}))
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
    write_entries(link, stdio("cursor", {"fetch": []}))
    assert link.is_symlink()
    assert "mcp-batteries-fetch" in real.read_text()


# -- files with comments: kept where the client allows them ------------------------------------------


def test_vscode_and_zed_files_keep_their_comments_and_layout(tmp_path: Path) -> None:
    zed = tmp_path / "settings.json"
    zed.write_text(
        "// Zed settings\n//\n// For information on how to configure Zed, see the docs.\n{\n"
        '  "theme": "One Dark", // my theme\n  "context_servers": {\n'
        '    "other": {"command": "x", "args": []}, // keep\n  },\n}\n'
    )
    write_entries(zed, stdio("zed", {"fetch": []}))
    text = zed.read_text()
    assert text.startswith("// Zed settings\n//\n// For information")
    assert (
        '"theme": "One Dark", // my theme' in text
        and '"other": {"command": "x", "args": []}, // keep' in text
    )
    assert '"fetch": {' in text
    vscode = tmp_path / "mcp.json"
    vscode.write_text('{\n  // my servers\n  "servers": {}\n}\n')
    write_entries(vscode, entries_for("vscode", {"sql": []}, http=URL))
    assert "// my servers" in vscode.read_text() and '"mcp-auth-token"' in vscode.read_text()


def test_a_client_that_reads_plain_json_has_its_commented_file_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "mcp.json"
    original = '{\n  // my servers\n  "mcpServers": {}\n}\n'
    target.write_text(original)
    done = run_config("cursor", "fetch", "--write", "--file", str(target))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("fix the file, or add the printed entries by hand")
    assert "has comments or trailing commas, which this client does not read as JSON" in done.stderr
    assert target.read_text() == original


def test_goose_yaml_keeps_comments_order_and_other_extensions(tmp_path: Path) -> None:
    target = tmp_path / "config.yaml"
    original = (
        "# my goose\nGOOSE_PROVIDER: anthropic  # the provider\nextensions:\n"
        "  developer:\n    bundled: true\n    enabled: true\n    name: developer\n    type: builtin\n"
        "GOOSE_MODE: smart_approve\n"
    )
    target.write_text(original)
    write_entries(target, stdio("goose", {"fetch": []}))
    text = target.read_text()
    assert text.startswith(
        "# my goose\nGOOSE_PROVIDER: anthropic  # the provider\nextensions:\n  developer:\n"
    )
    assert text.rstrip().endswith("GOOSE_MODE: smart_approve")
    loaded = YAML(typ="safe").load(text)
    assert (
        list(loaded["extensions"]) == ["developer", "fetch"] and loaded["extensions"]["fetch"]["cmd"] == "uvx"
    )
    assert not write_entries(target, stdio("goose", {"fetch": []})).changed


def test_codex_toml_keeps_comments_and_other_tables(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    original = (
        'model = "o3"  # my model\n\n# servers\n[mcp_servers.docs]\ncommand = "docs-server"\n\n'
        "[tui]\nnotifications = true\n"
    )
    target.write_text(original)
    write_entries(target, entries_for("codex", {"sql": []}, http=URL))
    text = target.read_text()
    assert text.startswith(
        'model = "o3"  # my model\n\n# servers\n[mcp_servers.docs]\ncommand = "docs-server"\n'
    )
    loaded = tomllib.loads(text)
    assert loaded["tui"] == {"notifications": True}
    assert loaded["mcp_servers"]["sql"] == {"url": f"{URL}/sql/mcp", "bearer_token_env_var": "MCP_AUTH_TOKEN"}
    assert not write_entries(target, entries_for("codex", {"sql": []}, http=URL)).changed


# -- the command -------------------------------------------------------------------------------------


def test_server_names_and_options_mix_in_any_order(tmp_path: Path) -> None:
    done = run_config("cursor", "--http", URL, "filesystem", "--no-token", "sql", env=client_home(tmp_path))
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)["mcpServers"]) == ["filesystem", "sql"]


@pytest.mark.parametrize("option", ["--write", "--force", "--file=x.json"])
def test_config_options_after_the_double_dash_are_refused_not_given_to_the_server(
    option: str, tmp_path: Path
) -> None:
    done = run_config("claude-desktop", "filesystem", "--", str(tmp_path), option, env=client_home(tmp_path))
    assert done.returncode == 2
    assert f"{option} after -- would go to the server, not to config: put it before --" in done.stderr
    assert not (tmp_path / "home" / ".config" / "Claude").exists()


def test_a_filesystem_entry_needs_a_directory_where_the_client_has_no_workspace(tmp_path: Path) -> None:
    env = client_home(tmp_path)
    refused = run_config("claude-desktop", "filesystem", "--write", env=env)
    assert refused.returncode == 2 and "name the directory after --" in refused.stderr
    assert not (tmp_path / "home" / ".config" / "Claude").exists()
    git = run_config("zed", "git", env=env)
    assert git.returncode == 2 and "name the directory after --" in git.stderr
    everything = run_config("claude-desktop", env=env)  # every installed server: the scoped ones left out
    assert everything.returncode == 0, everything.stderr
    assert "filesystem" not in json.loads(everything.stdout)["mcpServers"]
    assert "note: filesystem, git left out" in everything.stderr


@pytest.mark.parametrize("client", ["vscode", "cursor"])
def test_clients_with_a_workspace_get_their_workspace_variable_instead(client: str, tmp_path: Path) -> None:
    done = run_config(client, "filesystem", "git", env=client_home(tmp_path))
    assert done.returncode == 0, done.stderr
    servers = json.loads(done.stdout)["servers" if client == "vscode" else "mcpServers"]
    assert servers["filesystem"]["args"][-1] == "${workspaceFolder}"
    assert servers["git"]["args"][-1] == "${workspaceFolder}"


@pytest.mark.parametrize("client", ["claude-desktop", "cline", "zed", "goose"])
def test_writing_for_a_client_that_expands_nothing_needs_the_token_and_says_so(
    client: str, tmp_path: Path
) -> None:
    env = {**client_home(tmp_path), "MCP_AUTH_TOKEN": None}
    done = run_config(client, "sql", "--http", URL, "--write", env=env)
    assert done.returncode == 2
    assert "expands no variables, so --write puts the token itself into" in done.stderr
    assert not any(p.is_file() for p in (tmp_path / "home").rglob("*"))


def test_the_command_writes_to_the_clients_file_twice_without_change(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    first = run_config("claude-code", "filesystem", "--write", "--", "project", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    written = json.loads((tmp_path / ".mcp.json").read_text())
    assert written["mcpServers"]["filesystem"]["args"][-1] == str(tmp_path / "project")
    assert json.loads(first.stdout) == {"mcpServers": written["mcpServers"]}
    second = run_config("claude-code", "filesystem", "--write", "--", "project", cwd=tmp_path)
    assert second.returncode == 0 and "already up to date" in second.stderr
    assert not list(tmp_path.glob("*.bak"))


def test_entries_from_a_checkout_run_its_scripts_run_and_say_so(tmp_path: Path) -> None:
    done = run_config("cursor", "fetch", env=client_home(tmp_path))
    assert json.loads(done.stdout)["mcpServers"]["fetch"] == {
        "command": str(ROOT / "scripts" / "run"),
        "args": ["fetch"],
    }
    assert f"the entries start servers with this checkout's {ROOT / 'scripts' / 'run'}" in done.stderr


def test_server_arguments_come_from_the_bundles_file(tmp_path: Path) -> None:
    config = tmp_path / "team.toml"
    config.write_text(
        'host = "0.0.0.0"\n[filesystem]\ndirectories = ["/srv/a", "/srv/b"]\nread_only = true\n'
        "watch = false\n[sql]\ndatabases = ['sqlite:///x.db']\nmax_rows = 50\n"
    )
    done = run_config("cursor", "filesystem", "sql", "--config", str(config))
    assert done.returncode == 0, done.stderr
    servers = json.loads(done.stdout)["mcpServers"]
    assert servers["filesystem"]["args"][-4:] == ["/srv/a", "/srv/b", "--read-only", "--no-watch"]
    assert servers["sql"]["args"][-3:] == ["sqlite:///x.db", "--max-rows", "50"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("No_Such",), "No_Such: not a server name"),
        (("sql", "--http", "ftp://x"), "--http ftp://x: give the bundle's base URL"),
        (("sql", "--http", f"{URL}/sql/mcp"), "not a server's endpoint"),
        (("sql", "fetch", "--", "x"), "arguments after -- go to one server"),
        (("sql", "--file", "x.json"), "--file names the file --write merges into"),
        (("sql", "--force"), "--force replaces entries when writing: add --write"),
        (("sql", "--http", URL, "--token-env", "NOT A NAME"), "--token-env"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(args: tuple[str, ...], expected: str) -> None:
    done = run_config("cursor", *args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr


def test_the_console_script_prints_the_entries_and_fails_with_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(
        [script_path("mcp-batteries"), "config", "codex", "fetch"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert tomllib.loads(done.stdout)["mcp_servers"]["fetch"]["args"] == ["fetch"]
    wrong = subprocess.run(
        [script_path("mcp-batteries"), "config", "emacs"], capture_output=True, text=True, timeout=60, env=env
    )
    assert wrong.returncode == 2 and "invalid choice: 'emacs'" in wrong.stderr


def test_a_server_not_installed_here_can_be_configured_with_a_note(tmp_path: Path) -> None:
    done = run_config("cursor", "weather", "--http", URL, env=client_home(tmp_path))
    assert done.returncode == 0
    assert json.loads(done.stdout)["mcpServers"]["weather"]["url"] == "https://mcp.example.com/weather/mcp"
    stdio_done = run_config("cursor", "weather", env=client_home(tmp_path))
    assert json.loads(stdio_done.stdout)["mcpServers"]["weather"] == {
        "command": "uvx",
        "args": ["mcp-batteries-weather"],
    }
    assert "note: weather not installed here" in stdio_done.stderr


def test_a_filesystem_entry_needs_a_directory_even_when_it_is_not_installed_here(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mcp_batteries._bundle import clients

    monkeypatch.setattr(clients, "discover", dict)  # as under `uvx --from mcp-batteries`: no server
    done = run_config("claude-desktop", "filesystem", env=client_home(tmp_path))
    assert done.returncode == 2 and "name the directory after --" in done.stderr
    named = run_config("claude-desktop", "filesystem", "--", "/srv/x", env=client_home(tmp_path))
    assert json.loads(named.stdout)["mcpServers"]["filesystem"]["args"][-1] == "/srv/x"
