r"""git's bytes as reply text: names in the one reversible form, free text never breaking a reply.

- Names (paths, branch and tag names, author names) come from `-z` outputs as bytes and are
  shown with `mcp_batteries.safety.quote_name`: printable UTF-8 as it is, anything else in git's
  C quoting (`"bad\377name.txt"`), which every tool accepts back as input.
- Free text (commit messages, file contents in diffs) is decoded as UTF-8; bytes that are not
  UTF-8 become `\xNN` escapes, so a Latin-1 file or message never breaks a reply.
- Patches (`git diff`, `git show`) keep git's layout; on the rare lines holding a name that is
  not UTF-8 (`diff --git`, `---`/`+++`, `rename from`...), the name is re-quoted as above.
"""

from __future__ import annotations

import os
import re

from mcp_batteries.safety import quote_name, unquote_name

__all__ = ["free_text", "name", "patch_text"]


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
