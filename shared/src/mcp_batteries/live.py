"""Public: resources that stay live (a server's `live.py` and `server.py` import from here).

    from mcp_batteries.live import LiveResources, LiveSource, WatchTarget, Changes, Hits

A server declares a `LiveSource` (what to watch for a URI, and optionally how raw changes map
back to URIs, or what to poll) and hands it to `LiveResources`; `RootsTracker` narrows what the
operator configured by the client's roots. See docs/architecture.md, "Live resources".
"""

from mcp_batteries._live.resources import Changes, Hits, LiveResources, LiveSource, Pollable, Resolving
from mcp_batteries._live.roots import RootsTracker
from mcp_batteries._live.watch import WatchTarget, has_more_directories

__all__ = [
    "Changes",
    "Hits",
    "LiveResources",
    "LiveSource",
    "Pollable",
    "Resolving",
    "RootsTracker",
    "WatchTarget",
    "has_more_directories",
]
