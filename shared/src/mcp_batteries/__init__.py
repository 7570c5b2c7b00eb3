"""MCP Batteries: the runtime every server is built on.

Servers import only the public modules (each with `__all__`; tests/shared/test_structure.py
fails on anything else):

    mcp_batteries.definition   ServerDefinition, ServerSettings, PathList, NameList
    mcp_batteries.server       BatteriesServer, current_caller, Caller
    mcp_batteries.errors       BatteriesError and its kinds, ConfigError
    mcp_batteries.live         LiveResources, LiveSource, WatchTarget, RootsTracker, ...
    mcp_batteries.safety       path containment and safe opens, names that are not clean text
    mcp_batteries.work         in_thread, run_cancellable, progress, cancellation
    mcp_batteries.testing      the test kit (tests only)

Everything else lives in rooms, private subpackages by concern (`_protocol`, `_safety`, `_work`,
`_core`, `_live`, `_signin`, `_transport`, `_entry`, `_bundle`, `_testing`), each saying in its
docstring what it owns and what it may import. The map, the allowed arrows and the path of one
request: docs/architecture.md.
"""
