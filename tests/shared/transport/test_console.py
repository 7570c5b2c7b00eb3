"""What a server says on stderr: every logger, the HTTP stack's included, goes through the redaction."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries._transport.console import configure_logging
from mcp_batteries._transport.http import uvicorn_config
from starlette.applications import Starlette

pytestmark = pytest.mark.anyio


@pytest.fixture
def root_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.mark.usefixtures("root_logging")
async def test_uvicorns_log_lines_pass_through_the_redaction(capfd: pytest.CaptureFixture[str]) -> None:
    configure_logging("info")
    uvicorn_config(Starlette(), ServerSettings())
    logging.getLogger("uvicorn.error").error("could not reach postgresql://alice:hunter2@db.internal/app")
    stderr = capfd.readouterr().err
    assert "db.internal" in stderr and "hunter2" not in stderr
