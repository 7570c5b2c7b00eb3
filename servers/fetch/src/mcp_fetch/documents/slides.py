"""PowerPoint (.pptx, .pptm) → Markdown: one section per slide, `## Slide N: title`, bullets, tables, notes.

Read here with lxml (entities off, `safexml`) from the zip checked by `SafeZip`, rather than with
python-pptx: the XML needed is small (slide order, shapes, paragraphs with their level, tables,
hyperlinks, notes), and python-pptx would add Pillow and XlsxWriter (~22 MB installed) to every
installation for reading text. Reading the generated 50-slide deck takes ~25 ms.

Pictures are named by their description, charts and embedded objects by kind; none is opened.
Macros (`vbaProject.bin`) are never run, only mentioned.
"""

from __future__ import annotations

import posixpath
from typing import Any

from lxml import etree

from .model import Document, DocumentError, OutputBudget, Section
from .safexml import local, parse
from .safezip import SafeZip
from .style import Style, clean
from .word import _hidden_parts

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_TITLES = frozenset({"title", "ctrTitle"})
_MAX_SHAPES = 5000  # per slide, counting nested groups


def convert(job: Any) -> Document:
    archive = SafeZip(job.body, job.limits, what="PowerPoint deck")
    deck = _Deck(archive, Style(job.output))
    paths = deck.slide_paths()
    limits = job.limits
    notices = _hidden_parts(archive.names())
    if len(paths) > limits.max_sections:
        notices.append(
            f"The deck has {len(paths):,} slides; only the first {limits.max_sections:,} were read."
        )
    budget = OutputBudget(limits.max_output_chars)
    sections = []
    for number, path in enumerate(paths[: limits.max_sections], start=1):
        text = deck.slide(number, path)
        sections.append(Section(str(number), text))
        if not budget.take(text):
            notices.append(
                f"The deck's text exceeds {limits.max_output_chars:,} characters; it was cut after slide "
                f"{number}."
            )
            break
    if not sections:
        raise DocumentError("The PowerPoint deck has no slides.")
    return Document(
        kind="PowerPoint deck",
        unit="slide",
        sections=tuple(sections),
        title=deck.title(),
        notices=tuple(notices),
        total_units=len(paths) if len(paths) > len(sections) else None,
    )


class _Deck:
    def __init__(self, archive: SafeZip, style: Style) -> None:
        self.archive = archive
        self.style = style

    def title(self) -> str | None:
        if not self.archive.has("docProps/core.xml"):
            return None
        root = parse(self.archive.read("docProps/core.xml"), what="deck's properties")
        for element in root:
            if local(element.tag) == "title" and (element.text or "").strip():
                return clean(element.text or "")
        return None

    def relationships(self, part: str) -> dict[str, tuple[str, bool]]:
        """Relationship id → (target part path or URL, external?)."""
        folder, name = posixpath.split(part)
        rels = posixpath.join(folder, "_rels", name + ".rels")
        if not self.archive.has(rels):
            return {}
        found = {}
        for rel in parse(self.archive.read(rels), what="deck's relationships").iter(f"{_REL}Relationship"):
            target = rel.get("Target", "")
            external = rel.get("TargetMode") == "External"
            if not external:
                target = posixpath.normpath(posixpath.join(folder, target)).lstrip("/")
            found[rel.get("Id", "")] = (target, external)
        return found

    def slide_paths(self) -> list[str]:
        if not self.archive.has("ppt/presentation.xml"):
            raise DocumentError("The PowerPoint deck is damaged: it lacks ppt/presentation.xml.")
        root = parse(self.archive.read("ppt/presentation.xml"), what="deck")
        rels = self.relationships("ppt/presentation.xml")
        paths = []
        for slide_id in root.iter(f"{_P}sldId"):
            target = rels.get(slide_id.get(f"{_R}id", ""))
            if target is not None and not target[1] and self.archive.has(target[0]):
                paths.append(target[0])
        return paths

    def slide(self, number: int, path: str) -> str:
        root = parse(self.archive.read(path), what=f"slide {number}")
        rels = self.relationships(path)
        reader = _Shapes(self.style, rels)
        tree = root.find(f"{_P}cSld/{_P}spTree")
        if tree is not None:
            reader.walk(tree, 0)
        title = reader.title or ""
        heading = self.style.heading(2, f"Slide {number}: {title}" if title else f"Slide {number}")
        blocks = [heading, *reader.blocks]
        notes = self.notes(rels)
        if notes:
            blocks.append(self.style.quote("Notes: " + notes))
        return "\n\n".join(blocks)

    def notes(self, rels: dict[str, tuple[str, bool]]) -> str:
        for target, external in rels.values():
            if external or "notesSlide" not in target or not self.archive.has(target):
                continue
            root = parse(self.archive.read(target), what="slide notes")
            texts: list[str] = []
            for shape in root.iter(f"{_P}sp"):
                placeholder = shape.find(f"{_P}nvSpPr/{_P}nvPr/{_P}ph")
                if placeholder is not None and placeholder.get("type") == "body":
                    texts.extend(_paragraph_text(p, None, self.style) for p in shape.iter(f"{_A}p"))
            return clean(" ".join(t for t in texts if t))
        return ""


