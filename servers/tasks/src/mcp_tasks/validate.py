"""Turning what a client sent into clean values, with errors that say what is allowed."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from mcp_batteries.errors import InvalidInput
from mcp_batteries.safety import scrub
from mcp_batteries.server import MAX_SAFE_INTEGER, whole_number

from mcp_tasks.models import PRIORITIES, STATUSES, Priority, Status

MAX_TITLE = 500
MAX_DESCRIPTION = 20_000
MAX_TAGS = 32
MAX_TAG = 64
MAX_DEPENDENCIES = 100

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LIST_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_TASK_ID = re.compile(r"^#?\s*([0-9]{1,18})$")
_RELATIVE = re.compile(r"^(\d{1,5})\s*(m|min|h|d|w)$")


def task_id(value: str | int, what: str = "task_id") -> int:
    """A task id from `42`, `"42"` or `"#42"`."""
    if isinstance(value, bool):
        raise InvalidInput(f"{what}: task ids are numbers like 42 (got {value!r})")
    if isinstance(value, int):
        if 1 <= value <= MAX_SAFE_INTEGER:
            return value
        raise InvalidInput(f"{what}: task ids are positive numbers like 42 (got {value})")
    found = _TASK_ID.match(str(value).strip())
    number = whole_number(found.group(1)) if found is not None else None
    if number is None or number < 1:
        raise InvalidInput(f"{what}: task ids are numbers like 42 (got {scrub(str(value))[:40]!r})")
    return number


def offset(value: int) -> int:
    """A page offset: an integer from 0 to MAX_SAFE_INTEGER (so offset + limit stays a 64-bit
    integer for SQLite and PostgreSQL)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SAFE_INTEGER:
        raise InvalidInput(f"offset must be an integer from 0 to {MAX_SAFE_INTEGER:,} (got {value!r})")
    return value


def title(value: str) -> str:
    text = scrub(value).strip()
    if not text:
        raise InvalidInput("title must not be empty")
    if _CONTROL.search(text):
        raise InvalidInput("title must be one line of text (no newlines or control characters)")
    if len(text) > MAX_TITLE:
        raise InvalidInput(f"title is {len(text)} characters; at most {MAX_TITLE} are allowed")
    return text


def description(value: str) -> str:
    text = scrub(value)
    if _CONTROL_IN_TEXT.search(text):
        raise InvalidInput("description must not contain control characters (newlines and tabs are fine)")
    if len(text) > MAX_DESCRIPTION:
        raise InvalidInput(f"description is {len(text)} characters; at most {MAX_DESCRIPTION} are allowed")
    return text


def tags(values: list[str]) -> list[str]:
    """Lower-case, unique, sorted; each one word."""
    cleaned: set[str] = set()
    for raw in values:
        tag = scrub(str(raw)).strip().lower().lstrip("#")
        if (
            not tag
            or len(tag) > MAX_TAG
            or any(c.isspace() for c in tag)
            or "," in tag
            or _CONTROL.search(tag)
        ):
            raise InvalidInput(
                f"tag {scrub(str(raw))[:70]!r} is not allowed: a tag is one word of 1-{MAX_TAG} characters "
                "without spaces or commas"
            )
        cleaned.add(tag)
    if len(cleaned) > MAX_TAGS:
        raise InvalidInput(f"{len(cleaned)} tags given; at most {MAX_TAGS} per task")
    return sorted(cleaned)


def priority(value: str) -> Priority:
    text = str(value).strip().lower()
    for known in PRIORITIES:
        if text == known:
            return known
    raise InvalidInput(f"priority must be one of {', '.join(PRIORITIES)} (got {scrub(str(value))[:40]!r})")


def status(value: str) -> Status:
    text = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    for known in STATUSES:
        if text == known:
            return known
    raise InvalidInput(f"status must be one of {', '.join(STATUSES)} (got {scrub(str(value))[:40]!r})")


def due(value: str | None) -> str | None:
    """YYYY-MM-DD (a date and time is cut to its date); "" or None mean no due date."""
    if value is None or not str(value).strip():
        return None
    return _date(str(value), "due")


def due_bound(value: str | None, what: str) -> str | None:
    if value is None or not str(value).strip():
        return None
    return _date(str(value), what)


def _date(value: str, what: str) -> str:
    text = value.strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text).isoformat()
        if len(text) > 10 and text[10] in "T ":
            return datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        pass
    raise InvalidInput(f"{what} must be a date as YYYY-MM-DD, e.g. 2026-12-24 (got {scrub(text)[:40]!r})")


def list_name(value: str) -> str:
    name = scrub(str(value)).strip().lower()
    if not _LIST_NAME.match(name):
        raise InvalidInput(
            f"list name {scrub(str(value))[:70]!r} is not allowed: use 1-63 lower-case letters, digits, "
            "'-' or '_', starting with a letter or digit (e.g. website-launch)"
        )
    return name


def workspace(value: str) -> str:
    text = scrub(str(value)).strip()
    if not text or len(text) > 64 or ":" in text or "/" in text or any(c.isspace() for c in text):
        raise InvalidInput(
            f"workspace {scrub(str(value))[:70]!r} is not allowed: 1-64 characters, no spaces, ':' or '/'"
        )
    if _CONTROL.search(text):
        raise InvalidInput("workspace names must not contain control characters")
    return text


#: The first and last moments a stored timestamp can name.
EARLIEST = "0001-01-01T00:00:00.000Z"
LATEST = "9999-12-31T23:59:59.999Z"


def now() -> str:
    """The current time as ISO 8601 UTC with milliseconds (sorts as text)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def since(value: str, *, reference: datetime | None = None) -> str:
    """A point in time as stored timestamps are: ISO date/datetime, or relative (24h, 3d, 1w, 90m)."""
    current = reference or datetime.now(UTC)
    text = str(value).strip().lower()
    if text in {"today"}:
        start = datetime.combine(current.astimezone().date(), datetime.min.time()).astimezone()
        return _iso(start)
    if text in {"yesterday"}:
        start = datetime.combine(current.astimezone().date() - timedelta(days=1), datetime.min.time())
        return _iso(start.astimezone())
    relative = _RELATIVE.match(text)
    if relative:
        amount, unit = int(relative.group(1)), relative.group(2)
        step = {"m": timedelta(minutes=1), "min": timedelta(minutes=1), "h": timedelta(hours=1),
                "d": timedelta(days=1), "w": timedelta(weeks=1)}[unit]  # fmt: skip
        try:
            return _iso(current - amount * step)
        except OverflowError:  # further back than year 1: since the beginning
            return EARLIEST
    try:
        parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            "since must be an ISO date or time (2026-11-20, 2026-11-20T09:00) or relative "
            f"(24h, 3d, 1w, 90m, today, yesterday); got {scrub(str(value))[:40]!r}"
        ) from None
    if parsed.tzinfo is None:
        try:
            parsed = parsed.astimezone()  # a local time, as a person means it
        except (OverflowError, ValueError, OSError):  # the platform's local time ends before year 1
            return EARLIEST if parsed.year == 1 else LATEST
    return _iso(parsed)


def _iso(moment: datetime) -> str:
    """`moment` as a stored timestamp; one whose UTC time falls outside years 1-9999 (year 1 at
    +14:00, 9999-12-31 at -14:00, 0001-01-01 read as a local time west of UTC) is clamped to
    the range's end, which compares the same way with every stored time."""
    try:
        return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except OverflowError:
        return EARLIEST if moment.year == 1 else LATEST
