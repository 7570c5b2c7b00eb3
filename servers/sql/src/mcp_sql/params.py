"""Parameter shapes shared by both engines."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mcp_batteries.errors import InvalidInput


def decode_param(value: Any) -> Any:
    """JSON-side parameter -> driver value: {"$base64": ...} becomes bytes (the output convention)."""
    if isinstance(value, dict) and set(value) == {"$base64"} and isinstance(value["$base64"], str):
        try:
            return base64.b64decode(value["$base64"], validate=True)
        except binascii.Error as exc:
            raise InvalidInput(f"parameter {{'$base64': ...}} is not valid base64: {exc}") from exc
    return value


def split_statement_params(
    statements: list[str], params: list[Any] | dict[str, Any] | None, *, transaction: bool
) -> list[list[Any] | dict[str, Any] | None]:
    """One parameter set per statement (see database.py for the shapes accepted)."""
    if not statements:
        raise InvalidInput("no statements given; pass at least one SQL statement")
    if len(statements) > 1 and not transaction:
        raise InvalidInput(
            "several statements need transaction=true (they then run all-or-nothing); "
            "otherwise send one statement per call"
        )
    if len(statements) == 1:
        if params is not None and not isinstance(params, list | dict):
            raise InvalidInput("params must be a list (positional) or an object (named)")
        return [params]
    if params is None:
        return [None] * len(statements)
    if not isinstance(params, list) or len(params) != len(statements):
        raise InvalidInput(
            f"with {len(statements)} statements, params must be a list of {len(statements)} entries "
            "(one list, object or null per statement)"
        )
    for entry in params:
        if entry is not None and not isinstance(entry, list | dict):
            raise InvalidInput("each per-statement params entry must be a list, an object or null")
    return list(params)


def json_text_param(value: Any) -> Any:
    """SQLite has no JSON type: objects/arrays are bound as JSON text for the json1 functions."""
    value = decode_param(value)
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value
