"""Benchmark: mcp-git (ours) vs the reference mcp-server-git, same run, on one generated repository.

    uv run --all-packages python bench/git.py           # full run (installs the anchor once)
    uv run --all-packages python bench/git.py --quick   # smoke check on a 10x smaller repository

The anchor (PyPI `mcp-server-git`) is installed into `bench/.anchors/git/` on first use (a venv of
its own; it runs on mcp 2.x). Both servers get the same `--repository` and every call names
`repo_path`, as the reference requires.

Data (`bench/.work/git/repo-full/`, generated once with `git fast-import` in ~10 s): 3,000 commits
on `main` over 10,000 files in 100 directories; the last commit (tag `big`) changes 2,000 files;
the working tree then has 1,000 modified files, a ~4 MB unstaged diff. `--quick`: 300 commits,
1,000 files, a 200-file commit, a ~0.4 MB diff.

Workloads: `git_branch` (a cheap call), `git_log` of all 3,000 commits, `git_status` (1,000
modified files), `git_diff_unstaged` (4 MB: the reference returns it whole, ours its first page
of 2,000 lines and names the next offset), `git_show` of the 2,000-file commit (the reference
builds the patch in Python with GitPython; ours pages `git show`'s output). The heavy ones are
also run while pings go out (`probe_pings`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: import the harness beside it

from harness import BENCH_DIR, Reply, ServerSpec, Suite, anchor_path, arg_parser, run_cli, tool, venv_script

ANCHOR_VERSION = "2026.10.19"


def ensure_anchor() -> str:
    """The reference server's console script, installed into bench/.anchors/git/ when missing."""
    script = Path(anchor_path("git", "bin", "mcp-server-git"))
    if not script.exists():
        venv = script.parent.parent
        uv = shutil.which("uv") or "uv"
        for command in (
            [uv, "venv", "--quiet", "--python", "3.11", str(venv)],
            [
                uv,
                "pip",
                "install",
                "--quiet",
                "--python",
                str(venv / "bin" / "python"),
                f"mcp-server-git=={ANCHOR_VERSION}",
            ],
        ):
            print("+", " ".join(command), file=sys.stderr, flush=True)
            subprocess.run(command, check=True)
    return str(script)


def _git(repo: Path, *args: str, input: bytes | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, env=env, check=True)
    return done.stdout.decode()


def make_repository(root: Path, *, commits: int, files: int, big_files: int, diff_files: int) -> Path:
    """Generate the repository once (idempotent: a finished repository keeps its name)."""
    repo = root / f"repo-{commits}"
    if (repo / ".done").exists():
        return repo
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    t0 = time.perf_counter()
    print(f"generating {repo} ...", file=sys.stderr, flush=True)
    _git(repo, "init", "--quiet", "--initial-branch=main")
    per_dir = max(1, files // 100)
    paths = [f"d{i // per_dir:03d}/f{i % per_dir:04d}.txt" for i in range(files)]
    stream: list[bytes] = []

    def blob(text: str) -> bytes:
        data = text.encode()
        return b"data %d\n" % len(data) + data + b"\n"

    def commit(number: int, message: str, changes: list[tuple[str, str]]) -> None:
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"author Bench Author <bench@example.com> %d +0000\n" % (1_700_000_000 + number * 60))
        stream.append(
            b"committer Bench Author <bench@example.com> %d +0000\n" % (1_700_000_000 + number * 60)
        )
        stream.append(blob(message))
        for path, content in changes:
            stream.append(b"M 100644 inline " + path.encode() + b"\n" + blob(content))

    def content(path: str, version: int) -> str:
        lines = [f"{path} line {k}: the quick brown fox jumps over the lazy dog" for k in range(10)]
        return "\n".join([*lines, f"version {version}"]) + "\n"

    commit(0, "initial import\n", [(p, content(p, 0)) for p in paths])
    for n in range(1, commits - 1):
        path = paths[(n * 7919) % files]
        commit(
            n,
            f"change {n}: update {path}\n\nA longer body explaining change {n}.\n",
            [(path, content(path, n))],
        )
    commit(
        commits - 1, "big change across many files\n", [(p, content(p, commits)) for p in paths[:big_files]]
    )
    stream.append(b"reset refs/tags/big\nfrom refs/heads/main\n\n")
    _git(repo, "fast-import", "--quiet", input=b"".join(stream))
    _git(repo, "checkout", "--quiet", "--force", "main")
    extra = "".join(f"added line {k}: {'x' * 70}\n" for k in range(50))
    for path in paths[-diff_files:]:
        with open(repo / path, "a") as handle:
            handle.write(extra)
    (repo / ".done").write_text("")
    size = len(_git(repo, "diff"))
    print(f"  done in {time.perf_counter() - t0:.1f} s; unstaged diff {size / 1e6:.1f} MB", file=sys.stderr)
    return repo


