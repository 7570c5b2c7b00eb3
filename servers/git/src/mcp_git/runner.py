"""Running git for one repository: argument lists only, hardened, bounded in time, cancellable.

Every command goes through `Git.run` or `Git.records`, which build the command line as a list
(`git --no-pager --literal-pathspecs -c ... SUBCOMMAND ARGS`) and start it through GitPython's
`repo.git.execute` — never a shell string. Outputs are bytes: callers decode names with
`os.fsdecode` (undecodable bytes survive as surrogate escapes) and show them with
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
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
from mcp_batteries.errors import LimitExceeded, UpstreamError
from mcp_batteries.platform import kill_process_tree

from mcp_git.authors import Identity, require_identity
from mcp_git.hardening import STATIC_CONFIG, base_environment, overrides_for, parse_config_listing
from mcp_git.repository import Repository

if TYPE_CHECKING:
    import git

__all__ = ["Cancellation", "Git", "GitResult", "Policy", "off_loop"]

T = TypeVar("T")

#: Output beyond this is never collected whole (paged readers stop long before).
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
_IDENTITY_KEYS = frozenset(
    {"user.name", "user.email", "author.name", "author.email", "committer.name", "committer.email"}
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


async def off_loop(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run blocking `fn` in a worker thread; if the caller is cancelled, kill its git processes.

    The event loop keeps answering (pings included) while git runs. A cancelled call kills the
    git process it is waiting for (and any it starts later), then waits for its thread, which
    ends as soon as its git does: no thread outlives its request.
    """
    token = Cancellation()

    def work() -> T:
        reset = _current.set(token)
        try:
            return fn(*args, **kwargs)
        finally:
            _current.reset(reset)

    finished = False

    async def kill_when_cancelled() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            if not finished:
                token.cancel()

    failure: BaseException | None = None
    result: T | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(kill_when_cancelled)
        try:
            with anyio.CancelScope(shield=True):  # the thread is always waited for
                try:
                    result = await anyio.to_thread.run_sync(work)
                except Exception as exc:  # re-raised outside the task group (no ExceptionGroup)
                    failure = exc
                finished = True
        finally:
            group.cancel_scope.cancel()
    if token.cancelled:
        await anyio.lowlevel.checkpoint()  # deliver the caller's cancellation
    if failure is not None:
        raise failure
    return result  # type: ignore[return-value]


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


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: bytes


@dataclass
class _ConfigCache:
    signature: tuple[Any, ...] | None = None
    overrides: list[str] = field(default_factory=list)
    #: Identity keys (user.name, author.email, ...) set in any configuration file.
    identity: dict[str, str] = field(default_factory=dict)


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
    """git's own error message (without hints), for the model to read."""
    lines = [
        line
        for line in result.stderr.decode("utf-8", "backslashreplace").splitlines()
        if line.strip() and not line.startswith("hint:")
    ]
    message = "\n".join(lines[:20]) or result.stdout.decode("utf-8", "backslashreplace").strip()[:2000]
    command = next((a for a in args if not a.startswith("-")), "git")
    return f"git {command} failed (exit status {result.returncode}): {message or 'no message'}"


