"""Database URLs: the command-line specs and the embedded default file (shown through
`mcp_batteries._safety.redact.redact_url`, the one redaction).

Accepted URL forms:
    postgresql://user:pw@host:5432/db?sslmode=require   (also postgres://, postgresql+asyncpg://)
    mysql://user:pw@host:3306/db?ssl-mode=REQUIRED       (also mariadb://, mysql+asyncmy://; see
                                                         mysql_target.py for the options)
    sqlite:////absolute/path.db     sqlite:///relative/path.db   (SQLAlchemy convention)
    sqlite:/absolute/path.db        file:/absolute/path.db
    /absolute/path.db  ./relative.db  ~/x.sqlite  data.db        (bare paths are SQLite files)
A spec is a URL or `name=URL`; unnamed specs get the name "main" (the first) or a name derived
from the file stem / database name. A bare file name that itself contains "=" must be written
with a ./ prefix or as a sqlite: URL.
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from mcp_batteries.errors import ConfigError
from mcp_batteries.platform import user_data_dir

DEFAULT_NAME = "main"
_NAME_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]{0,62})=(.+)$", re.DOTALL)
_PG_SCHEMES = {"postgresql", "postgres", "postgresql+asyncpg", "postgres+asyncpg"}
_MYSQL_SCHEMES = {"mysql", "mariadb", "mysql+asyncmy", "mariadb+asyncmy", "mysql+aiomysql", "mysql+pymysql"}


@dataclass(frozen=True)
class ParsedURL:
    dialect: Literal["sqlite", "postgresql", "mysql"]
    dsn: str | None
    """asyncpg-ready DSN for PostgreSQL; the mysql:// or mariadb:// URL for MySQL and MariaDB."""
    sqlite_path: Path | None
    """Absolute path of the SQLite file."""


def default_database_path() -> Path:
    """The embedded default SQLite file used when no database is given on the command line (in the
    user's data directory: `mcp_batteries.platform.user_data_dir`)."""
    return user_data_dir("sql") / "default.db"


def ensure_sqlite_file(path: Path) -> bool:
    """Create an empty SQLite database (and its directory) if it does not exist yet; True if created."""
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    # sqlite3.connect creates the file; a zero-length file is already a valid empty database,
    # but writing the header makes the file recognisable to other tools straight away.
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA user_version = 0")
        conn.execute("VACUUM")
    finally:
        conn.close()
    return True


SQLITE_HEADER = b"SQLite format 3\x00"


def check_sqlite_file(path: Path) -> None:
    """Refuse an existing file that is not a SQLite database (an empty file is an empty database).

    Checked when the server is built, before it serves anything: SQLite itself would open any file
    and fail only at the first statement.
    """
    try:
        with path.open("rb") as file:
            head = file.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory, not a SQLite database file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head and head != SQLITE_HEADER:
        raise ConfigError(
            f"{path} is not a SQLite database (it does not start with the SQLite header); give a "
            "SQLite database file or a postgresql:// URL"
        )


def parse_url(url: str) -> ParsedURL:
    """Classify one database URL; raises ConfigError with a message naming the accepted forms."""
    text = url.strip()
    if not text:
        raise ConfigError("empty database URL; give a postgresql:// URL or a SQLite file path")
    scheme = text.split(":", 1)[0].lower() if re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*:", text) else ""
    if scheme in _PG_SCHEMES:
        parts = urlsplit(text)
        # asyncpg only knows postgresql:// and postgres://; drop a SQLAlchemy-style +driver suffix.
        dsn = urlunsplit(parts._replace(scheme="postgresql"))
        return ParsedURL("postgresql", dsn, None)
    if scheme in _MYSQL_SCHEMES:
        # Both spellings name the same engine; mariadb:// is kept so the user sees what they wrote.
        kind = "mariadb" if scheme.startswith("mariadb") else "mysql"
        return ParsedURL("mysql", urlunsplit(urlsplit(text)._replace(scheme=kind)), None)
    if scheme in {"sqlite", "sqlite3"}:
        rest = text.split(":", 1)[1]
        if rest.startswith("//"):
            rest = rest[2:]  # sqlite://<host>/path: SQLAlchemy leaves host empty, path after one "/"
            rest = rest[1:] if rest.startswith("/") else rest
        if rest in {"", ":memory:"}:
            raise ConfigError(
                "in-memory SQLite is not supported (nothing would persist between calls); give a file path"
            )
        return ParsedURL("sqlite", None, _abs_path(unquote(rest.split("?", 1)[0])))
    if scheme == "file":
        return ParsedURL("sqlite", None, _abs_path(unquote(urlsplit(text).path)))
    if scheme and len(scheme) > 1:
        raise ConfigError(
            f"unsupported database URL scheme {scheme!r}; use postgresql://user@host/db, "
            "mysql://user@host/db (or mariadb://) or a SQLite "
            "file path (sqlite:///relative.db, sqlite:////absolute.db or a plain path)"
        )
    # A one-letter "scheme" is a Windows drive letter: a plain path.
    return ParsedURL("sqlite", None, _abs_path(text))


def _abs_path(raw: str) -> Path:
    return Path(os.path.expanduser(raw)).resolve()


def _derived_name(parsed: ParsedURL) -> str:
    if parsed.sqlite_path is not None:
        stem = parsed.sqlite_path.stem
    else:
        stem = urlsplit(parsed.dsn or "").path.lstrip("/") or parsed.dialect
    name = re.sub(r"[^A-Za-z0-9_\-]", "_", stem)[:63] or "db"
    return name if re.match(r"^[A-Za-z_]", name) else f"db_{name}"


def normalize_url(parsed: ParsedURL) -> str:
    if parsed.sqlite_path is not None:
        return f"sqlite:///{parsed.sqlite_path}"  # absolute path -> four slashes in total
    assert parsed.dsn is not None
    return parsed.dsn


def parse_database_specs(args: list[str]) -> dict[str, str]:
    """Turn positional `URL` / `name=URL` arguments into {name: normalized URL}.

    No arguments: {"main": <embedded default SQLite file>} (the file is created by open_database).
    """
    if not args:
        return {DEFAULT_NAME: f"sqlite:///{default_database_path()}"}
    specs: dict[str, str] = {}
    unnamed: list[ParsedURL] = []
    for arg in args:
        match = _NAME_RE.match(arg)
        # "name=URL" only when the part before "=" is a plain name: URLs with query strings
        # (postgresql://h/db?sslmode=x) contain ":" or "/" before their first "=".
        if match:
            name, url = match.group(1), match.group(2)
            if name in specs:
                raise ConfigError(f"database name {name!r} is given twice; each name must be unique")
            specs[name] = normalize_url(parse_url(url))
        else:
            unnamed.append(parse_url(arg))
    for parsed in unnamed:
        name = DEFAULT_NAME if DEFAULT_NAME not in specs else _derived_name(parsed)
        if name in specs:
            raise ConfigError(
                f"two databases would both be called {name!r}; name them explicitly as name=URL"
            )
        specs[name] = normalize_url(parsed)
    return specs
