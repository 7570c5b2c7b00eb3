"""The test kits behind `mcp_batteries.testing`: real clients for any server, and an OAuth issuer.

Owns: `kit` (both eras in-process, stdio and HTTP subprocesses, notification waits),
`tasks_client` (the tasks extension from the client's side) and `oauth_issuer` (a stand-in
authorization server on loopback). May import: `_transport`,
`_core`, `errors`. Used only by tests and benchmarks.
"""
