"""The official MCP conformance suite (`@modelcontextprotocol/conformance`), every scenario, both eras,
against the fixture, every real server and the bundle.

Two runs of the suite per target, each scenario at its revision's wire version:

    conformance server --url URL --requirements 2026-07-28        (sessionless; with the tasks extension)
    conformance server --url URL --suite all --spec-version 2025-11-25      (the initialize handshake)

Targets, each served over Streamable HTTP on loopback, all started at once and tested concurrently:

- the fixture server (`fixture_server.py`, built on `BatteriesServer`), alone and mounted in the
  bundle (`mcp-batteries serve`, `tests/bundle/serve_with_fixture.py`): it provides the suite's own
  test tools, resources and prompts, so every scenario is judged whole, by the suite's exit status
  with `expected-failures.yml` (kept empty; a listed scenario that passes fails the run too);
- every real server (filesystem, git, sql, fetch, tasks), alone and mounted in the same bundle,
  with a little real data each: judged check by check from each scenario's `checks.json`. Every
  check must pass but those listed in `FIXTURE_CHECKS`, which call the suite's test tools
  (`test_simple_text`, `slow_compute`, `test://static-text`, ...) that only the fixture has; their
  `wire-schema-valid` check still counts (every message a real server sends must match the schema).

The suite version is pinned by `package.json` + `package-lock.json` next to this file and installed
with `npm ci` into `.tools/conformance` (git-ignored; reinstalled when the pin changes), with
Node >= 22 (`tests/node.py`). Only npm and PyPI need to be reachable.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from mcp_batteries.testing import script_path

from ..node import INSTALL_TIMEOUT_S, ensure_pinned, node_env

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TOOLS = ROOT / ".tools"
SUITE_DIR = TOOLS / "conformance"
SUITE_CLI = SUITE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
FIXTURE = HERE / "fixture_server.py"
BUNDLE_WITH_FIXTURE = ROOT / "tests" / "bundle" / "serve_with_fixture.py"
EXPECTED_FAILURES = HERE / "expected-failures.yml"

#: Each revision's run: its wire version decides how every scenario talks to the server.
SPEC_RUNS: Mapping[str, tuple[str, ...]] = {
    "2026-07-28": ("--requirements", "2026-07-28"),
    "2025-11-25": ("--suite", "all", "--spec-version", "2025-11-25"),
}
REAL_SERVERS = ("filesystem", "git", "sql", "fetch", "tasks")
SUITE_TIMEOUT_S = 240
STARTUP_TIMEOUT_S = 90
#: Suite processes at once: each is mostly waiting on the servers, which share two cores in CI.
CONCURRENT_RUNS = 6

ALL = frozenset({"*"})
#: Checks that call the suite's own test fixtures, which only the fixture server provides, by
#: scenario (ALL: every check but `wire-schema-valid`). Read from each scenario's source in the
#: pinned suite; the test fails if a scenario named here no longer runs.
FIXTURE_CHECKS: Mapping[str, frozenset[str]] = {
    # test_* tools, test:// resources, test_* prompts of the "everything" fixture
    "completion-complete": ALL,  # completes test_prompt_with_arguments
    "tools-call-simple-text": ALL,
    "tools-call-image": ALL,
    "tools-call-audio": ALL,
    "tools-call-embedded-resource": ALL,
    "tools-call-mixed-content": ALL,
    "tools-call-with-logging": ALL,
    "tools-call-error": ALL,
    "tools-call-with-progress": ALL,
    "tools-call-sampling": ALL,
    "tools-call-elicitation": ALL,
    "json-schema-2020-12": ALL,
    "elicitation-sep1034-defaults": ALL,
    "elicitation-sep1330-enums": ALL,
    "resources-read-text": ALL,
    "resources-read-binary": ALL,
    "resources-templates-read": ALL,
    "resources-subscribe": ALL,
    "resources-unsubscribe": ALL,
    "prompts-get-simple": ALL,
    "prompts-get-with-args": ALL,
    "prompts-get-embedded-resource": ALL,
    "prompts-get-with-image": ALL,
    # test_reconnection; the priming event and retry field are every server's
    "server-sse-polling": frozenset(
        {
            "outgoing-request",
            "incoming-response",
            "incoming-sse-event",
            "stream-closed",
            "server-sse-disconnect-resume",
        }
    ),
    # test_missing_capability, test_trigger_*_change, test_logging_tool, test_streaming_elicitation;
    # discovery, the _meta envelope, versions, removed methods and listen streams are every server's
    "server-stateless": frozenset(
        {
            "sep-2575-server-rejects-undeclared-capability",
            "sep-2575-missing-capability-http-400",
            "sep-2575-http-server-no-independent-requests-on-stream",
            "sep-2575-server-no-log-without-loglevel",
            "sep-2575-server-sends-prompts-list-changed-on-subscription",
            "sep-2575-server-sends-tools-list-changed-on-subscription",
        }
    ),
    # test_input_required_result_* tools and prompt (unsupported-methods lists only: every server's)
    "input-required-result-basic-elicitation": ALL,
    "input-required-result-basic-sampling": ALL,
    "input-required-result-basic-list-roots": ALL,
    "input-required-result-request-state": ALL,
    "input-required-result-multiple-input-requests": ALL,
    "input-required-result-multi-round": ALL,
    "input-required-result-missing-input-response": ALL,
    "input-required-result-non-tool-request": ALL,
    "input-required-result-result-type": ALL,
    "input-required-result-tampered-state": ALL,
    "input-required-result-capability-check": ALL,
    "input-required-result-ignore-extra-params": ALL,
    "input-required-result-validate-input": ALL,
    "http-custom-header-server-validation": ALL,  # a tool with x-mcp-header parameters
    # the tasks extension's greet / slow_compute / failing_job / confirm_delete / multi_input /
    # test_tool_with_task; advertising the extension, gating tasks/*, the removed methods and
    # unknown task ids are every server's
    "tasks-lifecycle": ALL,
    "tasks-wire-fields": ALL,
    "tasks-request-state-removal": ALL,
    "tasks-mrtr-input": ALL,
    "tasks-required-task-error": ALL,
    "tasks-mrtr-composition": ALL,
    "tasks-status-notifications": ALL,
    "tasks-capability-negotiation": frozenset(
        {"sep-2663-server-rejects-undeclared-client", "tasks-per-request-meta-opt-in"}
    ),
    "tasks-dispatch-and-envelope": frozenset(
        {
            "tasks-server-directed-creation-no-hint",
            "sep-2663-legacy-task-param-ignored",
            "tasks-immediate-result-shortcut",
            "tasks-result-type-complete-on-non-task-responses",
            "sep-2663-durable-create-strong-consistency",
        }
    ),
    "tasks-request-headers": frozenset(
        {
            "tasks-headers-tolerate-mcp-method-on-tools-call",
            "sep-2663-routing-headers-accepted-on-tasks-get",
            "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get",
        }
    ),
}

_URL_IN_BANNER = re.compile(r"at (http://\S+) \(")
_BUNDLE_IN_BANNER = re.compile(r"Streamable HTTP on (http://\S+) \(")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(INSTALL_TIMEOUT_S + STARTUP_TIMEOUT_S + 2 * SUITE_TIMEOUT_S),
]


# -- the suite ------------------------------------------------------------------------------------
def _ensure_suite(env: dict[str, str]) -> str:
    """Install the pinned suite into .tools/conformance (once per pin) and return its version."""
    ensure_pinned(HERE, SUITE_DIR, env)
    installed = SUITE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "package.json"
    version: str = json.loads(installed.read_text())["version"]
    return version


# -- the servers --------------------------------------------------------------------------------
@dataclass
class Process:
    """A server subprocess whose stderr is drained into `log`; `url` from its banner."""

    process: subprocess.Popen[bytes]
    banner: re.Pattern[str]
    log: list[str] = field(default_factory=list)
    url: str = ""
    announced: threading.Event = field(default_factory=threading.Event)

    def drain(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.log.append(line)
            match = self.banner.search(line)
            if match and not self.url:
                self.url = match.group(1)
                self.announced.set()
        self.announced.set()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def _started(command: list[str], banner: re.Pattern[str], env: Mapping[str, str]) -> Iterator[Process]:
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    running = Process(process, banner)
    reader = threading.Thread(target=running.drain, daemon=True)
    reader.start()
    try:
        yield running
    finally:
        running.stop()
        reader.join(timeout=5)


def _server_data(base: Path) -> dict[str, dict[str, str]]:
    """A little real data for each real server (in `base`), as each one's settings (TOML values)."""
    files = base / "files"
    (files / "docs").mkdir(parents=True)
    (files / "notes.txt").write_text("A file for the conformance suite to read.\n")
    (files / "docs" / "guide.md").write_text("# Guide\n")
    repos = base / "repos"
    repo = repos / "project"
    repo.mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "README.md").write_text("project\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    database = base / "app.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO customers (name) VALUES ('Ada')")
    return {
        "filesystem": {"directories": f'["{files}"]'},
        "git": {"directories": f'["{repos}"]'},
        "sql": {"databases": f'["sqlite:///{database}"]'},
        "fetch": {},
        "tasks": {"db": f'"{base / "tasks.db"}"'},
    }


def _toml(values: Mapping[str, str]) -> str:
    return "".join(f"{key} = {value}\n" for key, value in values.items())


@dataclass
class Target:
    name: str
    #: Judged whole by the suite (the fixture), or check by check (a real server).
    fixture: bool
    process: Process
    path: str = ""

    @property
    def url(self) -> str:
        return self.process.url + self.path


@contextmanager
def _targets(base: Path) -> Iterator[list[Target]]:
    """Every target, started at once; yields when all have announced their URLs."""
    env = {**os.environ, "HOME": str(base / "home"), "XDG_DATA_HOME": str(base / "home" / "data")}
    data = _server_data(base)
    bundle_file = base / "bundle.toml"
    bundle_file.write_text("".join(f"[{name}]\n{_toml(values)}\n" for name, values in data.items()))
    http = ["--transport", "http", "--port", "0"]
    with ExitStack() as stack:
        targets = [
            Target(
                "fixture",
                True,
                stack.enter_context(_started([sys.executable, str(FIXTURE), *http], _URL_IN_BANNER, env)),
            )
        ]
        for name in REAL_SERVERS:
            config = base / f"{name}.toml"
            config.write_text(_toml(data[name]))
            command = [script_path(f"mcp-{name}"), "--config", str(config), *http]
            targets.append(Target(name, False, stack.enter_context(_started(command, _URL_IN_BANNER, env))))
        bundle_command = [
            sys.executable,
            str(BUNDLE_WITH_FIXTURE),
            "--config",
            str(bundle_file),
            "--port",
            "0",
        ]
        bundle = stack.enter_context(_started(bundle_command, _BUNDLE_IN_BANNER, env))
        targets.append(Target("bundle/conformance-fixture", True, bundle, "/conformance-fixture/mcp"))
        targets.extend(Target(f"bundle/{name}", False, bundle, f"/{name}/mcp") for name in REAL_SERVERS)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        for target in targets:
            if (
                not target.process.announced.wait(max(0.0, deadline - time.monotonic()))
                or not target.process.url
            ):
                pytest.fail(
                    f"{target.name} did not announce its URL:\n" + "\n".join(target.process.log[-30:])
                )
        yield targets


# -- running and judging ------------------------------------------------------------------------
@dataclass
class SuiteRun:
    target: Target
    spec: str
    out_dir: Path
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    #: scenario -> [(check id, status, message)]
    checks: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    seconds: float = 0.0

    def collect(self) -> None:
        for checks_file in sorted(self.out_dir.glob("*/checks.json")):
            scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks_file.parent.name)
            self.checks[scenario] = [
                (c.get("id", ""), c.get("status", ""), c.get("errorMessage") or "")
                for c in json.loads(checks_file.read_text())
            ]

    def problems(self) -> list[str]:
        """What fails: the suite's verdict for the fixture; every check not needing fixtures otherwise."""
        found: list[str] = []
        if self.returncode is None:
            return [f"did not finish in {SUITE_TIMEOUT_S}s"]
        for scenario, checks in self.checks.items():
            needs_fixture = FIXTURE_CHECKS.get(scenario, frozenset())
            for check, status, message in checks:
                if status not in ("FAILURE", "WARNING"):
                    continue
                calls_fixtures = "*" in needs_fixture or check in needs_fixture
                if not self.target.fixture and check != "wire-schema-valid" and calls_fixtures:
                    continue
                found.append(f"{scenario}: {status} {check}: {message}".rstrip())
        if self.target.fixture and self.returncode != 0 and not found:
            found.append(f"the suite exited {self.returncode}:\n{self.stderr[-2000:]}")
        return found

    def counts(self) -> str:
        """`passed/total` scenarios (judged as above)."""
        bad = {problem.split(":", 1)[0] for problem in self.problems()}
        return f"{len(self.checks) - len(bad)}/{len(self.checks)}"


