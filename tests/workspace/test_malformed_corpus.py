"""Every server survives the malformed-input corpus over stdio and HTTP, in both protocol eras.

For each server in `malformed_corpus.SERVERS`, one process per transport (stdio: one per era,
since the first request fixes a stdio connection's era; HTTP: one serving both) receives every
frame of the corpus and every argument case generated from the tools it lists. After each one
the server must answer a ping, each request with an id must get exactly one answer, and frames
and arguments that are wrong must be refused with the answer the corpus names.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import replace
from itertools import count
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.abc import Process
from mcp.shared.inbound import NAME_BEARING_METHODS, encode_header_value
from mcp_batteries.testing import script_path

from .malformed_corpus import (
    FRAMES,
    ID,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MODERN_VERSION,
    SERVERS,
    ArgumentCase,
    Era,
    Frame,
    Target,
    argument_cases,
    request,
)

pytestmark = pytest.mark.anyio

LEGACY_VERSION = "2025-06-18"
HEADER_MISMATCH = -32020
ANSWER_TIMEOUT_S = 30.0
#: Nine servers start at once on a shared machine: their first answer may take a while.
STARTUP_TIMEOUT_S = 120.0
_URL_IN_BANNER = re.compile(r"at (http://\S+) \(")
_ids = count()


def new_id() -> str:
    return f"c{next(_ids)}"


def with_id(frame: bytes, rid: str) -> bytes:
    return frame.replace(ID, json.dumps(rid).encode())


def ping(era: Era) -> bytes:
    # 2026-07-28 has no ping; server/discover is its cheapest request.
    return request("ping", None, era) if era == "legacy" else request("server/discover", {}, era)


def initialize() -> bytes:
    params = {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "corpus", "version": "1"},
    }
    return request("initialize", params, "legacy")


INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def flatten(messages: list[Any]) -> list[dict[str, Any]]:
    flat: list[dict[str, Any]] = []
    for message in messages:
        flat.extend(m for m in (message if isinstance(message, list) else [message]) if isinstance(m, dict))
    return flat


def answers_to(messages: list[Any], rid: str) -> list[dict[str, Any]]:
    return [m for m in flatten(messages) if "method" not in m and m.get("id") == rid]


def null_errors(messages: list[Any]) -> list[Any]:
    """Replies that answer a frame whose id could not be read (one array counts once)."""
    found = []
    for message in messages:
        items = message if isinstance(message, list) else [message]
        if items and all(isinstance(m, dict) and m.get("id") is None and "error" in m for m in items):
            found.append(message)
    return found


class Session:
    """One connection to a server that takes raw frames and returns what came back for each."""

    era: Era
    #: Error codes this transport may answer a bad request with before looking at it.
    also_acceptable: frozenset[int] = frozenset()

    async def exchange(self, frame: bytes, wait_for: str | None) -> list[Any]:
        raise NotImplementedError

    async def everything(self) -> list[Any]:
        """All messages received so far (for the exactly-once check across the whole run)."""
        raise NotImplementedError


class StdioSession(Session):
    def __init__(self, process: Process, era: Era) -> None:
        self.era = era
        self._process = process
        self._messages: list[Any] = []
        self._arrived = anyio.Event()

    async def read_forever(self) -> None:
        assert self._process.stdout is not None
        buffer = b""
        async for chunk in self._process.stdout:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    self._messages.append(json.loads(line))
            self._arrived.set()
            self._arrived = anyio.Event()

    async def _send(self, data: bytes) -> None:
        assert self._process.stdin is not None
        await self._process.stdin.send(data + b"\n")

    async def _wait_answer(self, rid: str, timeout: float = ANSWER_TIMEOUT_S) -> None:
        with anyio.fail_after(timeout):
            while not answers_to(self._messages, rid):
                await self._arrived.wait()

    async def start(self) -> None:
        if self.era == "legacy":
            await self._send(with_id(initialize(), "init"))
            await self._wait_answer("init", STARTUP_TIMEOUT_S)
            await self._send(INITIALIZED)
        else:
            await self._send(with_id(ping("modern"), "init"))
            await self._wait_answer("init", STARTUP_TIMEOUT_S)

    async def exchange(self, frame: bytes, wait_for: str | None) -> list[Any]:
        mark = len(self._messages)
        ping_id = new_id()
        await self._send(frame + b"\n" + with_id(ping(self.era), ping_id))
        await self._wait_answer(ping_id)
        if wait_for is not None:
            await self._wait_answer(wait_for)
        return self._messages[mark:]

    async def everything(self) -> list[Any]:
        await self.exchange(b"", None)  # a last ping: anything late has arrived by then
        return self._messages


class HttpSession(Session):
    def __init__(self, http: httpx.AsyncClient, url: str, era: Era) -> None:
        self.era = era
        self._http = http
        self._url = url
        self._session_id: str | None = None
        self._messages: list[Any] = []
        if era == "modern":
            self.also_acceptable = frozenset({HEADER_MISMATCH})

    async def start(self) -> None:
        if self.era == "legacy":
            response = await self._post(with_id(initialize(), "init"))
            self._session_id = response.headers.get("mcp-session-id")
            await self._post(INITIALIZED)

    def _headers(self, frame: bytes) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self.era == "legacy":
            headers["mcp-protocol-version"] = LEGACY_VERSION
            if self._session_id:
                headers["mcp-session-id"] = self._session_id
            return headers
        headers["mcp-protocol-version"] = MODERN_VERSION
        try:
            body = json.loads(frame)
        except (ValueError, RecursionError):
            return headers
        if isinstance(body, dict) and isinstance(body.get("method"), str) and body["method"].isascii():
            headers["mcp-method"] = body["method"]
            key = NAME_BEARING_METHODS.get(body["method"])
            params = body.get("params")
            # A name too long for an HTTP header is left out (the server then says the header is
            # missing): uvicorn drops a connection whose headers exceed its limit.
            if (
                key
                and isinstance(params, dict)
                and isinstance(params.get(key), str)
                and len(params[key]) < 4096
            ):
                with suppress(UnicodeEncodeError):
                    headers["mcp-name"] = encode_header_value(params[key])
        return headers

    async def _post(self, frame: bytes) -> httpx.Response:
        return await self._http.post(self._url, content=frame, headers=self._headers(frame))

    async def _round_trip(self, frame: bytes) -> list[Any]:
        response = await self._post(frame)
        text = response.text
        try:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                lines = [line[5:] for line in text.splitlines() if line.startswith("data:")]
                got = [json.loads(line) for line in lines if line.strip()]
            elif text.strip():
                got = [json.loads(text)]
            else:
                got = []
        except ValueError:
            raise AssertionError(
                f"HTTP {response.status_code} with a body that is not JSON: {text[:200]!r}"
            ) from None
        self._messages.extend(got)
        return got

    async def exchange(self, frame: bytes, wait_for: str | None) -> list[Any]:
        got = await self._round_trip(frame)
        ping_id = new_id()
        pong = await self._round_trip(with_id(ping(self.era), ping_id))
        assert answers_to(pong, ping_id), f"no answer to the ping after the frame: {pong!r}"
        return got

    async def everything(self) -> list[Any]:
        return self._messages


# -- checks ----------------------------------------------------------------------------------


def check_frame_outcome(case: Frame, rid: str, got: list[Any], also: frozenset[int]) -> str | None:
    """What is wrong with what came back for `case` (None when it is right); `also`: codes the
    transport may answer with instead (2026-07-28 HTTP checks its routing headers first)."""
    mine = answers_to(got, rid)
    nulls = null_errors(got)
    if case.is_response and HEADER_MISMATCH in also:  # 2026-07-28 HTTP: clients post no responses
        case = replace(case, expect="null", code=INVALID_REQUEST)
    if case.expect == "id":
        if len(mine) != 1 or nulls:
            return f"expected one answer to its id, got {got!r:.300}"
        answer = mine[0]
        if case.code is not None and answer.get("error", {}).get("code") not in {case.code, *also}:
            return f"expected error {case.code}, got {answer!r:.300}"
    elif case.expect == "null":
        if len(nulls) != 1 or mine:
            return f"expected one error with id null, got {got!r:.300}"
        first = nulls[0][0] if isinstance(nulls[0], list) else nulls[0]
        if case.code is not None and first["error"]["code"] != case.code:
            return f"expected error {case.code}, got {first!r:.300}"
    elif mine or nulls:
        return f"expected no answer, got {got!r:.300}"
    return None


def check_argument_outcome(case: ArgumentCase, rid: str, got: list[Any]) -> str | None:
    mine = answers_to(got, rid)
    if len(mine) != 1:
        return f"expected one answer, got {len(mine)}: {got!r:.300}"
    answer = mine[0]
    if case.expect == "any":
        return None
    error = answer.get("error")
    result = answer.get("result") or {}
    if case.code is not None:
        if not error or error.get("code") != case.code or repr(case.argument) not in error.get("message", ""):
            return f"expected error {case.code} naming {case.argument!r}, got {answer!r:.300}"
        return None
    if error is not None:
        if error.get("code") != INVALID_PARAMS:
            return f"expected a refusal naming {case.argument!r}, got {answer!r:.300}"
        return None
    text = " ".join(block.get("text", "") for block in result.get("content", []))
    if not result.get("isError") or (case.argument and case.argument not in text):
        return f"expected an isError result naming {case.argument!r}, got {answer!r:.300}"
    return None


async def run_corpus(session: Session, label: str, target: Target, failures: list[str]) -> None:
    await session.start()  # type: ignore[attr-defined]
    for case in FRAMES:
        rid = new_id()
        frame = with_id(case.build(session.era), rid)
        try:
            got = await session.exchange(frame, rid if case.expect == "id" else None)
        except (OSError, TimeoutError, httpx.HTTPError, AssertionError) as exc:
            failures.append(f"{label}: frame {case.name!r}: no answer or no ping after it ({exc!r:.200})")
            return
        problem = check_frame_outcome(case, rid, got, session.also_acceptable)
        if problem:
            failures.append(f"{label}: frame {case.name!r}: {problem}")
    rid = new_id()
    listed = answers_to(
        await session.exchange(with_id(request("tools/list", {}, session.era), rid), rid), rid
    )
    tools = listed[0]["result"]["tools"]
    assert tools, f"{label}: no tools listed"
    for tool in tools:
        for argument_case in argument_cases(tool, target.plausible):
            rid = new_id()
            try:
                got = await session.exchange(with_id(argument_case.frame(session.era), rid), rid)
            except (OSError, TimeoutError, httpx.HTTPError, AssertionError) as exc:
                failures.append(
                    f"{label}: {argument_case.name}: no answer or no ping after it ({exc!r:.200})"
                )
                return
            problem = check_argument_outcome(argument_case, rid, got)
            if problem:
                failures.append(f"{label}: {argument_case.name}: {problem}")
    seen = Counter(m["id"] for m in flatten(await session.everything()) if "method" not in m and m.get("id"))
    twice = sorted(rid for rid, times in seen.items() if times > 1)
    if twice:
        failures.append(f"{label}: answered more than once: {twice[:10]}")


# -- processes -------------------------------------------------------------------------------


@asynccontextmanager
async def stdio_process(target: Target, args: list[str], era: Era, log: Path) -> AsyncIterator[StdioSession]:
    with log.open("wb") as stderr:
        process = await anyio.open_process([script_path(target.script), *args], stderr=stderr)
        session = StdioSession(process, era)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.read_forever)
                yield session
                tg.cancel_scope.cancel()
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
                with anyio.move_on_after(15):
                    await process.wait()
                if process.returncode is None:
                    process.kill()


@asynccontextmanager
async def http_process(target: Target, args: list[str], log: Path) -> AsyncIterator[str]:
    with log.open("wb") as stderr:
        process = subprocess.Popen(  # noqa: ASYNC220 - runs beside the test
            [script_path(target.script), *args, "--transport", "http", "--port", "0"], stderr=stderr
        )
        try:
            with anyio.fail_after(STARTUP_TIMEOUT_S):
                while not (found := _URL_IN_BANNER.search(log.read_text(errors="replace"))):
                    assert process.poll() is None, log.read_text(errors="replace")
                    await anyio.sleep(0.05)  # the banner is in a file: nothing to wait on
            yield found.group(1)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                await anyio.to_thread.run_sync(lambda: process.wait(timeout=15))
            except subprocess.TimeoutExpired:
                process.kill()


async def survive(name: str, target: Target, scratch: Path, failures: list[str]) -> None:
    """The whole corpus against one server: stdio in each era, HTTP in both, side by side."""

    async def over_stdio(era: Era) -> None:
        home = scratch / f"{name}-stdio-{era}"
        home.mkdir()
        async with stdio_process(target, target.prepare(home), era, home / "stderr.log") as session:
            await run_corpus(session, f"{name} stdio {era}", target, failures)

    async def over_http() -> None:
        home = scratch / f"{name}-http"
        home.mkdir()
        async with (
            http_process(target, target.prepare(home), home / "stderr.log") as url,
            httpx.AsyncClient(timeout=httpx.Timeout(60)) as http,
            anyio.create_task_group() as eras,
        ):
            for era in ("legacy", "modern"):
                eras.start_soon(
                    run_corpus, HttpSession(http, url, era), f"{name} http {era}", target, failures
                )

    async with anyio.create_task_group() as tg:
        tg.start_soon(over_stdio, "legacy")
        tg.start_soon(over_stdio, "modern")
        tg.start_soon(over_http)


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_every_server_survives_the_malformed_corpus_and_answers_each_request_once(
    tmp_path: Path,
) -> None:
    # All servers at once: the time goes into waiting on processes (start-up, round trips), so
    # running them side by side costs about as much as the slowest one.
    failures: list[str] = []
    async with anyio.create_task_group() as tg:
        for name, target in SERVERS.items():
            tg.start_soon(survive, name, target, tmp_path, failures)
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:60])


def test_the_corpus_covers_what_the_issues_list() -> None:
    names = {frame.name for frame in FRAMES}
    for required in (
        "not JSON",
        "truncated JSON that carries an id",
        "a batch",
        'params "x"',
        "params []",
        "params 123",
        "method 123",
        "method null",
        "id 1.5",
        "nesting 5,000 deep",
    ):
        assert required in names
