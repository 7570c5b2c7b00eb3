"""PostgreSQL errors as a caller reads them: a connection lost in any of the driver's ways is one answer."""

from __future__ import annotations

import asyncpg
from mcp_batteries.errors import UpstreamError
from mcp_sql.pg_errors import connection_lost, map_pg_error
from mcp_sql.postgres_pool import DRIVER_ERRORS


def test_a_driver_that_lost_track_of_its_connection_is_a_lost_connection() -> None:
    # What asyncpg raises when a backend is terminated in the middle of an operation.
    broken = asyncpg.exceptions.InternalClientError(
        "cannot switch to state 14; another operation (2) is in progress"
    )
    assert isinstance(broken, DRIVER_ERRORS)  # caught where every driver error is, never escaping raw
    assert connection_lost(broken)
    mapped = map_pg_error(broken, "SELECT 1", timeout_s=30)
    assert isinstance(mapped, UpstreamError)
    assert "connection was closed by the server" in str(mapped) and "Retry the call" in str(mapped)
