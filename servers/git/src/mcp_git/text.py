r"""git's bytes as reply text: names in the one reversible form, free text never breaking a reply.

- Names (paths, branch and tag names, author names) come from `-z` outputs as bytes and are
  shown with `mcp_batteries.safety.quote_name`: printable UTF-8 as it is, anything else in git's
  C quoting (`"bad\377name.txt"`), which every tool accepts back as input.
- Free text (commit messages, file contents in diffs) is decoded as UTF-8; bytes that are not
  UTF-8 become `\xNN` escapes, so a Latin-1 file or message never breaks a reply.
- Patches (`git diff`, `git show`) keep git's layout; on the rare lines holding a name that is
  not UTF-8 (`diff --git`, `---`/`+++`, `rename from`...), the name is re-quoted as above.
- Anything a repository can make arbitrarily long (a line, a message, a name, a URL) is cut by
  `clip` / `cut_note`, with a note saying how much was cut and where the rest is: no reply
  grows with what a repository holds.
"""

from __future__ import annotations

import os
import re

from mcp_batteries.safety import quote_name, unquote_name

__all__ = [
    "MAX_FIELD",
    "MAX_NAME",
    "clip",
    "clip_name",
    "cut_note",
    "free_text",
    "name",
    "patch_text",
    "show_text",
]

#: Longest name (author, e-mail, URL...) shown whole, in bytes.
MAX_NAME = 1024
#: Longest one-line field (a subject, a reflog entry, a line of code) shown whole, in bytes.
MAX_FIELD = 4096


# Printable ASCII without `"` and `\`: shown as it is (the common case, decided in C).
_PLAIN_ASCII = re.compile(rb"[\x20\x21\x23-\x5b\x5d-\x7e]*")


def name(raw: bytes) -> str:
    """A name from git's `-z` output, as shown in replies."""
    if _PLAIN_ASCII.fullmatch(raw):
        return raw.decode("ascii")
    return quote_name(os.fsdecode(raw))


def free_text(raw: bytes) -> str:
    """Text where exactness of invalid bytes does not matter (messages, file contents)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace")


def cut_note(total: int, shown: int, rest: str = "") -> str:
    """The note that ends a cut value: what was cut, and (`rest`) how to get it."""
    where = f"; {rest}" if rest else ""
    return f" [... cut: {total - shown:,} of {total:,} bytes not shown{where}]"


def _head(raw: bytes, limit: int) -> bytes:
    """`raw[:limit]`, without a UTF-8 sequence split at its end."""
    head = raw[:limit]
    last = len(head) - 1
    continuation = 0
    while last >= 0 and continuation < 3 and head[last] & 0xC0 == 0x80:
        last -= 1
        continuation += 1
    if last >= 0 and head[last] >= 0xC0:
        needed = 2 if head[last] < 0xE0 else 3 if head[last] < 0xF0 else 4
        if continuation + 1 < needed:
            return head[:last]
    return head


def clip(raw: bytes | str, limit: int = MAX_FIELD, *, total: int | None = None, rest: str = "") -> str:
    """Free text of at most `limit` bytes, cut with a `cut_note` (`total`: the real length when
    `raw` is already only the head of it; `rest`: where the whole value is)."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    length = len(raw) if total is None else total
    if length <= limit:
        return free_text(raw)
    head = _head(raw, limit)
    return free_text(head) + cut_note(length, len(head), rest)


def clip_name(raw: bytes, limit: int = MAX_NAME, *, total: int | None = None) -> str:
    """A name as `name` shows it, cut to `limit` bytes with a note."""
    length = len(raw) if total is None else total
    if length <= limit:
        return name(raw)
    head = _head(raw, limit)
    return name(head) + cut_note(length, len(head))


_IDENTITY_LINES = (b"Author: ", b"Commit: ", b"Tagger: ")


def show_text(raw: bytes) -> str:
    """`git show` output as reply text: `patch_text`, with the names of its `Author:`,
    `Commit:` and `Tagger:` lines shown as `name` shows them (git prints them raw: an author
    name can hold escape sequences), the form git_log uses."""
    if _IDENTITY_LINES[0] not in raw and _IDENTITY_LINES[2] not in raw and _IDENTITY_LINES[1] not in raw:
        return patch_text(raw)
    lines = raw.split(b"\n")
    for index, line in enumerate(lines):
        if line.startswith(_IDENTITY_LINES):
            label, rest = line[:8], line[8:]
            who, bracket, email = rest.rpartition(b" <")
            shown = f"{name(who)} <{name(email[:-1])}>" if bracket and email.endswith(b">") else name(rest)
            lines[index] = label + shown.encode("utf-8", "surrogateescape")
    return patch_text(b"\n".join(lines))


_HEADERS = (b"diff --git ", b"--- ", b"+++ ", b"rename from ", b"rename to ", b"copy from ", b"copy to ")
_QUOTED_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"')


def _token(text: str) -> str:
    """One path token of a header line, as shown: git's quoted form re-quoted, else quoted."""
    if text.startswith('"'):
        return quote_name(unquote_name(text))
    return quote_name(text)


def _two_tokens(rest: str) -> tuple[str, str] | None:
    """Split `A B` from a `diff --git` line, either side quoted or not."""
    if rest.startswith('"'):
        first = _QUOTED_TOKEN.match(rest)
        if first is None or rest[first.end() : first.end() + 1] != " ":
            return None
        return first.group(), rest[first.end() + 1 :]
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return (rest[:start], rest[start + 1 :]) if start > 0 else None
    # Both unquoted: the two sides are usually the same name after the a/ and b/ prefixes.
    if len(rest) % 2 == 1:
        half = len(rest) // 2
        if rest[half] == " " and rest[2:half] == rest[half + 3 :]:
            return rest[:half], rest[half + 1 :]
    split = rest.rfind(" b/")
    return (rest[:split], rest[split + 1 :]) if split > 0 else None


def _header_line(line: bytes) -> str | None:
    decoded = os.fsdecode(line)
    for prefix in _HEADERS:
        if not line.startswith(prefix):
            continue
        head = prefix.decode()
        rest = decoded[len(head) :]
        if prefix == b"diff --git ":
            pair = _two_tokens(rest)
            return None if pair is None else f"{head}{_token(pair[0])} {_token(pair[1])}"
        if prefix in (b"--- ", b"+++ ") and rest == "/dev/null":
            return None
        return head + _token(rest)
    return None


def patch_text(raw: bytes) -> str:
    """A patch as reply text (see the module docstring)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    lines = []
    for line in raw.split(b"\n"):
        try:
            lines.append(line.decode("utf-8"))
            continue
        except UnicodeDecodeError:
            pass
        shown = _header_line(line) if line[:1] in (b"d", b"-", b"+", b"r", b"c") else None
        lines.append(shown if shown is not None else line.decode("utf-8", "backslashreplace"))
    return "\n".join(lines)
