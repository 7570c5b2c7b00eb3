"""Live resources: what to watch for a subscribed URI, the OS watches, and client roots.

Owns: `resources` (`LiveResources`: interest -> watches -> one notification per change and
URI), `watch` (`WatchService`: OS file watches for a changing set of targets), `bus`
(`ChangeRelay`: changes shared with the other replicas over PostgreSQL LISTEN/NOTIFY or Redis
pub/sub, once per subscriber) and `roots` (`RootsTracker`: client roots narrow configured
values). May import: `_core`, `_protocol`, `_safety`, `_platform`, `errors`.
"""