def _run_suite(run: SuiteRun, env: dict[str, str]) -> SuiteRun:
    command = [
        "node",
        str(SUITE_CLI),
        "server",
        "--url",
        run.target.url,
        *SPEC_RUNS[run.spec],
        "-o",
        str(run.out_dir),
    ]
    if run.target.fixture:
        command += ["--expected-failures", str(EXPECTED_FAILURES)]
    started = time.monotonic()
    try:
        result = subprocess.run(
            command, cwd=SUITE_DIR, env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S
        )
        run.returncode, run.stdout, run.stderr = result.returncode, result.stdout, result.stderr
    except subprocess.TimeoutExpired:
        pass
    run.seconds = time.monotonic() - started
    run.collect()
    return run


def test_every_scenario_in_both_eras_against_the_fixture_every_server_and_the_bundle(tmp_path: Path) -> None:
    started = time.monotonic()
    env = node_env()
    version = _ensure_suite(env)
    with _targets(tmp_path) as targets:
        ready = time.monotonic()
        runs = [
            SuiteRun(target, spec, tmp_path / "results" / target.name.replace("/", "-") / spec)
            for spec in SPEC_RUNS
            for target in targets
        ]
        with ThreadPoolExecutor(CONCURRENT_RUNS) as pool:
            finished = list(pool.map(lambda run: _run_suite(run, env), runs))
        logs = {target.name: "\n".join(target.process.log[-20:]) for target in targets}
    table = "\n".join(
        f"  {run.target.name:28} {run.spec}  {run.counts():>7} scenarios  ({run.seconds:.0f}s)"
        for run in finished
    )
    print(
        f"\nconformance {version}: servers ready in {ready - started:.0f}s, "
        f"all runs done in {time.monotonic() - started:.0f}s\n{table}"
    )
    seen = {scenario for run in finished for scenario in run.checks}
    stale = sorted(set(FIXTURE_CHECKS) - seen)
    assert not stale, f"FIXTURE_CHECKS names scenarios the suite no longer runs: {stale}"
    failures = [
        f"{run.target.name} at {run.spec}:\n    "
        + "\n    ".join(problems)
        + f"\n  server log (tail):\n{logs[run.target.name]}"
        for run in finished
        if (problems := run.problems())
    ]
    assert not failures, f"conformance {version}:\n{table}\n\n" + "\n\n".join(failures)
