"""Public: the rules every server applies to what it is given and what it shows.

    from mcp_batteries.safety import AllowedDirectories, resolve_path, open_for_read, quote_name

- paths: the one containment function (`resolve_path` / `AllowedDirectories`) and open primitives
  that re-check at use time (no symlink leads outside an allowed directory): `open_for_read` for a
  file, `open_directory` / `open_parent` for a `Directory` whose entries are acted on by name
  (stat, create, rename, unlink, list) without any lookup above the name being redirectable;
- workdir: whether the current directory is too wide to serve by default (`/`, HOME, ...);
- redact: the one redaction of secrets in URLs, connection strings and free text;
- names: the one reversible form for names that are not clean text (git-style quoting), and
  `scrub` for text that must not carry control characters.
"""

from mcp_batteries._safety.names import is_plain, quote_name, quote_path, scrub, unquote_name, unquote_path
from mcp_batteries._safety.paths import (
    NAME_MAX,
    PATH_MAX,
    AllowedDirectories,
    Directory,
    display_path,
    file_uri_to_path,
    is_link_like,
    open_directory,
    open_for_read,
    open_parent,
    open_path_for_read,
    reopen_directory,
    reopen_file,
    resolve_path,
    stat_within,
    symlink_target_within,
    translate_os_error,
)
from mcp_batteries._safety.redact import redact_text, redact_url
from mcp_batteries._safety.workdir import current_directory_scope, too_wide_to_default

__all__ = [
    "NAME_MAX",
    "PATH_MAX",
    "AllowedDirectories",
    "Directory",
    "current_directory_scope",
    "display_path",
    "file_uri_to_path",
    "is_link_like",
    "is_plain",
    "open_directory",
    "open_for_read",
    "open_parent",
    "open_path_for_read",
    "quote_name",
    "quote_path",
    "redact_text",
    "redact_url",
    "reopen_directory",
    "reopen_file",
    "resolve_path",
    "scrub",
    "stat_within",
    "symlink_target_within",
    "too_wide_to_default",
    "translate_os_error",
    "unquote_name",
    "unquote_path",
]