def commits_listed(expected: int) -> Callable[[Reply], str | None]:
    def check(reply: Reply) -> str | None:
        sc = (reply.result or {}).get("structuredContent")
        got = len(sc["rows"]) if isinstance(sc, dict) else reply.text().count("Commit: ")
        return None if got == expected else f"{got} commits, expected {expected}"

    return check


def show_checked(reply: Reply) -> str | None:
    text = reply.text()
    return (
        None
        if text.startswith("commit ") and "big change across many files" in text
        else "not the big commit"
    )


def build(args: argparse.Namespace) -> Suite:
    size = (
        dict(commits=300, files=1_000, big_files=200, diff_files=100)
        if args.quick
        else dict(commits=3_000, files=10_000, big_files=2_000, diff_files=1_000)
    )
    repo = make_repository(BENCH_DIR / ".work" / "git", **size)
    anchor = ensure_anchor()
    where = {"repo_path": str(repo)}
    servers = [
        ServerSpec("ours", [*args.ours_cmd.split(), "--repository", str(repo)], label=args.ours_cmd),
        ServerSpec("anchor", [anchor, "--repository", str(repo)], label=f"mcp-server-git {ANCHOR_VERSION}"),
    ]
    commits = size["commits"]
    workloads = [
        tool(
            "git_branch (cheap call)",
            "git_branch",
            {**where, "branch_type": "local"},
            repeat=50,
            quick_repeat=5,
        ),
        tool(
            f"git_log {commits:,} commits",
            "git_log",
            {**where, "max_count": commits},
            repeat=5,
            quick_repeat=2,
            probe_pings=True,
            check=commits_listed(commits),
        ),
        tool(f"git_status ({size['diff_files']:,} modified)", "git_status", where, repeat=20, quick_repeat=3),
        tool(
            "git_diff_unstaged (4 MB)", "git_diff_unstaged", where, repeat=5, quick_repeat=2, probe_pings=True
        ),
        tool(
            f"git_show {size['big_files']:,}-file commit",
            "git_show",
            {**where, "revision": "big"},
            repeat=5,
            quick_repeat=2,
            probe_pings=True,
            check=show_checked,
        ),
    ]
    return Suite(
        title=f"git: ours vs mcp-server-git ({'quick' if args.quick else 'full'} data)",
        servers=servers,
        workloads=workloads,
        notes=[
            f"data: {repo}: {commits:,} commits, {size['files']:,} files, "
            f"a {size['big_files']:,}-file commit, {size['diff_files']:,} modified files",
            "git_diff_unstaged / git_show: ours returns the first page (2,000 lines) and names the next "
            "offset; git_status its first 200 paths; the reference returns everything: compare the bytes",
            "ours sends listings twice (text + structuredContent)",
            "bytecode cache: on for every server (harness.server_environment)",
            f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}",
        ],
    )


if __name__ == "__main__":
    parser = arg_parser("git benchmark")
    parser.add_argument(
        "--ours-cmd", default=venv_script("mcp-batteries-git"), help="how to start our server"
    )
    run_cli(build, parser)
