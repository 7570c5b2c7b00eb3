"""Where and how to connect to a MySQL or MariaDB server, from a mysql:// or mariadb:// URL.

    mysql://user:password@host:3306/database?ssl-mode=VERIFY_IDENTITY&ssl-ca=/etc/ca.pem
    mariadb://user@localhost/app?unix_socket=/run/mysqld/mysqld.sock
    mysql://app_ro@db/app?option-file=~/.my.app.cnf&option-group=client

Credentials are looked for as the mysql client looks for them: the URL first, then the MYSQL_PWD
environment variable (password only), then an option file: the one named by `option-file`
(also `read_default_file`, `defaults-file`), else ~/.my.cnf when it exists; its [client] group,
or the group named by `option-group`. An option file also gives host, port, socket, database and
ssl-ca/ssl-cert/ssl-key for what the URL leaves out.

TLS (`ssl-mode`, as the mysql client spells it): DISABLED, PREFERRED (read as DISABLED: this server
does not fall back silently), REQUIRED (encrypted, certificate not checked), VERIFY_CA (certificate
checked against `ssl-ca` or the system store), VERIFY_IDENTITY (and the host name). `ssl-ca`,
`ssl-cert`, `ssl-key` name PEM files; any of them without a mode means VERIFY_CA. A host that is a
path (`%2Frun%2Fmysqld%2Fmysqld.sock`) or `unix_socket=`/`socket=` connects through a unix socket.
"""

from __future__ import annotations

import configparser
import os
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from mcp_batteries.errors import ConfigError
from mcp_batteries.safety import redact_url

DEFAULT_PORT = 3306
_SSL_MODES = {"DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"}
_ALIASES = {
    "sslmode": "ssl-mode", "ssl_mode": "ssl-mode", "ssl": "ssl-mode",
    "ssl_ca": "ssl-ca", "sslca": "ssl-ca", "ssl_cert": "ssl-cert", "ssl_key": "ssl-key",
    "socket": "unix_socket", "unix-socket": "unix_socket",
    "read_default_file": "option-file", "defaults-file": "option-file", "defaults_file": "option-file",
    "read_default_group": "option-group", "option_group": "option-group", "option_file": "option-file",
    "password": "password", "user": "user",
}  # fmt: skip
_KNOWN = {"ssl-mode", "ssl-ca", "ssl-cert", "ssl-key", "unix_socket", "option-file", "option-group",
          "password", "user", "connect_timeout"}  # fmt: skip


@dataclass(frozen=True)
class MySQLTarget:
    """Everything needed to open a connection; `redacted` is the URL without its password."""

    redacted: str
    host: str
    port: int
    user: str
    password: str = field(repr=False)
    database: str | None
    unix_socket: str | None
    ssl_mode: str
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    connect_timeout: float = 10.0

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of `ssl_mode`, or None for a plain connection."""
        if self.ssl_mode in {"DISABLED", "PREFERRED"}:
            return None
        try:
            context = ssl.create_default_context(cafile=self.ssl_ca)
            if self.ssl_cert:
                context.load_cert_chain(self.ssl_cert, self.ssl_key)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load the TLS files of {self.redacted}: {exc}") from exc
        context.check_hostname = self.ssl_mode == "VERIFY_IDENTITY"
        if self.ssl_mode == "REQUIRED":
            context.verify_mode = ssl.CERT_NONE
        return context

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of asyncmy's Connection (see mysql_pool.py for the rest)."""
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "database": self.database,
            "unix_socket": self.unix_socket,
            "ssl": self.ssl_context(),
            "connect_timeout": self.connect_timeout,
        }


def _option_file(path: str | None, group: str) -> dict[str, str]:
    if path is None:
        default = Path.home() / ".my.cnf"
        if not default.is_file():
            return {}
        file = default
    else:
        file = Path(os.path.expanduser(path))
        if not file.is_file():
            raise ConfigError(f"option file {file} does not exist")
    parser = configparser.RawConfigParser(allow_no_value=True, strict=False)
    try:
        # MySQL option files may start with !include lines, which configparser cannot read.
        text = "\n".join(
            line for line in file.read_text(encoding="utf-8").splitlines() if not line.startswith("!")
        )
        parser.read_string(text, source=str(file))
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        raise ConfigError(f"cannot read option file {file}: {exc}") from exc
    if not parser.has_section(group):
        return {}
    values = {}
    for key, value in parser.items(group):
        if value is None:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.replace("_", "-")] = value
    return values


def parse_mysql_url(url: str) -> MySQLTarget:
    """The connection target of a mysql:// or mariadb:// URL (ConfigError names what is wrong)."""
    parts = urlsplit(url)
    options: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        name = _ALIASES.get(key.lower(), key.lower())
        if name not in _KNOWN:
            known = ", ".join(sorted(_KNOWN - {"password"}))
            raise ConfigError(f"unknown option {key!r} in {redact_url(url)}; known: {known}")
        options[name] = value
    group = options.get("option-group", "client")
    from_file = _option_file(options.get("option-file"), group)
    socket = options.get("unix_socket")
    encoded_host = parts.netloc.rsplit("@", 1)[-1]
    try:
        if encoded_host.lower().startswith("%2f"):  # a socket path as the host (case kept)
            socket, host, port = unquote(encoded_host), "", int(from_file.get("port", DEFAULT_PORT))
        else:
            host = parts.hostname or ""
            port = parts.port or int(from_file.get("port", DEFAULT_PORT))
    except ValueError as exc:
        raise ConfigError(f"invalid port in {redact_url(url)}: {exc}") from None
    user = unquote(parts.username) if parts.username else options.get("user") or from_file.get("user")
    password = (
        unquote(parts.password)
        if parts.password is not None
        else options.get("password") or os.environ.get("MYSQL_PWD") or from_file.get("password") or ""
    )
    database = unquote(parts.path.lstrip("/")) or from_file.get("database") or None
    ssl_ca = options.get("ssl-ca") or from_file.get("ssl-ca")
    ssl_cert = options.get("ssl-cert") or from_file.get("ssl-cert")
    ssl_key = options.get("ssl-key") or from_file.get("ssl-key")
    mode = (options.get("ssl-mode") or from_file.get("ssl-mode") or "").upper().replace("-", "_")
    if mode in {"TRUE", "1", "ON"}:
        mode = "REQUIRED"
    elif mode in {"FALSE", "0", "OFF"}:
        mode = "DISABLED"
    if not mode:
        mode = "VERIFY_CA" if ssl_ca or ssl_cert else "DISABLED"
    if mode not in _SSL_MODES:
        raise ConfigError(f"ssl-mode must be one of {', '.join(sorted(_SSL_MODES))}, not {mode!r}")
    try:
        timeout = float(options.get("connect_timeout", "10"))
    except ValueError:
        raise ConfigError("connect_timeout must be a number of seconds") from None
    return MySQLTarget(
        redacted=redact_url(url),
        host=host or from_file.get("host") or "localhost",
        port=port,
        user=user or os.environ.get("USER") or "root",
        password=password,
        database=database,
        unix_socket=socket or (from_file.get("socket") if not host else None),
        ssl_mode=mode,
        ssl_ca=os.path.expanduser(ssl_ca) if ssl_ca else None,
        ssl_cert=os.path.expanduser(ssl_cert) if ssl_cert else None,
        ssl_key=os.path.expanduser(ssl_key) if ssl_key else None,
        connect_timeout=timeout,
    )
