"""A tiny demo server on the shared runtime, for the runtime's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_batteries._core.app import BatteriesServer
from mcp_batteries._core.settings import ServerSettings
from mcp_batteries.errors import AccessDenied, NotFound


class DemoSettings(ServerSettings):
    server_name = "demo"


def build_demo(settings: DemoSettings | None = None) -> BatteriesServer:
    async def check(session: object, uri: str) -> None:
        if not uri.startswith("demo://"):
            raise AccessDenied(f"only demo:// URIs can be subscribed to, not {uri}")

    server = BatteriesServer(settings or DemoSettings(), instructions="demo", subscriptions=check)

    @server.tool(title="Look", read_only=True)
    async def look(name: str) -> str:
        """Read-only tool."""
        if name == "secret":
            raise AccessDenied("secret is outside the allowed names; allowed: public names")
        return f"saw {name}"

    @server.tool(title="Change", read_only=False, destructive=True)
    async def change(name: str) -> str:
        """A tool that writes."""
        return f"changed {name}"

    @server.tool(title="Crash", read_only=True)
    async def crash() -> str:
        """Fails with an unexpected exception."""
        raise RuntimeError("internal detail that must not leak")

    @server.resource("demo://item/{name}")
    def item(name: str) -> str:
        if name == "missing":
            raise NotFound("no item named missing")
        return f"item {name}"

    @server.prompt()
    def greet(who: str) -> str:
        return f"Say hello to {who}"

    return server


@pytest.fixture
def demo() -> BatteriesServer:
    return build_demo()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    return root
