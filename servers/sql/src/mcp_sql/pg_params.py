"""Fitting JSON parameter values to the types PostgreSQL infers for $1, $2, ...

asyncpg binds in binary and insists on Python types (a date needs a datetime.date), while a model
sends JSON: strings for dates, numbers as int/float, objects for json. This converts the obvious
cases and leaves everything else for asyncpg to judge.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from mcp_batteries.errors import InvalidInput

from mcp_sql.params import decode_param

_INT_BITS = {"int2": 16, "int4": 32, "int8": 64, "oid": 33}


def _to_int(v: Any) -> Any:
    if isinstance(v, str):
        return int(v.strip())
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _check_int_range(value: Any, type_name: str, position: int) -> None:
    bits = _INT_BITS.get(type_name)
    if bits is None or type(value) is not int:
        return
    low, high = (0, 2**32 - 1) if type_name == "oid" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not low <= value <= high:
        raise InvalidInput(
            f"parameter ${position} is {value}, outside the range of {type_name} ({low} to {high}); "
            "cast the placeholder to numeric ($1::numeric) for larger integers"
        )


def _to_float(v: Any) -> Any:
    return float(v) if isinstance(v, str | int) and not isinstance(v, bool) else v


def _to_decimal(v: Any) -> Any:
    return Decimal(str(v)) if isinstance(v, str | int | float) and not isinstance(v, bool) else v


def _iso(text: str) -> str:
    return text.strip().replace("Z", "+00:00").replace("z", "+00:00")


def _to_date(v: Any) -> Any:
    return dt.date.fromisoformat(v.strip()) if isinstance(v, str) else v


def _to_timestamp(v: Any) -> Any:
    return dt.datetime.fromisoformat(_iso(v)) if isinstance(v, str) else v


def _to_timestamptz(v: Any) -> Any:
    if isinstance(v, str):
        value = dt.datetime.fromisoformat(_iso(v))
        # A time without an offset is taken as UTC rather than the server's local zone.
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return v


def _to_time(v: Any) -> Any:
    return dt.time.fromisoformat(v.strip()) if isinstance(v, str) else v


def _to_bool(v: Any) -> Any:
    if isinstance(v, str) and v.strip().lower() in {
        "true",
        "t",
        "yes",
        "1",
        "on",
        "false",
        "f",
        "no",
        "0",
        "off",
    }:
        return v.strip().lower() in {"true", "t", "yes", "1", "on"}
    return v


def _to_uuid(v: Any) -> Any:
    return uuid.UUID(v) if isinstance(v, str) else v


def _to_text(v: Any) -> Any:
    return str(v) if isinstance(v, int | float | Decimal) and not isinstance(v, bool) else v


def _to_bytes(v: Any) -> Any:
    return v.encode() if isinstance(v, str) else v


_COERCERS: dict[str, Callable[[Any], Any]] = {
    "int2": _to_int, "int4": _to_int, "int8": _to_int, "oid": _to_int,
    "float4": _to_float, "float8": _to_float, "numeric": _to_decimal,
    "date": _to_date, "timestamp": _to_timestamp, "timestamptz": _to_timestamptz, "time": _to_time,
    "bool": _to_bool, "uuid": _to_uuid, "text": _to_text, "varchar": _to_text, "bpchar": _to_text,
    "name": _to_text, "bytea": _to_bytes,
}  # fmt: skip


def positional_params(params: Any) -> list[Any]:
    """The values for $1, $2, ...: PostgreSQL has no named placeholders, so a dict is refused."""
    if params is None:
        return []
    if isinstance(params, dict):
        raise InvalidInput("PostgreSQL takes positional parameters: write $1, $2, ... and pass a list")
    if isinstance(params, list | tuple):
        return list(params)
    raise InvalidInput("params must be a list of values for $1, $2, ...")


def coerce_params(types: Sequence[Any], values: Sequence[Any]) -> list[Any]:
    out = []
    for i, value in enumerate(values):
        value = decode_param(value)
        typ = types[i] if i < len(types) else None
        name = getattr(typ, "name", None)
        coercer = _COERCERS.get(name or "")
        if coercer is not None and value is not None:
            try:
                value = coercer(value)
            except (ValueError, InvalidOperation, TypeError) as exc:
                raise InvalidInput(
                    f"parameter ${i + 1} expects {name}; {value!r} does not convert: {exc}"
                ) from exc
            _check_int_range(value, name or "", i + 1)
        out.append(value)
    return out
