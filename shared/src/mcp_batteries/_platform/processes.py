"""Ending a child process with what it started, and what the OS says about our own memory.

A child that may start helpers of its own (git starts ssh, credential helpers, upload-pack) is
started in its own session (`start_new_session=True`, a no-op on Windows). POSIX ends the whole
process group with SIGKILL; Windows has no process groups in that sense: `taskkill /T` ends the
tree, then the child itself is terminated.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import suppress

__all__ = ["address_space_bytes", "kill_process_tree", "peak_rss_kib"]


def kill_process_tree(process: subprocess.Popen[bytes]) -> None:
    """Kill a child started in a session or process group of its own (`start_new_session=True`,
    `process_group=0`) and everything it started; never raises."""
    if hasattr(os, "killpg"):
        with suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
    elif sys.platform == "win32":
        with suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["taskkill", "/F", "/T", "/PID", str(process.pid)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
                creationflags=subprocess.CREATE_NO_WINDOW,
            )
    with suppress(OSError):
        process.kill()


def address_space_bytes() -> int | None:
    """This process's virtual memory size, where the OS tells it cheaply (Linux: /proc); else None."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def peak_rss_kib() -> int | None:
    """This process's peak resident memory in KiB, where `resource` exists (not on Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # macOS counts bytes, Linux KiB
