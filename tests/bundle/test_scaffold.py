"""`mcp-batteries new NAME`: a new server that works right away, proved in a copy of this checkout.

The end-to-end test copies the checkout (its tracked and new files, as `git clone` of the working
tree would give), runs `mcp-batteries new notes` there, then exactly what the README says:
`uv sync --all-packages` and `./scripts/test tests/notes`; the generated code passes the same
ruff and mypy checks as the rest; `mcp-notes` answers over stdio and `mcp-batteries serve`
serves it. A new member changes the workspace, so `uv sync` resolves again: that needs the package
index (reachable here and in CI), since a cache filled by `uv sync --frozen` holds the wheels of
this platform but not every package's index page (UV_OFFLINE failed on a fresh machine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import httpx2
import pytest
from mcp import StdioServerParameters
from mcp_batteries._bundle.scaffold import Scaffold, add_readme_row, check_name, find_checkout, new_server
from mcp_batteries.errors import ConfigError
from mcp_batteries.testing import connect, connect_http, script_path

from .conftest import ROOT, bundle_process

pytestmark = pytest.mark.anyio


def uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        pytest.fail("uv is not on PATH (run the tests with scripts/test or uv run)")
    return found


def copy_checkout(destination: Path) -> Path:
    """The checkout's tracked and untracked-but-not-ignored files, as a clone of the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.is_file() or (source.is_symlink() and not source.exists()):
            continue  # deleted in the working tree, or a dangling link
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return destination


def clean_env(checkout: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join([str(Path(uv()).parent), env.get("PATH", "")])
    env.pop("UV_OFFLINE", None)
    return env


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


@pytest.mark.slow
@pytest.mark.timeout(1200)
async def test_a_new_server_installs_tests_green_and_serves_with_no_other_edit(tmp_path: Path) -> None:
    checkout = copy_checkout(tmp_path / "checkout")
    env = clean_env(checkout)
    venv_bin = checkout / ".venv" / "bin"
    created = run([script_path("mcp-batteries"), "new", "notes"], checkout, env)
    assert "servers/notes/src/mcp_notes/server.py" in created
    readme = (checkout / "README.md").read_text()
    assert "| `mcp-notes` |" in readme and "[docs/notes.md](docs/notes.md)" in readme

    run([uv(), "sync", "--all-packages", "--quiet"], checkout, env)
    tested = run(
        [str(checkout / "scripts" / "test"), "tests/notes", "-q", "-p", "no:cacheprovider"], checkout, env
    )
    assert " passed" in tested and "failed" not in tested

    new_files = ["servers/notes", "tests/notes"]
    run([str(venv_bin / "ruff"), "format", "--check", *new_files], checkout, env)
    run([str(venv_bin / "ruff"), "check", *new_files], checkout, env)
    run([str(venv_bin / "mypy"), "servers/notes/src"], checkout, env)

    assert "--folder DIR" in run([str(venv_bin / "mcp-notes"), "--help"], checkout, env)
    notes = tmp_path / "my-notes"
    notes.mkdir()
    (notes / "plan.md").write_text("ship the bundle\n")
    params = StdioServerParameters(
        command=str(venv_bin / "mcp-batteries-notes"), args=["--folder", str(notes)], env=env
    )
    async with connect(params, "legacy") as client:
        found = await client.call_tool("search_notes", {"text": "bundle"})
    assert (
        found.structured_content is not None and found.structured_content["matches"][0]["note"] == "plan.md"
    )

    config = tmp_path / "bundle.toml"
    config.write_text(f'[notes]\nfolder = "{notes}"\n')
    serve = [str(venv_bin / "mcp-batteries"), "serve"]
    with bundle_process("notes", "--config", str(config), command=serve, env=env) as running:
        async with connect_http(running.url("notes"), "modern") as client:
            found = await client.call_tool("search_notes", {"text": "ship"})
        async with httpx2.AsyncClient() as http:
            status = (await http.get(running.base + "/status")).json()
    assert found.structured_content is not None and found.structured_content["matches"][0]["line"] == 1
    assert [(s["name"], s["path"], s["state"], s["sessions"]) for s in status["servers"]] == [
        ("notes", "/notes/mcp", "ready", 0)
    ]


def test_names_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    for bad in ("Notes", "1notes", "my_notes", "notes-", "a" * 25, "serve", "batteries", "class"):
        with pytest.raises(ConfigError):
            check_name(bad)
    assert check_name("issue-tracker") == "issue-tracker"
    root = tmp_path / "checkout"
    (root / "servers" / "filesystem").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.uv.workspace]\nmembers = ["shared", "servers/*"]\n')
    with pytest.raises(ConfigError, match="already exist"):
        new_server(root, "filesystem")
    assert sorted(p.name for p in (root / "servers").iterdir()) == ["filesystem"]


def test_only_a_checkout_of_the_workspace_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    with pytest.raises(ConfigError, match="not inside a checkout of MCP Batteries"):
        find_checkout(tmp_path / "deeper")
    assert find_checkout(ROOT / "servers" / "sql") == ROOT


def test_the_readme_row_goes_after_the_last_server_row(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    rows = "| `mcp-a` | A. | [a](a) |\n| `mcp-b` | B. | [b](b) |\n"
    readme.write_text(f"# x\n\n| server | what | docs |\n|---|---|---|\n{rows}\nmore\n")
    assert add_readme_row(readme, Scaffold(name="notes", version="1.0", description="Notes."))
    lines = readme.read_text().splitlines()
    assert lines[6] == "| `mcp-notes` | Notes. | [docs/notes.md](docs/notes.md) |" and lines[8] == "more"
