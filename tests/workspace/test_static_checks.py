"""Lint, format and type checks, configured once in the root pyproject.toml, run with the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing_to_complain_about() -> None:
    done = run(str(BIN / "ruff"), "check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_code_is_formatted() -> None:
    done = run(str(BIN / "ruff"), "format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mypy_strict_passes_on_every_package() -> None:
    done = run(str(BIN / "mypy"))
    assert done.returncode == 0, done.stdout + done.stderr
