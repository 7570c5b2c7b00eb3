"""`?` parameters of MySQL statements, bound as SQL literals that the server reads back exactly.

The statement is sent as text (the unbuffered text protocol is what pages a result without
holding it whole), so values are written into it here, at the positions of its `?` placeholders as
the MySQL tokenizer finds them (a `?` inside a string, a quoted name or a comment is not one).
Strings are escaped by MySQL's rules with backslashes, which holds because every session runs
without NO_BACKSLASH_ESCAPES and in utf8mb4 (mysql_pool.py); bytes are written as X'hex'.
"""

from __future__ import annotations

import json
import math
from typing import Any

from mcp_batteries.errors import InvalidInput
from sqlglot import TokenType

from mcp_sql.guard import tokens_of
from mcp_sql.params import decode_param

_ESCAPES = {"\0": "\\0", "\n": "\\n", "\r": "\\r", "\x1a": "\\Z", "\\": "\\\\", "'": "\\'", '"': '\\"'}
_TABLE = str.maketrans(_ESCAPES)


def literal(value: Any) -> str:
    """`value` (a JSON value, or bytes from {"$base64": ...}) as a MySQL literal."""
    value = decode_param(value)
    if value is None:
        return "NULL"
    if value is True or value is False:
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{value} has no MySQL literal; pass NULL or a finite number")
        return repr(value)
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        return "'" + value.translate(_TABLE) + "'"
    raise InvalidInput(f"unsupported parameter value {value!r}")


def positional(params: Any) -> list[Any]:
    """The values for ?, ?, ...: MySQL has no named placeholders, so a dict is refused."""
    if params is None:
        return []
    if isinstance(params, dict):
        raise InvalidInput("MySQL takes positional parameters: write ? placeholders and pass a list")
    if isinstance(params, list | tuple):
        return list(params)
    raise InvalidInput("params must be a list of values for the ? placeholders")


def bind(sql: str, params: Any) -> str:
    """`sql` with each `?` placeholder replaced by the literal of its value."""
    values = positional(params)
    if not values and "?" not in sql:
        return sql
    spots = [t for t in tokens_of(sql, "mysql") if t.token_type == TokenType.PLACEHOLDER and t.text == "?"]
    if len(spots) != len(values):
        raise InvalidInput(
            f"the statement has {len(spots)} ? placeholders but {len(values)} parameters were given"
        )
    out: list[str] = []
    last = 0
    for token, value in zip(spots, values, strict=True):
        out.append(sql[last : token.start])
        out.append(literal(value))
        last = token.end + 1
    out.append(sql[last:])
    return "".join(out)
