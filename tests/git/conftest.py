"""Fixtures for mcp-git: repositories built with plain `git`, and a controlled git configuration.

Every test runs with its own global git configuration (GIT_CONFIG_GLOBAL) holding a test
identity, and without the system one, so the machine's git setup never leaks in; HOME, the XDG
directories and GNUPGHOME point inside the test's temporary directory, so nothing a test runs
(git, gpg, ssh) reads or writes the real home. Servers started as subprocesses inherit the same
environment.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

IDENTITY = ("Test User", "test@example.com")


def run_git(
    cwd: Path, *args: str | bytes, env: dict[str, str] | None = None, input: bytes | None = None
) -> str:
    """Plain git, as a user would run it in another terminal (not through the server)."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        env={**os.environ, **(env or {})},
        input=input,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"git {args!r} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode("utf-8", "surrogateescape")


def make_repository(path: Path, files: dict[str, str] | None = None, message: str = "first commit") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    run_git(path, "init", "--quiet", "--initial-branch=main")
    for name, content in (files or {"README.md": "# project\n"}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    run_git(path, "add", "--all")
    run_git(path, "commit", "--quiet", "-m", message)
    return path


@pytest.fixture(autouse=True)
def git_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    config = home / "gitconfig"
    config.write_text(
        f"[user]\n\tname = {IDENTITY[0]}\n\temail = {IDENTITY[1]}\n[init]\n\tdefaultBranch = main\n"
        "[advice]\n\tdetachedHead = false\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(home))
    for variable, directory in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_STATE_HOME", "state"),
        ("GNUPGHOME", "gnupg"),
    ):
        (home / directory).mkdir(mode=0o700)
        monkeypatch.setenv(variable, str(home / directory))
    for variable in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "EMAIL"):
        monkeypatch.delenv(variable, raising=False)
    return config


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository with history: two commits on main, a branch, an annotated and a light tag,
    a staged change, an unstaged change and an untracked file."""
    repo = make_repository(
        tmp_path / "work" / "project",
        {"README.md": "# project\n", "src/app.py": "def main():\n    return 1\n", "notes.txt": "one\ntwo\n"},
    )
    run_git(repo, "tag", "-a", "v1.0", "-m", "release one")
    run_git(repo, "branch", "feature")
    (repo / "src/app.py").write_text("def main():\n    return 2\n")
    run_git(repo, "commit", "--quiet", "-am", "second commit: return 2")
    run_git(repo, "tag", "light")
    (repo / "notes.txt").write_text("one\ntwo\nthree\n")
    run_git(repo, "add", "notes.txt")
    (repo / "README.md").write_text("# project\nchanged\n")
    (repo / "new.txt").write_text("untracked\n")
    return repo


@pytest.fixture
def names_repository(tmp_path: Path) -> Iterator[Path]:
    """Names that are not clean text: non-UTF-8 bytes, control characters, quotes, in file
    names, branch names, author names and commit messages."""
    repo = tmp_path / "names"
    repo.mkdir()
    run_git(repo, "init", "--quiet", "--initial-branch=main")
    raw = os.fsencode(repo)
    for name in (
        b"bad\xff\xfename.txt",
        b"line\nbreak.txt",
        b"esc\x1b[31m.txt",
        "café.txt".encode(),
        b'quo"te.txt',
    ):
        with open(raw + b"/" + name, "wb") as handle:
            handle.write(b"caf\xe9 latin-1 content\n")
    run_git(repo, "add", "--all")
    tree = run_git(repo, "write-tree").strip()
    # `git commit` re-encodes a non-UTF-8 identity or message as Latin-1; a repository can still
    # hold raw bytes (imported history, other tools), so the commit object is written directly.
    commit = (
        f"tree {tree}\n".encode()
        + b"author Bj\xf6rn \x1b[31mRed <bjorn@example.com> 1700000000 +0100\n"
        + b"committer Bj\xf6rn <bjorn@example.com> 1700000000 +0100\n\n"
        + b"message caf\xe9 \x1b[2J\x07 not UTF-8\n"
    )
    sha = run_git(repo, "hash-object", "-t", "commit", "-w", "--stdin", input=commit).strip()
    run_git(repo, "update-ref", "refs/heads/main", sha)
    run_git(repo, "branch", b"feat-\xff")
    run_git(repo, "branch", "café")
    yield repo


@pytest.fixture
def git_cli() -> Any:
    """`git_cli(repo, *args)`: plain git in another process, as a user at a terminal."""
    return run_git


@pytest.fixture
def new_repository() -> Any:
    """`new_repository(path, files=None)`: a fresh repository with one commit."""
    return make_repository
