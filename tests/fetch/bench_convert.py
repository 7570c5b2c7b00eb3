# ruff: noqa: E501, B023
"""Manual benchmark (not collected by pytest): convert a generated large page with both parsers and
measure how well a thread keeps the event loop responsive. Run: uv run --all-packages python tests/fetch/bench_convert.py"""

import time
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread
from mcp_fetch.extract import convert_html

article = Path("tests/fetch/pages/article.html").read_text()
docs = Path("tests/fetch/pages/docs.html").read_text()
# ~2 MB: a long documentation page: many sections with paragraphs, code, tables, links, plus nav.
section = (
    Path("tests/fetch/pages/docs.html")
    .read_text()
    .split('<section id="config-file">')[1]
    .split("</section>")[0]
)
nav = "<nav>" + "".join(f"<a href='/n{i}'>Nav {i}</a>" for i in range(300)) + "</nav>"
body = "".join(
    f"<section id='s{i}'><h2>Section {i}</h2><p>Paragraph {i}, with <a href='/x{i}'>a link</a>, some <b>bold</b> text and more words to make it realistic in length.</p>{section}</section>"
    for i in range(1500)
)
html = f"<html><head><title>Big</title></head><body>{nav}<main>{body}</main><footer>f</footer></body></html>"
print("size MB", len(html.encode()) / 1e6)
for parser in ["html.parser", "lxml"]:
    for output in ["markdown", "text"]:
        t = time.perf_counter()
        c = convert_html(html, "https://x.example/", output, parser=parser)
        d = time.perf_counter() - t
        print(parser, output, f"{d:.2f}s", len(c.content))


async def main():
    for parser in ["html.parser", "lxml"]:
        gaps = []
        done = anyio.Event()

        async def ping():
            last = time.perf_counter()
            while not done.is_set():
                await anyio.sleep(0.001)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        async with anyio.create_task_group() as tg:
            tg.start_soon(ping)
            t = time.perf_counter()
            await anyio.to_thread.run_sync(
                partial(convert_html, html, "https://x.example/", "markdown", parser=parser)
            )
            d = time.perf_counter() - t
            done.set()
        gaps.sort()
        print(
            parser,
            f"thread conversion {d:.2f}s; ping ticks {len(gaps)}; max gap {gaps[-1] * 1000:.1f} ms; p99 {gaps[int(len(gaps) * 0.99)] * 1000:.1f} ms; median {gaps[len(gaps) // 2] * 1000:.1f} ms",
        )


anyio.run(main)
