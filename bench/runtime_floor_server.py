"""The runtime's per-call floor: the same trivial tool as floor_server.py, on `BatteriesServer`.

Run against floor_server.py (a bare `MCPServer`) by bench/floor.py: the difference is what the
MCP Batteries runtime adds to every call (middleware, interest tracking, error mapping, logging).
"""

from __future__ import annotations

from mcp_batteries.definition import ServerDefinition, ServerSettings
from mcp_batteries.server import BatteriesServer


class FloorSettings(ServerSettings):
    server_name = "runtime-floor"


def build_server(settings: FloorSettings) -> BatteriesServer:
    server = BatteriesServer(settings, title="Runtime floor", instructions="One trivial tool.")

    @server.tool(title="Hello", read_only=True)
    def hello() -> str:
        """Say hello."""
        return "hello"

    return server


definition = ServerDefinition(settings=FloorSettings, build=f"{__name__}:build_server", description="floor")

if __name__ == "__main__":
    definition.main()
