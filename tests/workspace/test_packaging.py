"""Every folder under servers/ is a server package that keeps the packaging contract.

Adding a server is adding a folder: this test finds it and checks that its console script has
the distribution's name, its entry point loads, `--help` works, and it starts over stdio and
answers `initialize` and `tools/list` in both protocol eras.
"""

from __future__ import annotations

import importlib
import subprocess
import tomllib
from pathlib import Path

import pytest
from mcp_batteries._entry.definition import ENTRY_POINT_GROUP, ServerDefinition, discover
from mcp_batteries.testing import ERAS, Era, connect, script_path, stdio_params

ROOT = Path(__file__).resolve().parents[2]
SERVERS = sorted(p for p in (ROOT / "servers").iterdir() if p.is_dir() and not p.name.startswith("."))


def project(folder: Path) -> dict:  # type: ignore[type-arg]
    return tomllib.loads((folder / "pyproject.toml").read_text())["project"]


def test_the_workspace_has_servers() -> None:
    assert {p.name for p in SERVERS} >= {"filesystem", "sql", "fetch"}


@pytest.mark.parametrize("folder", SERVERS, ids=lambda p: p.name)
def test_distribution_is_published_as_mcp_batteries_name_with_both_console_scripts(folder: Path) -> None:
    # The short names (mcp-filesystem, mcp-fetch, mcp-sql) belong to other people on PyPI:
    # `uvx mcp-filesystem` would run their code. Ours is published as mcp-batteries-NAME, and
    # its console script of that name is what `uvx mcp-batteries-NAME` runs.
    meta = project(folder)
    published = f"mcp-batteries-{folder.name}"
    assert meta["name"] == published
    scripts = meta["scripts"]
    assert set(scripts) == {published, f"mcp-{folder.name}"}
    assert scripts[published] == scripts[f"mcp-{folder.name}"]
    module, _, attr = scripts[published].partition(":")
    assert callable(getattr(importlib.import_module(module), attr))
    assert any(dep.startswith("mcp>=2.3,<3") for dep in meta["dependencies"])


@pytest.mark.parametrize("folder", SERVERS, ids=lambda p: p.name)
def test_server_is_discoverable_through_the_entry_point_group(folder: Path) -> None:
    meta = project(folder)
    entry = meta["entry-points"][ENTRY_POINT_GROUP][folder.name]
    module, _, attr = entry.partition(":")
    definition = getattr(importlib.import_module(module), attr)
    assert isinstance(definition, ServerDefinition)
    assert definition.name == folder.name and definition.distribution == meta["name"]
    assert definition.version == meta["version"]
    assert folder.name in discover()


@pytest.mark.parametrize("folder", SERVERS, ids=lambda p: p.name)
def test_help_works_and_goes_to_stdout_with_exit_0(folder: Path) -> None:
    done = subprocess.run(
        [script_path(f"mcp-batteries-{folder.name}"), "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert "--transport" in done.stdout and "--read-only" in done.stdout


@pytest.mark.parametrize("folder", SERVERS, ids=lambda p: p.name)
@pytest.mark.parametrize("script", ["mcp-batteries-{}", "mcp-{}"])
def test_version_prints_the_distribution_and_its_version_with_exit_0(folder: Path, script: str) -> None:
    done = subprocess.run(
        [script_path(script.format(folder.name)), "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"mcp-batteries-{folder.name} {project(folder)['version']}\n"


def test_the_mcp_batteries_command_prints_its_version() -> None:
    done = subprocess.run(
        [script_path("mcp-batteries"), "--version"], capture_output=True, text=True, timeout=60
    )
    version = tomllib.loads((ROOT / "shared" / "pyproject.toml").read_text())["project"]["version"]
    assert (done.returncode, done.stdout) == (0, f"mcp-batteries {version}\n")


def default_args(folder: Path, tmp_path: Path) -> list[str]:
    if folder.name == "filesystem":
        return [str(tmp_path)]
    if folder.name == "sql":
        return [f"sqlite:///{tmp_path / 'packaging.db'}", "--allow-write"]
    return []


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("folder", SERVERS, ids=lambda p: p.name)
async def test_starts_over_stdio_and_lists_tools(folder: Path, era: Era, tmp_path: Path) -> None:
    params = stdio_params(
        f"mcp-batteries-{folder.name}", *default_args(folder, tmp_path), env={"XDG_DATA_HOME": str(tmp_path)}
    )
    async with connect(params, era) as client:
        tools = (await client.list_tools()).tools
    assert tools
    for tool in tools:
        assert tool.description and tool.annotations is not None
        assert tool.annotations.read_only_hint is not None and tool.annotations.open_world_hint is not None
