"""Turning database values into JSON-safe values.

The mapping (the same for both engines where the type exists):
    NULL                       -> None
    integers, booleans, text   -> int, bool, str
    float / double             -> float; NaN and ±Infinity -> the strings "NaN", "Infinity", "-Infinity"
    numeric / decimal          -> str, always, in positional notation (keeps every digit; JSON numbers
                                  would lose precision)
    timestamp(tz), date, time  -> ISO 8601 str (timestamptz carries its offset, e.g. +00:00)
    interval                   -> ISO 8601 duration str, e.g. "P1Y2M3DT04:05:06" (the session runs
                                  with IntervalStyle=iso_8601 so months are never approximated)
    uuid, inet, cidr, macaddr  -> str
    json / jsonb               -> the parsed JSON value
    arrays                     -> lists (element-wise conversion, nested for multi-dimensional)
    bytea / BLOB               -> {"$base64": "<base64>"}: an object so that binary data can never be
                                  mistaken for a text value
    composite rows             -> {field: value}
    ranges                     -> {"lower", "upper", "lower_inc", "upper_inc", "empty"}
    anything else              -> str(value)
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any


def b64(data: bytes) -> dict[str, str]:
    return {"$base64": base64.b64encode(data).decode("ascii")}


#: Types that are already JSON-safe and go out unchanged (exact types: subclasses take the slow path).
_AS_IS: frozenset[type] = frozenset({type(None), bool, int, str})


def _float(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _decimal(value: Decimal) -> str:
    # Positional notation: "1000000000000000000000000000000", not "1.00E+30".
    return format(value, "f")


def _isoformat(value: dt.date | dt.time) -> str:
    return value.isoformat()


def _bytes(value: bytes | bytearray | memoryview) -> dict[str, str]:
    return b64(bytes(value))


# Exact-type dispatch for the common driver types: one dict lookup instead of a chain of isinstance
# checks per cell. Anything not listed (subclasses, asyncpg's own types) falls back to _convert_other.
_BY_TYPE: dict[type, Callable[[Any], Any]] = {
    float: _float,
    Decimal: _decimal,
    dt.datetime: _isoformat,
    dt.date: _isoformat,
    dt.time: _isoformat,
    bytes: _bytes,
    bytearray: _bytes,
    memoryview: _bytes,
    uuid.UUID: str,
}


def to_json_value(value: Any) -> Any:
    kind = type(value)
    if kind in _AS_IS:
        return value
    convert = _BY_TYPE.get(kind)
    return convert(value) if convert is not None else _convert_other(value)


def rows_to_json(rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Rows as lists of JSON-safe values, converted column by column.

    Most columns hold only None/int/str (SQLite's integers and text, PostgreSQL's int and text
    columns): one set of the column's types shows that, and such a column is kept without a call
    per cell. Only the other columns go through to_json_value, and only their cells are replaced.
    """
    out = list(map(list, rows))
    for i, column in enumerate(zip(*rows, strict=True)):
        converted = convert_column(column)
        if converted is not column:
            for row, value in zip(out, converted, strict=True):
                row[i] = value
    return out


def convert_column(column: Sequence[Any]) -> Sequence[Any]:
    """The column itself when every value is JSON-safe as is, else a converted copy."""
    odd = set(map(type, column)) - _AS_IS
    if not odd:
        return column
    if odd == {float}:
        # Only NaN and ±Infinity need converting; finite floats go out as they are.
        if all(map(math.isfinite, [v for v in column if type(v) is float])):
            return column
        return [v if type(v) is not float or math.isfinite(v) else _float(v) for v in column]
    # Only the values of other types pay for a call (a BLOB column is mostly NULLs, say).
    return [to_json_value(v) if type(v) in odd else v for v in column]


def _convert_other(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return _timedelta_iso(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return b64(bytes(value))
    if isinstance(value, uuid.UUID | ipaddress.IPv4Address | ipaddress.IPv6Address):
        return str(value)
    if isinstance(value, ipaddress.IPv4Network | ipaddress.IPv6Network):
        return str(value)
    if isinstance(value, ipaddress.IPv4Interface | ipaddress.IPv6Interface):
        return str(value)
    if isinstance(value, list | tuple):
        # asyncpg Records are Mappings; plain tuples here are arrays or geometric points.
        return [to_json_value(v) for v in value]
    if isinstance(value, Mapping) or _is_record(value):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if _is_range(value):
        return {
            "lower": to_json_value(value.lower),
            "upper": to_json_value(value.upper),
            "lower_inc": value.lower_inc,
            "upper_inc": value.upper_inc,
            "empty": value.isempty,
        }
    if hasattr(value, "as_string") and callable(value.as_string):  # asyncpg BitString
        return str(value.as_string())
    return str(value)


def _is_record(value: Any) -> bool:
    return type(value).__name__ == "Record" and hasattr(value, "items")


def _is_range(value: Any) -> bool:
    return all(hasattr(value, a) for a in ("lower", "upper", "lower_inc", "upper_inc", "isempty"))


def _timedelta_iso(delta: dt.timedelta) -> str:
    # Only reached when a driver hands out a timedelta (PostgreSQL intervals arrive as text).
    sign = "-" if delta < dt.timedelta(0) else ""
    delta = abs(delta)
    seconds = delta.seconds + delta.microseconds / 1_000_000
    hours, rem = divmod(seconds, 3600)
    minutes, secs = divmod(rem, 60)
    sec_text = f"{secs:g}"
    return f"{sign}P{delta.days}DT{int(hours)}H{int(minutes)}M{sec_text}S"


def pg_type_name(typ: Any) -> str:
    """PostgreSQL type name of a result column as asyncpg describes it; arrays read as `int4[]`."""
    name = str(getattr(typ, "name", "unknown"))
    if getattr(typ, "kind", "") == "array" and name.startswith("_"):
        return name[1:] + "[]"
    return name


def sqlite_type_name(value: Any) -> str | None:
    """SQLite storage class of a fetched value (result columns carry no declared type in sqlite3)."""
    if value is None:
        return None
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bytes):
        return "blob"
    return type(value).__name__
