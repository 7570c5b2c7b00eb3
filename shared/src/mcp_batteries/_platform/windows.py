r"""Windows path rules, as pure functions over Windows-form strings (`ntpath`), so they are tested
on any platform.

A Windows path can name the same file in many spellings, and some spellings are not files at all.
Before a path from a client reaches the file system it is held to these rules (`refusal`,
`normalise`); what is left is resolved by the OS to its final path (`os.path.realpath`, which on
Windows expands 8.3 short names like `PROGRA~1`, resolves junctions and symbolic links, and gives
the stored case) and only then compared with the allowed directories.

Refused, with the reason:

- device names (`CON`, `NUL`, `COM1`, `LPT1`, `CONIN$`... in any case, with any extension or
  trailing spaces: `nul.txt` is the null device): they are not files, and reading `CON` waits on the
  console;
- alternate data streams (`file.txt:secret`, `file.txt::$DATA`): another content under one name;
- names ending in a dot or a space (`secret.txt.`, `dir `): Windows strips them, so they are aliases;
- the device namespace (`\\.\`, `\\?\GLOBALROOT`, volume GUID paths);
- drive-relative (`C:file`, relative to the drive's own current directory) and rooted paths without
  a drive (`\file`, on the current drive): they depend on process state the operator never chose;
- characters Windows does not allow in names (`<>"|?*`, control characters).

Normalised: `\\?\C:\x` and `\\?\UNC\server\share` lose the long-path prefix (after the checks: the
prefix turns off the OS's own normalisation, which the checks above make unnecessary); `/` becomes
`\`; the drive letter is upper case.

Network (UNC) paths `\\server\share\...` are reported separately (`is_network`): the caller allows
one only lexically inside an allowed directory on that share, before anything touches the network
(merely resolving `\\attacker\share` makes Windows connect and offer the user's credentials).
"""

from __future__ import annotations

import ntpath
import re
from typing import Final

__all__ = ["RESERVED_NAMES", "file_uri_path", "is_network", "is_within", "normalise", "refusal"]

_DIGITS: Final = "0123456789¹²³"
RESERVED_NAMES: Final = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$"}
    | {f"COM{d}" for d in _DIGITS}
    | {f"LPT{d}" for d in _DIGITS}
)
_FORBIDDEN: Final = re.compile(r'[<>"|?*\x00-\x1f]')
_DEVICE_PREFIXES: Final = ("\\\\.\\", "\\??\\")
_LONG: Final = "\\\\?\\"
_LONG_UNC: Final = "\\\\?\\UNC\\"


def _strip_long_prefix(path: str) -> str | None:
    r"""`\\?\C:\x` -> `C:\x`, `\\?\UNC\s\sh` -> `\\s\sh`; None for other `\\?\` forms (devices)."""
    if path[: len(_LONG_UNC)].upper() == _LONG_UNC:
        return "\\\\" + path[len(_LONG_UNC) :]
    rest = path[len(_LONG) :]
    if len(rest) >= 3 and rest[0].isalpha() and rest[1] == ":" and rest[2] == "\\":
        return rest
    return None


def refusal(path: str) -> str | None:
    """Why this Windows path is refused before any file-system call, or None if it may be resolved."""
    p = path.replace("/", "\\")
    if p.startswith(_DEVICE_PREFIXES):
        return "it names a device namespace (\\\\.\\), not a file"
    if p.startswith(_LONG):
        stripped = _strip_long_prefix(p)
        if stripped is None:
            return "it names a device or volume (\\\\?\\ without a drive or UNC path), not a file"
        p = stripped
    drive, rest = ntpath.splitdrive(p)
    if drive and not drive.startswith("\\\\") and not rest.startswith("\\"):
        return f"{drive}{rest.split(chr(92))[0]} is relative to the current directory of drive {drive}"
    if not drive and p.startswith("\\"):
        return "a path starting with \\ depends on the current drive; give the drive (C:\\...)"
    for name in rest.split("\\"):
        if name in ("", ".", ".."):
            continue
        if ":" in name:
            return f"{name!r} names an alternate data stream (a second content under one file name)"
        if _FORBIDDEN.search(name):
            return f"{name!r} holds characters Windows does not allow in names"
        if name.split(".")[0].rstrip(" ").upper() in RESERVED_NAMES:
            return f"{name!r} is a Windows device name, not a file"
        if name[-1] in ". ":
            return f"{name!r} ends in a dot or space, which Windows strips (it would name another file)"
    return None


def normalise(path: str) -> str:
    """The one spelling of a path that passed `refusal`: backslashes, no long-path prefix, the
    drive letter in upper case."""
    p = path.replace("/", "\\")
    if p.startswith(_LONG):
        p = _strip_long_prefix(p) or p
    drive, rest = ntpath.splitdrive(p)
    if len(drive) == 2 and drive[1] == ":":
        drive = drive.upper()
    return drive + rest


def is_network(path: str) -> bool:
    r"""A UNC path (`\\server\share\...`, also in its `\\?\UNC\` form)."""
    p = normalise(path)
    return p.startswith("\\\\")


def is_within(path: str, root: str) -> bool:
    """Lexical containment, compared as Windows compares names (case-insensitively), at a
    separator: `C:\\data2` is not inside `C:\\data`."""
    p = ntpath.normcase(ntpath.normpath(normalise(path)))
    r = ntpath.normcase(ntpath.normpath(normalise(root))).rstrip("\\")
    return p == r or p.startswith(r + "\\")


def file_uri_path(uri_path: str) -> str | None:
    """The path of a `file:` URI on Windows (already percent-decoded): `/C:/x y` or `/C|/x` ->
    `C:\\x y`. None when it names no drive (`/x`: a rooted path, refused by `refusal`)."""
    p = uri_path
    if len(p) >= 3 and p[0] == "/" and p[1].isalpha() and p[2] in ":|":
        return normalise(f"{p[1]}:{p[3:] or chr(92)}")
    return None
