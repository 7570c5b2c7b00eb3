"""The engines a change bus and the session registry run on, for every test that needs one.

PostgreSQL and Redis at $MCP_TEST_POSTGRES_DSN and $MCP_TEST_REDIS_URL (defaults: the services on
127.0.0.1). Each test picks its own channel or key prefix, so tests can share them side by side.
"""

from __future__ import annotations

import os

import asyncpg
import pytest
from redis.asyncio import Redis

POSTGRES = os.environ.get("MCP_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("MCP_TEST_REDIS_URL", "redis://127.0.0.1:6379")


def unreachable(engine: str, url: str, exc: BaseException) -> None:
    """Fail in CI (where every service must run), skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"{engine} at {url} is required in CI and unreachable: {exc}")
    pytest.skip(f"{engine} not reachable at {url}: {exc}")


@pytest.fixture(params=["postgresql", "redis"])
async def bus_url(request: pytest.FixtureRequest) -> str:
    """A reachable engine of each kind: its URL."""
    if request.param == "postgresql":
        try:
            conn = await asyncpg.connect(POSTGRES, timeout=5)
            await conn.close()
        except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
            unreachable("PostgreSQL", POSTGRES, exc)
        return POSTGRES
    try:
        client = Redis.from_url(REDIS, socket_connect_timeout=5)
        await client.ping()
        await client.aclose()
    except Exception as exc:
        unreachable("Redis", REDIS, exc)
    return REDIS
