"""Start-up through the console script: mistakes are refused in one line with exit 2, and the embedded
default database is announced when it is created."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from mcp_batteries.testing import script_path

INITIALIZE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
)


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script_path("mcp-batteries-sql"), *args],
        input=INITIALIZE,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("content", [b"just some text\n", b"PK\x03\x04 a zip file"])
def test_a_file_that_is_not_sqlite_is_refused_at_start(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    done = run(str(path))
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # refused before serving: not even the initialize is answered
    assert "not a SQLite database" in done.stderr and str(path) in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().count("\n") == 0


def test_a_directory_is_refused_at_start(tmp_path: Path) -> None:
    done = run(str(tmp_path))
    assert done.returncode == 2
    assert "directory" in done.stderr and done.stderr.strip().count("\n") == 0


def test_an_empty_file_is_an_empty_database(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    done = run(str(path))
    assert done.returncode == 0, done.stderr
    assert '"id":1' in done.stdout


def test_the_default_database_is_announced_once_when_created(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path)}
    first = run(env=env)
    created = tmp_path / "mcp-batteries" / "sql" / "default.db"
    assert first.returncode == 0, first.stderr
    assert created.exists()
    assert first.stderr.count("no database was given") == 1 and str(created) in first.stderr
    again = run(env=env)
    assert again.returncode == 0
    assert "no database was given" not in again.stderr


def test_a_missing_file_is_refused_by_a_read_only_server_in_one_line_saying_how_to_create_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    done = run(str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert str(path) in done.stderr and "--allow-write" in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert not path.exists()


def test_allow_write_creates_a_missing_file_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    done = run(str(path), "--allow-write")
    assert done.returncode == 0, done.stderr
    assert '"id":1' in done.stdout
    assert path.is_file()
    assert done.stderr.count("created an empty SQLite database") == 1 and str(path) in done.stderr
    again = run(str(path), "--allow-write")
    assert "created" not in again.stderr


def test_allow_write_never_creates_the_directory_of_a_database_file(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "dir" / "app.db"
    done = run(str(path), "--allow-write")
    assert done.returncode == 2 and done.stdout == ""
    assert str(tmp_path / "nope" / "dir") in done.stderr and "does not exist" in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert not (tmp_path / "nope").exists()
