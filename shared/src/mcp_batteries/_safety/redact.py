"""The one redaction of secrets in URLs and connection strings, for everything we show.

Every URL or connection string a server or the bundle prints, logs or returns (server
instructions, `/status`, a failed mount's 503 body, error messages, `git_remote`) goes through
`redact_url` (one value known to be a URL, DSN or path) or `redact_text` (free text that may
contain some). The rule is default-deny: what is shown is what is known to be harmless, because
a secret can hide in any part whose meaning we cannot know.

- **User info** (`user:password@`) is always replaced by `***@`, user name included: no syntax
  tells a user name from a token used as one (`https://ghp_x@github.com`,
  `https://oauth2:TOKEN@gitlab.com`, `x-access-token:TOKEN@`), and the host and path already
  say which database or repository is meant. The one exception is the user name `git` without
  a password, which every forge's SSH remotes use (`git@github.com:org/repo.git`).
  Passwords containing `@`, `:` or percent-escapes end at the last `@` of the authority.
- **Query and fragment parameters** keep their value only when their name (decoded,
  case-insensitive) is in `SHOWN_PARAMETERS`: connection options that say how to connect, never
  with what (`sslmode`, `connect_timeout`, `application_name`...). Every other value is `***`;
  a parameter without `=`, or whose name is not a plain word, is `***` whole.
- **libpq key=value strings** (`host=db password='x y'`) follow the same rule per key.
- **What cannot be parsed** (an authority like `user:pa/ss@host` where a password broke the
  URL, an unterminated quote) is hidden from the first unparseable point on.
- The scheme, host, port and path are shown: they name what is reached. A secret written into a
  path (`https://hooks.example/T0/B0/SECRET`) is not recognised.

`redact_text` applies `redact_url` to every `scheme://...` run in a text and, since free text
has no grammar to be default-deny about, replaces the value of `password=`-like pairs
(`SECRET_KEY_PARTS`) found outside URLs (as libpq and drivers echo them in error messages).

It also hides every **known secret**: each server's settings are read once, when they are
built, and what `redact_url` would hide in the URLs among them (passwords, hidden parameter
values, token-length user names) is remembered (`remember_secrets`), whole and in the pieces a
URL parser cuts it into at `@ : / ? # & ; =`. A driver that misreads a password containing `@` and
quotes its tail (`invalid port 'tail@host'`) still shows `***`. Pieces shorter than
`MIN_PIECE` characters are not remembered (they would hide ordinary words).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from urllib.parse import unquote

__all__ = [
    "HIDDEN",
    "SECRET_KEY_PARTS",
    "SHOWN_PARAMETERS",
    "KnownSecrets",
    "RedactingFormatter",
    "redact_text",
    "redact_url",
    "redact_value",
    "remember_secrets",
]

#: What replaces a hidden part.
HIDDEN = "***"

#: Query, fragment and key=value parameters whose values are shown: how to connect, never with
#: what. Names are compared decoded and lower-cased. Anything not listed is hidden.
SHOWN_PARAMETERS = frozenset(
    {
        # libpq (PostgreSQL) connection parameters that carry no credential.
        "host", "hostaddr", "port", "dbname", "sslmode", "sslrootcert", "sslcert", "sslcrl",
        "sslcrldir", "sslsni", "sslnegotiation", "sslcompression", "ssl_min_protocol_version",
        "ssl_max_protocol_version", "requiressl", "channel_binding", "gssencmode", "gssdelegation",
        "krbsrvname", "gsslib", "requirepeer", "require_auth", "connect_timeout",
        "application_name", "fallback_application_name", "client_encoding", "target_session_attrs",
        "load_balance_hosts", "keepalives", "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "replication", "service",
        # SQLite URI parameters.
        "mode", "cache", "immutable", "vfs", "nolock", "psow",
        # MySQL/MariaDB and general driver options.
        "charset", "collation", "ssl", "ssl_mode", "timezone", "autocommit", "schema",
        "search_path", "timeout", "ssl-mode", "ssl-ca", "ssl_ca", "sslca", "ssl-cert", "ssl_cert",
        "unix_socket", "unix-socket", "socket", "option-group", "option_group",
        "read_default_group",
    }
)  # fmt: skip

#: Free text only (`redact_text`): `NAME=value` pairs outside URLs whose value is hidden.
#: Free text only (`redact_text`): the value of a `KEY=value` pair outside URLs is hidden when
#: KEY, lower-cased without `_ . -`, contains one of these (`PGPASSWORD`, `api_key`, `sslkey`)...
SECRET_KEY_PARTS = (
    "password", "passwd", "passfile", "passphrase", "secret", "token", "apikey", "credential",
    "signature", "privatekey", "sslkey", "accesskey", "authorization",
)  # fmt: skip
#: ... or when one of its `_ . -`-separated words is one of these.
SECRET_KEY_WORDS = frozenset({"pass", "pwd", "auth", "sig", "key"})

#: Shortest piece of a known secret that is hidden wherever it appears as a word.
MIN_PIECE = 4
#: Shortest user name remembered as a secret: token-shaped (ghp_..., glpat-...), not `postgres`.
MIN_SECRET_USER = 16
#: User names shown when they come without a password: conventional and never secret.
_PUBLIC_USERS = frozenset({"git"})
# Every pattern here runs in time linear in its input (bounded repetitions, no nested choice):
# redaction sees whatever a client or a driver put in an error message, 300,000 characters too.
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]{0,63}(?::[A-Za-z][A-Za-z0-9+.\-]{0,63}){0,3}"
_URL_START = re.compile(_SCHEME + "://")
_SCHEME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-:")
_URL_REST = re.compile(r"[^\s'\"<>`]*")
_KEY_BEFORE = re.compile(r"(?<![\w.\-])[\w.\-]{1,64}\s{0,8}\Z")
_SEPARATORS = re.compile(r"[_.\-]")
#: An authority (host[:port], IPv6 literals, libpq's host1:port1,host2:port2) with nothing a
#: credential could hide in.
_HOST = r"(?:\[[0-9A-Fa-f:.%\w]*\]|[^:@\[\],]*)(?::\d*)?"
_PLAIN_AUTHORITY = re.compile(f"{_HOST}(?:,{_HOST})*")
#: "@" inside a path, not at the start of a segment (npm's /@scope is fine): the tail of a
#: password or token that contained "/" (`user:12/34@host`, `tok/en@host`).
_BROKEN_USERINFO = re.compile(r"[^/]@")
#: scp-like git remotes: user@host:path.
_SCP_LIKE = re.compile(r"^([^/@:]+(?:@[^/@:]+)*)@([^/@:]+):(.*)$", re.DOTALL)
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
_LIBPQ_KEY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.\-]*)\s*=\s*")
_PIECE_SEPARATORS = re.compile(r"[@:/?#&;=\s'\"]+")
#: Parameters that name a user: remembered as a secret only when token-shaped, as user info is.
_USER_PARAMETERS = frozenset({"user", "username"})


class _Hidden:
    """What a redaction hid, for `remember_secrets`: secrets, and user names (kept apart because
    only token-shaped ones are remembered)."""

    def __init__(self) -> None:
        self.secrets: list[str] = []
        self.users: list[str] = []

    def userinfo(self, userinfo: str) -> None:
        user, colon, password = userinfo.partition(":")
        self.users.append(user)
        if colon:
            self.secrets.append(password)

    def parameter(self, key: str, value: str) -> None:
        (self.users if unquote(key).lower() in _USER_PARAMETERS else self.secrets).append(value)


def redact_url(url: str) -> str:
    """`url` (a URL, a libpq `key=value` string, an scp-like git remote or a path) with every
    part that may hold a secret replaced by `***` (see the module docstring for the rule)."""
    return KNOWN.hide(_redact_url(url, _Hidden()))


def redact_text(text: str) -> str:
    """`text` with `redact_url` applied to every URL in it, `password=`-like values and every
    known secret hidden."""
    if "=" in text or "://" in text:
        pieces: list[str] = []
        last = 0
        for start, end in _urls_in(text):
            pieces.append(_hide_secret_words(text[last:start]))
            pieces.append(_redact_url(text[start:end], _Hidden()))
            last = end
        pieces.append(_hide_secret_words(text[last:]))
        text = "".join(pieces)
    return KNOWN.hide(text)


def redact_value(value: object, *, max_string: int = 1024) -> object:
    """JSON-like `value` (tool arguments) as `redact_text` would show it: every string through
    `redact_text`, cut to `max_string` characters, and the value of every key that names a secret
    (`password`, `api_key`, `token`...) replaced by `***` whatever it is."""
    if isinstance(value, str):
        shown = redact_text(value)
        return shown if len(shown) <= max_string else shown[: max_string - 1] + "…"
    if isinstance(value, dict):
        return {
            str(key): HIDDEN if _is_secret_key(str(key)) else redact_value(item, max_string=max_string)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact_value(item, max_string=max_string) for item in value]
    return value


def remember_secrets(value: str) -> None:
    """Remember what `redact_url` hides in the URLs of `value` (a configured URL, or a `name=URL`
    spec), so that `redact_text` and `redact_url` hide it wherever else it turns up. Only URLs
    count: a path that merely contains "@" or "=" holds no credential, and remembering its
    pieces would hide ordinary words."""
    if "://" not in value:
        return
    hidden = _Hidden()
    for start, end in _urls_in(value):
        _redact_url(value[start:end], hidden)
    KNOWN.add(hidden.secrets, [user for user in hidden.users if len(user) >= MIN_SECRET_USER])


class KnownSecrets:
    """Secrets from the configuration, hidden wherever they appear as a word (see the module
    docstring). Written while settings are built, read by every redaction (threads included:
    the pattern is replaced whole)."""

    def __init__(self) -> None:
        self._words: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def add(self, secrets: Iterable[str], whole_only: Iterable[str] = ()) -> None:
        words = set(self._words)
        for secret in secrets:
            for form in {secret, unquote(secret)}:
                words.update(
                    piece for piece in [form, *_PIECE_SEPARATORS.split(form)] if len(piece) >= MIN_PIECE
                )
        for secret in whole_only:
            words.update({secret, unquote(secret)})
        if words != self._words:
            self._words = words
            alternatives = "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))
            self._pattern = re.compile(f"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")

    @property
    def words(self) -> frozenset[str]:
        return frozenset(self._words)

    def hide(self, text: str) -> str:
        pattern = self._pattern
        return text if pattern is None else pattern.sub(HIDDEN, text)

    def clear(self) -> None:
        self._words, self._pattern = set(), None


#: The process's known secrets (one process serves one configuration).
KNOWN = KnownSecrets()


class RedactingFormatter(logging.Formatter):
    """Every log line through `redact_text`, tracebacks included: a driver's exception that
    quotes its connection string cannot put a password in the log."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


