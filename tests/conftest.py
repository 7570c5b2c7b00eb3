"""Root test configuration: anyio runs async tests on asyncio; the shared test kit is loaded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_batteries.redact import KNOWN


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def forget_known_secrets() -> Iterator[None]:
    """Settings remember the secrets of their URLs for the whole process (mcp_batteries.redact);
    each test starts from what the process knew before it, so no test hides another's words."""
    kept = KNOWN.words
    yield
    KNOWN.clear()
    KNOWN.add(kept)
