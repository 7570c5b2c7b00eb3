"""What keeps a repository's own settings from making git run a program or reach elsewhere.

A repository is data the operator allowed, not code the operator trusts: its configuration
(`.git/config`, `config.worktree` and every file they include) can name programs for git to run
and places for git to reach. This module decides, default-deny, what becomes of every setting
the repository itself makes (scopes `local` and `worktree`, includes followed whatever their
condition); the operator's own configuration (`global`) is the operator's choice and is kept.

Every repository key gets exactly one verdict from `RULES` (names compared the way git compares
them: section and variable without regard to case, the subsection exactly):

- **kept**: harmless as set (layout, output, packing, refspecs...), each with the reason;
- **neutralised**: overridden on every command by a `-c` of the same key (command-line
  configuration is read last, so it wins; the same key also wins git's URL-specificity rules
  for `http.<url>.*`): the operator's own value when the operator sets that key, else a value
  that makes it inert (`filter.<any>.clean=`, `merge.<any>.driver=false`, `http.saveCookies=false`);
  lists git resets with an empty value (`credential.helper`) are reset, then the operator's
  entries re-added;
- **handled elsewhere**, by construction: by `STATIC_CONFIG`, by the environment
  (`base_environment`), by the command line of every command that reads it
  (`remote.<name>.uploadpack` and `receivepack`, which git reads first-value-wins), by the
  inspection that reads the configuration (includes) or by the URL check before every fetch,
  pull and push (`remote.<name>.url`, `url.<base>.insteadOf`);
- **refused**: a setting that none of the above can neutralise makes the server refuse to run
  git for that repository (or only fetch, pull and push, when only transports read it), with
  an error naming the key: `http.sslCAInfo` with no operator value, a partial clone whose
  promisor remote sets its own upload-pack.

A key no rule names (a tool's own setting, or one a newer git reads) is neutralised to the empty
string: unknown settings lose their effect instead of being trusted.

Besides the configuration, every command runs without transports unless it is a fetch, pull or
push (`GIT_ALLOW_PROTOCOL` empty: nothing can fetch lazily or reach a remote behind the
operator's back); `containment` keeps object stores, includes and links inside the allowed
areas.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_batteries.safety import quote_path

from mcp_git.text import MAX_NAME, clip

__all__ = [
    "ALLOWED_PROTOCOLS",
    "NO_DRIVERS",
    "REMOVED_ENVIRONMENT",
    "RULES",
    "STATIC_CONFIG",
    "STATIC_KEYS",
    "ConfigEntry",
    "Neutralisation",
    "Refusal",
    "Rule",
    "base_environment",
    "config_arguments",
    "expand_home",
    "include_target",
    "neutralise",
    "parse_config_listing",
    "promisor_remotes",
    "rule_for",
    "split_key",
]

#: Transports a fetch, pull or push may use; `ext::` (runs a command) and `fd::` never.
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"

#: Arguments for every command that can show a diff: no external diff program, no textconv.
NO_DRIVERS = ("--no-ext-diff", "--no-textconv")

#: Given on every command, after the neutralisation (so these always win).
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
    "submodule.propagateBranches=false",
    "fetch.recurseSubmodules=false",
    "push.recurseSubmodules=no",
    # A negotiating push starts a fetch of its own, without this server's --upload-pack.
    "push.negotiate=false",
    "diff.ignoreSubmodules=dirty",
    "status.submoduleSummary=false",
    "blame.ignoreRevsFile=",
    "user.useConfigOnly=true",
    "advice.detachedHead=false",
    "i18n.logOutputEncoding=UTF-8",
    "protocol.ext.allow=never",
    "protocol.fd.allow=never",
)

#: Inherited variables that would point git elsewhere or change what it reads; removed from the
#: environment of every git command (values that must be set are set by `base_environment`).
REMOVED_ENVIRONMENT = frozenset(
    {
        "GIT_CONFIG",
        "GIT_CONFIG_SYSTEM",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_GRAFT_FILE",
        "GIT_SHALLOW_FILE",
        "GIT_REPLACE_REF_BASE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_QUARANTINE_PATH",
        "GIT_PREFIX",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_GLOB_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS",
        "GIT_ICASE_PATHSPECS",
        "GIT_LITERAL_PATHSPECS",
        "GIT_EXTERNAL_DIFF",
        "GIT_DIFF_OPTS",
        "GIT_ATTR_SOURCE",
        "GIT_PROXY_COMMAND",
    }
)
_REMOVED_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "MCP_GIT_CONFIG_", "MCP_GIT_REMOTE_CONFIG_")

#: Scopes whose values come from the repository itself (and what it includes).
REPOSITORY_SCOPES = frozenset({"local", "worktree"})
#: The operator's own configuration.
OPERATOR_SCOPES = frozenset({"global"})


# -- the configuration as git lists it -----------------------------------------------------------


@dataclass(frozen=True)
class ConfigEntry:
    """One line of `git config --list --show-scope --show-origin -z`."""

    scope: str
    #: The file it came from as git printed it (None when not a file: the command line).
    origin: str | None
    #: As git compares names: section and variable lower-case, the subsection as written.
    key: str
    #: None for a key written without `=` (git reads it as boolean true).
    value: str | None

    @property
    def from_repository(self) -> bool:
        return self.scope in REPOSITORY_SCOPES


def parse_config_listing(raw: bytes, *, scope: str | None = None) -> list[ConfigEntry]:
    """`git config --list --show-scope --show-origin -z` -> entries, in git's reading order.

    Each entry is `scope NUL origin NUL key [LF value] NUL`; `scope` replaces the listed scope
    (for a file listed with `--file`, which git lists as `command`).
    """
    entries: list[ConfigEntry] = []
    fields = raw.split(b"\x00")
    for index in range(0, len(fields) - 2, 3):
        listed_scope, origin, item = fields[index : index + 3]
        key, newline, value = item.partition(b"\n")
        origin_text = os.fsdecode(origin)
        entries.append(
            ConfigEntry(
                scope=scope or listed_scope.decode("ascii", "replace"),
                origin=origin_text[len("file:") :] if origin_text.startswith("file:") else None,
                key=os.fsdecode(key),
                value=os.fsdecode(value) if newline else None,
            )
        )
    return entries


def split_key(key: str) -> tuple[str, str | None, str]:
    """`section.subsection.variable` -> (section, subsection or None, variable), as git splits
    it: at the first and the last dot (a subsection may hold dots)."""
    section, _, rest = key.partition(".")
    subsection, dot, variable = rest.rpartition(".")
    return section, (subsection if dot else None), variable


def expand_home(path: str) -> str | None:
    """`~/x` and `~user/x` expanded as git expands them (in include paths and in the local paths
    upload-pack and receive-pack are given); None for a user that does not exist."""
    if not path.startswith("~"):
        return path
    name, slash, rest = path[1:].partition("/")
    # expanduser looks the user up as git does (the password database on POSIX) and leaves the
    # text as it was for a user that does not exist.
    home = os.path.expanduser("~" + name)
    if home.startswith("~"):
        return None
    return home + slash + rest


def include_target(value: str, origin: str | None, cwd: Path) -> Path | None:
    """The file an `include.path` / `includeIf.*.path` value names, resolved as git resolves it
    (`~` and `~user` expanded, a relative path taken from the including file's directory);
    None when git could not resolve it either (a relative include not from a file, `%(prefix)`)."""
    if value.startswith("%(prefix)/"):
        return None
    path = expand_home(value)
    if path is None:
        return None
    if os.path.isabs(path):
        return Path(path)
    if origin is None:
        return None
    including = Path(origin) if os.path.isabs(origin) else cwd / origin
    return including.parent / path


# -- the rules ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """What becomes of a key when the repository sets it (see the module docstring)."""

    why: str
    keep: bool = False
    #: The inert value; None (and not kept, handled or a list) means none exists: refused
    #: unless the operator's own configuration sets the same key.
    neutral: str | None = None
    #: A list git resets with an empty value: reset, then the operator's entries re-added.
    reset_list: bool = False
    #: Neutralised by construction somewhere else (named in `why`).
    handled: bool = False
    #: Only transports read it: a refusal applies to fetch, pull and push only.
    network: bool = False
    #: Neutralise only these values (lower-case); any other value is harmless.
    only: frozenset[str] = frozenset()


def _keep(why: str) -> Rule:
    return Rule(why, keep=True)


def _neutral(value: str, why: str, *, network: bool = False, only: Iterable[str] = ()) -> Rule:
    return Rule(why, neutral=value, network=network, only=frozenset(only))


def _elsewhere(why: str) -> Rule:
    return Rule(why, handled=True)


def _refuse(why: str, *, network: bool = False) -> Rule:
    return Rule(why, network=network)


_NEVER_RUN = "read only by commands this server never runs"
_PROGRAM = "names a program git would run"
_SIGNING = "would run the signing program (gpg, gpgsm, ssh-keygen)"
_TRUST = "changes which server TLS trusts or which credentials it presents; no inert value exists"

#: Pattern -> rule. Patterns: `section.variable`, `section.<>.variable` (any subsection),
#: `section[.<>].variable` (with or without one), `section.sub.variable` (that exact
#: subsection), and `*` as the variable for every variable of a section.
RULES: dict[str, Rule] = {
    # -- programs git runs -------------------------------------------------------------------
    "filter.<>.clean": _neutral("", _PROGRAM + " (git skips an empty filter)"),
    "filter.<>.smudge": _neutral("", _PROGRAM + " (git skips an empty filter)"),
    "filter.<>.process": _neutral("", _PROGRAM + " (git skips an empty filter)"),
    "filter.<>.required": _neutral("false", "would make a neutralised filter an error"),
    "diff.<>.textconv": _neutral("", _PROGRAM + " (diffs also run with --no-textconv)"),
    "diff.<>.command": _neutral("", _PROGRAM + " (diffs also run with --no-ext-diff)"),
    "diff.external": _neutral("", _PROGRAM + " (diffs also run with --no-ext-diff)"),
    "merge.<>.driver": _neutral("false", _PROGRAM + " ('false': the file is left in conflict)"),
    "core.sshcommand": _neutral("ssh", _PROGRAM),
    "core.askpass": _neutral("", _PROGRAM + " (GIT_ASKPASS is also set)"),
    "core.editor": _neutral("true", _PROGRAM + " (GIT_EDITOR is also set)"),
    "sequence.editor": _neutral("true", _PROGRAM + " (GIT_SEQUENCE_EDITOR is also set)"),
    "core.alternaterefscommand": _neutral("true", _PROGRAM + " (a push target advertises no alternate refs)"),
    "credential[.<>].helper": Rule(_PROGRAM + " and would be handed credentials", reset_list=True),
    "gpg.program": _neutral("gpg", _PROGRAM),
    "gpg.openpgp.program": _neutral("gpg", _PROGRAM),
    "gpg.x509.program": _neutral("gpgsm", _PROGRAM),
    "gpg.ssh.program": _neutral("ssh-keygen", _PROGRAM),
    "gpg.<>.program": _neutral("", _PROGRAM),
    "gpg.ssh.defaultkeycommand": _neutral("", _PROGRAM),
    "gpg.ssh.allowedsignersfile": _neutral("", "a file read to verify signatures"),
    "gpg.ssh.revocationfile": _neutral("", "a file read to verify signatures"),
    "gpg.format": _neutral("openpgp", "chooses the signing program"),
    "gpg.mintrustlevel": _keep("a trust threshold"),
    "commit.gpgsign": _neutral("false", _SIGNING),
    "tag.gpgsign": _neutral("false", _SIGNING),
    "tag.forcesignannotated": _neutral("false", _SIGNING),
    "push.gpgsign": _neutral("false", _SIGNING),
    "merge.verifysignatures": _neutral("false", "would run the verification program"),
    "user.signingkey": _neutral("", "names a key (or a key file) for the signing program"),
    "pager.*": _neutral("false", _PROGRAM + " (git also runs with --no-pager)"),
    "trailer.<>.command": _neutral("", _PROGRAM),
    "trailer.<>.cmd": _neutral("", _PROGRAM),
    "submodule.<>.update": _neutral("none", "'!command' runs a program"),
    "branch.<>.mergeoptions": _neutral("", "options for merges git runs (strategies are programs)"),
    "remote.<>.vcs": _neutral("", "runs the git-remote-<vcs> helper"),
    "ssh.variant": _neutral("auto", "changes the arguments given to ssh"),
    "core.protecthfs": _neutral("true", "off, checkouts may write paths other systems read as .git"),
    "core.protectntfs": _neutral("true", "off, checkouts may write paths other systems read as .git"),
    "mailmap.file": _neutral("", "a file read to rewrite names"),
    "mailmap.blob": _neutral("", "a blob read to rewrite names"),
    "receive.denycurrentbranch": _neutral(
        "refuse",
        "'updateInstead' makes a push check out files in the target's working tree",
        only={"updateinstead"},
    ),
    "alias.*": _keep(
        "git expands an alias only for a command name that is not built in; the server runs built-in "
        "commands only, so no alias is ever expanded"
    ),
    # -- reaching elsewhere (only transports read these: fetch, pull and push) -------------------
    "http[.<>].proxy": _neutral("", "sends the traffic through another host", network=True),
    "remote.<>.proxy": _neutral("", "sends the traffic through another host", network=True),
    "http[.<>].sslverify": _neutral("true", "off, any server may pose as the remote", network=True),
    "http[.<>].cookiefile": _neutral("", "a file read (and written) as the cookie jar", network=True),
    "http[.<>].savecookies": _neutral("false", "would overwrite the cookie file", network=True),
    "http[.<>].followredirects": _neutral(
        "initial", "'true' follows redirects and http-alternates to other hosts", network=True
    ),
    "http[.<>].curloptresolve": Rule("points host names at other addresses", reset_list=True, network=True),
    "http[.<>].delegation": _neutral(
        "none", "would hand the operator's Kerberos credentials on to the server", network=True
    ),
    "http[.<>].sslversion": _neutral(
        "", "could weaken TLS enough for others to read or alter it", network=True
    ),
    "http[.<>].sslcipherlist": _neutral(
        "", "could weaken TLS enough for others to read or alter it", network=True
    ),
    "http[.<>].sslcainfo": _refuse(_TRUST, network=True),
    "http[.<>].sslcapath": _refuse(_TRUST, network=True),
    "http[.<>].sslcert": _refuse(_TRUST, network=True),
    "http[.<>].sslkey": _refuse(_TRUST, network=True),
    "http[.<>].sslcerttype": _refuse(_TRUST, network=True),
    "http[.<>].sslkeytype": _refuse(_TRUST, network=True),
    "http[.<>].proxysslcert": _refuse(_TRUST, network=True),
    "http[.<>].proxysslkey": _refuse(_TRUST, network=True),
    "http[.<>].proxysslcainfo": _refuse(_TRUST, network=True),
    "http[.<>].sslbackend": _refuse(_TRUST, network=True),
    **{
        f"http[.<>].{variable}": _keep("tunes or labels requests; reaches nothing new")
        for variable in (
            "postbuffer",
            "lowspeedlimit",
            "lowspeedtime",
            "maxrequests",
            "minsessions",
            "noepsv",
            "useragent",
            "version",
            "emptyauth",
            "extraheader",
            "proxyauthmethod",
            "sslcertpasswordprotected",
            "proxysslcertpasswordprotected",
            "ssltry",
            "pinnedpubkey",
            "schannelcheckrevoke",
            "schannelusesslcainfo",
        )
    },
    # -- handled elsewhere, by construction --------------------------------------------------
    "include.path": _elsewhere("read and checked by the server before git reads it (containment)"),
    "includeif.<>.path": _elsewhere("read and checked whatever its condition (containment)"),
    "remote.<>.url": _elsewhere("checked before every fetch, pull and push (checks.check_remote_url)"),
    "remote.<>.pushurl": _elsewhere("checked before every push"),
    "url.<>.insteadof": _elsewhere("every rewritten URL is checked before use"),
    "url.<>.pushinsteadof": _elsewhere("every rewritten URL is checked before use"),
    "remote.<>.uploadpack": _elsewhere(
        "read first-value-wins: every fetch and pull names --upload-pack itself (and a partial clone "
        "that sets it for its promisor remote is refused)"
    ),
    "remote.<>.receivepack": _elsewhere("read first-value-wins: every push names --receive-pack itself"),
    "core.gitproxy": _elsewhere(
        "read first-value-wins: GIT_PROXY_COMMAND is set empty, which git reads first"
    ),
    "core.worktree": _elsewhere("GIT_WORK_TREE names the working tree"),
    "uploadpack.packobjectshook": _elsewhere("git reads it only from the operator's own configuration"),
    "safe.*": _elsewhere("git reads these only from the operator's own configuration"),
    "protocol.*": _elsewhere("GIT_ALLOW_PROTOCOL, which git reads before them, is always set"),
    "protocol.<>.*": _elsewhere("GIT_ALLOW_PROTOCOL, which git reads before them, is always set"),
    "protocol.version": _keep("the wire protocol version"),
    "extensions.*": _keep(
        "describe the repository's format (git refuses formats it does not know); a partial clone "
        "fetches nothing lazily because commands other than fetch, pull and push have no transport"
    ),
    # -- kept: harmless as set ---------------------------------------------------------------
    **{
        f"core.{variable}": _keep("how git stores and compares files; runs and reaches nothing")
        for variable in (
            "abbrev",
            "alternaterefsprefixes",
            "attributesfile",
            "autocrlf",
            "bare",
            "bigfilethreshold",
            "checkroundtripencoding",
            "checkstat",
            "commentchar",
            "commitgraph",
            "compression",
            "createobject",
            "deltabasecachelimit",
            "eol",
            "excludesfile",
            "filemode",
            "filesreflocktimeout",
            "fsmonitorhookversion",
            "fsync",
            "fsyncmethod",
            "fsyncobjectfiles",
            "hidedotfiles",
            "ignorecase",
            "ignorestat",
            "logallrefupdates",
            "loosecompression",
            "multipackindex",
            "notesref",
            "packedgitlimit",
            "packedgitwindowsize",
            "packedrefstimeout",
            "precomposeunicode",
            "prefersymlinkrefs",
            "preloadindex",
            "repositoryformatversion",
            "restrictinheritedhandles",
            "safecrlf",
            "sharedrepository",
            "sparsecheckout",
            "sparsecheckoutcone",
            "splitindex",
            "symlinks",
            "trustctime",
            "unsetenvvars",
            "untrackedcache",
            "usereplacerefs",
            "warnambiguousrefs",
            "whitespace",
        )
    },
    **{
        f"{section}.*": _keep("output, layout, packing or bookkeeping; runs and reaches nothing")
        for section in (
            "add",
            "advice",
            "am",
            "apply",
            "author",
            "blame",
            "checkout",
            "clean",
            "color",
            "column",
            "commitgraph",
            "committer",
            "feature",
            "fetch",
            "format",
            "fsck",
            "fsmonitor",
            "gc",
            "grep",
            "i18n",
            "index",
            "init",
            "log",
            "maintenance",
            "notes",
            "pack",
            "pretty",
            "pull",
            "rebase",
            "repack",
            "rerere",
            "revert",
            "showbranch",
            "sparse",
            "splitindex",
            "stash",
            "status",
            "transfer",
            "uploadarchive",
            "uploadpack",
            "uploadpackfilter",
            "versionsort",
            "worktree",
        )
    },
    "fetch.fsck.*": _keep("fsck message levels and skip list"),
    "gc.<>.*": _keep("reflog expiry (gc never runs)"),
    "pretty.*": _keep("a format alias (the server names its formats)"),
    "color.<>.*": _keep("colours (color.ui=false)"),
    "add.<>.*": _keep("git add -i settings"),
    "uploadpackfilter.<>.*": _keep("which filters upload-pack allows"),
    "maintenance.<>.*": _keep("maintenance never runs (maintenance.auto=false)"),
    "notes.<>.*": _keep("notes bookkeeping"),
    "receive.*": _keep("how a push into this repository is received; hooks never run"),
    "receive.fsck.*": _keep("fsck message levels"),
    "diff.<>.*": _keep("diff driver presentation (funcname, wordRegex, binary, cachetextconv)"),
    "diff.*": _keep("diff presentation"),
    "merge.*": _keep("merge presentation and defaults"),
    "merge.<>.*": _keep("a merge driver's name and recursive driver"),
    "commit.*": _keep("commit defaults (the server passes the message itself)"),
    "tag.*": _keep("tag listing"),
    "push.*": _keep("push defaults (the server names the remote and the refspec)"),
    "branch.*": _keep("branch defaults"),
    "branch.<>.remote": _keep("the upstream's remote (the server names the remote itself)"),
    "branch.<>.pushremote": _keep("the push remote (the server names the remote itself)"),
    "branch.<>.merge": _keep("the upstream branch"),
    "branch.<>.rebase": _keep("pull's mode (the server passes --no-rebase)"),
    "branch.<>.description": _keep("a description"),
    "remote.pushdefault": _keep("the server names the remote itself"),
    **{
        f"remote.<>.{variable}": _keep("which refs a remote has and how they are mirrored")
        for variable in (
            "fetch",
            "push",
            "mirror",
            "skipdefaultupdate",
            "skipfetchall",
            "tagopt",
            "prune",
            "prunetags",
            "promisor",
            "partialclonefilter",
            "proxyauthmethod",
        )
    },
    "remotes.*": _keep("a group of remotes (the server fetches one named remote)"),
    "credential[.<>].username": _keep("a user name offered to the credential helpers"),
    "credential[.<>].usehttppath": _keep("what the credential helpers are told"),
    "submodule.*": _keep("submodules are never entered (submodule.recurse=false)"),
    "submodule.<>.*": _keep("submodules are never entered (submodule.recurse=false)"),
    "user.*": _keep("the repository's identity, used for commits"),
    "lfs.repositoryformatversion": _keep("a format marker"),
}

_UNKNOWN = _neutral("", "not known to be harmless")


def _index_rules(rules: dict[str, Rule]) -> dict[tuple[str, str | None, str], Rule]:
    """Patterns -> lookup keys (section, subsection: None, "<>" for any, or exact; variable or "*")."""
    index: dict[tuple[str, str | None, str], Rule] = {}
    for pattern, rule in rules.items():
        if "[.<>]." in pattern:
            section, variable = pattern.split("[.<>].")
            index[(section, None, variable)] = rule
            index[(section, "<>", variable)] = rule
            continue
        section, subsection, variable = split_key(pattern)
        index[(section, subsection, variable)] = rule
    return index


_INDEX = _index_rules(RULES)


def rule_for(key: str) -> Rule:
    """The one rule for a key (as git lists it), the most specific pattern first."""
    section, subsection, variable = split_key(key)
    section = section.lower()
    variable = variable.lower()
    if subsection is None:
        return _INDEX.get((section, None, variable)) or _INDEX.get((section, None, "*")) or _UNKNOWN
    return (
        _INDEX.get((section, subsection, variable))
        or _INDEX.get((section, "<>", variable))
        or _INDEX.get((section, subsection, "*"))
        or _INDEX.get((section, "<>", "*"))
        or _UNKNOWN
    )


def _static_keys() -> frozenset[str]:
    keys = set()
    for item in STATIC_CONFIG:
        section, subsection, variable = split_key(item.split("=", 1)[0])
        middle = f".{subsection}" if subsection is not None else ""
        keys.add(f"{section.lower()}{middle}.{variable.lower()}")
    return frozenset(keys)


STATIC_KEYS = _static_keys()

_TRUE = frozenset({"true", "yes", "on", "1"})


@dataclass(frozen=True)
class Refusal:
    """A setting the server cannot neutralise."""

    key: str
    origin: str | None
    why: str
    #: Only fetch, pull and push are refused (only transports read the key).
    network: bool

    def message(self, what: str) -> str:
        where = f" (set in {quote_path(self.origin)})" if self.origin else ""
        scope = "fetch, pull and push are" if self.network else "every git command is"
        return (
            f"{what}: {scope} refused because the repository's configuration sets "
            f"{clip(self.key, MAX_NAME)}{where}, "
            f"which the server cannot neutralise: {self.why}. Remove it from the repository's "
            "configuration (or set it in your own global configuration, which the server keeps)."
        )


@dataclass
class Neutralisation:
    """The decision for one repository's configuration."""

    #: (key, value) overrides for every command, in order (value None: the key alone, `true`).
    overrides: list[tuple[str, str | None]] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)


