"""The server builder and what every handler sees.

Owns: `app` (`BatteriesServer`: tool filtering, error mapping, subscriptions, services),
`settings` and `cli` (flags, environment and TOML -> settings; one-line errors), `identity`
(who is calling), `notify` (interest and notifications for both protocol eras) and `version`.
May import: `_protocol`, `_safety`, `errors`. Knows nothing of transports or sign-in.
"""
