"""The official MCP conformance suite against a server mounted in the bundle.

The same suite, pin and expected failures as `tests/conformance/test_conformance.py` (and `tests/node.py`
installs Node and the suite); the fixture server is not started alone but mounted by
`mcp-batteries serve` beside every installed server, at `/conformance-fixture/mcp`
(`serve_with_fixture.py` hands the bundle the fixture's definition as if it were installed).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ..conformance.test_conformance import (
    EXPECTED_FAILURES,
    SPEC_VERSION,
    SUITE_DIR,
    SUITE_TIMEOUT_S,
    ensure_suite,
    summary,
)
from ..node import INSTALL_TIMEOUT_S, node_env
from .conftest import bundle_process, fixture_command

pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_TIMEOUT_S + SUITE_TIMEOUT_S + 120)]


def test_official_conformance_suite_against_a_server_mounted_in_the_bundle(tmp_path: Path) -> None:
    started = time.monotonic()
    env = node_env()
    version = ensure_suite(env)
    npx = shutil.which("npx", path=env["PATH"])
    if npx is None:
        pytest.fail("npx is not installed (it ships with npm)")
    out_dir = tmp_path / "results"
    with bundle_process(command=fixture_command()) as running:
        url = running.url("conformance-fixture")
        command = [
            npx, "--no-install", "conformance", "server",
            "--url", url,
            "--suite", "all",
            "--spec-version", SPEC_VERSION,
            "-o", str(out_dir),
            "--expected-failures", str(EXPECTED_FAILURES),
        ]  # fmt: skip
        try:
            result = subprocess.run(
                command,
                cwd=SUITE_DIR,
                env=env,
                capture_output=True,
                text=True,
                timeout=SUITE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as exc:
            output = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
            pytest.fail(f"the conformance suite did not finish in {SUITE_TIMEOUT_S}s:\n{output}")
        log = "\n".join(running.log[-40:])
    found = summary(out_dir)
    print(
        f"\nconformance {version} against {url} in the bundle ({time.monotonic() - started:.1f}s):\n{found}"
    )
    if result.returncode != 0:
        pytest.fail(
            f"conformance {version} exited {result.returncode}.\n\n{found}\n\n"
            f"stderr:\n{result.stderr[-3000:]}\nbundle log (tail):\n{log}"
        )
