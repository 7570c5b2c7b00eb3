"""The official MCP conformance suite (`@modelcontextprotocol/conformance`) against our runtime.

The fixture server (`fixture_server.py`, built on `BatteriesServer`) is started over Streamable
HTTP (stateful, loopback, a free port), and the suite's server scenarios run against it:

    npx conformance server --url URL --suite all --spec-version 2025-11-25 \
        -o OUTDIR --expected-failures tests/conformance/expected-failures.yml

The suite version is pinned by `package.json` + `package-lock.json` next to this file and
installed with `npm ci` into `.tools/conformance` (git-ignored; reinstalled when the pin changes)
by `tests/node.py`, which also provides Node >= 22. Only npm and PyPI need to be reachable.

`--spec-version 2025-11-25` selects every scenario of the handshake-era protocol our clients speak
today, including the pending ones (`--suite all`); the 2026-07-28 (sessionless) scenarios and the
tasks/skills extensions need fixtures and features this runtime does not have yet.

The suite exits 0 only when every scenario not listed in `expected-failures.yml` passes without
a failure or warning, and every listed one still fails (so the list cannot go stale).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ..node import INSTALL_TIMEOUT_S, TOOLS, ensure_pinned, node_env

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SUITE_DIR = TOOLS / "conformance"
FIXTURE = HERE / "fixture_server.py"
EXPECTED_FAILURES = HERE / "expected-failures.yml"

SPEC_VERSION = "2025-11-25"
SUITE_TIMEOUT_S = 180
STARTUP_TIMEOUT_S = 30

_URL_IN_BANNER = re.compile(r"at (http://\S+) \(")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_TIMEOUT_S + SUITE_TIMEOUT_S + 60)]


def ensure_suite(env: dict[str, str]) -> str:
    """Install the pinned suite into .tools/conformance (once per pin) and return its version."""
    return ensure_pinned(HERE, SUITE_DIR, env)["@modelcontextprotocol/conformance"]


# -- the fixture server -------------------------------------------------------------------------
class _Server:
    def __init__(self, process: subprocess.Popen[bytes], url: str, log: list[str]) -> None:
        self.process = process
        self.url = url
        self.log = log


@contextmanager
def _fixture_server() -> Iterator[_Server]:
    process = subprocess.Popen(
        [sys.executable, str(FIXTURE), "--transport", "http", "--port", "0"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    stderr = process.stderr
    log: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def read() -> None:  # the banner first, then keep draining so the server never blocks
        for raw in stderr:
            line = raw.decode(errors="replace").rstrip()
            log.append(line)
            match = _URL_IN_BANNER.search(line)
            if match and not url:
                url.append(match.group(1))
                found.set()
        found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not found.wait(STARTUP_TIMEOUT_S) or not url:
            pytest.fail("fixture server did not announce its URL:\n" + "\n".join(log))
        yield _Server(process, url[0], log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=5)


# -- reporting ------------------------------------------------------------------------------------
def summary(out_dir: Path) -> str:
    """One line per scenario (from each scenario's checks.json), with every failure and warning."""
    lines: list[str] = []
    counts = {"passed": 0, "failed": 0}
    for checks_file in sorted(out_dir.glob("*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks_file.parent.name)
        checks = json.loads(checks_file.read_text())
        bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
        ok = sum(1 for c in checks if c.get("status") == "SUCCESS")
        counts["failed" if bad else "passed"] += 1
        lines.append(f"{'FAIL' if bad else 'ok  '} {scenario}: {ok} checks passed, {len(bad)} failed/warned")
        for check in bad:
            lines.append(
                f"       {check['status']} {check.get('id')}: {check.get('errorMessage') or ''}".rstrip()
            )
    lines.append(f"{counts['passed']} scenarios passed, {counts['failed']} failed or warned")
    return "\n".join(lines)


# -- the test -----------------------------------------------------------------------------------
def test_official_conformance_suite(tmp_path: Path) -> None:
    started = time.monotonic()
    env = node_env()
    version = ensure_suite(env)
    npx = shutil.which("npx", path=env["PATH"])
    if npx is None:
        pytest.fail("npx is not installed (it ships with npm)")
    out_dir = tmp_path / "results"
    with _fixture_server() as server:
        command = [
            npx, "--no-install", "conformance", "server",
            "--url", server.url,
            "--suite", "all",
            "--spec-version", SPEC_VERSION,
            "-o", str(out_dir),
            "--expected-failures", str(EXPECTED_FAILURES),
        ]  # fmt: skip
        try:
            result = subprocess.run(
                command, cwd=SUITE_DIR, env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S
            )
        except subprocess.TimeoutExpired as exc:
            output = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
            partial = summary(out_dir)
            pytest.fail(f"the conformance suite did not finish in {SUITE_TIMEOUT_S}s:\n{output}\n{partial}")
    found = summary(out_dir)
    elapsed = time.monotonic() - started
    print(f"\nconformance {version} against {server.url} ({elapsed:.1f}s):\n{found}")
    if result.returncode != 0:
        verdict = (
            result.stdout[result.stdout.rfind("=== SUMMARY ===") :]
            if "=== SUMMARY ===" in result.stdout
            else ""
        )
        server_log = "\n".join(server.log[-40:])
        pytest.fail(
            f"conformance {version} exited {result.returncode}.\n\n{found}\n\n{verdict}\n"
            f"stderr:\n{result.stderr[-3000:]}\nfixture server log (tail):\n{server_log}"
        )
