"""Work off the event loop: blocking calls in worker threads, with progress and cancellation.

Owns: `progress`. May import: `errors`.
"""
