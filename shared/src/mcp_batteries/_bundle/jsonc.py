"""JSON with comments, edited in place: the person's comments, order and layout are kept.

VS Code's `mcp.json` and Zed's `settings.json` are JSONC (`//` and `/* */` comments, trailing
commas), and Zed's default settings file starts with comments. Rather than parse and re-dump
(which would drop every comment and reformat the file), `JsoncDocument` finds where values are in
the text and splices: replacing one member's value, or inserting a member into an object, or an
element into an array, touches nothing else. Plain JSON is JSONC, so every JSON client file is
edited this way; `strict=True` refuses comments and trailing commas for clients that do not
accept them.

How: comments are blanked to spaces (same length) and trailing commas too, which gives plain
JSON at the same offsets; `json` reads the values from it, and a small scanner over it finds the
spans of members and elements.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp_batteries.errors import ConfigError

__all__ = ["JsoncDocument"]

_WHITESPACE = " \t\r\n"


def _blank_comments(text: str) -> tuple[str, str, bool]:
    """`text` with comments blanked, then also trailing commas (offsets kept), and whether any were."""
    out = list(text)
    trailing: list[int] = []
    found = False
    i, n = 0, len(text)
    last_comma: int | None = None  # a comma not yet followed by a value
    while i < n:
        c = text[i]
        if c == '"':
            last_comma = None
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            found = True
            i = end
        elif c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ConfigError("a /* comment is never closed")
            end += 2
            out[i:end] = [ch if ch == "\n" else " " for ch in text[i:end]]
            found = True
            i = end
        elif c == ",":
            last_comma = i
            i += 1
        elif c in "}]":
            if last_comma is not None:
                trailing.append(last_comma)
                found = True
                last_comma = None
            i += 1
        else:
            if c not in _WHITESPACE:
                last_comma = None
            i += 1
    uncommented = "".join(out)
    for comma in trailing:
        out[comma] = " "
    return uncommented, "".join(out), found


@dataclass(frozen=True)
class _Member:
    key: str | None  # None for an array element
    start: int  # where the key (or element) starts
    value_start: int
    value_end: int  # exclusive


class JsoncDocument:
    """A JSON(C) text, its value, and in-place edits of members of its objects."""

    def __init__(self, text: str, *, path: str = "the file", strict: bool = False) -> None:
        self.text = text
        self._path = path
        self._strict = strict
        self.value: Any = self._parse()

    def _parse(self) -> Any:
        if not self.text.strip():
            return {}
        self._uncommented, plain, had_comments = _blank_comments(self.text)
        if had_comments and self._strict:
            raise ConfigError(
                f"{self._path} has comments or trailing commas, which this client does not read as JSON: "
                "fix the file, or add the printed entries by hand"
            )
        try:
            value = json.loads(plain)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{self._path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}): "
                "fix it, or add the printed entries by hand"
            ) from None
        if not isinstance(value, dict):
            raise ConfigError(f"{self._path} does not hold a JSON object; fix it by hand first")
        self._plain = plain
        return value

    # -- finding spans --------------------------------------------------------------------------

    def _skip(self, i: int) -> int:
        while i < len(self._plain) and self._plain[i] in _WHITESPACE:
            i += 1
        return i

    def _value_end(self, i: int) -> int:
        plain = self._plain
        c = plain[i]
        if c == '"':
            i += 1
            while plain[i] != '"':
                i += 2 if plain[i] == "\\" else 1
            return i + 1
        if c in "{[":
            closing = "}" if c == "{" else "]"
            i = self._skip(i + 1)
            while plain[i] != closing:
                if c == "{":
                    i = self._skip(self._value_end(i))  # the key
                    i = self._skip(i + 1)  # the colon
                i = self._skip(self._value_end(i))
                if plain[i] == ",":
                    i = self._skip(i + 1)
            return i + 1
        while i < len(plain) and plain[i] not in _WHITESPACE + ",}]":
            i += 1
        return i

    def _members(self, start: int) -> list[_Member]:
        """The members (or elements) of the object (or array) whose bracket is at `start`."""
        plain = self._plain
        is_object = plain[start] == "{"
        closing = "}" if is_object else "]"
        members: list[_Member] = []
        i = self._skip(start + 1)
        while plain[i] != closing:
            key = None
            begin = i
            if is_object:
                key_end = self._value_end(i)
                key = json.loads(plain[i:key_end])
                i = self._skip(self._skip(key_end) + 1)
            end = self._value_end(i)
            members.append(_Member(key, begin, i, end))
            i = self._skip(end)
            if plain[i] == ",":
                i = self._skip(i + 1)
        return members

    def _close(self, start: int) -> int:
        return self._value_end(start) - 1

    def _find(self, path: tuple[str, ...]) -> int | None:
        """Where the value at `path` (keys from the top) starts, or None if a key is missing."""
        at = self._skip(0)
        for key in path:
            if self._plain[at] != "{":
                return None
            found = [m for m in self._members(at) if m.key == key]
            if not found:
                return None
            at = found[-1].value_start  # JSON parsers keep the last of duplicate keys
        return at

    # -- layout ---------------------------------------------------------------------------------

    def _line_indent(self, i: int) -> str:
        line_start = self.text.rfind("\n", 0, i) + 1
        indent = ""
        for c in self.text[line_start:]:
            if c not in " \t":
                break
            indent += c
        return indent

    def _unit(self) -> str:
        for line in self.text.splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                return line[: len(line) - len(stripped)]
        return "  "

    def _render(self, value: Any, indent: str) -> str:
        unit = self._unit()
        text = json.dumps(value, indent=len(unit) if unit.strip(" ") == "" else "\t", ensure_ascii=False)
        return text.replace("\n", "\n" + indent)

    def _splice(self, start: int, end: int, replacement: str) -> None:
        self.text = self.text[:start] + replacement + self.text[end:]
        self.value = self._parse()

    # -- edits ----------------------------------------------------------------------------------

    def set_member(self, path: tuple[str, ...], key: str, value: Any) -> None:
        """Set `key` to `value` in the object at `path`, creating the objects on the way."""
        if not self.text.strip():
            self.text = "{}\n"
            self.value = self._parse()
        for depth in range(len(path)):
            if self._find(path[: depth + 1]) is None:
                self._insert(path[:depth], path[depth], {})
        at = self._find(path)
        if at is None or self._plain[at] != "{":
            raise ConfigError(f"{'.'.join(path)} in {self._path} is not a JSON object; fix it by hand first")
        same = [m for m in self._members(at) if m.key == key]
        if same:
            member = same[-1]
            self._splice(
                member.value_start, member.value_end, self._render(value, self._line_indent(member.start))
            )
        else:
            self._insert(path, key, value)

    def append_element(self, path: tuple[str, ...], value: Any) -> None:
        """Append `value` to the array at `path` (created if missing)."""
        if self._find(path) is None:
            self.set_member(path[:-1], path[-1], [])
        at = self._find(path)
        assert at is not None
        if self._plain[at] != "[":
            raise ConfigError(f"{'.'.join(path)} in {self._path} is not a JSON array; fix it by hand first")
        self._add(at, None, value)

    def replace_element(self, path: tuple[str, ...], index: int, value: Any) -> None:
        at = self._find(path)
        assert at is not None and self._plain[at] == "["
        element = self._members(at)[index]
        self._splice(
            element.value_start, element.value_end, self._render(value, self._line_indent(element.start))
        )

    def _insert(self, path: tuple[str, ...], key: str, value: Any) -> None:
        at = self._find(path)
        if at is None or self._plain[at] != "{":
            raise ConfigError(f"{'.'.join(path) or 'the top'} of {self._path} is not a JSON object")
        self._add(at, key, value)

    def _add(self, at: int, key: str | None, value: Any) -> None:
        members = self._members(at)
        close = self._close(at)
        outer = self._line_indent(at)
        first_on_own_line = members and "\n" in self.text[at : members[0].start]
        indent = self._line_indent(members[0].start) if first_on_own_line else outer + self._unit()
        head = "" if key is None else json.dumps(key, ensure_ascii=False) + ": "
        item = head + self._render(value, indent)
        if members:
            # After the last member, its comma (if any) and a comment on the rest of its line.
            end = members[-1].value_end
            comma = self._uncommented.find(",", end, close)
            after = end if comma < 0 else comma + 1
            line_end = self._uncommented.find("\n", after, close)
            if line_end >= 0 and self._uncommented[after:line_end].strip() == "":
                after = line_end
            separator = "," if comma < 0 else ""
            self._splice(end, after, separator + self.text[end:after] + f"\n{indent}{item}")
        elif self.text[at + 1 : close].strip() == "":
            self._splice(at + 1, close, f"\n{indent}{item}\n{outer}")
        else:  # only comments inside: the new member goes first
            self._splice(at + 1, at + 1, f"\n{indent}{item}")
