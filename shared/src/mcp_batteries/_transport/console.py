"""What a server says to the person running it: logging and lines on stderr, never stdout.

On stdio, stdout belongs to the protocol; every transport and the bundle log here.
"""

from __future__ import annotations

import gc
import logging
import sys

from mcp_batteries._protocol.trace import TraceLogFilter
from mcp_batteries._safety.redact import RedactingFormatter

__all__ = ["configure_logging", "say", "tune_gc"]


def configure_logging(level: str) -> None:
    """Logs go to stderr, always: on stdio, stdout belongs to the protocol. A line logged while
    handling a request that carried a trace context names its trace (`_protocol/trace.py`)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(TraceLogFilter())
    # Through the one redaction: no log line shows a password, whichever code wrote it.
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s:%(trace)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("uvicorn.access", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def say(message: str) -> None:
    """A line for a person watching the terminal (stderr, never stdout)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def tune_gc() -> None:
    """Keep the cyclic garbage collector from dominating big responses, once start-up is over.

    A large result (10,000 rows, a long listing) allocates tens of thousands of containers that
    hold no cycles; at the default threshold (700) collection after collection scans them, and
    full collections re-scan every module and model loaded at start-up too (measured: ~50 ms of
    a ~130 ms query). Start-up objects live as long as the process, so they are frozen out of
    the collector (reference counting still frees them), and young collections run after 50,000
    net allocations rather than 700.
    """
    gc.freeze()
    gc.set_threshold(50_000)
