r"""Names that are not clean text, shown in one reversible form and accepted back in that form.

File names, git paths, branch names and database identifiers are bytes, not text: they can hold
bytes that are not UTF-8, newlines, terminal escape sequences or invisible bidirectional
controls. Put raw into a reply they either break the JSON encoder (lone surrogates) or deceive
the reader. Every server shows such a name in git's own C-style quoting (the escapes `git
status` prints), and takes that same form back as input. Printable UTF-8 text stays readable
(as with `core.quotePath=false`); bytes that are not UTF-8 become octal escapes (as git's
default quoting prints them):

    plain.txt                 plain.txt              printable text is shown as it is
    b"bad\xff\xfename.txt"    "bad\377\376name.txt"  bytes that are not UTF-8: octal escapes
    "line\nbreak"             "line\nbreak"          controls: \a \b \t \n \v \f \r, else octal
    'say "hi"'                "say \"hi\""           a name holding " or \ is always quoted
    "evil\u202etxt.exe"       "evil\342\200\256txt.exe"  invisible/bidi characters: UTF-8 octal

A quoted form is a double-quoted string whose backslash escapes decode to the name's exact
bytes. An input that is such a string is unquoted; anything else is taken literally. Since a
real name containing `"` or `\` is always shown quoted, a literal name and a quoted form never
collide. Names travel inside the servers as `os.fsdecode` strings (undecodable bytes as
`surrogateescape` code points), so `unquote_name(quote_name(n)) == n` for every such name.

Paths are quoted as a whole, like git does (`"dir/bad\377.txt"`); as input, a path may also
quote single components (`dir/"bad\377.txt"`), which is what a model gets by joining a listed
name onto a directory.
"""

from __future__ import annotations

import os
import re

__all__ = [
    "is_plain",
    "quote_name",
    "quote_path",
    "scrub",
    "unquote_name",
    "unquote_path",
]

_NAMED_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
}
_UNESCAPES = {
    "\\": 0x5C,
    '"': 0x22,
    "a": 0x07,
    "b": 0x08,
    "t": 0x09,
    "n": 0x0A,
    "v": 0x0B,
    "f": 0x0C,
    "r": 0x0D,
}
_QUOTED = re.compile(r'"(?:[^"\\]|\\(?:[0-3][0-7]{2}|[\\"abtnvfr]))*"', re.DOTALL)
_ESCAPE = re.compile(r"\\([0-3][0-7]{2}|[\\\"abtnvfr])")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def is_plain(name: str) -> bool:
    """True when `name` is shown as it is: printable text without `"` or `\\`."""
    return name.isprintable() and '"' not in name and "\\" not in name


def _char_bytes(char: str) -> bytes:
    # surrogateescape turns an undecodable byte back into itself; surrogatepass keeps any other
    # lone surrogate (one that arrived as a JSON escape) visible instead of failing.
    try:
        return char.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return char.encode("utf-8", "surrogatepass")


def quote_name(name: str | bytes) -> str:
    """The name as shown: as it is when plain, else git-style quoted (see the module docstring)."""
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if is_plain(name):
        return name
    out = ['"']
    for char in name:
        named = _NAMED_ESCAPES.get(char)
        if named is not None:
            out.append(named)
        elif char.isprintable():
            out.append(char)
        else:
            out.extend(f"\\{byte:03o}" for byte in _char_bytes(char))
    out.append('"')
    return "".join(out)


def quote_path(path: str | bytes | os.PathLike[str]) -> str:
    """A whole path, quoted as one string when any part of it needs quoting (git's form)."""
    return quote_name(os.fspath(path))


def _unquote(quoted: str) -> str:
    """The name inside a valid quoted form (`_QUOTED` matched the whole string)."""
    inner = quoted[1:-1]
    if "\\" not in inner:
        return inner
    buffer = bytearray()
    position = 0
    for match in _ESCAPE.finditer(inner):
        buffer += inner[position : match.start()].encode("utf-8", "surrogateescape")
        code = match.group(1)
        buffer.append(int(code, 8) if len(code) == 3 else _UNESCAPES[code])
        position = match.end()
    buffer += inner[position:].encode("utf-8", "surrogateescape")
    return os.fsdecode(bytes(buffer))


def unquote_name(text: str) -> str:
    """The real name for a name as shown: a quoted form is unquoted, anything else is literal."""
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"' and _QUOTED.fullmatch(text):
        return _unquote(text)
    return text


def unquote_path(text: str) -> str:
    """The real path for a path as shown: quoted as a whole, or with quoted components."""
    whole = unquote_name(text)
    if whole is not text or '"' not in text:
        return whole
    return "/".join(unquote_name(part) for part in text.split("/"))


def scrub(text: str) -> str:
    """Free text (a web page, a log line) made safe to serialize: lone surrogates become U+FFFD.

    For text where exactness does not matter; names use `quote_name`, which keeps the bytes.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text
