"""The safety rules every server applies, each in one function used everywhere.

Owns: `paths` (the one containment check and race-free opens that re-check at use time) and
`names` (the one reversible form for names that are not clean text). May import: `errors`.
"""