def _redact_url(url: str, hidden: _Hidden) -> str:
    start = _URL_START.match(url)
    if start is not None:
        return start.group() + _redact_after_scheme(url[start.end() :], hidden)
    if _LIBPQ_KEY.match(url) and "=" in url:
        return _redact_keyword_string(url, hidden)
    scp = _SCP_LIKE.match(url)
    if scp is not None:
        user, host, path = scp.groups()
        return f"{_shown_user(user, hidden)}@{host}:{path}"
    if "@" in url:
        # Not a URL we can read, but something@: whatever precedes the last "@" may be a secret.
        userinfo, _, host = url.rpartition("@")
        hidden.secrets.append(userinfo)
        return f"{HIDDEN}@{host}"
    return url


def _urls_in(text: str) -> list[tuple[int, int]]:
    """(start, end) of every `scheme://...` run in `text`, found from its "://" marks."""
    found: list[tuple[int, int]] = []
    mark = text.find("://")
    while mark != -1:
        start = _scheme_start(text, mark, found[-1][1] if found else 0)
        rest = _URL_REST.match(text, mark + 3)
        end = rest.end() if rest is not None else mark + 3
        if start is not None:
            found.append((start, end))
        mark = text.find("://", end)
    return found


def _scheme_start(text: str, mark: int, floor: int) -> int | None:
    """Where the scheme ending at `mark` starts (at most 260 characters back, not before
    `floor`): the first letter of the run of scheme characters before it, if that is a scheme."""
    start = mark
    while start > max(floor, mark - 260) and text[start - 1] in _SCHEME_CHARACTERS:
        start -= 1
    while start < mark and not (text[start].isascii() and text[start].isalpha()):
        start += 1
    if start < mark and _URL_START.fullmatch(text, start, mark + 3):
        return start
    return None


