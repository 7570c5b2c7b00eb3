"""The test kits behind `mcp_batteries.testing`: real clients for any server, and an OAuth issuer.

Owns: `kit` (both eras in-process, stdio and HTTP subprocesses, notification waits),
`tasks_client` (the tasks extension from the client's side), `oauth_issuer` (a stand-in
authorization server on loopback) and `platforms` (each platform family in-process; a subprocess
that sees a platform without POSIX's path facilities).
May import: `_transport`, `_core`, `_platform`, `errors`. Used only by tests and benchmarks.
"""
