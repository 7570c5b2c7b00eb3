"""Real documents for the tests and the benchmark, written with the writing side of well-kept libraries.

reportlab (PDF), python-docx (DOCX), openpyxl (XLSX), python-pptx (PPTX); ODS and EPUB are small zips
built by hand (their formats are a few XML files). Every document carries the same recognisable
structure (headings, a list, a table, a link) so tests can check that conversion keeps it.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence

LINK = "https://example.com/tide-pools"
TABLE = [["Creature", "Zone", "Count"], ["Anemone", "Low", "12"], ["Crab", "Middle", "7"]]


def sentence(i: int) -> str:
    return (
        f"Paragraph {i}: tide pools are rocky hollows that keep seawater at low tide; anemones, crabs and "
        "sea stars live in them, small laboratories of adaptation."
    )


def pdf(pages: int = 3, *, paragraphs_per_page: int = 4, title: str = "Tide Pools") -> bytes:
    """A PDF with a title, one heading per page, paragraphs, a bulleted list and a table."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import ListFlowable, PageBreak, Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    out = io.BytesIO()
    story: list[object] = [Paragraph(title, styles["Title"])]
    for page in range(1, pages + 1):
        story.append(Paragraph(f"Chapter {page}", styles["Heading1"]))
        for i in range(paragraphs_per_page):
            story.append(Paragraph(sentence(page * 100 + i), styles["BodyText"]))
        if page == 1:
            story.append(
                ListFlowable(
                    [
                        Paragraph("first point", styles["BodyText"]),
                        Paragraph("second point", styles["BodyText"]),
                    ],
                    bulletType="bullet",
                )
            )
            story.append(Paragraph(f'Read <a href="{LINK}">more about tide pools</a>.', styles["BodyText"]))
            table = Table(TABLE)
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
            story.append(table)
        if page < pages:
            story.append(PageBreak())
    SimpleDocTemplate(out, pagesize=A4, title=title).build(story)  # type: ignore[arg-type]
    return out.getvalue()


