"""What asking before destroying costs (docs/confirmation.md), measured on mcp-batteries-filesystem
over stdio through the SDK `Client`, all in one run (report same-run ratios):

- `delete_path` of one small file: `--confirm never` (no question) vs asked and accepted, in
  each era (2026-07-28: two requests, the second carrying the sealed state; handshake era: one
  request with an `elicitation/create` in the middle);
- `write_file` over a file the caller has read (the question's check only: a stat and the ledger)
  vs `--confirm never`;
- describing the deletion of a tree of 10,000 files (`losses.describe_deletion`, no MCP).

    ./scripts/uv run --all-packages python bench/confirm.py [--calls 40]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import ElicitResult
from mcp_batteries.safety import AllowedDirectories
from mcp_filesystem.losses import describe_deletion

SCRIPT = str(Path(sys.executable).parent / "mcp-batteries-filesystem")


async def accept(_ctx: Any, _params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"confirm": True})


async def timed_deletes(root: Path, mode: str, flags: list[str], calls: int, ask: bool) -> list[float]:
    params = StdioServerParameters(command=SCRIPT, args=[str(root), *flags])
    options: dict[str, Any] = {"elicitation_callback": accept} if ask else {}
    times: list[float] = []
    async with Client(params, mode=mode, **options) as client:  # type: ignore[arg-type]
        for n in range(calls + 3):
            victim = root / f"victim-{mode}-{ask}-{n}.txt"
            victim.write_text("x" * 100)
            start = time.perf_counter()
            result = await client.call_tool("delete_path", {"path": str(victim)})
            elapsed = time.perf_counter() - start
            assert not result.is_error and not victim.exists(), result
            if n >= 3:  # warm-up
                times.append(elapsed)
    return times


async def timed_writes(root: Path, flags: list[str], calls: int) -> list[float]:
    params = StdioServerParameters(command=SCRIPT, args=[str(root), *flags])
    target = root / "written.txt"
    target.write_text("start")
    times: list[float] = []
    async with Client(params, mode="legacy") as client:
        await client.call_tool("read_text_file", {"path": str(target)})
        for n in range(calls + 3):
            start = time.perf_counter()
            result = await client.call_tool("write_file", {"path": str(target), "content": f"v{n}"})
            elapsed = time.perf_counter() - start
            assert not result.is_error, result
            if n >= 3:
                times.append(elapsed)
    return times


def tree_description(root: Path, files: int = 10_000) -> list[float]:
    top = root / "tree"
    for d in range(100):
        folder = top / f"d{d:03}"
        folder.mkdir(parents=True)
        for f in range(files // 100):
            (folder / f"f{f:03}.txt").write_bytes(b"z" * 64)
    allowed = AllowedDirectories([str(root)])
    times = []
    for _ in range(7):
        start = time.perf_counter()
        described = describe_deletion(allowed, str(top), recursive=True)
        times.append(time.perf_counter() - start)
        assert described is not None and f"{files} files" in described
    return times


def ms(times: list[float]) -> str:
    return (
        f"{statistics.median(times) * 1000:7.2f} ms (p90 {sorted(times)[int(len(times) * 0.9)] * 1000:.2f})"
    )


async def main(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        never = await timed_deletes(root, "legacy", ["--confirm", "never"], calls, ask=False)
        legacy = await timed_deletes(root, "legacy", [], calls, ask=True)
        modern_never = await timed_deletes(root, "auto", ["--confirm", "never"], calls, ask=False)
        modern = await timed_deletes(root, "auto", [], calls, ask=True)
        writes_never = await timed_writes(root, ["--confirm", "never"], calls)
        writes_checked = await timed_writes(root, [], calls)
        tree = tree_description(root)
    base, base_modern = statistics.median(never), statistics.median(modern_never)
    print(f"delete_path, handshake era, --confirm never : {ms(never)}")
    print(
        f"delete_path, handshake era, asked, accepted : {ms(legacy)}  x{statistics.median(legacy) / base:.2f}"
    )
    print(f"delete_path, 2026-07-28, --confirm never    : {ms(modern_never)}")
    print(
        f"delete_path, 2026-07-28, asked, accepted    : {ms(modern)}  "
        f"x{statistics.median(modern) / base_modern:.2f}"
    )
    print(f"write_file over a read file, --confirm never: {ms(writes_never)}")
    print(
        f"write_file over a read file, checked        : {ms(writes_checked)}  "
        f"x{statistics.median(writes_checked) / statistics.median(writes_never):.2f}"
    )
    print(f"describing a 10,000-file tree (domain)      : {ms(tree)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=40)
    anyio.run(main, parser.parse_args().calls)
