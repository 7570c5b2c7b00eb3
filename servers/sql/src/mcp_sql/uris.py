"""The resource URIs of mcp-sql: sql://{database}/schema and sql://{database}/table/{schema}/{table}.

Each part is percent-encoded as UTF-8 bytes (RFC 3986); a name holding bytes that are not UTF-8
(kept as surrogateescape code points) is encoded byte for byte, so every name has a URI.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

SCHEME = "sql://"


def _part(name: str) -> str:
    return quote(name.encode("utf-8", "surrogateescape"), safe="")


def schema_uri(database: str) -> str:
    return f"{SCHEME}{_part(database)}/schema"


def table_uri(database: str, schema: str, table: str) -> str:
    return f"{SCHEME}{_part(database)}/table/{_part(schema)}/{_part(table)}"


def parse_uri(uri: str) -> tuple[str, str | None, str | None] | None:
    """(database, schema, table) of one of our URIs (schema/table None for the schema URI)."""
    if not uri.startswith(SCHEME):
        return None
    parts = [unquote(p, errors="surrogateescape") for p in uri[len(SCHEME) :].split("/")]
    if len(parts) == 2 and parts[1] == "schema" and parts[0]:
        return parts[0], None, None
    if len(parts) == 4 and parts[1] == "table" and all(parts):
        return parts[0], parts[2], parts[3]
    return None
