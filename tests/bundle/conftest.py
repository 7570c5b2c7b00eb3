"""Running the bundle in tests: in-process (uvicorn on a free port, in the test's event loop) or as
the `mcp-batteries serve` console script (a subprocess, for signals and exit statuses)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp_batteries._bundle.app import BundleApp
from mcp_batteries._bundle.clients import config_main
from mcp_batteries._bundle.configfile import parse_serve_args
from mcp_batteries._bundle.serve import build_bundle, serve_bundle
from mcp_batteries.definition import ServerDefinition
from mcp_batteries.testing import script_path

ROOT = Path(__file__).resolve().parents[2]
_BASE_IN_BANNER = re.compile(r"Streamable HTTP on (http://\S+) \(")


@dataclass
class Bundle:
    base: str
    app: BundleApp

    def url(self, name: str) -> str:
        return f"{self.base}/{name}/mcp"


@asynccontextmanager
async def running_bundle(
    *argv: str, installed: Mapping[str, ServerDefinition[Any]] | None = None
) -> AsyncIterator[Bundle]:
    """`mcp-batteries serve ARGV --port 0` in this event loop; drained and stopped on exit."""
    config = parse_serve_args([*argv, "--port", "0"], installed=installed)
    app = build_bundle(config)
    stop = anyio.Event()
    started = anyio.Event()
    ports: list[int] = []

    async def on_started(port: int) -> None:
        ports.append(port)
        started.set()

    finished = anyio.Event()

    async def serve() -> None:
        try:
            await serve_bundle(app, config.settings, on_started=on_started, stop=stop)
        finally:
            finished.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        with anyio.fail_after(60):
            await started.wait()
        try:
            yield Bundle(f"http://127.0.0.1:{ports[0]}", app)
        finally:
            # Stop as SIGTERM would (drain, close sessions), even when the test failed.
            stop.set()
            with anyio.CancelScope(shield=True), anyio.move_on_after(30):
                await finished.wait()


@dataclass
class BundleProcess:
    process: subprocess.Popen[bytes]
    base: str
    log: list[str] = field(default_factory=list)

    def url(self, name: str) -> str:
        return f"{self.base}/{name}/mcp"


@contextmanager
def bundle_process(
    *argv: str, env: Mapping[str, str] | None = None, command: list[str] | None = None, port: int = 0
) -> Iterator[BundleProcess]:
    """The console script (or `command`) serving on `port` (a free one by default); SIGTERM on exit."""
    process = subprocess.Popen(
        [*(command or [script_path("mcp-batteries"), "serve"]), *argv, "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    assert process.stderr is not None
    stderr = process.stderr
    log: list[str] = []
    found = threading.Event()
    base: list[str] = []

    def read() -> None:  # the banner first, then keep draining so the server never blocks
        for raw in stderr:
            line = raw.decode(errors="replace").rstrip()
            log.append(line)
            match = _BASE_IN_BANNER.search(line)
            if match and not base:
                base.append(match.group(1))
                found.set()
        found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not found.wait(90) or not base:
            raise RuntimeError("the bundle did not announce its URL:\n" + "\n".join(log))
        yield BundleProcess(process, base[0], log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=5)


def fixture_command() -> list[str]:
    """`mcp-batteries serve` with the conformance fixture server installed beside the real ones."""
    return [sys.executable, str(Path(__file__).parent / "serve_with_fixture.py")]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run_config(*args: str, cwd: Path | None = None, env: Mapping[str, str | None] | None = None) -> Ran:
    """`mcp-batteries config ARGS`, in this process, with `env` set (None: unset) and `cwd` as the
    current directory for the call (the console script itself is run by test_clients.py)."""
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    saved = {name: os.environ.get(name) for name in env or {}}
    for name, value in (env or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = config_main(list(args))
            except SystemExit as exit:
                code = int(exit.code or 0)
    finally:
        os.chdir(previous)
        for name, before in saved.items():
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before
    return Ran(code, out.getvalue(), err.getvalue())


def client_home(tmp_path: Path) -> dict[str, str | None]:
    """The environment that puts every client's default file under `tmp_path/home` (never the real
    HOME): HOME, XDG_CONFIG_HOME and Codex's home; APPDATA unset."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "CODEX_HOME": None,
        "APPDATA": None,
    }
