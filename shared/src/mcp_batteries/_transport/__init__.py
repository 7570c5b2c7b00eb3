"""Transports: stdio and Streamable HTTP, their limits, and running a server on one.

Owns: `stdio` (our own: linear framing, frame errors answered, bounded shutdown), `http`
(uvicorn, the MCP endpoint, `/healthz`, drain on SIGTERM), `http_limits` (idle, slow and
surplus connections), `hosts` (Host/Origin checks against DNS rebinding), `events` (the
resumable-SSE store), `sessions` (handshake-era sessions recorded in the bus's engine, and
requests for them forwarded to the replica that holds them), `console` (logging and lines for a
person, on stderr) and `run` (a built server on the transport its settings choose).
May import: `_ops`, `_signin`, `_core`, `_protocol`, `_safety`, `_platform`, `errors`.
"""
