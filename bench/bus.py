"""The change bus's added latency per notification: one replica publishes, another delivers.

    uv run --all-packages python bench/bus.py                      # both engines, 2,000 events each
    uv run --all-packages python bench/bus.py --events 500 --only redis
    MCP_TEST_POSTGRES_DSN=postgresql://... MCP_TEST_REDIS_URL=redis://... uv run ... bench/bus.py

Two `ChangeRelay`s (the piece each replica runs per server, `mcp_batteries._live.bus`) on one
channel of a real PostgreSQL (`LISTEN`/`NOTIFY`) and Redis (pub/sub): the first publishes an event,
the time until the second's delivery callback runs is measured, then the next event is sent (one
in flight, so each figure is one notification's latency, not a queue's). `--burst` also sends
events back to back and reports the throughput. Both relays run in this process (so they share
its event loop, as two replicas would share a core on this 2-core machine): the figures are an
upper bound of what the bus adds between two processes on loopback.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid

import anyio
from mcp_batteries._live.bus import BusEvent, ChangeRelay, engine_for

POSTGRES = os.environ.get("MCP_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("MCP_TEST_REDIS_URL", "redis://127.0.0.1:6379")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def measure(url: str, events: int, burst: int) -> dict[str, float]:
    channel = f"bench_bus_{uuid.uuid4().hex[:10]}"
    arrived: dict[str, float] = {}
    got = anyio.Event()

    async def deliver(received: list[BusEvent]) -> None:
        nonlocal got
        for event in received:
            arrived[event.uri or ""] = time.perf_counter()
        got.set()

    async def ignore(received: list[BusEvent]) -> None:
        return None

    sender = ChangeRelay(engine_for(url), channel, ignore)
    receiver = ChangeRelay(engine_for(url), channel, deliver)
    latencies: list[float] = []
    async with sender.running(), receiver.running():
        if not (sender.connected and receiver.connected):
            raise SystemExit(f"cannot reach the bus at {url}: {sender.last_error or receiver.last_error}")
        for i in range(events + 50):  # the first 50 warm up
            uri = f"bench://{i}"
            got = anyio.Event()
            start = time.perf_counter()
            await sender.publish([BusEvent("u", uri, f"d{i}")])
            with anyio.fail_after(10):
                while uri not in arrived:
                    await got.wait()
                    got = anyio.Event()
            if i >= 50:
                latencies.append((arrived[uri] - start) * 1000)
        burst_rate = 0.0
        if burst:
            arrived.clear()
            start = time.perf_counter()
            for i in range(burst):
                await sender.publish([BusEvent("u", f"burst://{i}", f"b{i}")])
            with anyio.fail_after(60):
                while len(arrived) < burst:
                    got = anyio.Event()
                    await got.wait()
            burst_rate = burst / (time.perf_counter() - start)
    return {
        "p50": statistics.median(latencies),
        "p99": percentile(latencies, 0.99),
        "max": max(latencies),
        "burst_per_s": burst_rate,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--burst", type=int, default=5000, help="events sent back to back (0: skip)")
    parser.add_argument("--only", choices=("postgresql", "redis"))
    args = parser.parse_args()
    engines = {"postgresql": POSTGRES, "redis": REDIS}
    print(f"{'engine':<11} {'events':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'burst/s':>9}")
    for name, url in engines.items():
        if args.only and name != args.only:
            continue
        figures = await measure(url, args.events, args.burst)
        print(
            f"{name:<11} {args.events:>6} {figures['p50']:>8.2f} {figures['p99']:>8.2f} "
            f"{figures['max']:>8.2f} {figures['burst_per_s']:>9.0f}"
        )


if __name__ == "__main__":
    anyio.run(main)
