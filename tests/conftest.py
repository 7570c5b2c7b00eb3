"""Root test configuration: anyio runs async tests on asyncio; the shared test kit is loaded."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
