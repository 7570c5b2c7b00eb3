"""Benchmark: mcp-fetch (ours) vs the reference mcp-server-fetch (Python), same run.

    bash bench/anchors.sh                               # once: installs the reference server
    uv run --all-packages python bench/fetch.py         # full run
    uv run --all-packages python bench/fetch.py --quick # smoke check

Pages are served by a local HTTP server on 127.0.0.1 started by this script: a ~2 MB HTML page and a
~40 kB article. Responses carry `Cache-Control: no-store`, so every call of ours downloads and
converts the page again, as the reference does (ours would otherwise answer repeats from its cache;
the "paging" workload measures that case on purpose). Both servers run with robots.txt ignored and
private addresses allowed. The reference runs with Node stripped from PATH (its pure-Python path).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: import the harness beside it

from harness import (
    Reply,
    ServerSpec,
    Suite,
    anchor_path,
    arg_parser,
    path_without,
    run_cli,
    tool,
    venv_script,
)

ARTICLE_HEAD = (
    "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
    "<script>window.dataLayer=[];</script><style>body{{margin:0}}</style></head><body>"
    "<header><nav><ul>"
    + "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(30))
    + "</ul></nav>"
    "</header><main><article><h1>{title}</h1>"
)
ARTICLE_TAIL = (
    "</article></main><aside>" + "".join(f"<a href='/r{i}'>Related {i}</a>" for i in range(20)) + "</aside>"
    "<footer><p>© The Bench Gazette</p></footer></body></html>"
)


def paragraph(i: int) -> str:
    return (
        f"<h2>Part {i}</h2><p>Paragraph {i}: tide pools are <b>rocky</b> hollows that keep seawater at low "
        f"tide; <a href='/link{i}'>anemones</a>, crabs and <em>sea stars</em> live in them. "
        "They are small laboratories of adaptation, and every visitor should leave them as found.</p>"
        "<ul><li>one point</li><li>another point</li></ul>"
    )


def page_of(title: str, size: int) -> bytes:
    parts, i, total = [ARTICLE_HEAD.format(title=title)], 0, 0
    while total < size:
        piece = paragraph(i)
        parts.append(piece)
        total += len(piece)
        i += 1
    parts.append(ARTICLE_TAIL)
    return "".join(parts).encode()


PAGES = {"/big": page_of("Big page", 2_000_000), "/article": page_of("Article", 40_000)}


def start_site(no_store: bool = True) -> tuple[ThreadingHTTPServer, int]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            cacheable = self.path.endswith("?cacheable")
            body = PAGES.get(path)
            if body is None:
                body, status, ctype = b"not found", 404, "text/plain"
            else:
                status, ctype = 200, "text/html; charset=utf-8"
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            if no_store and not cacheable:
                self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def has_text(needle: str) -> Callable[[Reply], str | None]:
    def check(reply: Reply) -> str | None:
        return None if needle in reply.text() else f"reply lacks {needle!r}: {reply.text()[:200]!r}"

    return check


def build(args: argparse.Namespace) -> Suite:
    _, port = start_site()
    base = f"http://127.0.0.1:{port}"
    anchor_env = {**os.environ, "PATH": path_without("node")}
    servers = [
        ServerSpec(
            "ours",
            [*args.ours_cmd.split(), "--allow-private", "--ignore-robots-txt"],
            label=f"{args.ours_cmd} (Python, mcp 2.3)",
        ),
        ServerSpec(
            "anchor",
            [anchor_path("fetch", "bin", "mcp-server-fetch"), "--ignore-robots-txt", "--allow-private-ips"],
            env=anchor_env,
            label="reference mcp-server-fetch (Python, no Node on PATH)",
        ),
    ]
    workloads = [
        tool(
            "fetch ~40 kB article",
            "fetch",
            {"url": f"{base}/article"},
            repeat=20,
            quick_repeat=3,
            check=has_text("Paragraph 0"),
        ),
        tool(
            "fetch 2 MB page",
            "fetch",
            {"url": f"{base}/big"},
            repeat=5,
            quick_repeat=1,
            probe_pings=True,
            check=has_text("Paragraph 0"),
        ),
        tool(
            "fetch 2 MB page, start_index 50000",
            "fetch",
            {"url": f"{base}/big?cacheable", "start_index": 50_000},
            repeat=5,
            quick_repeat=1,
            note="cacheable: ours converts once, then serves chunks from its cache",
        ),
    ]
    return Suite(
        title="fetch: ours vs reference",
        servers=servers,
        workloads=workloads,
        notes=[
            f"pages served from {base}: /article {len(PAGES['/article'])} B, /big {len(PAGES['/big'])} B",
            "Cache-Control: no-store except the start_index workload (URL ?cacheable)",
            f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}",
        ],
    )


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "fetch benchmark")
    parser.add_argument("--ours-cmd", default=venv_script("mcp-fetch"), help="command for our server")
    run_cli(build, parser)


if __name__ == "__main__":
    main()
