"""mcp_batteries._platform.family: which implementation runs, and forcing one."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from mcp_batteries._platform import family


def active_in_a_subprocess(**environment: str) -> str:
    code = "from mcp_batteries._platform import family; print(family.active())"
    env = {key: value for key, value in os.environ.items() if key != family.ENVIRONMENT_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-c", code], env={**env, **environment}, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_linux_runs_the_posix_family_and_the_variable_forces_the_portable_one() -> None:
    assert active_in_a_subprocess() == "posix"
    assert active_in_a_subprocess(MCP_BATTERIES_PLATFORM="portable") == "portable"
    assert active_in_a_subprocess(MCP_BATTERIES_PLATFORM="posix") == "posix"
    assert active_in_a_subprocess(MCP_BATTERIES_PLATFORM="windows95") == "posix"  # unknown: ignored


def test_the_posix_family_needs_every_facility_it_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    assert family.posix_capable()
    monkeypatch.setattr(os, "supports_dir_fd", set())
    assert not family.posix_capable()
    monkeypatch.undo()
    monkeypatch.delattr(os, "O_NOFOLLOW")
    assert not family.posix_capable()
    monkeypatch.undo()
    monkeypatch.setattr(os, "supports_fd", os.supports_fd - {os.scandir})
    assert not family.posix_capable()


def test_forcing_the_posix_family_where_it_cannot_run_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "supports_dir_fd", set())
    with pytest.raises(RuntimeError, match="descriptor-relative"), family.forced("posix"):
        pass


def test_only_the_portable_family_states_a_weaker_guarantee() -> None:
    with family.forced("posix"):
        assert family.weaker_guarantee() is None
    with family.forced("portable"):
        assert "docs/platforms.md" in (family.weaker_guarantee() or "")
