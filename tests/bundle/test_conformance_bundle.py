"""The official MCP conformance suite against a server mounted in the bundle.

The same suite, pin and expected failures as `tests/conformance/test_conformance.py` (whose
helpers install Node and the suite); the fixture server is not started alone but mounted by
`mcp-batteries serve` beside every installed server, at `/conformance-fixture/mcp`
(`serve_with_fixture.py` hands the bundle the fixture's definition as if it were installed).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import time
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import bundle_process, fixture_command

SUITE_MODULE = Path(__file__).resolve().parents[1] / "conformance" / "test_conformance.py"


def _suite() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_suite_helpers", SUITE_MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


suite = _suite()

pytestmark = [pytest.mark.slow, pytest.mark.timeout(suite.INSTALL_TIMEOUT_S + suite.SUITE_TIMEOUT_S + 120)]


def test_official_conformance_suite_against_a_server_mounted_in_the_bundle(tmp_path: Path) -> None:
    started = time.monotonic()
    env = suite._node_env()
    version = suite._ensure_suite(env)
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
            "--spec-version", suite.SPEC_VERSION,
            "-o", str(out_dir),
            "--expected-failures", str(suite.EXPECTED_FAILURES),
        ]  # fmt: skip
        try:
            result = subprocess.run(
                command,
                cwd=suite.SUITE_DIR,
                env=env,
                capture_output=True,
                text=True,
                timeout=suite.SUITE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as exc:
            output = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
            pytest.fail(f"the conformance suite did not finish in {suite.SUITE_TIMEOUT_S}s:\n{output}")
        log = "\n".join(running.log[-40:])
    summary = suite._summary(out_dir)
    print(
        f"\nconformance {version} against {url} in the bundle ({time.monotonic() - started:.1f}s):\n{summary}"
    )
    if result.returncode != 0:
        pytest.fail(
            f"conformance {version} exited {result.returncode}.\n\n{summary}\n\n"
            f"stderr:\n{result.stderr[-3000:]}\nbundle log (tail):\n{log}"
        )
