"""Every document conversion in a child process, under a time and a memory budget, cancellable.

Why a process and not a thread: the parsers are C, C++ and Rust extensions (PDFium, calamine,
libxml2). A thread can neither be stopped (a parser stuck in a hostile file's loop holds it until
it returns) nor held to a memory budget (an allocation that succeeds in a thread grows the server).
A child process gets `RLIMIT_AS` (its address space may grow by `memory_bytes` and no more: an
allocation beyond fails inside the parser, which reports MemoryError or dies), and is killed with
SIGKILL at its deadline or when the request is cancelled. Whatever a file does to the parser, the
server loses at most that child.

Cost: children are forked from a forkserver (multiprocessing's "forkserver" start method), a clean
single-threaded process started on the first conversion that has the converters imported already.
That first start costs ~0.5 s once; each conversion after it ~10 ms to fork, against ~0.1 ms for a
thread, which is small beside any real conversion (a 100-page PDF takes ~60 ms to read).

The child writes its result as JSON on a pipe (never pickle: a subverted child must not be able to
run code in the server); the server reads it in a worker thread, so the event loop keeps answering
(pings included) while a document converts. At most `SLOTS` conversions run at once, so a burst of
documents costs at most SLOTS times the memory budget.

The child's stdout is pointed at stderr before any converter runs (in the forkserver itself, see
`_forkserver`): on stdio, stdout carries the MCP protocol, and a library's stray print must not
corrupt it. Where the platform has no forkserver (Windows) children are spawned, and where it has
no `resource` module (Windows) the memory budget is not enforced: the time budget still is. The
budget is "the child's address space now, plus `memory_bytes`", and only Linux says cheaply what
the address space is now (`mcp_batteries.platform.address_space_bytes`): on macOS only core
dumps are turned off and the time budget applies.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
from mcp_batteries.platform import address_space_bytes, peak_rss_kib

from .model import Document, DocumentError, FailureKind, Job

logger = logging.getLogger(__name__)

#: Conversions running at once (each may use its whole memory budget).
SLOTS = 2
_slots: anyio.Semaphore | None = None


@dataclass(frozen=True)
class Budget:
    seconds: float = 30.0
    #: Address space a conversion may add to the worker's own (the interpreter and the converters).
    memory_bytes: int = 1024 * 1024 * 1024


class ConversionFailed(Exception):
    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# multiprocessing makes every child import the parent's main module again (so that objects defined
# there can be unpickled), unless the child's own __main__ already has that file name. For a console
# script that is the whole server stack, ~0.4 s per conversion, and a child needs none of it. The
# forkserver (`_forkserver`) therefore gives its __main__ the parent's main file name, which it
# reads from this variable; it is set here, at import, before the server starts any thread.
MAIN_PATH_VARIABLE = "MCP_FETCH_CONVERTER_PARENT_MAIN"
_main_file = getattr(sys.modules.get("__main__"), "__file__", None)
if _main_file:
    os.environ.setdefault(MAIN_PATH_VARIABLE, os.path.normpath(_main_file))


@cache
def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["mcp_fetch.documents._forkserver"])
        return context
    return multiprocessing.get_context("spawn")


def _semaphore() -> anyio.Semaphore:
    global _slots
    if _slots is None:
        _slots = anyio.Semaphore(SLOTS)
    return _slots


async def convert_isolated(job: Job, budget: Budget) -> Document:
    """`job` converted in a child process; ConversionFailed says why not (time, memory, the file)."""
    deadline = anyio.current_time() + budget.seconds
    with anyio.move_on_after(budget.seconds) as waiting:
        await _semaphore().acquire()
    if waiting.cancelled_caught:
        raise ConversionFailed(
            "limit",
            f"No conversion slot became free within the {budget.seconds:g} s conversion time budget "
            f"({SLOTS} documents are being converted); try again shortly.",
        )
    try:
        return await _run(job, budget, deadline)
    finally:
        _semaphore().release()


async def _run(job: Job, budget: Budget, deadline: float) -> Document:
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(  # type: ignore[attr-defined]
        target=_child, args=(sender, job, budget.memory_bytes), name="mcp-fetch-convert", daemon=True
    )
    started = time.perf_counter()
    timed_out = False
    payload: bytes | None = None

    async def kill_at_deadline() -> None:
        nonlocal timed_out
        try:
            await anyio.sleep_until(deadline)
            timed_out = True
        finally:
            # On the deadline and on cancellation: killing is what ends the reading thread at once.
            _kill(process)

    limit = 4 * job.limits.max_output_chars + 1024 * 1024
    try:
        # Shielded: once asked to start, the process is always known here, so it is always killed.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(process.start)
        sender.close()
        async with anyio.create_task_group() as group:
            group.start_soon(kill_at_deadline)
            try:
                # Shielded so the thread is always awaited; the sibling task sees a cancellation and
                # kills the child, which ends the read.
                with anyio.CancelScope(shield=True):
                    payload = await anyio.to_thread.run_sync(_receive, receiver, limit)
            finally:
                group.cancel_scope.cancel()
    finally:
        # Whatever happened (an answer, a deadline, a cancellation, an error starting it), the child
        # never outlives its request, and it is reaped before this returns.
        sender.close()
        _kill(process)
        receiver.close()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_join, process)
    elapsed = time.perf_counter() - started
    # A cancelled caller gets its cancellation here, not an error about the child it killed.
    await anyio.lowlevel.checkpoint()
    if payload is None:
        raise ConversionFailed(*_death(job, process.exitcode, timed_out, budget))
    try:
        answer = json.loads(payload)
    except (ValueError, RecursionError) as exc:
        raise ConversionFailed("upstream", "The document converter sent an unreadable answer.") from exc
    if "error" in answer:
        raise ConversionFailed(answer["error"]["kind"], answer["error"]["message"])
    document = Document.from_json(answer["document"])
    logger.debug(
        "converted %s (%d bytes) in %.3f s, converter peak RSS %s KiB",
        job.format,
        len(job.body),
        elapsed,
        document.extra.get("peak_rss_kib"),
    )
    return document


def _receive(receiver: multiprocessing.connection.Connection, limit: int) -> bytes | None:
    try:
        return receiver.recv_bytes(limit)
    except (EOFError, OSError):  # the child died or was killed, or sent more than the limit
        return None


def _join(process: Any) -> None:
    with contextlib.suppress(AssertionError, ValueError):  # never started
        process.join(5)


def _kill(process: Any) -> None:
    try:
        if process.is_alive():
            process.kill()
    except (OSError, ValueError, AssertionError):  # already reaped, or never started
        pass


def _death(job: Job, exitcode: int | None, timed_out: bool, budget: Budget) -> tuple[FailureKind, str]:
    from .detect import NAMES

    what = NAMES.get(job.format, "document")
    if timed_out:
        return (
            "limit",
            f"Converting the {what} took longer than the {budget.seconds:g} s conversion time budget; it was "
            "stopped. The operator can raise --document-timeout.",
        )
    mib = budget.memory_bytes // (1024 * 1024)
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name if -exitcode in signal.valid_signals() else str(-exitcode)
        return (
            "limit",
            f"Converting the {what} stopped the converter ({name}), most likely by exceeding the {mib} MiB "
            "memory budget; the file is too large or malformed. The operator can raise --document-memory.",
        )
    return "upstream", f"The converter of the {what} ended without an answer (exit status {exitcode})."


# --- in the child ---------------------------------------------------------------------------------


def _child(sender: multiprocessing.connection.Connection, job: Job, memory_bytes: int) -> None:
    _protect_stdout()
    os.environ["RUST_BACKTRACE"] = "0"  # a Rust parser out of memory logs one line, not a backtrace
    _limit_memory(memory_bytes)
    try:
        from .worker import convert

        document = convert(job)
        document.extra["peak_rss_kib"] = peak_rss_kib()
        payload = b'{"document": ' + document.to_json() + b"}"
    except DocumentError as exc:
        payload = _error(exc.kind, exc.message)
    except MemoryError:
        payload = _error(
            "limit",
            f"The document needs more than the {memory_bytes // (1024 * 1024)} MiB memory budget of a "
            "conversion; it was not converted. The operator can raise --document-memory.",
        )
    except RecursionError:
        payload = _error("limit", "The document is nested too deeply to convert.")
    except Exception as exc:  # a parser's own complaint about a malformed file
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        payload = _error("invalid", f"The document could not be converted; it seems damaged ({detail}).")
    try:
        sender.send_bytes(payload)
    finally:
        sender.close()


def _error(kind: FailureKind, message: str) -> bytes:
    return json.dumps({"error": {"kind": kind, "message": message}}).encode()


def _protect_stdout() -> None:
    with contextlib.suppress(OSError):
        os.dup2(2, 1)
    sys.stdout = sys.stderr


def _limit_memory(memory_bytes: int) -> None:
    try:
        import resource
    except ImportError:  # Windows: only the time budget applies
        return
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        current = address_space_bytes()
        if current is not None:
            limit = current + memory_bytes
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):  # macOS refuses RLIMIT_AS below the hard limit in some setups
        logger.debug("the memory budget of a conversion could not be set", exc_info=True)


__all__ = ["Budget", "ConversionFailed", "Job", "convert_isolated"]
