"""MySQL/MariaDB result columns: their type names and the values that need a MySQL-specific form.

values.py turns the common driver values into JSON (DECIMAL as positional text, dates and datetimes
as ISO 8601, binary as {"$base64": ...}, integers as they are, UNSIGNED BIGINT max included). What
only MySQL has is converted here first, column by column, and only for the columns that need it:

    BIT(n)       -> its bits as text, "101" (n digits), as PostgreSQL's bit strings
    TIME         -> MySQL's own text, "838:59:59", "-01:30:00.5" (beyond 24 h and negative too)
    TIMESTAMP    -> ISO 8601 with +00:00 (sessions run in UTC, so the value is that instant)
    JSON (MySQL) -> the parsed JSON value (MariaDB's JSON is LONGTEXT: its text as it is)
    zero dates   -> the text MySQL shows, "0000-00-00" / "0000-00-00 00:00:00" (the driver keeps it)
    spatial      -> {"$base64": ...} of the server's internal form (SRID + WKB); ST_AsText(col)
                    gives WKT
    YEAR         -> an integer
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_BINARY_CHARSET = 63
_UNSIGNED_FLAG = 32
_ENUM_FLAG = 256
_SET_FLAG = 2048
_NAMES = {
    0: "decimal", 1: "tinyint", 2: "smallint", 3: "int", 4: "float", 5: "double", 6: "null",
    7: "timestamp", 8: "bigint", 9: "mediumint", 10: "date", 11: "time", 12: "datetime", 13: "year",
    14: "date", 15: "varchar", 16: "bit", 245: "json", 246: "decimal", 247: "enum", 248: "set",
    249: "tinytext", 250: "mediumtext", 251: "longtext", 252: "text", 253: "varchar", 254: "char",
    255: "geometry",
}  # fmt: skip
_BINARY_NAMES = {
    "tinytext": "tinyblob", "mediumtext": "mediumblob", "longtext": "longblob", "text": "blob",
    "varchar": "varbinary", "char": "binary",
}  # fmt: skip
_NUMERIC = {"tinyint", "smallint", "int", "bigint", "mediumint", "decimal", "float", "double"}


def type_name(type_code: int, charset: int | None, flags: int) -> str:
    """The type of a result column as MySQL names it (`int unsigned`, `varbinary`, `enum`)."""
    name = _NAMES.get(type_code, f"type {type_code}")
    if name == "char" and flags & _ENUM_FLAG:
        return "enum"
    if name == "char" and flags & _SET_FLAG:
        return "set"
    if charset == _BINARY_CHARSET and name in _BINARY_NAMES:
        return _BINARY_NAMES[name]
    if name in _NUMERIC and flags & _UNSIGNED_FLAG:
        return f"{name} unsigned"
    return name


def time_text(value: dt.timedelta) -> str:
    """A TIME value as MySQL writes it: [-]H:MM:SS[.ffffff], hours beyond 24 included."""
    sign = "-" if value < dt.timedelta(0) else ""
    value = abs(value)
    total = value.days * 86400 + value.seconds
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}"
    return text + (f".{value.microseconds:06d}".rstrip("0") if value.microseconds else "")


def _bits(width: int) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if not isinstance(value, bytes | bytearray):
            return value
        return format(int.from_bytes(value, "big"), "b").zfill(max(width, 1))

    return convert


def _time(value: Any) -> Any:
    return time_text(value) if isinstance(value, dt.timedelta) else value


def _timestamp(value: Any) -> Any:
    return value.isoformat() + "+00:00" if type(value) is dt.datetime else value


def _json(value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return value


@dataclass(frozen=True)
class ResultColumns:
    """The columns of one result and how to convert its MySQL-only values."""

    names: list[str]
    types: list[str]
    converters: tuple[tuple[int, Callable[[Any], Any]], ...]

    def convert(self, rows: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
        if not self.converters or not rows:
            return rows
        out = [list(row) for row in rows]
        for index, convert in self.converters:
            for row in out:
                value = row[index]
                if value is not None:
                    row[index] = convert(value)
        return out


def result_columns(cursor: Any) -> ResultColumns:
    """The columns of the cursor's current result (asyncmy: description, and fields for charsets)."""
    description = cursor.description or ()
    result = getattr(cursor, "_result", None)
    fields = list(getattr(result, "fields", None) or [])
    names: list[str] = []
    types: list[str] = []
    converters: list[tuple[int, Callable[[Any], Any]]] = []
    for index, column in enumerate(description):
        field = fields[index] if index < len(fields) else None
        charset = getattr(field, "charsetnr", None)
        flags = int(getattr(field, "flags", 0) or 0)
        name = type_name(int(column[1]), charset, flags)
        names.append(str(column[0]))
        types.append(name)
        if name == "bit":
            converters.append((index, _bits(int(column[3] or 1))))
        elif name == "time":
            converters.append((index, _time))
        elif name == "timestamp":
            converters.append((index, _timestamp))
        elif name == "json":
            converters.append((index, _json))
    return ResultColumns(names, types, tuple(converters))
