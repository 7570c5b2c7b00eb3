"""Root test configuration: anyio runs async tests on asyncio, no test can reach the real HOME, and
`each_platform_family` runs a test on each platform family.

Every test run gets its own home directory (a temporary directory removed at the end): HOME,
the XDG base directories and GNUPGHOME point into it for the whole session, before any test
module is imported, so everything a test starts inherits it too (server subprocesses, git, gpg,
the Inspector and npm). A server's default data (`~/.local/share/mcp-batteries/...`), git's
global configuration and gpg's keyring therefore land there, never in the user's own files.
Tests that need their own HOME still set it (monkeypatch or a subprocess `env`).

Package caches stay shared, so nothing is downloaded again: uv keeps the cache it had
(`UV_CACHE_DIR`), and npm the user's cache (`NPM_CONFIG_CACHE`), unless already set.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_batteries._safety.redact import KNOWN
from mcp_batteries.testing import PLATFORM_FAMILIES, forced_platform_family

from .buses import bus_url  # noqa: F401 - a fixture: PostgreSQL and Redis, for any test that asks

#: Where the session's home directory is, for tests that check the isolation itself.
SESSION_HOME_ENV = "MCP_BATTERIES_TEST_HOME"

_saved: dict[str, str | None] = {}


def _real_cache_dirs() -> dict[str, str]:
    """The caches uv and npm use with the real HOME, to keep using them under the fake one."""
    home = Path(os.path.expanduser("~"))
    cache_root = Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache")
    return {
        "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR") or str(cache_root / "uv"),
        "NPM_CONFIG_CACHE": os.environ.get("NPM_CONFIG_CACHE") or str(home / ".npm"),
    }


def pytest_configure(config: pytest.Config) -> None:
    home = Path(tempfile.mkdtemp(prefix="mcp-batteries-test-home-")).resolve()
    isolated = {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "GNUPGHOME": str(home / ".gnupg"),
        SESSION_HOME_ENV: str(home),
        **_real_cache_dirs(),
        # npm: no update check against the registry on every run.
        "NPM_CONFIG_UPDATE_NOTIFIER": "false",
    }
    for name, value in isolated.items():
        _saved.setdefault(name, os.environ.get(name))
        os.environ[name] = value
    (home / ".gnupg").mkdir(mode=0o700)


def pytest_unconfigure(config: pytest.Config) -> None:
    home = os.environ.get(SESSION_HOME_ENV)
    for name, value in _saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _saved.clear()
    if home:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def session_home() -> Path:
    """The home directory every test and every process it starts sees (a temporary directory)."""
    return Path(os.environ[SESSION_HOME_ENV])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def forget_known_secrets() -> Iterator[None]:
    """Settings remember the secrets of their URLs for the whole process (mcp_batteries._safety.redact);
    each test starts from what the process knew before it, so no test hides another's words."""
    kept = KNOWN.words
    yield
    KNOWN.clear()
    KNOWN.add(kept)


@pytest.fixture(params=PLATFORM_FAMILIES)
def each_platform_family(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs the test once on each platform family this machine can run (`posix`: descriptor-
    relative opens; `portable`: what Windows has), switched in-process."""
    with forced_platform_family(request.param):
        yield request.param
