"""Subscriptions at scale: 10,000 `resources/subscribe` calls to mcp-batteries-filesystem.

Issue 15 #7: each subscribe used to restart the watcher and reconcile every watched path (38 ms at
250 subscriptions, 180 ms at 2,000; 2,097 took 240 s). Target: 10,000 subscriptions in under
10 s, and exactly one notification per change and URI. Measured over stdio with the harness's
raw client (legacy handshake), one request at a time and with 64 in flight, for files in one
directory and spread over 1,000 directories; then one write to a subscribed file.

    uv run --all-packages python bench/subscriptions.py [--count 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from harness import BENCH_DIR, McpClient, ServerSpec, start, venv_script


def make_files(layout: str, count: int) -> tuple[Path, list[Path]]:
    root = BENCH_DIR / ".work" / "subs" / layout
    files = [
        (root if layout == "one-directory" else root / f"d{i % 1000:03d}") / f"f{i:05d}.txt"
        for i in range(count)
    ]
    for file in files:
        if not file.exists():
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text("0")
    return root, files


async def each(client: McpClient, method: str, files: list[Path], window: int) -> float:
    """Seconds for one request per file, with up to `window` requests in flight."""
    assert client.proc.stdin is not None
    started = time.perf_counter()
    pending: list[asyncio.Future[object]] = []
    for file in files:
        pending.append(client.send(method, {"uri": file.as_uri()}))  # type: ignore[arg-type]
        if len(pending) >= window:
            await client.proc.stdin.drain()
            reply = await pending.pop(0)
            assert reply.failure() is None, reply.failure()  # type: ignore[attr-defined]
    await client.proc.stdin.drain()
    for future in pending:
        await future
    return time.perf_counter() - started


async def run(layout: str, count: int, window: int) -> str:
    root, files = make_files(layout, count)
    client = await start(ServerSpec("ours", [venv_script("mcp-batteries-filesystem"), str(root)]))
    try:
        subscribed = await each(client, "resources/subscribe", files, window)
        before = client.notifications
        files[count // 2].write_text(f"changed {time.time()}")
        await asyncio.sleep(1.5)  # the debounce window and then some: count what one write caused
        heard = client.notifications - before
        unsubscribed = await each(client, "resources/unsubscribe", files, window)
    finally:
        client.proc.terminate()
        await client.proc.wait()
    return (
        f"| {layout} | {window} | {count:,} | {subscribed:.2f} s ({count / subscribed:,.0f}/s) | "
        f"{unsubscribed:.2f} s ({count / unsubscribed:,.0f}/s) | {heard} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=10_000)
    args = parser.parse_args()
    rows = [
        "| layout | in flight | subscriptions | subscribe all | unsubscribe all | notes for one write |",
        "|---|---|---|---|---|---|",
    ]
    for layout in ("one-directory", "1000-directories"):
        for window in (1, 64):
            rows.append(asyncio.run(run(layout, args.count, window)))
            print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
