"""Operating a server for a team: what it did, who did it, and how much each caller may do.

Owns: `observe` (`Ops`: one per HTTP app, attached to each of its servers: a middleware around
every request, the limits and trace headers around each MCP endpoint, `/metrics`, and the
`--metrics-port` listener without sign-in; `attach_span_names` for stdio, where spans are only
named), `audit` (the
append-only JSON-lines trail, written before the reply), `limits` (per-caller rate and calls in
flight, answered with 429), `metrics` (Prometheus, one registry per app) and `tracing` (OTLP
export of the SDK's spans when `OTEL_*` asks for it; W3C `traceparent` from HTTP headers).
Per-tool permissions are the caller's (`_core/permissions`), enforced by `_core/app`.
May import: `_core`, `_protocol`, `_safety`, `_platform`, `errors`.
"""
