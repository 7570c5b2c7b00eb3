"""Live resources: what to watch for a subscribed URI, the OS watches, and client roots.

Owns: `resources` (`LiveResources`: interest -> watches -> one notification per change and
URI), `watch` (`WatchService`: OS file watches for a changing set of targets) and `roots`
(`RootsTracker`: client roots narrow configured values). May import: `_core`, `_protocol`,
`_safety`, `_platform`, `errors`.
"""