class _Shapes:
    def __init__(self, style: Style, rels: dict[str, tuple[str, bool]]) -> None:
        self.style = style
        self.rels = rels
        self.title: str | None = None
        self.blocks: list[str] = []
        self.count = 0

    def walk(self, tree: etree._Element, depth: int) -> None:
        for shape in tree:
            self.count += 1
            if self.count > _MAX_SHAPES or depth > 20:
                return
            kind = local(shape.tag)
            if kind == "grpSp":
                self.walk(shape, depth + 1)
            elif kind == "sp":
                self.text_shape(shape)
            elif kind == "graphicFrame":
                self.frame(shape)
            elif kind == "pic":
                properties = shape.find(f"{_P}nvPicPr/{_P}cNvPr")
                description = clean(properties.get("descr", "")) if properties is not None else ""
                if description:
                    self.blocks.append(f"(Picture: {description})")

    def text_shape(self, shape: etree._Element) -> None:
        body = shape.find(f"{_P}txBody")
        if body is None:
            return
        placeholder = shape.find(f"{_P}nvSpPr/{_P}nvPr/{_P}ph")
        kind = placeholder.get("type", "body") if placeholder is not None else None
        if kind in _TITLES and self.title is None:
            self.title = clean(" ".join(_paragraph_text(p, None, self.style) for p in body.iter(f"{_A}p")))
            return
        bulleted = kind in ("body", "obj")
        lines = []
        for paragraph in body.iter(f"{_A}p"):
            text = _paragraph_text(paragraph, self.rels, self.style)
            if not text:
                continue
            properties = paragraph.find(f"{_A}pPr")
            level = _int(properties.get("lvl", "0")) if properties is not None else 0
            explicit = properties is not None and (
                properties.find(f"{_A}buChar") is not None or properties.find(f"{_A}buAutoNum") is not None
            )
            suppressed = properties is not None and properties.find(f"{_A}buNone") is not None
            lines.append(
                self.style.bullet(text, level) if (bulleted or explicit) and not suppressed else text
            )
        if lines:
            joined = (
                "\n".join(lines)
                if all(line.lstrip().startswith("- ") for line in lines)
                else "\n\n".join(lines)
            )
            self.blocks.append(joined)

    def frame(self, frame: etree._Element) -> None:
        data = frame.find(f"{_A}graphic/{_A}graphicData")
        if data is None:
            return
        table = data.find(f"{_A}tbl")
        if table is not None:
            rows = [
                [
                    clean(" ".join(_paragraph_text(p, self.rels, self.style) for p in cell.iter(f"{_A}p")))
                    for cell in row.iter(f"{_A}tc")
                ]
                for row in table.iter(f"{_A}tr")
            ]
            if rows:
                self.blocks.append(self.style.table(rows))
            return
        uri = data.get("uri", "")
        properties = frame.find(f"{_P}nvGraphicFramePr/{_P}cNvPr")
        name = clean(properties.get("name", "")) if properties is not None else ""
        if uri.endswith("/chart"):
            self.blocks.append(f"(Chart{': ' + name if name else ''})")
        elif uri.endswith("/ole"):
            self.blocks.append(f"(Embedded object{': ' + name if name else ''}; not opened)")


def _paragraph_text(paragraph: etree._Element, rels: dict[str, tuple[str, bool]] | None, style: Style) -> str:
    parts = []
    for run in paragraph:
        kind = local(run.tag)
        if kind == "br":
            parts.append(" ")
            continue
        if kind not in ("r", "fld"):
            continue
        text = "".join(t.text or "" for t in run.iter(f"{_A}t"))
        link = run.find(f"{_A}rPr/{_A}hlinkClick")
        if rels is not None and link is not None and text.strip():
            target = rels.get(link.get(f"{_R}id", ""))
            if target is not None and target[1] and target[0].startswith(("http://", "https://", "mailto:")):
                text = style.link(text, target[0])
        parts.append(text)
    return clean("".join(parts))


def _int(value: str) -> int:
    try:
        return max(0, min(int(value), 8))
    except ValueError:
        return 0
