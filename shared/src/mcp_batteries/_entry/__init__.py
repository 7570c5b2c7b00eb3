"""The entry point: what a server package declares and a console script's whole life.

Owns: `definition` (`ServerDefinition`: settings class, build path, help text, version,
discovery through the `mcp_batteries.servers` entry-point group; `main` parses, builds, runs).
May import: `_transport`, `_core`, `errors`. Nothing below imports it.
"""