def _reset_key(key: str) -> str:
    section = split_key(key)[0]
    # Credential helpers form one list for every URL: an unscoped empty value clears it all.
    return "credential.helper" if section.lower() == "credential" else key


def neutralise(entries: Sequence[ConfigEntry]) -> Neutralisation:
    """Apply `RULES` to every key the repository sets (see the module docstring)."""
    operator = [entry for entry in entries if entry.scope in OPERATOR_SCOPES]
    operator_last = {entry.key: entry.value for entry in operator}
    repository: dict[str, list[ConfigEntry]] = {}
    for entry in entries:
        if entry.from_repository:
            repository.setdefault(entry.key, []).append(entry)
    result = Neutralisation()
    reset: set[str] = set()
    for key, set_by_repository in repository.items():
        if key in STATIC_KEYS:
            continue
        rule = rule_for(key)
        if rule.keep or rule.handled:
            continue
        if rule.only and not any((e.value or "true").lower() in rule.only for e in set_by_repository):
            continue
        if rule.reset_list:
            target = _reset_key(key)
            if target not in reset:
                reset.add(target)
                result.overrides.append((target, ""))
                result.overrides += [
                    (e.key, e.value)
                    for e in operator
                    if _reset_key(e.key) == target and rule_for(e.key) is rule
                ]
        elif key in operator_last:
            result.overrides.append((key, operator_last[key]))
        elif rule.neutral is not None:
            result.overrides.append((key, rule.neutral))
        else:
            result.refusals.append(Refusal(key, set_by_repository[0].origin, rule.why, rule.network))
    result.refusals += _promisor_refusals(repository)
    return result


