"""Public: blocking work off the event loop, with progress and cancellation that reach it.

    from mcp_batteries.work import in_thread, run_cancellable, progress_reporter, CancelToken, NEVER

Every blocking call a tool makes runs through `in_thread` (or `run_cancellable` when it can be
long: the worker checks its `CancelToken` between steps), so the server keeps answering pings.
"""

from mcp_batteries._work.progress import (
    NEVER,
    Cancelled,
    CancelToken,
    Progress,
    in_thread,
    progress_reporter,
    run_cancellable,
)

__all__ = [
    "NEVER",
    "CancelToken",
    "Cancelled",
    "Progress",
    "in_thread",
    "progress_reporter",
    "run_cancellable",
]
