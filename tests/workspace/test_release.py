"""Packages that install as promised: one version, complete metadata, wheels that run.

The one version lives in `shared/pyproject.toml` (the runtime, `mcp-batteries`); every server
carries it too and pins the runtime to it exactly (`mcp-batteries==X.Y.Z`), so a release is one
set of packages that fit together, and `mcp-batteries new` writes it into a new server. The
release workflow refuses a tag that does not name it.

The slow test builds every package (`uv build --all-packages`: each wheel is built from its sdist,
which proves the sdists complete), installs the wheels from that folder into a fresh environment,
and runs every console script: `--help`, then one real call over stdio. It also runs a server the
way `uvx --find-links DIR mcp-batteries-filesystem` will once published.
"""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters
from mcp_batteries.testing import connect

ROOT = Path(__file__).resolve().parents[2]
HOME = "https://github.com/mcp-batteries/mcp-batteries"
PACKAGES = [
    ROOT / "shared",
    *sorted(p for p in (ROOT / "servers").iterdir() if (p / "pyproject.toml").exists()),
]
PYTHONS = ("3.11", "3.12", "3.13")


def project(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((folder / "pyproject.toml").read_text())
    return data


def the_version() -> str:
    return str(project(ROOT / "shared")["project"]["version"])


def test_every_package_carries_the_one_version_and_pins_the_runtime_to_it() -> None:
    version = the_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]|rc)?\d*", version)
    for folder in PACKAGES[1:]:
        meta = project(folder)["project"]
        assert meta["version"] == version, f"{folder.name}: set version = {version!r} (the one in shared/)"
        runtime = [dep for dep in meta["dependencies"] if re.match(r"mcp-batteries\b(?!-)", dep)]
        assert runtime == [f"mcp-batteries=={version}"], folder.name


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda p: p.name)
def test_every_package_has_complete_metadata(folder: Path) -> None:
    data = project(folder)
    meta = data["project"]
    assert meta["description"] and len(meta["description"]) <= 200
    assert meta["readme"] == "README.md" and meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    assert meta["requires-python"] == ">=3.11"
    assert meta["authors"] and "mcp" in meta["keywords"]
    classifiers = set(meta["classifiers"])
    assert {f"Programming Language :: Python :: {v}" for v in PYTHONS} <= classifiers
    assert "Typing :: Typed" in classifiers
    urls = meta["urls"]
    assert urls["Homepage"] == HOME and urls["Repository"] == HOME and urls["Issues"] == f"{HOME}/issues"
    assert urls["Documentation"].startswith(f"{HOME}/blob/main/")
    assert data["build-system"] == {"requires": ["hatchling>=1.27"], "build-backend": "hatchling.build"}
    assert (folder / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda p: p.name)
def test_readmes_stand_alone_on_pypi(folder: Path) -> None:
    readme = (folder / "README.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", readme)
    assert links, folder.name
    relative = [link for link in links if not link.startswith(("https://", "http://", "#"))]
    assert relative == [], f"{folder.name}: PyPI cannot follow relative links {relative}"
    assert (folder / "README.md").stat().st_size > 300, f"{folder.name}: say what it is and how to run it"


def test_the_release_workflow_builds_tests_and_publishes_with_trusted_publishing() -> None:
    workflow = (ROOT / ".github" / "workflows" / "release.yml").read_text()
    assert 'tags: ["v*"]' in workflow
    assert "uv build --all-packages" in workflow
    assert "tests/workspace/test_release.py" in workflow
    assert "id-token: write" in workflow and "pypa/gh-action-pypi-publish@release/v1" in workflow
    assert "password" not in workflow and "PYPI_TOKEN" not in workflow  # trusted publishing: no secret
    assert "version-file: pyproject.toml" in workflow  # the uv pinned once, in the root pyproject
    assert all(v in workflow for v in PYTHONS)


def test_uv_is_pinned_in_one_place() -> None:
    root = project(ROOT)
    assert re.fullmatch(r"==\d+\.\d+\.\d+", root["tool"]["uv"]["required-version"])
    for folder in PACKAGES:
        assert "required-version" not in project(folder).get("tool", {}).get("uv", {}), folder.name


# -- built, installed, run --------------------------------------------------------------------------


def uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        pytest.fail("uv is not on PATH (run the tests with scripts/test or uv run)")
    return found


