"""HTML → the page's main content, as Markdown, plain text or cleaned HTML. Pure Python, synchronous.

Pipeline (all on one BeautifulSoup tree; lxml parser when installed, html.parser otherwise):

1. Drop what is never content: scripts, styles, embedded objects, form controls, hidden elements.
2. Drop boilerplate: nav/aside/footer, site headers, ARIA landmark roles for navigation, banners and
   dialogs, and elements whose class/id say cookie banner, ad, share bar, sidebar, table of contents...
3. Pick the main content: <main> / role=main, else <article>, else a readability-style density score
   over block containers (text in paragraphs, commas, minus link density).
4. Resolve links and images against the page's base URL, then convert with a customised markdownify
   (ATX headings, fenced code with the language from the class, Markdown tables, image links).

Steps 1, 2 and the link/image resolution of 4 are in `htmlclean`, step 3 in `maincontent`, the
conversion in `render`; this module holds the pipeline and its public API.

When what survives is only a sliver of the page (a portal or index that is mostly navigation), the
whole page is converted instead, so the model still sees the links; `Converted.whole_page` says so.

Conversion is CPU-bound: callers in async code run it in a worker thread.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag

from .htmlclean import absolutise, normalise_structure, remove_boilerplate, remove_never_content, text_length
from .maincontent import main_content
from .render import Output, render

# Below this many characters, extraction is deemed to have found nothing and the whole page is used.
_NEAR_EMPTY_CHARS = 200


@dataclass(frozen=True)
class Converted:
    title: str | None
    content: str
    whole_page: bool = False  # main-content extraction found too little; the whole page was converted


def default_parser() -> str:
    """lxml when installed (several times faster), else the pure-Python parser."""
    return "lxml" if importlib.util.find_spec("lxml") is not None else "html.parser"


def truncate_html(html: str, max_chars: int) -> tuple[str, bool]:
    """At most `max_chars` of `html`, cut before a tag so no half tag reaches the parser."""
    if len(html) <= max_chars:
        return html, False
    cut = html.rfind("<", 0, max_chars)
    return html[: cut if cut > 0 else max_chars], True


def html_to_markdown(html: str, base_url: str) -> Converted:
    return convert_html(html, base_url, "markdown")


def convert_html(
    html: str, base_url: str, output: Output = "markdown", *, parser: str | None = None
) -> Converted:
    """The main content of `html` (fetched from `base_url`) in the requested output format."""
    parser = parser or default_parser()
    soup = BeautifulSoup(html, parser)
    base_url = _document_base(soup, base_url)
    title = _title(soup)
    remove_never_content(soup)
    body = soup.body or soup
    page_text_length = text_length(body)
    remove_boilerplate(body)
    root = main_content(body)
    content = _render(root, base_url, output)
    if len(content) < _NEAR_EMPTY_CHARS and page_text_length > 2 * max(len(content), _NEAR_EMPTY_CHARS // 2):
        # Mostly navigation: extraction stripped nearly everything, so give the model the whole page.
        soup = BeautifulSoup(html, parser)
        remove_never_content(soup)
        content = _render(soup.body or soup, base_url, output)
        return Converted(title, content, whole_page=True)
    return Converted(title, content)


def convert_fragment(html: str, base_url: str | None, output: Output = "markdown") -> str:
    """All of `html`'s content (no main-content extraction: a book chapter or a feed entry is all
    content), scripts, styles and hidden elements removed. Links are made absolute against
    `base_url` when there is one (an EPUB's internal links have none worth resolving)."""
    soup = BeautifulSoup(html, default_parser())
    remove_never_content(soup)
    root = soup.body or soup
    normalise_structure(root)
    if base_url is not None:
        absolutise(root, base_url)
    return render(root, output)


def _document_base(soup: BeautifulSoup, base_url: str) -> str:
    base = soup.find("base", href=True)
    if isinstance(base, Tag):
        return urljoin(base_url, str(base["href"]).strip())
    return base_url


def _title(soup: BeautifulSoup) -> str | None:
    for candidate in (
        soup.find("meta", attrs={"property": "og:title"}),
        soup.title,
        soup.find("h1"),
    ):
        if not isinstance(candidate, Tag):
            continue
        text = str(candidate.get("content", "")) if candidate.name == "meta" else candidate.get_text(" ")
        text = " ".join(text.split())
        if text:
            return text
    return None


def _render(root: Tag, base_url: str, output: Output) -> str:
    normalise_structure(root)
    absolutise(root, base_url)
    return render(root, output)


__all__ = [
    "Converted",
    "Output",
    "convert_fragment",
    "convert_html",
    "default_parser",
    "html_to_markdown",
    "truncate_html",
]