@functools.lru_cache(maxsize=4096)  # the same few parameter names, over and over
def _is_secret_key(key: str) -> bool:
    lowered = key.lower()
    joined = _SEPARATORS.sub("", lowered)
    return any(part in joined for part in SECRET_KEY_PARTS) or not SECRET_KEY_WORDS.isdisjoint(
        _SEPARATORS.split(lowered)
    )


def _hide_secret_words(text: str) -> str:
    """`text` with the value of every `SECRET=value` pair replaced by `***`."""
    if "=" not in text:
        return text
    pieces: list[str] = []
    last = 0
    equals = text.find("=")
    while equals != -1:
        key = _KEY_BEFORE.search(text, max(0, equals - 80), equals)
        start = equals + 1
        while start < len(text) and text[start] in " \t":
            start += 1
        end = _value_end(text, start)
        if key is not None and end > start and _is_secret_key(key.group().strip()):
            pieces.append(text[last:start] + HIDDEN)
            last = end
        equals = text.find("=", max(end, equals + 1))
    pieces.append(text[last:])
    return "".join(pieces)


def _value_end(text: str, start: int) -> int:
    """Where the value starting at `start` ends: a quoted string (to its closing quote, or the
    end of the text), else the next space, `&`, `;`, `,` or quote."""
    if start < len(text) and text[start] in "'\"":
        quote, index = text[start], start + 1
        while index < len(text):
            if text[index] == "\\":
                index += 2
            elif text[index] == quote:
                return index + 1
            else:
                index += 1
        return len(text)
    end = start
    while end < len(text) and text[end] not in " \t\r\n&;,'\"":
        end += 1
    return end