def promisor_remotes(entries: Iterable[ConfigEntry]) -> list[str]:
    """The remotes a partial clone fetches missing objects from (repository settings)."""
    names: list[str] = []
    for entry in entries:
        if not entry.from_repository:
            continue
        section, subsection, variable = split_key(entry.key)
        if entry.key == "extensions.partialclone" and entry.value:
            names.append(entry.value)
        elif (
            section == "remote"
            and subsection
            and variable == "promisor"
            and (entry.value or "true").lower() in _TRUE
        ):
            names.append(subsection)
    return list(dict.fromkeys(names))


def _promisor_refusals(repository: dict[str, list[ConfigEntry]]) -> list[Refusal]:
    entries = [e for values in repository.values() for e in values]
    refusals = []
    for name in promisor_remotes(entries):
        key = f"remote.{name}.uploadpack"
        if key in repository:
            refusals.append(
                Refusal(
                    key,
                    repository[key][0].origin,
                    f"this partial clone fetches missing objects from {name!r} on its own, without "
                    "the --upload-pack the server names, so the program would run",
                    network=True,
                )
            )
    return refusals


# -- passing configuration to git -----------------------------------------------------------------


def config_arguments(
    pairs: Iterable[tuple[str, str | None]], *, prefix: str = "MCP_GIT_CONFIG_"
) -> tuple[list[str], dict[str, str]]:
    """Command-line arguments (and environment) giving git `pairs` as command-line configuration.

    `-c key=value` splits at the first `=`, so a key whose subsection holds one (`[a "b=c"]`)
    goes as `--config-env=key=VARIABLE` (git splits that at the last `=`), its value in the
    environment.
    """
    argv: list[str] = []
    env: dict[str, str] = {}
    for index, (key, value) in enumerate(pairs):
        if "=" not in key:
            argv += ["-c", key if value is None else f"{key}={value}"]
        else:
            variable = f"{prefix}{index}"
            env[variable] = "true" if value is None else value
            argv.append(f"--config-env={key}={variable}")
    return argv, env


