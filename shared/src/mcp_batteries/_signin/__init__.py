"""Sign-in for HTTP: who may call, as one `Caller` whatever authenticated them.

Owns: `auth` (static token, tokens file, OAuth; per-caller scopes; the 401/403 answers and
protected-resource metadata) and `oauth` (JWT access tokens checked against the issuer's JWKS).
May import: `_core`, `_protocol`, `_safety`, `errors`.
"""
