"""Work off the event loop and past its request: blocking calls in worker threads, with progress
and cancellation; long calls that outlive their request as tasks, kept per caller and bounded.

Owns: `progress` and `tasks` (`TaskStore`; knows nothing of MCP). May import: `errors`.
"""