class Git:
    """git, for one repository."""

    def __init__(self, repository: Repository, policy: Policy) -> None:
        self.repository = repository
        self.policy = policy
        self._env = base_environment(repository.worktree, repository.git_dir, repository.common_dir)
        self._config = _ConfigCache()
        self._config_lock = threading.Lock()
        self._repo: git.Repo | None = None

    # -- the process ---------------------------------------------------------------------------
    def _gitpython(self) -> git.Repo:
        if self._repo is None:
            import git  # GitPython: imported on first use (it is slow to import)

            self._repo = git.Repo(self.repository.worktree)
        return self._repo

    def _start(self, argv: list[str], env: dict[str, str], stdin: bool) -> subprocess.Popen[bytes]:
        handle = self._gitpython().git.execute(
            argv,
            as_process=True,
            istream=subprocess.PIPE if stdin else None,  # type: ignore[arg-type]
            env=env,
            start_new_session=True,  # no controlling terminal: nothing can prompt
        )
        process = handle.proc
        assert process is not None
        # GitPython's handle terminates the process when it is garbage-collected: keep it alive
        # as long as the process object is in use.
        process._mcp_git_handle = handle  # type: ignore[attr-defined]
        return process

    def _argv(self, args: Sequence[str], config: Sequence[str]) -> list[str]:
        argv = ["git", "--no-pager", "--literal-pathspecs"]
        for item in (*STATIC_CONFIG, *self._repository_overrides(), *config):
            argv += ["-c", item]
        argv.extend(args)
        return argv

    def _environment(self, writes: bool, extra: dict[str, str] | None, quiet: bool = False) -> dict[str, str]:
        env = dict(self._env)
        # Reads may refresh the index's stat cache, as git itself does (the next status is then
        # cheap), except in read-only mode (nothing under .git is ever written) and for `quiet`
        # reads (change detection must not itself cause file events).
        refresh = writes or not (self.policy.read_only or quiet)
        env["GIT_OPTIONAL_LOCKS"] = "1" if refresh else "0"
        if extra:
            env.update(extra)
        return env

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
        argv = self._argv(args, config)
        timeout = self.policy.network_timeout if network else self.policy.timeout
        process = self._start(argv, self._environment(writes, env, quiet), stdin=input is not None)
        flag = "--network-timeout" if network else "--timeout"
        result = _communicate(process, input, timeout, f"git {args[0]}", flag)
        if check and result.returncode not in ok:
            raise UpstreamError(describe_failure(args, result))
        return result

    @contextlib.contextmanager
    def stream(self, args: Sequence[str], *, config: Sequence[str] = ()) -> Iterator[StreamedOutput]:
        """A read-only git whose output is consumed incrementally; stopped when the block ends."""
        argv = self._argv(args, config)
        process = self._start(argv, self._environment(False, None), stdin=False)
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

        timer = threading.Timer(self.policy.timeout, stop_slow_process)
        timer.daemon = True
        timer.start()
        try:
            yield StreamedOutput(process, args, stderr_chunks, drain)
        finally:
            timer.cancel()
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
    def _repository_overrides(self) -> list[str]:
        """Overrides for the programs this repository's own configuration names (cached)."""
        repo = self.repository
        files = [repo.common_dir / "config", repo.git_dir / "config.worktree", *_global_config_files()]
        signature = _stat_signature(files)
        with self._config_lock:
            if self._config.signature == signature:
                return self._config.overrides
        argv = ["git", "--no-pager", *[x for item in STATIC_CONFIG for x in ("-c", item)]]
        argv += ["config", "--list", "--show-scope", "-z"]
        process = self._start(argv, self._environment(False, None), stdin=False)
        listing = _communicate(process, None, self.policy.timeout, "git config", "--timeout")
        entries = parse_config_listing(listing.stdout)
        overrides = overrides_for(entries)
        identity = {
            key: value for scope, key, value in entries if key in _IDENTITY_KEYS and scope != "command"
        }
        # Included files are not in the signature: with includes, read the listing every time.
        includes = any(key.startswith("include") for scope, key, _ in entries if scope != "command")
        with self._config_lock:
            self._config = _ConfigCache(None if includes else signature, overrides, identity)
        return overrides

    def identity_config(self, what: str) -> list[str]:
        """`-c` overrides for a command that records an identity (commit, tag -a, stash).

        The repository's configured identity (or the operator's GIT_AUTHOR_*/GIT_COMMITTER_*
        environment) is used as it is; with none, the server's --author; else InvalidInput.
        """
        self._repository_overrides()
        configured = dict(self._config.identity)
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
    try:
        try:
            stdout, stderr = process.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            process.communicate()
            raise LimitExceeded(
                f"{what} did not finish within {timeout:g} s and was stopped (the server's {flag})"
            ) from None
    finally:
        if token is not None:
            token.unregister(process)
    return GitResult(process.returncode, stdout, stderr)


def run_outside_repository(
    policy: Policy, directory: Path, args: Sequence[str], env: dict[str, str]
) -> GitResult:
    """git where no repository exists yet (`git init`), with the same hardening."""
    import git

    argv = ["git", "--no-pager", *[x for item in STATIC_CONFIG for x in ("-c", item)], *args]
    environment = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_PARAMETERS": "",
        "GIT_CONFIG_COUNT": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_EDITOR": "true",
        "GIT_PAGER": "cat",
        **env,
    }
    handle = git.Git(directory).execute(argv, as_process=True, env=environment, start_new_session=True)
    assert handle.proc is not None
    result = _communicate(handle.proc, None, policy.timeout, f"git {args[0]}", "--timeout")
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

    def check(self, ok: Sequence[int] = (0,)) -> None:
        """After reading everything: raise git's error if it failed."""
        returncode = self._process.wait()
        self._drain.join(timeout=5)
        if returncode not in ok:
            result = GitResult(returncode, b"", b"".join(self._stderr))
            raise UpstreamError(describe_failure(self._args, result))


def _drain(stream: Any, into: list[bytes]) -> None:
    total = 0
    for chunk in iter(partial(stream.read1, 65536), b""):
        if total < 1_000_000:
            into.append(chunk)
            total += len(chunk)