def run(*command: str, cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(archive.read(name))


def stdio_arguments(name: str, tmp_path: Path) -> tuple[list[str], str, dict[str, Any]]:
    """(arguments, a tool to call, its arguments) for one real call of each server."""
    if name == "filesystem":
        (tmp_path / "hello.txt").write_text("hello from a wheel\n")
        return [str(tmp_path)], "read_text_file", {"path": "hello.txt"}
    if name == "sql":
        return [f"sqlite:///{tmp_path / 'wheel.db'}", "--allow-write"], "list_schemas", {}
    if name == "git":
        return [str(tmp_path)], "", {}  # tools/list: no repository here to call a tool on
    if name == "tasks":
        return ["--db", str(tmp_path / "tasks.db")], "list_lists", {}
    if name == "fetch":
        return [], "fetch", {"url": "http://127.0.0.1:9/"}  # refused by the SSRF policy: a real answer
    return [], "", {}


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.anyio
async def test_built_wheels_install_from_a_folder_and_every_console_script_runs(tmp_path: Path) -> None:
    version = the_version()
    dist = tmp_path / "dist"
    run(uv(), "build", "--all-packages", "--out-dir", str(dist))
    names = {project(folder)["project"]["name"] for folder in PACKAGES}
    for name in names:
        stem = f"{name.replace('-', '_')}-{version}"
        assert (dist / f"{stem}.tar.gz").is_file(), f"no sdist for {name}"
        wheel = dist / f"{stem}-py3-none-any.whl"
        meta = wheel_metadata(wheel)
        assert meta["Version"] == version and meta["License-Expression"] == "MIT"
        assert meta["Requires-Python"] == ">=3.11" and meta["Summary"]
        assert any(url.startswith("Homepage, ") for url in meta.get_all("Project-URL") or [])
        assert "Programming Language :: Python :: 3.13" in (meta.get_all("Classifier") or [])
        assert (
            meta.get_content_type() == "text/markdown" or meta["Description-Content-Type"] == "text/markdown"
        )

    with zipfile.ZipFile(dist / f"mcp_batteries-{version}-py3-none-any.whl") as runtime:
        packaged = set(runtime.namelist())
    # `mcp-batteries new` works from the installed package: its templates are in the wheel.
    assert "mcp_batteries/_bundle/templates/server/src/package/server.py.tmpl" in packaged
    assert "mcp_batteries/py.typed" in packaged

    venv = tmp_path / "fresh"
    run(uv(), "venv", "--quiet", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    # Pinned to the built version: a namesake on the index can never be taken instead.
    run(uv(), "pip", "install", "--quiet", "--python", str(python), "--find-links", str(dist),
        *(f"{name}=={version}" for name in sorted(names)))  # fmt: skip
    installed = run(
        str(python), "-c", "import mcp_batteries._bundle, sys; print(mcp_batteries._bundle.__file__)"
    )
    assert str(venv) in installed.stdout  # our runtime, from the wheel, not the workspace

    bin_dir = venv / "bin"
    servers = sorted(folder.name for folder in PACKAGES[1:])
    for server in servers:
        args, tool, arguments = stdio_arguments(server, tmp_path)
        for script in (f"mcp-batteries-{server}", f"mcp-{server}"):
            helped = run(str(bin_dir / script), "--help", timeout=120)
            assert helped.stdout.startswith(f"usage: {script}"), helped.stdout[:200]
        params = StdioServerParameters(command=str(bin_dir / f"mcp-batteries-{server}"), args=args)
        async with connect(params, "legacy") as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            if tool:
                answer = await client.call_tool(tool, arguments)
                assert answer.content, server
        assert listed, server
    assert "serve" in run(str(bin_dir / "mcp-batteries"), "--help").stdout
    # Installed by name from an index (here a folder of wheels): entries run the published names.
    unscoped = [server for server in servers if server not in ("filesystem", "git")]
    configured = run(str(bin_dir / "mcp-batteries"), "config", "claude-code", *unscoped)
    assert f'"mcp-batteries-{unscoped[0]}"' in configured.stdout

    # As `uvx mcp-batteries-filesystem` will run it from PyPI: here from the built folder.
    ours = ("--refresh-package", "mcp-batteries", "--refresh-package", "mcp-batteries-filesystem")
    uvx = [
        uv(),
        "tool",
        "run",
        "--find-links",
        str(dist),
        *ours,
        "--from",
        f"mcp-batteries-filesystem=={version}",
    ]
    assert "usage: mcp-batteries-filesystem" in run(*uvx, "mcp-batteries-filesystem", "--help").stdout
    params = StdioServerParameters(
        command=uvx[0], args=[*uvx[1:], "mcp-batteries-filesystem", str(tmp_path)], env=dict(os.environ)
    )
    async with connect(params, "modern") as client:
        answer = await client.call_tool("read_text_file", {"path": "hello.txt"})
    assert "hello from a wheel" in str(answer.content)
