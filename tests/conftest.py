"""Root test configuration: anyio runs async tests on asyncio; the shared test kit is loaded;
`each_platform_family` runs a test on each platform family."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_batteries.testing import PLATFORM_FAMILIES, forced_platform_family


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=PLATFORM_FAMILIES)
def each_platform_family(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs the test once on each platform family this machine can run (`posix`: descriptor-
    relative opens; `portable`: what Windows has), switched in-process."""
    with forced_platform_family(request.param):
        yield request.param
