"""Running git for one repository: argument lists only, hardened, bounded in time, cancellable.

Every command goes through `Git.run` or `Git.stream`, which build the command line as a list
(`git --no-pager --literal-pathspecs -c ... SUBCOMMAND ARGS`) and start it with
`subprocess.Popen` — never a shell string — in an environment built whole
(`hardening.base_environment`: inherited variables that would point git elsewhere are removed,
not just overridden). Before the first command, and again whenever one of the files it read
changes (their stat signatures are compared on every command), the repository is inspected
(`inspect_repository`): its object stores and links must stay inside the allowed areas
(`containment`), its configuration is read as git reads it (includes checked and followed,
whatever their condition) and `hardening.neutralise` decides the overrides, or the refusal, that
every command then carries. Outputs are bytes: callers decode names with `os.fsdecode`
(undecodable bytes survive as surrogate escapes) and show them with
`mcp_batteries.safety.quote_name`.

Calls block; the server layer runs them with `off_loop`, which also makes them cancellable: a
cancelled request kills its git process (and that process's children) at once.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from mcp_batteries.errors import AccessDenied, LimitExceeded, UpstreamError
from mcp_batteries.platform import kill_process_tree
from mcp_batteries.safety import AllowedDirectories, quote_path

from mcp_git.authors import Identity, require_identity
from mcp_git.containment import (
    allowed_places,
    check_git_directory_links,
    check_include,
    check_object_stores,
)
from mcp_git.deadlines import deadlines
from mcp_git.hardening import (
    ALLOWED_PROTOCOLS,
    STATIC_CONFIG,
    ConfigEntry,
    Refusal,
    base_environment,
    config_arguments,
    include_target,
    neutralise,
    parse_config_listing,
    promisor_remotes,
)
from mcp_git.repository import Repository
from mcp_git.text import MAX_FIELD, clip

__all__ = ["Cancellation", "Git", "GitResult", "Inspection", "Policy", "inspect_repository", "off_loop"]

T = TypeVar("T")

#: Output beyond this is never collected whole (paged readers stop long before).
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
_IDENTITY_KEYS = frozenset(
    {"user.name", "user.email", "author.name", "author.email", "committer.name", "committer.email"}
)
#: git itself refuses to follow includes deeper than this.
MAX_INCLUDE_DEPTH = 10
#: The neutralisation must fit on every command line (Linux allows 2 MiB for all arguments).
MAX_OVERRIDE_BYTES = 512 * 1024
_CONFIG_LISTING = ("config", "--list", "--show-scope", "--show-origin", "-z")
#: Read-only commands that cannot prompt (no transport, credential helper, signing program,
#: editor or pager is ever involved): the hot path of git_status, git_branch and the inspection.
#: `spawn` starts them in a process group of their own instead of a session (see there).
PROMPTLESS_READS = frozenset(
    {
        "status",
        "for-each-ref",
        "rev-parse",
        "show-ref",
        "config",
        "cat-file",
        "ls-files",
        "ls-tree",
        "merge-base",
    }
)


class Cancellation:
    """Kills the git processes of a call that its client cancelled."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._processes: set[subprocess.Popen[bytes]] = set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            processes = list(self._processes)
        for process in processes:
            _kill(process)

    def register(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._processes.add(process)
            cancelled = self._cancelled
        if cancelled:
            _kill(process)

    def unregister(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._processes.discard(process)


_current: ContextVar[Cancellation | None] = ContextVar("mcp_git_cancellation", default=None)


class _Abandoned(Exception):
    """Raised, to no one, by a worker that picks up work its caller gave up before it started."""


async def off_loop(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run blocking `fn` in a worker thread; if the caller is cancelled, kill its git processes.

    The event loop keeps answering (pings included) while git runs. A cancelled call kills the
    git process it is waiting for (and any it starts later), then waits for its thread, which
    ends as soon as its git does: no thread outlives its request. No task is started besides
    the thread (a call pays one hop to the worker and one back).
    """
    token = Cancellation()
    ended = threading.Event()
    phase_lock = threading.Lock()
    phase = ["queued"]  # -> "running" in the worker, or -> "abandoned" by a cancelled caller

    def work() -> T:
        with phase_lock:
            if phase[0] == "abandoned":  # the caller is gone: do not start its work at all
                raise _Abandoned
            phase[0] = "running"
        reset = _current.set(token)
        try:
            return fn(*args, **kwargs)
        finally:
            _current.reset(reset)
            ended.set()

    try:
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        token.cancel()
        with phase_lock:
            running = phase[0] == "running"
            if not running:
                phase[0] = "abandoned"
        if running:
            with anyio.CancelScope(shield=True):  # a thread that started is always waited for
                await anyio.to_thread.run_sync(ended.wait)
        raise


def _kill(process: subprocess.Popen[bytes]) -> None:
    # Each git runs in its own session (process group): its helpers (ssh, upload-pack) go too.
    kill_process_tree(process)


@dataclass(frozen=True)
class Policy:
    """What the operator configured for every command."""

    timeout: float = 60.0
    network_timeout: float = 300.0
    author: Identity | None = None
    #: --read-only: no git command writes anything, not even the index's stat cache.
    read_only: bool = False
    #: The operator's repositories and directories: where object stores, included
    #: configuration and local remotes may be.
    areas: tuple[Path, ...] = ()


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: bytes


@dataclass
class Inspection:
    """What reading a repository's configuration decided (see `inspect_repository`)."""

    #: The neutralising (key, value) overrides (`hardening.neutralise`), and the same as
    #: `-c` / `--config-env` arguments with the environment the `--config-env` ones read.
    overrides: list[tuple[str, str | None]]
    arguments: list[str]
    environment: dict[str, str]
    refusals: list[Refusal]
    #: Every entry: the active configuration plus includes inactive today (their conditions).
    entries: list[ConfigEntry]
    #: Identity keys (user.name, author.email, ...) of the active configuration.
    identity: dict[str, str]
    #: The files read; a change to any of them means inspecting again.
    watched: list[Path]
    signature: tuple[Any, ...] = ()


def _stat_signature(paths: Sequence[Path]) -> tuple[Any, ...]:
    signature: list[Any] = []
    for path in paths:
        try:
            st = path.stat()
            signature.append((st.st_ino, st.st_mtime_ns, st.st_size))
        except OSError:
            signature.append(None)
    return tuple(signature)


def _global_config_files() -> list[Path]:
    explicit = os.environ.get("GIT_CONFIG_GLOBAL")
    if explicit:
        return [Path(explicit)]
    home = Path(os.path.expanduser("~"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return [Path(xdg) / "git" / "config", home / ".gitconfig"]


def describe_failure(args: Sequence[str], result: GitResult) -> str:
    """git's own error message (without hints, each line bounded: it may quote a repository's
    value), for the model to read."""
    lines = [
        clip(line, MAX_FIELD)
        for line in result.stderr.split(b"\n")
        if line.strip() and not line.startswith(b"hint:")
    ]
    message = "\n".join(lines[:20]) or clip(result.stdout.strip(), 2000)
    command = next((a for a in args if not a.startswith("-")), "git")
    return f"git {command} failed (exit status {result.returncode}): {message or 'no message'}"


class Git:
    """git, for one repository."""

    def __init__(self, repository: Repository, policy: Policy) -> None:
        self.repository = repository
        self.policy = policy
        self._env = base_environment(
            repository.worktree, repository.git_dir, repository.common_dir, dict(os.environ)
        )
        self._inspection: Inspection | None = None
        self._inspection_lock = threading.Lock()

    # -- the process ---------------------------------------------------------------------------
    def _start(
        self, argv: list[str], env: dict[str, str], stdin: bool, *, session: bool = True
    ) -> subprocess.Popen[bytes]:
        return spawn(argv, env, self.repository.worktree, stdin, session=session)

    def _command(
        self,
        args: Sequence[str],
        config: Sequence[str],
        *,
        writes: bool = False,
        quiet: bool = False,
        network: bool = False,
        extra: dict[str, str] | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The command line and environment of one git command, neutralisation included; raises
        AccessDenied when the repository holds a setting that cannot be neutralised for it."""
        inspection = self.inspection()
        refused = [r for r in inspection.refusals if network or not r.network]
        if refused:
            raise AccessDenied(refused[0].message(f"the repository {self.repository.shown}"))
        argv = ["git", "--no-pager", "--literal-pathspecs", *inspection.arguments]
        for item in (*STATIC_CONFIG, *config):
            argv += ["-c", item]
        argv.extend(args)
        env = {**self._env, **inspection.environment}
        if network:
            env["GIT_ALLOW_PROTOCOL"] = ALLOWED_PROTOCOLS
        # Reads may refresh the index's stat cache, as git itself does (the next status is then
        # cheap), except in read-only mode (nothing under .git is ever written) and for `quiet`
        # reads (change detection must not itself cause file events).
        refresh = writes or not (self.policy.read_only or quiet)
        env["GIT_OPTIONAL_LOCKS"] = "1" if refresh else "0"
        if extra:
            env.update(extra)
        return argv, env

    def run(
        self,
        args: Sequence[str],
        *,
        input: bytes | None = None,
        writes: bool = False,
        quiet: bool = False,
        network: bool = False,
        config: Sequence[str] = (),
        env: dict[str, str] | None = None,
        ok: Sequence[int] = (0,),
        check: bool = True,
    ) -> GitResult:
        """Run git to completion; raise UpstreamError (git's message) unless it exits in `ok`."""
        argv, environment = self._command(
            args, config, writes=writes, quiet=quiet, network=network, extra=env
        )
        timeout = self.policy.network_timeout if network else self.policy.timeout
        session = needs_session(args, writes=writes, network=network)
        process = self._start(argv, environment, stdin=input is not None, session=session)
        flag = "--network-timeout" if network else "--timeout"
        result = _communicate(process, input, timeout, f"git {args[0]}", flag)
        if check and result.returncode not in ok:
            raise UpstreamError(describe_failure(args, result))
        return result

    @contextlib.contextmanager
    def stream(self, args: Sequence[str], *, config: Sequence[str] = ()) -> Iterator[StreamedOutput]:
        """A read-only git whose output is consumed incrementally; stopped when the block ends."""
        argv, environment = self._command(args, config)
        process = self._start(argv, environment, stdin=False, session=needs_session(args))
        token = _current.get()
        if token is not None:
            token.register(process)
        stderr_chunks: list[bytes] = []
        assert process.stderr is not None and process.stdout is not None
        drain = threading.Thread(target=_drain, args=(process.stderr, stderr_chunks), daemon=True)
        drain.start()
        timed_out = threading.Event()

        def stop_slow_process() -> None:
            timed_out.set()
            _kill(process)

        key = deadlines.arm(self.policy.timeout, stop_slow_process)
        try:
            yield StreamedOutput(process, args, stderr_chunks, drain)
        finally:
            deadlines.disarm(key)
            if process.poll() is None:
                _kill(process)  # the reader has what it wanted: git need not finish
            process.wait()
            drain.join(timeout=5)
            if token is not None:
                token.unregister(process)
        if timed_out.is_set():
            raise LimitExceeded(
                f"git {args[0]} did not finish within {self.policy.timeout:g} s and was stopped "
                "(the server's --timeout)"
            )

    # -- configuration -------------------------------------------------------------------------
    def inspection(self) -> Inspection:
        """The repository's inspection, redone when a file it read changed (stat signatures)."""
        with self._inspection_lock:
            cached = self._inspection
            if cached is not None and _stat_signature(cached.watched) == cached.signature:
                return cached
            self._inspection = inspect_repository(
                self.repository.worktree,
                self.repository.git_dir,
                self.repository.common_dir,
                self.policy,
                f"the repository {self.repository.shown}",
                self._env,
            )
            return self._inspection

    def identity_config(self, what: str) -> list[str]:
        """`-c` overrides for a command that records an identity (commit, tag -a, stash).

        The repository's configured identity (or the operator's GIT_AUTHOR_*/GIT_COMMITTER_*
        environment) is used as it is; with none, the server's --author; else InvalidInput.
        """
        configured = dict(self.inspection().identity)
        for variable, key in (
            ("GIT_AUTHOR_NAME", "author.name"),
            ("GIT_AUTHOR_EMAIL", "author.email"),
            ("GIT_COMMITTER_NAME", "committer.name"),
            ("GIT_COMMITTER_EMAIL", "committer.email"),
        ):
            if os.environ.get(variable):
                configured.setdefault(key, os.environ[variable])
        return require_identity(what, configured, self.policy.author)


def _communicate(
    process: subprocess.Popen[bytes], input: bytes | None, timeout: float, what: str, flag: str
) -> GitResult:
    token = _current.get()
    if token is not None:
        token.register(process)
    timed_out = threading.Event()

    def stop_slow_process() -> None:
        timed_out.set()
        _kill(process)

    try:
        # The deadline kills git; communicate() then sees end of file and reaps it at once
        # (communicate(timeout=...) would poll for the exit with sleeps).
        with deadlines.within(timeout, stop_slow_process):
            stdout, stderr = process.communicate(input=input)
    finally:
        if token is not None:
            token.unregister(process)
    if timed_out.is_set():
        raise LimitExceeded(
            f"{what} did not finish within {timeout:g} s and was stopped (the server's {flag})"
        )
    return GitResult(process.returncode, stdout, stderr)


def needs_session(args: Sequence[str], *, writes: bool = False, network: bool = False) -> bool:
    """Whether git `args` must start in a session of its own (no controlling terminal): every
    command except the `PROMPTLESS_READS`, which neither write nor reach a remote."""
    return writes or network or not args or args[0] not in PROMPTLESS_READS


def spawn(
    argv: list[str], env: dict[str, str], cwd: Path, stdin: bool, *, session: bool = True
) -> subprocess.Popen[bytes]:
    """Start git (never through a shell), in its own session: no controlling terminal, so nothing
    can prompt, and a cancelled call kills its whole process group.

    With `session=False` (the `PROMPTLESS_READS`), git gets a process group of its own instead:
    the same whole-group kill, but no new session, because on Linux a new session is also a new
    scheduling group (autogroup), and on a busy machine a short-lived process in a fresh group
    waits until the group's share builds up (measured: `git status` 3-5x slower in wall time
    under load, for the same CPU). Those commands never prompt, so a terminal is never read;
    were one read anyway, the background process group would stop and `--timeout` end it.
    """
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            start_new_session=session,
            process_group=None if session else 0,
        )
    except OSError as exc:
        raise UpstreamError(f"git could not be started in {quote_path(cwd)}: {exc.strerror or exc}") from None


def _refused_configuration(what: str, args: Sequence[str], result: GitResult) -> AccessDenied:
    return AccessDenied(
        f"{what} is refused: git cannot read its configuration, so the server cannot tell what it "
        f"would run ({describe_failure(args, result)})"
    )


def _is_include(key: str) -> bool:
    return key == "include.path" or (key.startswith("includeif.") and key.endswith(".path"))


def read_configuration(
    run: Callable[[Sequence[str]], GitResult], cwd: Path, allowed: AllowedDirectories, what: str
) -> tuple[list[ConfigEntry], list[ConfigEntry], list[Path]]:
    """A repository's configuration as git reads it, every include checked before git reads it.

    Returns (every entry, the active entries, the included files): "every entry" adds the
    includes whose condition (`onbranch:`, `gitdir:`, `hasconfig:`) is false today, so that a
    checkout cannot switch on a setting nobody neutralised. Refuses (AccessDenied) what git
    cannot parse and includes `containment.check_include` refuses.
    """
    listing = run([*_CONFIG_LISTING, "--no-includes"])
    if listing.returncode != 0:
        raise _refused_configuration(what, _CONFIG_LISTING, listing)
    direct = parse_config_listing(listing.stdout)
    included: list[Path] = []
    extra: list[ConfigEntry] = []
    pending = [(entry, 1) for entry in direct if entry.from_repository and _is_include(entry.key)]
    seen: set[Path] = set()
    while pending:
        entry, depth = pending.pop(0)
        if depth > MAX_INCLUDE_DEPTH:
            raise AccessDenied(
                f"{what} is refused: its configuration includes files more than {MAX_INCLUDE_DEPTH} deep"
            )
        value = entry.value or ""
        target = include_target(value, entry.origin, cwd) if entry.value is not None else None
        real = check_include(target, entry.key, value, allowed, what)
        if target is not None:
            included.append(target)
        if real is None or real in seen:
            continue
        seen.add(real)
        args = [*_CONFIG_LISTING, "--no-includes", "--file", str(real)]
        result = run(args)
        if result.returncode != 0:
            raise _refused_configuration(what, args, result)
        nested = parse_config_listing(result.stdout, scope=entry.scope)
        extra += nested
        pending += [(e, depth + 1) for e in nested if _is_include(e.key)]
    if not any(_is_include(entry.key) for entry in direct):
        return direct, direct, included
    full = run(_CONFIG_LISTING)
    if full.returncode != 0:
        raise _refused_configuration(what, _CONFIG_LISTING, full)
    active = parse_config_listing(full.stdout)
    active_files = {os.path.realpath(cwd / e.origin) for e in active if e.origin is not None}
    included += [Path(cwd / f) for f in sorted(active_files)]
    inactive = [e for e in extra if e.origin is None or os.path.realpath(cwd / e.origin) not in active_files]
    return active + inactive, active, included


def inspect_repository(
    worktree: Path | None, git_dir: Path, common_dir: Path, policy: Policy, what: str, env: dict[str, str]
) -> Inspection:
    """Check where the repository's parts lie and decide what its configuration becomes.

    Refuses (AccessDenied) a repository whose object stores, links or includes lead outside the
    allowed areas, or whose configuration git cannot parse; the settings it cannot neutralise
    become `Inspection.refusals` (raised by the commands they concern).
    """
    own = [git_dir, common_dir] + ([worktree] if worktree is not None else [])
    watched = [common_dir / "config", git_dir / "config.worktree", *_global_config_files()]
    signature = _stat_signature(watched)
    allowed = allowed_places(policy.areas or (), *own)
    alternates = check_object_stores(common_dir, allowed, what)
    check_git_directory_links(dict.fromkeys([git_dir, common_dir]), allowed, what)
    cwd = worktree or git_dir

    def run(args: Sequence[str]) -> GitResult:
        process = spawn(["git", "--no-pager", *args], env, cwd, stdin=False, session=needs_session(args))
        return _communicate(process, None, policy.timeout, "git config", "--timeout")

    entries, active, included = read_configuration(run, cwd, allowed, what)
    decision = neutralise(entries)
    arguments, environment = config_arguments(decision.overrides)
    if sum(len(a) for a in arguments) + sum(len(v) for v in environment.values()) > MAX_OVERRIDE_BYTES:
        raise AccessDenied(
            f"{what} is refused: its configuration holds {len(decision.overrides):,} settings the server "
            "would have to override, more than one command line can carry"
        )
    identity = {e.key: e.value or "" for e in active if e.key in _IDENTITY_KEYS and e.scope != "command"}
    extra_files = [*alternates, *included]
    return Inspection(
        overrides=decision.overrides,
        arguments=arguments,
        environment=environment,
        refusals=decision.refusals,
        entries=entries,
        identity=identity,
        watched=[*watched, *extra_files],
        signature=(*signature, *_stat_signature(extra_files)),
    )


def inspect_local_remote(
    git_dir: Path, common_dir: Path, policy: Policy, areas: Sequence[Path]
) -> Inspection:
    """The receiving end of a local push, or the source of a local fetch: the same inspection,
    with the same refusals (every one applies: this is a network operation), and a partial clone
    refused (its receive-pack or upload-pack would fetch missing objects on its own)."""
    what = f"the local repository {quote_path(git_dir)}"
    allowed = AllowedDirectories([a for a in areas if a.is_dir()])
    for inner in dict.fromkeys([git_dir, common_dir]):
        if not allowed.contains(inner):
            raise AccessDenied(
                f"{what} is refused: it lies outside the allowed directories "
                f"({', '.join(quote_path(r) for r in allowed.roots)})"
            )
    env = base_environment(None, git_dir, common_dir, dict(os.environ))
    inspection = inspect_repository(None, git_dir, common_dir, replace(policy, areas=tuple(areas)), what, env)
    if inspection.refusals:
        raise AccessDenied(inspection.refusals[0].message(what))
    promisors = promisor_remotes(inspection.entries)
    if promisors:
        raise AccessDenied(
            f"{what} is refused: it is a partial clone (promisor remote {promisors[0]!r}); git would "
            "fetch missing objects there on its own"
        )
    return inspection


def run_outside_repository(
    policy: Policy, directory: Path, args: Sequence[str], env: dict[str, str]
) -> GitResult:
    """git where no repository exists yet (`git init`), with the same hardening."""
    argv = ["git", "--no-pager", *[x for item in STATIC_CONFIG for x in ("-c", item)], *args]
    git_dir = Path(env["GIT_DIR"])
    worktree = Path(env["GIT_WORK_TREE"]) if "GIT_WORK_TREE" in env else None
    environment = base_environment(worktree, git_dir, git_dir, dict(os.environ))
    for variable in ("GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        environment.pop(variable)  # nothing exists yet: git init creates them where GIT_DIR says
    process = spawn(argv, environment, directory, stdin=False)
    result = _communicate(process, None, policy.timeout, f"git {args[0]}", "--timeout")
    if result.returncode != 0:
        raise UpstreamError(describe_failure(args, result))
    return result


class StreamedOutput:
    """The stdout of a streaming git, read in chunks or records."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        args: Sequence[str],
        stderr: list[bytes],
        drain: threading.Thread,
    ) -> None:
        self._process = process
        self._args = args
        self._stderr = stderr
        self._drain = drain
        #: True once the whole output was read (git ended on its own).
        self.finished = False

    def chunks(self) -> Iterator[bytes]:
        stdout = self._process.stdout
        assert isinstance(stdout, io.BufferedReader)
        read = partial(stdout.read1, _CHUNK)
        while True:
            chunk = read()
            if not chunk:
                self.finished = True
                return
            yield chunk

    def records(self, separator: bytes = b"\n") -> Iterator[bytes]:
        """Output split at `separator` (the separator removed); a trailing partial record too."""
        pending = b""
        for chunk in self.chunks():
            pending += chunk
            parts = pending.split(separator)
            pending = parts.pop()
            yield from parts
        if pending:
            yield pending

    def bounded_records(self, separator: bytes, limit: int) -> Iterator[tuple[bytes, int]]:
        """Output split at `separator`, each record as (its first `limit` bytes, its real
        length): a record of any size costs at most `limit` bytes of memory."""
        head = b""
        length = 0
        for chunk in self.chunks():
            parts = chunk.split(separator)
            for part in parts[:-1]:
                yield head + part[: max(0, limit - len(head))], length + len(part)
                head, length = b"", 0
            last = parts[-1]
            head += last[: max(0, limit - len(head))]
            length += len(last)
        if length:
            yield head, length

    def result(self) -> GitResult:
        """After reading everything: git's exit status and error output (stdout not kept)."""
        returncode = self._process.wait()
        self._drain.join(timeout=5)
        return GitResult(returncode, b"", b"".join(self._stderr))

    def check(self, ok: Sequence[int] = (0,)) -> None:
        """After reading everything: raise git's error if it failed."""
        result = self.result()
        if result.returncode not in ok:
            raise UpstreamError(describe_failure(self._args, result))


def _drain(stream: Any, into: list[bytes]) -> None:
    total = 0
    for chunk in iter(partial(stream.read1, 65536), b""):
        if total < 1_000_000:
            into.append(chunk)
            total += len(chunk)
