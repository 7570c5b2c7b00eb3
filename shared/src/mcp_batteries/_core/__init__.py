"""The server builder and what every handler sees.

Owns: `app` (`BatteriesServer`: tool filtering, error mapping, subscriptions, services),
`settings` and `cli` (flags, environment and TOML -> settings; one-line errors), `identity`
(who is calling), `notify` (interest and notifications for both protocol eras),
`tasks_extension` (long tool calls as `io.modelcontextprotocol/tasks` tasks), `cache_hints`
(`ttlMs`/`cacheScope` per list and resource), `confirm` (a tool asks its user before it
destroys), `request_state` (the keys sealing multi-round requests' state) and `version`.
May import: `_protocol`, `_safety`, `_work`, `errors`. Knows nothing of transports or sign-in.
"""
