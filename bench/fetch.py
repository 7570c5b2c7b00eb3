"""Benchmark: mcp-fetch (ours) vs the reference mcp-server-fetch (Python), same run.

    bash bench/anchors.sh                               # once: installs the reference server and markitdown
    uv run --all-packages python bench/fetch.py         # full run
    uv run --all-packages python bench/fetch.py --quick # smoke check
    uv run --all-packages python bench/fetch.py --documents   # documents: ours vs markitdown-mcp

Documents (`--documents`): a 100-page PDF, a 10,000-row XLSX and a 50-slide PPTX, written by the
tests' document maker (tests/fetch/docmaker.py) into bench/.work/fetch-docs/ and served from the
same local server with Cache-Control: no-store, so every call downloads and converts again. The
anchor is markitdown-mcp (Microsoft's markitdown 0.1.x behind its MCP server, tool
`convert_to_markdown(uri)`, from PyPI in bench/.anchors/markitdown). "Time to first page" is the
time of one call: ours returns its first chunk (5,000 characters) of the converted document,
markitdown the whole document (it has no paging). Peak RSS: the server process (fresh process per
repetition), and for ours also the conversion child, which the harness cannot see (it lives under
the forkserver for ~0.1 s): ours runs with --log-level debug and its children's peaks are read from
its log after the run.

Pages are served by a local HTTP server on 127.0.0.1 started by this script: a ~2 MB HTML page and a
~40 kB article. Responses carry `Cache-Control: no-store`, so every call of ours downloads and
converts the page again, as the reference does (ours would otherwise answer repeats from its cache;
the "paging" workload measures that case on purpose). Both servers run with robots.txt ignored and
private addresses allowed. The reference runs with Node stripped from PATH (its pure-Python path).
"""

from __future__ import annotations

import argparse
import os
import re
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
#: path -> (body, content type); filled by `documents()` when --documents is given.
DOCUMENTS: dict[str, tuple[bytes, str]] = {}
DOCUMENT_TYPES = {
    ".pdf": "application/pdf",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}


def documents(quick: bool) -> None:
    """Generate (once) and load the benchmark documents."""
    folder = Path(__file__).resolve().parent / ".work" / "fetch-docs"
    folder.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.fetch import docmaker

    sizes = {"report.pdf": 20, "data.xlsx": 1000, "deck.pptx": 10} if quick else {}
    makers = {
        "report.pdf": lambda: docmaker.pdf(sizes.get("report.pdf", 100), paragraphs_per_page=6),
        "data.xlsx": lambda: docmaker.xlsx(sizes.get("data.xlsx", 10_000)),
        "deck.pptx": lambda: docmaker.pptx(sizes.get("deck.pptx", 50)),
    }
    for name, make in makers.items():
        path = folder / (("quick-" if quick else "") + name)
        if not path.exists():
            path.write_bytes(make())
        DOCUMENTS["/" + name] = (path.read_bytes(), DOCUMENT_TYPES[path.suffix])


def start_site(no_store: bool = True) -> tuple[ThreadingHTTPServer, int]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            cacheable = self.path.endswith("?cacheable")
            body = PAGES.get(path)
            if path in DOCUMENTS:
                (body, ctype), status = DOCUMENTS[path], 200
            elif body is None:
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


def build_documents(args: argparse.Namespace) -> Suite:
    documents(args.quick)
    _, port = start_site()
    base = f"http://127.0.0.1:{port}"
    servers = [
        ServerSpec(
            "ours",
            [*args.ours_cmd.split(), "--allow-private", "--ignore-robots-txt", "--log-level", "debug"],
            label=f"{args.ours_cmd} (pypdfium2, calamine, own PPTX reader; child process per conversion)",
        ),
        ServerSpec(
            "markitdown",
            [anchor_path("markitdown", "bin", "markitdown-mcp")],
            label="markitdown-mcp (markitdown 0.1.x: pdfminer.six, openpyxl+pandas, python-pptx)",
        ),
    ]
    checks = {"/report.pdf": "Chapter 1", "/data.xlsx": "item 1", "/deck.pptx": "Topic 2"}
    workloads = []
    for path, (body, _) in DOCUMENTS.items():
        label = f"{path[1:]} ({len(body) // 1024} KiB)"
        call = {
            "markitdown": ("tools/call", {"name": "convert_to_markdown", "arguments": {"uri": base + path}})
        }
        workloads.append(
            tool(
                f"first page of {label}",
                "fetch",
                {"url": base + path},
                repeat=7,
                quick_repeat=2,
                probe_pings=path == "/report.pdf",
                overrides=call,
                check=has_text(checks[path]),
            )
        )
        workloads.append(
            tool(
                f"first page of {label}, fresh process",
                "fetch",
                {"url": base + path},
                repeat=3,
                quick_repeat=1,
                fresh=True,
                overrides=call,
                check=has_text(checks[path]),
            )
        )
    return Suite(
        title="fetch documents: ours vs markitdown-mcp",
        servers=servers,
        workloads=workloads,
        cold_starts=3,
        quick_cold_starts=1,
        notes=[
            "documents: " + ", ".join(f"{p} {len(b)} B" for p, (b, _) in DOCUMENTS.items()),
            "Cache-Control: no-store: every call downloads and converts again",
            f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}",
        ],
    )


def converter_peaks(log: Path) -> dict[str, int]:
    """The largest conversion child per format, in KiB, from ours' debug log."""
    peaks: dict[str, int] = {}
    if not log.exists():
        return peaks
    for match in re.finditer(
        r"converted (\w+) \(\d+ bytes\) in [\d.]+ s, converter peak RSS (\d+) KiB", log.read_text()
    ):
        peaks[match.group(1)] = max(peaks.get(match.group(1), 0), int(match.group(2)))
    return peaks


def build(args: argparse.Namespace) -> Suite:
    if args.documents:
        return build_documents(args)
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
    parser.add_argument("--documents", action="store_true", help="document workloads, ours vs markitdown-mcp")
    args = parser.parse_known_args()[0]
    log = args.log_dir / "ours.stderr.log"
    if args.documents and log.exists():
        log.unlink()  # the converter peaks below are read from this run's log only
    run_cli(build, parser)
    if args.documents:
        peaks = converter_peaks(log)
        print(
            "ours' conversion child, largest peak RSS: "
            + ", ".join(f"{k} {v / 1024:.0f} MiB" for k, v in peaks.items())
        )


if __name__ == "__main__":
    main()