def base_environment(
    worktree: Path | None, git_dir: Path, common_dir: Path, inherited: dict[str, str]
) -> dict[str, str]:
    """The whole environment of a git command in one repository (no working tree: bare).

    Starts from the server's own environment (the operator's: HOME, PATH, GIT_SSH_COMMAND,
    GIT_CONFIG_GLOBAL...) without the variables that would point git elsewhere
    (`REMOVED_ENVIRONMENT`), then sets what every command needs.
    """
    env = {
        key: value
        for key, value in inherited.items()
        if key not in REMOVED_ENVIRONMENT and not key.startswith(_REMOVED_PREFIXES)
    }
    env.update(
        {
            # git's messages are parsed in a few places: always in English.
            "LC_ALL": "C",
            "LANGUAGE": "C",
            # The repository, named explicitly: no discovery, no core.worktree.
            "GIT_DIR": str(git_dir),
            "GIT_COMMON_DIR": str(common_dir),
            "GIT_INDEX_FILE": str(git_dir / "index"),
            "GIT_OBJECT_DIRECTORY": str(common_dir / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": "",
            # Configuration: no system file; command-line configuration only from the server.
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
            # git reads this before core.gitProxy (which it reads first-value-wins): no proxy.
            "GIT_PROXY_COMMAND": "",
            # No transport at all; fetch, pull and push set ALLOWED_PROTOCOLS (runner.Git.run).
            "GIT_ALLOW_PROTOCOL": "",
        }
    )
    if worktree is not None:
        env["GIT_WORK_TREE"] = str(worktree)
    return env
