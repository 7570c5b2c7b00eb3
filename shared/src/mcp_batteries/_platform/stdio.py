"""Claiming stdin and stdout for the protocol, and whether the event loop can wait on them.

While a stdio server runs, fds 0 and 1 are taken for the protocol (private duplicates) and the
originals point elsewhere (0 at the null device, 1 at stderr), so a stray `print` or a child
process cannot corrupt the protocol stream. The POSIX family duplicates above fd 2 with
close-on-exec and restores stdout's flags afterwards (the transport makes it non-blocking); the
portable family uses `os.dup` (non-inheritable, PEP 446) and never changes the flags.

`loop_waits_on_stdio()`: on POSIX the event loop waits on a pipe's descriptor (`wait_readable`),
so reading is cancellable at once; Windows' event loop cannot wait on pipes, so the portable family
reads stdin in a daemon thread and writes stdout from worker threads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from mcp_batteries._platform import family

__all__ = ["claimed_stdio", "loop_waits_on_stdio"]


def loop_waits_on_stdio() -> bool:
    return family.active() == "posix"


@contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """Private duplicates of fds 0 and 1 for the protocol; the originals point elsewhere meanwhile."""
    if family.active() == "posix":
        with _claimed_posix() as fds:
            yield fds
    else:
        with _claimed_portable() as fds:
            yield fds


def _point_elsewhere() -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)


@contextmanager
def _claimed_posix() -> Iterator[tuple[int, int]]:
    import fcntl

    sys.stdout.flush()
    stdin_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    stdout_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    _point_elsewhere()
    stdout_flags = fcntl.fcntl(stdout_fd, fcntl.F_GETFL)
    try:
        yield stdin_fd, stdout_fd
    finally:
        sys.stdout.flush()  # stray output still goes to stderr
        fcntl.fcntl(stdout_fd, fcntl.F_SETFL, stdout_flags)
        os.dup2(stdin_fd, 0)
        os.dup2(stdout_fd, 1)
        os.close(stdin_fd)
        os.close(stdout_fd)


@contextmanager
def _claimed_portable() -> Iterator[tuple[int, int]]:
    sys.stdout.flush()
    stdin_fd = os.dup(0)
    stdout_fd = os.dup(1)
    _point_elsewhere()
    try:
        yield stdin_fd, stdout_fd
    finally:
        sys.stdout.flush()
        os.dup2(stdin_fd, 0)
        os.dup2(stdout_fd, 1)
        os.close(stdin_fd)
        os.close(stdout_fd)
