"""How a client entry starts a server follows how it is installed here (launch.py)."""

from __future__ import annotations

import importlib.metadata
import json
import sysconfig
from pathlib import Path

import pytest
from mcp_batteries._bundle import launch
from mcp_batteries._bundle.launch import launch_for

ROOT = Path(__file__).resolve().parents[2]


class FakeDistribution:
    def __init__(self, direct_url: dict[str, object] | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return None if self.direct_url is None else json.dumps(self.direct_url)


def installed_as(monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, object] | None) -> None:
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: FakeDistribution(direct_url))


def test_from_a_package_index_the_published_name(monkeypatch: pytest.MonkeyPatch) -> None:
    installed_as(monkeypatch, None)
    found = launch_for("sql")
    assert (found.command, found.args, found.source) == ("uvx", ("mcp-batteries-sql",), "published")


def test_editable_from_a_checkout_its_scripts_run(monkeypatch: pytest.MonkeyPatch) -> None:
    installed_as(monkeypatch, {"url": (ROOT / "servers" / "sql").as_uri(), "dir_info": {"editable": True}})
    found = launch_for("sql")
    assert (found.command, found.args, found.source) == (str(ROOT / "scripts" / "run"), ("sql",), "checkout")


def test_from_a_wheel_file_the_installed_console_script(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scripts = tmp_path / "bin"
    scripts.mkdir()
    (scripts / "mcp-batteries-sql").write_text("#!/bin/sh\n")
    monkeypatch.setattr(sysconfig, "get_path", lambda name: str(scripts))
    installed_as(
        monkeypatch, {"url": "file:///tmp/dist/mcp_batteries_sql-0.1.0-py3-none-any.whl", "archive_info": {}}
    )
    found = launch_for("sql")
    assert (found.command, found.args, found.source) == (str(scripts / "mcp-batteries-sql"), (), "installed")


def test_not_installed_the_published_name_said_to_be_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    found = launch_for("weather")
    assert (found.command, found.args, found.source) == ("uvx", ("mcp-batteries-weather",), "elsewhere")


def test_this_workspace_is_a_checkout() -> None:
    assert launch.checkout_of(ROOT / "servers" / "filesystem") == ROOT
    assert launch_for("filesystem").source == "checkout"
