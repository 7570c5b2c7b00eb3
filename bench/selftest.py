"""Checks the harness itself against bench/selftest_server.py (~40 s):

    uv run --all-packages python bench/selftest.py

Blocking vs yielding tools (ping verdicts), a 30 MB response, a timeout and a crash (restart and
carry on), a tool error, a missing tool, a missing server, fresh-process peak RSS.
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness as h

SERVER = [sys.executable, str(Path(__file__).resolve().parent / "selftest_server.py")]


def main() -> None:
    suite = h.Suite(
        "harness self-test",
        [h.ServerSpec("a", SERVER), h.ServerSpec("b", SERVER), h.ServerSpec("ghost", ["/nonexistent/x"])],
        [
            h.tool("block", "block", {"seconds": 0.5}, repeat=2, probe_pings=True),
            h.tool("nap", "nap", {"seconds": 0.5}, repeat=2, probe_pings=True),
            h.tool("big", "big", {"mb": 30}, repeat=2),
            h.tool("timeout", "block", {"seconds": 3}, repeat=3, timeout=0.5),
            h.tool("after timeout", "nap", {"seconds": 0.01}, repeat=3),
            h.tool("die", "die", {}, repeat=3),
            h.tool("fail", "fail", {}, repeat=2),
            h.tool("missing tool", "nope", {}, repeat=2),
            h.tool("fresh", "big", {"mb": 50}, repeat=1, fresh=True),
        ],
        cold_starts=1,
    )
    res = asyncio.run(h.run_suite(suite, h.Options(verbose=False)))
    print(h.format_report(res))
    s, p = res.samples, res.probes
    for n in ("a", "b"):
        assert p["block"][n].answered_during == 0 and p["block"][n].max > 0.4, p["block"][n]
        assert p["nap"][n].answered_during > 5 and p["nap"][n].max < 0.2, p["nap"][n]
        assert (s["big"][n].size or 0) > 60_000_000
        assert not s["timeout"][n].seconds and "RequestTimeout" in s["timeout"][n].errors[0]
        assert len(s["after timeout"][n].seconds) == 3 and not s["after timeout"][n].errors
        assert "ServerExited" in s["die"][n].errors[0]
        assert len(s["fail"][n].errors) == 2 and s["fail"][n].errors[0].startswith("isError")
        assert s["missing tool"][n].skipped
        assert (s["fresh"][n].peak_rss_kib or 0) > 200 * 1024
    assert "ghost" in res.unavailable
    print("\nself-test passed")


if __name__ == "__main__":
    main()
