"""Benchmark: mcp-filesystem (ours) vs the reference filesystem server (Node), same run.

    bash bench/anchors.sh                                   # once: installs the reference server
    uv run --all-packages python bench/filesystem.py        # full run (~20k-file tree, 300 MB file)
    uv run --all-packages python bench/filesystem.py --quick          # smoke check, small data
    uv run --all-packages python bench/filesystem.py --only anchor    # reference server alone

The data lives in bench/.work/fs/ (bench/.work/fs-quick/ for --quick) and is generated once.
Tool arguments are the reference's (path, paths, pattern, excludePatterns, head, tail).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: import the harness beside it

from harness import (
    BENCH_DIR,
    Reply,
    ServerSpec,
    Suite,
    Workload,
    anchor_path,
    arg_parser,
    run_cli,
    tool,
    venv_script,
)

REFERENCE_ENTRY = anchor_path(
    "filesystem", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"
)

# --------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class DataShape:
    top: int  # tree/dNN
    mid: int  # tree/dNN/sNN
    leaf: int  # tree/dNN/sNN/lNN: the directories that hold files
    files_per_dir: int
    small_files: int
    big_mb: int  # the "20 MB" file
    huge_mb: int  # the "300 MB" file

    @property
    def signature(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)


FULL = DataShape(top=10, mid=10, leaf=20, files_per_dir=10, small_files=100, big_mb=20, huge_mb=300)
QUICK = DataShape(top=2, mid=10, leaf=10, files_per_dir=10, small_files=100, big_mb=2, huge_mb=30)

# 2 of 10 files are .py: `**/*.py` has many matches (4,000 in the full tree).
EXTENSIONS = [".txt", ".md", ".py", ".json", ".txt", ".log", ".py", ".csv", ".txt", ".yaml"]
NEEDLE = "needle_4711"  # grep target, in every 7th file
FILLER = "the quick brown fox jumps over the lazy dog; lorem ipsum dolor sit amet"


def line_of(i: int) -> str:
    """Line i of the big files: unique and numbered, so a tail read can be checked."""
    return f"{i:09d} {FILLER} {i % 997:03d}\n"


def _write_lines(path: Path, megabytes: int) -> str:
    """Write numbered lines up to `megabytes`, 100k lines per write. Returns the last line."""
    target = megabytes * 1_000_000
    written, i, block = 0, 0, 100_000
    with path.open("w", buffering=1 << 20) as f:
        while written < target:
            text = "".join(line_of(n) for n in range(i, i + block))
            if written + len(text) > target:  # the last block: cut at the last whole line
                text = text[: text.rfind("\n", 0, target - written) + 1]
                block = text.count("\n")
                written = target  # done, even if the cut left a few bytes short
            f.write(text)
            written += len(text)
            i += block
    return line_of(i - 1).rstrip("\n")


def _file_text(n: int) -> str:
    lines = [f"# file {n}", *(f"{k}: {FILLER}" for k in range(3 + n % 8))]
    if n % 7 == 0:
        lines.append(f"TODO {NEEDLE} in file {n}")
    return "\n".join(lines) + "\n"


def ensure_data(root: Path, shape: DataShape) -> dict[str, str]:
    """Generate the data set once (a marker records its shape); return the paths workloads use."""
    marker = root / ".complete"
    paths = {
        "root": str(root),
        "tree": str(root / "tree"),
        "small": str(root / "small"),
        "big": str(root / f"big{shape.big_mb}mb.txt"),
        "huge": str(root / f"huge{shape.huge_mb}mb.txt"),
        "info": str(root / "small" / "file_000.txt"),
    }
    if marker.exists() and json.loads(marker.read_text()).get("shape") == shape.signature:
        last_lines: dict[str, str] = json.loads(marker.read_text())["last_lines"]
        return paths | last_lines
    t0 = time.perf_counter()
    print(f"generating data in {root} ...", file=sys.stderr, flush=True)
    n = 0
    for d in range(shape.top):
        for s in range(shape.mid):
            for leaf in range(shape.leaf):
                leaf_dir = root / "tree" / f"d{d:02d}" / f"s{s:02d}" / f"l{leaf:02d}"
                leaf_dir.mkdir(parents=True, exist_ok=True)
                for k in range(shape.files_per_dir):
                    (leaf_dir / f"f{k:02d}{EXTENSIONS[k % len(EXTENSIONS)]}").write_text(_file_text(n))
                    n += 1
    small = root / "small"
    small.mkdir(parents=True, exist_ok=True)
    for k in range(shape.small_files):
        (small / f"file_{k:03d}.txt").write_text(_file_text(k) * 4)  # ~1-2 kB each
    last_lines = {
        "big_last": _write_lines(Path(paths["big"]), shape.big_mb),
        "huge_last": _write_lines(Path(paths["huge"]), shape.huge_mb),
    }
    marker.write_text(json.dumps({"shape": shape.signature, "last_lines": last_lines}))
    print(f"  {n} files in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return paths | last_lines


# --------------------------------------------------------------------------------------------------
# Suite


def contains(needle: str) -> Callable[[Reply], str | None]:
    """A reply check: the tool's text must contain `needle` (e.g. the file's last line)."""

    def check(reply: Reply) -> str | None:
        return None if needle in reply.text() else f"reply lacks {needle[:30]!r}"

    return check


def workloads(p: dict[str, str], grep_args: dict[str, object]) -> list[Workload]:
    small_paths = sorted(str(x) for x in Path(p["small"]).iterdir())
    return [
        Workload("tools/list", "tools/list", {}, repeat=20, quick_repeat=5),
        # The SDK's own per-call cost, to tell ours' overhead on cheap calls from the SDK's.
        tool("trivial tool (SDK floor)", "hello", {}, repeat=200, quick_repeat=20, only={"floor"}),
        tool("list_allowed_directories", "list_allowed_directories", {}, repeat=200, quick_repeat=20),
        tool("get_file_info", "get_file_info", {"path": p["info"]}, repeat=200, quick_repeat=20),
        tool(
            "directory_tree",
            "directory_tree",
            {"path": p["tree"]},
            repeat=5,
            probe_pings=True,
            note="the reference lists every entry; ours bounds the listing and marks truncated"
            " directories (17,890 of 20,000 files on 2026-11-22): compare the bytes too",
        ),
        tool(
            "search_files **/*.py",
            "search_files",
            {"path": p["tree"], "pattern": "**/*.py"},
            repeat=5,
            probe_pings=True,
            note="ours stops after 1,000 results, the reference returns all 4,000:"
            " the no-match search is the like-for-like full scan",
        ),
        tool(
            "search_files no match",
            "search_files",
            {"path": p["tree"], "pattern": "**/*.nomatch"},
            repeat=5,
        ),
        tool(
            "read_multiple_files x100",
            "read_multiple_files",
            {"paths": small_paths},
            repeat=20,
            quick_repeat=3,
        ),
        tool(
            "read_text_file first page (head 2000), big file",
            "read_text_file",
            {"path": p["big"], "head": 2000},
            repeat=20,
            quick_repeat=3,
        ),
        tool(
            "read_text_file tail 100, big file",
            "read_text_file",
            {"path": p["big"], "tail": 100},
            repeat=20,
            quick_repeat=3,
            check=contains(p["big_last"]),
        ),
        tool(
            "read_text_file tail 100, huge file",
            "read_text_file",
            {"path": p["huge"], "tail": 100},
            repeat=3,
            quick_repeat=1,
            fresh=True,  # its own process, so the peak RSS is this read's alone
            check=contains(p["huge_last"]),
        ),
        tool(
            "read_text_file whole big file",
            "read_text_file",
            {"path": p["big"]},
            repeat=5,
            quick_repeat=1,
            note="ours answers with a bounded first page (2,000 lines), the reference with the whole"
            " file, twice",
        ),
        # Many matches (ours stops at its max_matches), then no match (a scan of every file).
        tool("grep (ours only)", "grep", grep_args, repeat=5, quick_repeat=1, only={"ours"}),
        tool(
            "grep no match (ours only)",
            "grep",
            {**grep_args, "pattern": "zzz_no_such_text"},
            repeat=5,
            quick_repeat=1,
            only={"ours"},
        ),
    ]


def build(args: argparse.Namespace) -> Suite:
    shape = QUICK if args.quick else FULL
    root = BENCH_DIR / ".work" / ("fs-quick" if args.quick else "fs")
    p = ensure_data(root, shape)
    grep_args = json.loads(args.grep_args) if args.grep_args else {"path": p["tree"], "pattern": NEEDLE}
    servers = [
        ServerSpec("ours", [*args.ours_cmd.split(), p["root"]], label=f"{args.ours_cmd} (Python)"),
        ServerSpec(
            "anchor", ["node", REFERENCE_ENTRY, p["root"]], label="reference server-filesystem (Node)"
        ),
        ServerSpec(
            "floor",
            [sys.executable, str(BENCH_DIR / "floor_server.py")],
            label="bare MCPServer hello server (cold-start floor of the Python SDK)",
            baseline=True,
        ),
    ]
    if args.no_floor:
        servers.pop()
    n_files = shape.top * shape.mid * shape.leaf * shape.files_per_dir
    n_dirs = shape.top * shape.mid * shape.leaf + shape.top * shape.mid + shape.top
    return Suite(
        title=f"filesystem: ours vs reference ({'quick' if args.quick else 'full'} data)",
        servers=servers,
        workloads=workloads(p, grep_args),
        notes=[
            f"data: {p['root']}: tree of {n_files} files in {n_dirs} dirs; big file {shape.big_mb} MB,"
            f" huge file {shape.huge_mb} MB (lines of ~80 B)",
            "bytes = one JSON-RPC response line; the reference sends tool text twice"
            " (content + structuredContent)",
            "'!' after a time = some replies failed or did not pass the check (listed above)",
            f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}",
        ],
    )


# --------------------------------------------------------------------------------------------------
# Through the SDK client (issue 10): the official `Client`, as agent frameworks use it, over stdio
# with a linear line reader (`sdk_client.py`). Small reads, where the per-call work shows.


def sdk_calls(p: dict[str, str], repeat: int | None) -> list[Any]:
    from sdk_client import SdkCall

    small = sorted(str(x) for x in Path(p["small"]).iterdir())
    return [
        SdkCall("get_file_info", "get_file_info", {"path": p["info"]}, repeat=repeat or 200),
        SdkCall("read_text_file small file", "read_text_file", {"path": p["info"]}, repeat=repeat or 200),
        SdkCall("read_multiple_files x100", "read_multiple_files", {"paths": small}, repeat=repeat or 50),
        SdkCall(
            "first page of the big file (head 2000)",
            "read_text_file",
            {"path": p["big"], "head": 2000},
            repeat=repeat or 50,
        ),
    ]


def sdk_main(args: argparse.Namespace) -> None:
    import anyio

    from sdk_client import measure_sdk

    shape = QUICK if args.quick else FULL
    p = ensure_data(BENCH_DIR / ".work" / ("fs-quick" if args.quick else "fs"), shape)
    specs = [
        ServerSpec("ours", [*args.ours_cmd.split(), p["root"]]),
        ServerSpec("anchor", ["node", REFERENCE_ENTRY, p["root"]]),
    ]
    if args.sdk_before:  # an earlier build of ours, measured in the same run
        specs.append(ServerSpec("before", [*args.sdk_before.split(), p["root"]]))
    rounds: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.sdk_rounds):  # fresh processes each round; the median of the rounds' medians
        for name, by_server in anyio.run(measure_sdk, specs, sdk_calls(p, args.repeat)).items():
            for server, seconds in by_server.items():
                rounds.setdefault(name, {}).setdefault(server, []).append(seconds)
    print(f"through the SDK Client (linear stdio reader), {args.sdk_rounds} rounds, servers interleaved")
    header = f"| workload | ours | reference | ratio |{' before | ratio |' if args.sdk_before else ''}"
    print(header + "\n" + "|---" * (header.count("|") - 1) + "|")
    for name, by_server in rounds.items():
        ours, ref = (statistics.median(by_server[k]) * 1000 for k in ("ours", "anchor"))
        line = f"| {name} | {ours:.2f} ms | {ref:.2f} ms | {ours / ref:.2f}x |"
        if args.sdk_before:
            before = statistics.median(by_server["before"]) * 1000
            line += f" {before:.2f} ms | {before / ref:.2f}x |"
        print(line)


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "filesystem benchmark")
    parser.add_argument(
        "--ours-cmd",
        default=venv_script("mcp-filesystem"),
        help="command for our server, without the directory (default: the venv's script; 'uv run' adds"
        " its own start-up to the cold start)",
    )
    parser.add_argument(
        "--grep-args", help='JSON arguments for our grep tool (default: {"path": TREE, "pattern": ...})'
    )
    parser.add_argument("--no-floor", action="store_true", help="skip the bare-MCPServer cold-start floor")
    parser.add_argument(
        "--sdk",
        action="store_true",
        help="measure small reads through the SDK ClientSession instead (issue 10)",
    )
    parser.add_argument("--sdk-before", help="with --sdk: command of an earlier build of ours to compare")
    parser.add_argument(
        "--sdk-rounds", type=int, default=3, help="with --sdk: rounds, each with fresh processes"
    )
    if "--sdk" in sys.argv:
        sdk_main(parser.parse_args())
        return
    run_cli(build, parser)


if __name__ == "__main__":
    main()
