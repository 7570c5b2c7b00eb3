"""The safety rules every server applies, each in one function used everywhere.

Owns: `paths` (the one containment check and race-free opens that re-check at use time),
`names` (the one reversible form for names that are not clean text), `redact` (the one
redaction of secrets in URLs, DSNs, logs and messages), `bounds` (the reply cap every tool
result, resource read and prompt is cut below, with a note), `secret_files` (files holding secrets
must be private to their owner) and `workdir` (the current
directory is not served by default when it is too wide: `/`, HOME, ...). May import: `_platform`,
`errors`.
"""
