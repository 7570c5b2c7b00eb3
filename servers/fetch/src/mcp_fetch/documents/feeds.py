"""XML → Markdown: RSS and Atom feeds as a list of entries, any other XML indented in a ```xml fence.

Parsed by `safexml` (entities never expanded, no DTD, no network). Feeds: RSS 2.0 (`rss/channel/item`),
RSS 1.0 (RDF, `item` beside `channel`) and Atom (`feed/entry`): the feed's title and description,
then per entry a heading with its link, its date, and its summary or content converted from HTML.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from .model import Document, DocumentError, DocumentTooLarge, OutputBudget, Section
from .safexml import local, parse, text_of
from .style import Style, clean

_MAX_ENTRY_CHARS = 4000


def convert(job: Any) -> Document:
    root = parse(job.body, what="XML document")
    if _depth(root) > job.limits.max_depth:
        raise DocumentTooLarge(f"The XML document is nested more than {job.limits.max_depth} levels deep.")
    style = Style(job.output)
    kind = local(root.tag)
    if kind in ("rss", "RDF", "feed"):
        return _feed(root, kind, style, job)
    pretty = etree.tostring(root, pretty_print=True, encoding="unicode")
    return Document(kind="XML document", unit=None, sections=(Section("1", style.fence(pretty, "xml")),))


def _depth(root: etree._Element) -> int:
    depth = deepest = 0
    for event, _ in etree.iterwalk(root, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
    return deepest


def _child(element: etree._Element, *names: str) -> etree._Element | None:
    for child in element:
        if local(child.tag) in names:
            return child
    return None


def _text(element: etree._Element, *names: str) -> str:
    child = _child(element, *names)
    return clean(text_of(child)) if child is not None else ""


def _feed(root: etree._Element, kind: str, style: Style, job: Any) -> Document:
    from ..extract import convert_fragment

    atom = kind == "feed"
    channel = root if atom else _child(root, "channel")
    if channel is None:
        raise DocumentError("The RSS feed has no channel.")
    entries = [e for e in (channel if kind == "rss" else root) if local(e.tag) in ("item", "entry")]
    title = _text(channel, "title") or None
    blocks = []
    if title:
        blocks.append(style.heading(1, title))
    description = _text(channel, "subtitle" if atom else "description")
    if description:
        blocks.append(description)
    budget = OutputBudget(job.limits.max_output_chars)
    limit = job.limits.max_sections
    for entry in entries[:limit]:
        heading = _text(entry, "title") or "(untitled)"
        link = _link(entry, atom)
        parts = [style.heading(2, style.link(heading, link) if link else heading)]
        date = _text(entry, "updated", "published", "pubDate", "date")
        if date:
            parts.append(date)
        summary = _child(entry, "content", "summary", "encoded", "description")
        if summary is not None:
            html = _html_of(summary)
            converted = convert_fragment(html, job.url, job.output).strip() if html else ""
            if len(converted) > _MAX_ENTRY_CHARS:
                converted = converted[:_MAX_ENTRY_CHARS].rsplit(" ", 1)[0] + " …"
            if converted:
                parts.append(converted)
        block = "\n\n".join(parts)
        blocks.append(block)
        if not budget.take(block):
            break
    notices: tuple[str, ...] = ()
    if len(entries) > limit:
        notices = (f"The feed has {len(entries):,} entries; only the first {limit:,} are shown.",)
    kind_name = "Atom feed" if atom else "RSS feed"
    note = f"{len(entries):,} entries"
    return Document(
        kind=kind_name,
        unit=None,
        sections=(Section("1", "\n\n".join(blocks), note),),
        title=title,
        notices=notices,
    )


def _link(entry: etree._Element, atom: bool) -> str:
    if atom:
        for child in entry:
            if (
                local(child.tag) == "link"
                and child.get("rel", "alternate") == "alternate"
                and child.get("href")
            ):
                return str(child.get("href")).strip()
        return ""
    link = _text(entry, "link")
    return link if link.startswith(("http://", "https://")) else ""


def _html_of(element: etree._Element) -> str:
    """An entry's summary as HTML: escaped HTML (RSS, Atom type="html") or inline XHTML."""
    if element.get("type") == "xhtml" or len(element):
        return "".join(etree.tostring(child, encoding="unicode") for child in element)
    text = text_of(element)
    if element.get("type") == "text":
        return "<p>" + text.replace("&", "&amp;").replace("<", "&lt;") + "</p>"
    return text
