"""What keeps a repository's own files from making git run code or reach where it should not.

A repository is data the operator allowed, not code the operator trusts: its `.git/config` (and
whatever it includes), its `.gitattributes` and its hooks can all name programs for git to run.
Every git command this server starts therefore gets:

- `STATIC_CONFIG` as `-c` overrides (command-line configuration wins over every file): no hooks,
  no fsmonitor program, no pager, no signature verification programs on log, no automatic gc,
  no recursion into submodules (whose configuration we have not vetted), no guessed identity;
- `overrides_for(...)`: every key that names a program and is set by the repository itself
  (scope `local` or `worktree`, includes followed) is overridden: filter drivers, diff and
  merge drivers, the ssh command, credential helpers, signing programs. The same keys from the
  user's global configuration are the user's own choice and are kept (re-added after a reset
  where git reads a list). Upload/receive-pack programs cannot be overridden this way (git takes
  the first value): `network` names them on the command line of every fetch, pull and push;
- `base_environment(...)`: no system configuration, no terminal prompts, no askpass program,
  no editor, transports limited to file/git/http/https/ssh (never `ext::` or `fd::`), and the
  repository named explicitly (GIT_DIR/GIT_WORK_TREE), so `core.worktree` and inherited GIT_*
  variables cannot point git elsewhere;
- commands that produce diffs also pass `--no-ext-diff --no-textconv` (see `NO_DRIVERS`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "ALLOWED_PROTOCOLS",
    "NO_DRIVERS",
    "STATIC_CONFIG",
    "base_environment",
    "overrides_for",
    "parse_config_listing",
]

#: Transports git may use; `ext::` (runs a command) and `fd::` are never allowed.
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"

#: Arguments for every command that can show a diff: no external diff program, no textconv.
NO_DRIVERS = ("--no-ext-diff", "--no-textconv")

STATIC_CONFIG: tuple[str, ...] = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.quotePath=false",
    "color.ui=false",
    "log.showSignature=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "diff.ignoreSubmodules=dirty",
    "status.submoduleSummary=false",
    "blame.ignoreRevsFile=",
    "user.useConfigOnly=true",
    "advice.detachedHead=false",
    "i18n.logOutputEncoding=UTF-8",
    "protocol.ext.allow=never",
    "protocol.fd.allow=never",
)

# Keys naming a program, matched on the lower-cased key git prints. The value is what replaces a
# repository-set one: "" disables the feature (filters: git skips an empty command), a fixed
# harmless program where an empty value would be an error.
_DANGEROUS: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (re.compile(r"^filter\..+\.(clean|smudge|process)$"), ""),
    (re.compile(r"^diff\..+\.(textconv|command)$"), "cat"),
    (re.compile(r"^diff\.external$"), "cat"),
    (re.compile(r"^merge\..+\.driver$"), "false"),
    (re.compile(r"^core\.(sshcommand|gitproxy|askpass|alternaterefscommand|editor)$"), None),
    (re.compile(r"^sequence\.editor$"), "true"),
    (re.compile(r"^ssh\.variant$"), "ssh"),
    (re.compile(r"^credential\.(.+\.)?helper$"), None),
    (re.compile(r"^gpg\.(.+\.)?program$"), None),
    (re.compile(r"^gpg\.ssh\.defaultkeycommand$"), None),
    # remote.<name>.uploadpack/receivepack: git uses the FIRST value, so `-c` cannot override
    # them; `network` passes --upload-pack/--receive-pack on every fetch, pull and push instead.
    (re.compile(r"^remote\..+\.vcs$"), ""),
    (re.compile(r"^pager\..+$"), "false"),
    (re.compile(r"^trailer\..+\.(command|cmd)$"), ""),
    (re.compile(r"^(http|https)\.(.+\.)?proxy$"), ""),
)

# Defaults used when a user-level value to fall back to does not exist.
_FALLBACK = {
    "core.sshcommand": "ssh",
    "core.gitproxy": "",
    "core.askpass": "",
    "core.alternaterefscommand": "",
    "core.editor": "true",
    "gpg.program": "gpg",
    "gpg.openpgp.program": "gpg",
    "gpg.x509.program": "gpgsm",
    "gpg.ssh.program": "ssh-keygen",
    "gpg.ssh.defaultkeycommand": "",
}

#: Scopes whose values come from the repository itself (and its includes).
_REPOSITORY_SCOPES = frozenset({"local", "worktree"})
#: Scopes that are the user's own choice.
_USER_SCOPES = frozenset({"global"})


def parse_config_listing(raw: bytes) -> list[tuple[str, str, str]]:
    """`git config --list --show-scope -z` -> [(scope, lower-cased key, value)].

    Each entry is `scope NUL key LF value NUL` (a key given without a value has no LF).
    """
    entries: list[tuple[str, str, str]] = []
    fields = raw.split(b"\x00")
    for scope, item in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = item.partition(b"\n")
        entries.append(
            (
                scope.decode("ascii", "replace"),
                key.decode("utf-8", "surrogateescape").lower(),
                value.decode("utf-8", "surrogateescape"),
            )
        )
    return entries


def overrides_for(entries: Iterable[tuple[str, str, str]]) -> list[str]:
    """`-c key=value` overrides neutralising every program a repository's config names."""
    entries = list(entries)
    user_values: dict[str, list[str]] = {}
    for scope, key, value in entries:
        if scope in _USER_SCOPES:
            user_values.setdefault(key, []).append(value)
    overrides: list[str] = []
    seen: set[str] = set()
    for scope, key, _ in entries:
        if scope not in _REPOSITORY_SCOPES or key in seen:
            continue
        for pattern, replacement in _DANGEROUS:
            if not pattern.match(key):
                continue
            seen.add(key)
            if key.startswith("credential."):
                # A list: an empty value resets it, then the user's own helpers come back.
                overrides.append(f"{key}=")
                overrides.extend(f"{key}={value}" for value in user_values.get(key, []))
            elif replacement is None:
                kept = user_values.get(key)
                overrides.append(f"{key}={kept[-1] if kept else _FALLBACK.get(key, '')}")
            else:
                overrides.append(f"{key}={replacement}")
            break
    return overrides


def base_environment(worktree: Path, git_dir: Path, common_dir: Path) -> dict[str, str]:
    """Environment values set for every git command in one repository.

    Values are set rather than removed (the process environment is the operator's and is
    inherited): each one below makes git ignore what an inherited value could redirect.
    """
    env = {
        # The repository, named explicitly: no discovery, no core.worktree, no inherited GIT_DIR.
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(worktree),
        "GIT_COMMON_DIR": str(common_dir),
        "GIT_INDEX_FILE": str(git_dir / "index"),
        "GIT_OBJECT_DIRECTORY": str(common_dir / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": "",
        "GIT_NAMESPACE": "",
        "GIT_CEILING_DIRECTORIES": "",
        # Configuration: no system file, nothing injected through the environment.
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_PARAMETERS": "",
        "GIT_CONFIG_COUNT": "0",
        # Nothing interactive, nothing external.
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "true",
        "SSH_ASKPASS": "",
        "SSH_ASKPASS_REQUIRE": "never",
        "GCM_INTERACTIVE": "never",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_EDITOR": "true",
        "GIT_SEQUENCE_EDITOR": "true",
        "GIT_EXTERNAL_DIFF": "",
        "GIT_DIFF_OPTS": "",
        # Takes precedence over every protocol.*.allow setting.
        "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
    }
    return env
