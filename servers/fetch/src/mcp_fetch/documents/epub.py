"""EPUB → Markdown: the chapters in reading order (the spine), each converted by the HTML path.

No e-book library is needed: an EPUB is a zip (checked by `SafeZip`) holding a container file that
names the package document, whose spine lists the XHTML chapters in order; those are XML read with
entities off (`safexml`), then converted like a web page's content, without main-content
extraction (a chapter is all content). Each chapter is a section opened by `<!-- chapter N -->`.
Books whose chapters are encrypted (DRM, listed in META-INF/encryption.xml) are refused; font
obfuscation, which encrypts only fonts, is not in the way.
"""

from __future__ import annotations

import posixpath
from typing import Any

from .model import Document, DocumentError, OutputBudget, Section
from .safexml import local, parse
from .safezip import SafeZip
from .style import Style, clean

_HTML_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/x-dtbook+xml"})


def preload() -> None:
    from .. import extract

    del extract


def convert(job: Any) -> Document:
    from ..body import decode_text
    from ..extract import convert_fragment

    archive = SafeZip(job.body, job.limits, what="EPUB book")
    container = parse(archive.read("META-INF/container.xml"), what="EPUB container")
    rootfile = next((e.get("full-path", "") for e in container.iter() if local(e.tag) == "rootfile"), "")
    if not rootfile or not archive.has(rootfile):
        raise DocumentError("The EPUB book is damaged: its container names no package document.")
    package = parse(archive.read(rootfile), what="EPUB package document")
    folder = posixpath.dirname(rootfile)
    manifest: dict[str, tuple[str, str]] = {}
    title = None
    for element in package.iter():
        name = local(element.tag)
        if name == "item":
            href = posixpath.normpath(posixpath.join(folder, element.get("href", ""))).lstrip("/")
            manifest[element.get("id", "")] = (href, element.get("media-type", ""))
        elif name == "title" and title is None and (element.text or "").strip():
            title = clean(element.text or "")
    spine = [
        manifest[ref.get("idref", "")]
        for ref in package.iter()
        if local(ref.tag) == "itemref" and ref.get("idref", "") in manifest
    ]
    chapters = [href for href, media in spine if media in _HTML_TYPES and archive.has(href)]
    encrypted = _encrypted(archive)
    if any(href in encrypted for href in chapters):
        raise DocumentError("The EPUB book is DRM-protected: its chapters are encrypted and cannot be read.")
    if not chapters:
        raise DocumentError("The EPUB book has no readable chapters in its spine.")
    limits = job.limits
    notices = []
    if len(chapters) > limits.max_sections:
        notices.append(
            f"The book has {len(chapters):,} chapters; only the first {limits.max_sections:,} were read."
        )
    style = Style(job.output)
    budget = OutputBudget(limits.max_output_chars)
    sections = []
    for number, href in enumerate(chapters[: limits.max_sections], start=1):
        parse(archive.read(href), what=f"chapter {href!r}")  # well-formed, no entity expanded
        html = decode_text(archive.read(href), None, is_html=True)[0]
        text = f"{style.marker('chapter', str(number))}\n\n{convert_fragment(html, None, job.output)}"
        sections.append(Section(str(number), text.rstrip()))
        if not budget.take(text):
            notices.append(
                f"The book's text exceeds {limits.max_output_chars:,} characters; it was cut after chapter "
                f"{number}."
            )
            break
    return Document(
        kind="EPUB book", unit="chapter", sections=tuple(sections), title=title, notices=tuple(notices)
    )


def _encrypted(archive: SafeZip) -> set[str]:
    if not archive.has("META-INF/encryption.xml"):
        return set()
    root = parse(archive.read("META-INF/encryption.xml"), what="EPUB encryption list")
    return {
        posixpath.normpath(element.get("URI", "")).lstrip("/")
        for element in root.iter()
        if local(element.tag) == "CipherReference"
    }