def scanned_pdf(pages: int = 2) -> bytes:
    """A PDF whose pages hold only drawings (no text layer), as a scan would."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    drawing = canvas.Canvas(out, pagesize=A4)
    for page in range(pages):
        for i in range(20):
            drawing.rect(50 + i * 10, 100 + page * 5, 300, 10 + i, fill=1)
        drawing.showPage()
    drawing.save()
    return out.getvalue()


def encrypted_pdf() -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.pdfencrypt import StandardEncryption
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    drawing = canvas.Canvas(out, pagesize=A4, encrypt=StandardEncryption("secret", canPrint=0))
    drawing.drawString(100, 700, "Secret tide pool locations")
    drawing.showPage()
    drawing.save()
    return out.getvalue()


def docx(sections: int = 2, *, paragraphs: int = 3) -> bytes:
    """A Word document: headings, paragraphs with bold text and a hyperlink, lists and a table."""
    import docx as python_docx
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.oxml.shared import OxmlElement, qn

    document = python_docx.Document()
    document.core_properties.title = "Tide Pools"
    document.add_heading("Tide Pools", level=0)
    for section in range(1, sections + 1):
        document.add_heading(f"Chapter {section}", level=1)
        for i in range(paragraphs):
            paragraph = document.add_paragraph(sentence(section * 100 + i) + " ")
            paragraph.add_run("Leave them as found.").bold = True
        document.add_heading(f"Details {section}", level=2)
        document.add_paragraph("first point", style="List Bullet")
        document.add_paragraph("second point", style="List Bullet")
        document.add_paragraph("step one", style="List Number")
        document.add_paragraph("step two", style="List Number")
    paragraph = document.add_paragraph("Read ")
    relationship = paragraph.part.relate_to(LINK, RELATIONSHIP_TYPE.HYPERLINK, is_external=True)
    hyperlink = OxmlElement("w:hyperlink")
    hyperlink.set(qn("r:id"), relationship)
    run = OxmlElement("w:r")
    text = OxmlElement("w:t")
    text.text = "more about tide pools"
    run.append(text)
    hyperlink.append(run)
    paragraph._p.append(hyperlink)
    table = document.add_table(rows=len(TABLE), cols=len(TABLE[0]))
    for r, row in enumerate(TABLE):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx(rows: int = 5, *, sheets: Sequence[str] = ("Summary", "Data")) -> bytes:
    """A workbook: a small first sheet, then `rows` rows of mixed types in the second."""
    import datetime

    from openpyxl import Workbook

    workbook = Workbook()
    first = workbook.active
    assert first is not None
    first.title = sheets[0]
    for row in TABLE:
        first.append([int(v) if v.isdigit() else v for v in row])
    for name in sheets[1:]:
        sheet = workbook.create_sheet(name)
        sheet.append(["id", "name", "price", "when", "in stock"])
        start = datetime.date(2024, 1, 1)
        for i in range(rows):
            sheet.append(
                [i, f"item {i}", round(i * 1.25, 2), start + datetime.timedelta(days=i % 365), i % 2 == 0]
            )
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def pptx(slides: int = 3) -> bytes:
    """A deck: title slide, then slides with a title, bullets (two levels), notes; one with a table."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    title_slide = deck.slides.add_slide(deck.slide_layouts[0])
    title_slide.shapes.title.text = "Tide Pools"  # type: ignore[union-attr]
    title_slide.placeholders[1].text = "A field guide"  # type: ignore[attr-defined]
    for n in range(2, slides + 1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Topic {n}"  # type: ignore[union-attr]
        body = slide.placeholders[1].text_frame  # type: ignore[attr-defined]
        body.text = f"Point {n}.1: {sentence(n)}"
        sub = body.add_paragraph()
        sub.text = f"Detail {n}.1.1"
        sub.level = 1
        body.add_paragraph().text = f"Point {n}.2"
        slide.notes_slide.notes_text_frame.text = f"Speaker note {n}"  # type: ignore[union-attr]
        if n == 2:
            shape = slide.shapes.add_table(
                len(TABLE), len(TABLE[0]), Inches(1), Inches(4), Inches(6), Inches(1)
            )
            for r, row in enumerate(TABLE):
                for c, value in enumerate(row):
                    shape.table.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def ods(rows: int = 3) -> bytes:
    """An OpenDocument spreadsheet with one sheet (the mimetype entry first and stored, as required)."""
    cells = "".join(
        "<table:table-row>"
        + "".join(
            f'<table:table-cell office:value-type="string"><text:p>{value}</text:p></table:table-cell>'
            for value in row
        )
        + "</table:table-row>"
        for row in [*TABLE, *([f"row {i}", "x", str(i)] for i in range(rows))]
    )
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
        f'<office:body><office:spreadsheet><table:table table:name="Pools">{cells}</table:table>'
        "</office:spreadsheet></office:body></office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
        'manifest:version="1.2"><manifest:file-entry manifest:full-path="/" '
        'manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet", zipfile.ZIP_STORED
        )
        archive.writestr("content.xml", content)
        archive.writestr("META-INF/manifest.xml", manifest)
    return out.getvalue()


def epub(chapters: int = 2) -> bytes:
    """An EPUB 3 book: container, package document with a spine, XHTML chapters (headings, list, link)."""
    items = "".join(
        f'<item id="c{n}" href="text/chapter{n}.xhtml" media-type="application/xhtml+xml"/>'
        for n in range(1, chapters + 1)
    )
    spine = "".join(f'<itemref idref="c{n}"/>' for n in range(1, chapters + 1))
    package = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="id">urn:uuid:1</dc:identifier>'
        "<dc:title>Tide Pools</dc:title><dc:creator>A. Naturalist</dc:creator><dc:language>en</dc:language>"
        f"</metadata><manifest>{items}</manifest><spine>{spine}</spine></package>"
    )
    container = (
        '<?xml version="1.0"?>'
        '<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
        '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", container)
        archive.writestr("OEBPS/content.opf", package)
        for n in range(1, chapters + 1):
            archive.writestr(
                f"OEBPS/text/chapter{n}.xhtml",
                '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>Chapter {n}</title></head><body><h1>Chapter {n}</h1><p>{sentence(n)}</p>"
                f'<ul><li>first point</li><li>second point</li></ul><p><a href="{LINK}">more</a></p>'
                "</body></html>",
            )
    return out.getvalue()
