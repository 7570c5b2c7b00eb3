"""Public (for tests): drive any MCP Batteries server the ways real clients do.

    from mcp_batteries.testing import ERAS, connect, stdio_params, http_server, Notifications

- `connect(server, era)`: in-process, in either protocol era;
- `stdio_params(script, *args)`: the server's console script as a subprocess over stdio;
- `http_server(script, *args)`: the same over HTTP on a free loopback port, yielding the URL;
- `Notifications`: collect notifications and wait for one, with a timeout (no sleeps);
- `parse_settings(SettingsClass, argv)`: a server's command line, parsed as its console script does;
- `TestIssuer`: a stand-in OAuth authorization server on loopback that mints access tokens;
- `PLATFORM_FAMILIES`, `forced_platform_family`: run a test on each platform family in-process;
  `without_posix_facilities`: a subprocess environment that sees a platform without
  descriptor-relative opens, `fcntl` or `/proc` (as Windows does).
- `tasks_extension()`, `start_call`, `get_task`, `wait_task`, `update_task`, `cancel_task`: a
  client of the tasks extension (long calls followed as tasks, 2026-07-28).
"""

from mcp_batteries._core.cli import parse_settings
from mcp_batteries._testing.kit import (
    ERAS,
    MCP_POST_HEADERS,
    RAW_INITIALIZE,
    TIMEOUT_S,
    Era,
    Notifications,
    RunningServer,
    client_mode,
    connect,
    connect_http,
    http_server,
    legacy_subscribe,
    legacy_unsubscribe,
    script_path,
    serve_http_in_process,
    stdio_params,
    write_private,
)
from mcp_batteries._testing.oauth_issuer import AUDIENCE, KeyKind, TestIssuer, b64url
from mcp_batteries._testing.platforms import (
    HIDDEN_MARKER,
    PLATFORM_FAMILIES,
    forced_platform_family,
    without_posix_facilities,
)
from mcp_batteries._testing.tasks_client import (
    CreatedTask,
    TaskState,
    cancel_task,
    get_task,
    start_call,
    tasks_extension,
    update_task,
    wait_task,
)

__all__ = [
    "AUDIENCE",
    "ERAS",
    "HIDDEN_MARKER",
    "MCP_POST_HEADERS",
    "PLATFORM_FAMILIES",
    "RAW_INITIALIZE",
    "TIMEOUT_S",
    "CreatedTask",
    "Era",
    "KeyKind",
    "Notifications",
    "RunningServer",
    "TaskState",
    "TestIssuer",
    "b64url",
    "cancel_task",
    "client_mode",
    "connect",
    "connect_http",
    "forced_platform_family",
    "get_task",
    "http_server",
    "legacy_subscribe",
    "legacy_unsubscribe",
    "parse_settings",
    "script_path",
    "serve_http_in_process",
    "start_call",
    "stdio_params",
    "tasks_extension",
    "update_task",
    "wait_task",
    "without_posix_facilities",
    "write_private",
]
