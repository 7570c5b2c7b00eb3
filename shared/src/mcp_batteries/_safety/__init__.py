"""The safety rules every server applies, each in one function used everywhere.

Owns: `paths` (the one containment check and race-free opens that re-check at use time) and
`names` (the one reversible form for names that are not clean text), `workdir` (the
current directory is not served by default when it is too wide: `/`, HOME, ...).
May import: `_platform`, `errors`.
"""