def _redact_after_scheme(rest: str, hidden: _Hidden) -> str:
    """Everything after `scheme://`: authority, path, query, fragment."""
    end = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if found != -1:
            end = min(end, found)
    authority, tail = rest[:end], rest[end:]
    userinfo, at, host = authority.rpartition("@")
    path, query, fragment = _split_tail(tail)
    if "@" in rest and (
        not _PLAIN_AUTHORITY.fullmatch(host) or (authority and _BROKEN_USERINFO.search(path))
    ):
        # `user:pa/ss@host`: a password with "/", "?" or "#" broke the URL. Where it ends is
        # unknowable, so nothing after the scheme is shown. (Without an "@" there is no user
        # info to break: `scheme://host[:port]` in a sentence stays as written.)
        hidden.secrets.append(rest.rpartition("@")[0] or rest)
        return HIDDEN
    if at:
        authority = f"{_shown_user(userinfo, hidden)}@{host}"
    shown = authority + path
    if query is not None:
        shown += "?" + _redact_parameters(query, hidden)
    if fragment is not None:
        shown += "#" + _redact_parameters(fragment, hidden)
    return shown


def _split_tail(tail: str) -> tuple[str, str | None, str | None]:
    path, hash_mark, fragment = tail.partition("#")
    path, question, query = path.partition("?")
    return path, (query if question else None), (fragment if hash_mark else None)


def _shown_user(userinfo: str, hidden: _Hidden) -> str:
    if userinfo in _PUBLIC_USERS:
        return userinfo
    hidden.userinfo(userinfo)
    return HIDDEN


def _redact_parameters(query: str, hidden: _Hidden) -> str:
    """`a=1&password=x;b` -> `a=1&password=***;***` (values kept only for SHOWN_PARAMETERS)."""
    if not query:
        return query
    parts = re.split(r"([&;])", query)
    for index in range(0, len(parts), 2):
        key, equals, value = parts[index].partition("=")
        if not equals:
            hidden.secrets.append(parts[index])
            parts[index] = HIDDEN if parts[index] else ""
        elif not _PLAIN_NAME.match(unquote(key)):
            hidden.secrets.extend((key, value))
            parts[index] = f"{HIDDEN}={HIDDEN}"
        elif unquote(key).lower() not in SHOWN_PARAMETERS:
            hidden.parameter(key, value)
            parts[index] = f"{key}={HIDDEN}"
    return "".join(parts)


def _redact_keyword_string(text: str, hidden: _Hidden) -> str:
    """A libpq `key=value key='quoted value'` string, each value kept only for SHOWN_PARAMETERS;
    from the first point that does not parse, everything is hidden."""
    shown: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        key_match = _LIBPQ_KEY.match(text, position)
        if key_match is None:
            hidden.secrets.append(text[position:])
            shown.append(HIDDEN)
            break
        key = key_match.group(1)
        position = key_match.end()
        value, position = _libpq_value(text, position)
        if value is None:
            hidden.secrets.append(text[key_match.end() :])
            shown.append(f"{key}={HIDDEN}")
            break
        if key.lower() in SHOWN_PARAMETERS:
            shown.append(f"{key}={value}")
        else:
            hidden.parameter(key, value.strip("'"))
            shown.append(f"{key}={HIDDEN}")
    return " ".join(shown)


def _libpq_value(text: str, position: int) -> tuple[str | None, int]:
    """The value at `position` (as written) and where the next pair starts; None if the quoted
    value never ends."""
    if text.startswith("'", position):
        index = position + 1
        while index < len(text):
            if text[index] == "\\":
                index += 2
                continue
            if text[index] == "'":
                return text[position : index + 1], index + 1
            index += 1
        return None, len(text)
    end = position
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[position:end], end
