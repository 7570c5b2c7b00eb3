"""The wire and the SDK: JSON-RPC frames in and out, tool arguments held to their JSON types,
and every private attribute of the `mcp` SDK we touch (`sdk.py`, pinned by tests/shared/protocol).

Owns: `frames` (each inbound frame dispatched or answered; each outbound message encoded or
replaced), `strict` (strict argument models), `integers` (the integers a client
may send: JSON's exact range; cursors), `trace` (a request's `_meta` trace context, in our
logs), `sdk`. May import: `errors` only; everything
else in the runtime builds on this room.
"""
