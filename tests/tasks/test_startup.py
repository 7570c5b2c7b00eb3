"""Start-up through the console script: where the task database may be created."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from mcp_batteries.testing import script_path

INITIALIZE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
)


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script_path("mcp-batteries-tasks"), *args],
        input=INITIALIZE,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_db_in_a_directory_that_does_not_exist_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "dir" / "tasks.db"
    done = run("--db", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert str(tmp_path / "nope" / "dir") in done.stderr and "does not exist" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().count("\n") == 0
    assert not (tmp_path / "nope").exists()


def test_db_in_an_existing_directory_is_created(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    done = run("--db", str(path))
    assert done.returncode == 0, done.stderr
    assert '"id":1' in done.stdout and path.is_file()


def test_the_default_database_is_created_with_its_directories(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("XDG_DATA_HOME", None)
    done = subprocess.run(
        [script_path("mcp-batteries-tasks")],
        input=INITIALIZE,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert [p.relative_to(tmp_path).parts[-3:] for p in tmp_path.rglob("tasks.db")] == [
        ("mcp-batteries", "tasks", "tasks.db")
    ]
