"""Documents served from 127.0.0.1, written by the tests with well-kept libraries, read back as Markdown."""

from __future__ import annotations

import json

import pytest
from mcp_batteries.errors import InvalidInput
from mcp_fetch.client import Fetcher
from mcp_fetch.service import render

from . import docmaker
from .conftest import Site

pytestmark = pytest.mark.anyio

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


async def test_pdf_keeps_headings_paragraphs_lists_links_and_page_markers(
    site: Site, fetcher: Fetcher
) -> None:
    site.serve("/report.pdf", docmaker.pdf(3), content_type=PDF)
    result = await fetcher.fetch(site.url("/report.pdf"), max_length=100_000)
    text = result.content
    assert result.title == "Tide Pools"
    assert result.outline is not None and result.outline.startswith("Document: PDF, 3 pages.")
    assert text.startswith("<!-- page 1 -->\n\n# Tide Pools")
    assert "# Chapter 2" in text and "<!-- page 3 -->" in text
    assert "- first point\n" in text or "- first point\n\n- second point" in text
    assert "[more about tide pools](https://example.com/tide-pools)" in text
    # Lines of one paragraph are joined; paragraphs stay apart.
    assert "anemones, crabs and sea stars live in them" in text
    assert "Paragraph 101" in text.split("Paragraph 100", 1)[1]


async def test_pages_selects_pdf_pages_and_the_reply_names_what_follows(site: Site, fetcher: Fetcher) -> None:
    site.serve("/report.pdf", docmaker.pdf(5), content_type=PDF)
    result = await fetcher.fetch(site.url("/report.pdf"), pages="2-3", max_length=100_000)
    assert result.content.startswith("<!-- page 2 -->")
    assert "<!-- page 3 -->" in result.content and "<!-- page 4 -->" not in result.content
    assert result.outline == "Document: PDF, 5 pages. Showing pages 2-3."
    reply = render(result)
    assert reply.endswith('(More follows: call fetch with pages="4-5" for the next part.)')
    last = await fetcher.fetch(site.url("/report.pdf"), pages="5")
    assert last.next_pages is None and "More follows" not in render(last)
    chunk = await fetcher.fetch(site.url("/report.pdf"), pages="1-2", max_length=200)
    assert 'the same pages="1-2"' in render(chunk)
    assert site.hits("/report.pdf") == 1  # every selection and chunk came from the cached conversion
    with pytest.raises(InvalidInput, match=r"out of range: the PDF has 5 pages, numbered 1-5"):
        await fetcher.fetch(site.url("/report.pdf"), pages="9")
    with pytest.raises(InvalidInput, match=r"not understood"):
        await fetcher.fetch(site.url("/report.pdf"), pages="first")


async def test_pdf_served_as_octet_stream_is_recognised_by_its_bytes(site: Site, fetcher: Fetcher) -> None:
    site.serve("/download", docmaker.pdf(1), content_type="application/octet-stream")
    result = await fetcher.fetch(site.url("/download"))
    assert result.content_type == "application/pdf" and "# Chapter 1" in result.content


async def test_word_document_keeps_headings_lists_bold_links_and_tables(site: Site, fetcher: Fetcher) -> None:
    site.serve("/spec.docx", docmaker.docx(2), content_type=DOCX)
    result = await fetcher.fetch(site.url("/spec.docx"), max_length=100_000)
    text = result.content
    assert result.title == "Tide Pools" and result.outline == "Document: Word document."
    assert text.startswith("# Tide Pools\n\n## Chapter 1\n")
    assert "### Details 1" in text
    assert "- first point\n- second point\n1. step one\n2. step two" in text
    assert "**Leave them as found.**" in text
    assert "[more about tide pools](https://example.com/tide-pools)" in text
    assert "| Creature | Zone | Count |\n| --- | --- | --- |\n| Anemone | Low | 12 |" in text


async def test_plain_text_format_drops_the_markup(site: Site, fetcher: Fetcher) -> None:
    site.serve("/spec.docx", docmaker.docx(1), content_type=DOCX)
    result = await fetcher.fetch(site.url("/spec.docx"), format="text", max_length=100_000)
    assert result.content.startswith("Tide Pools\n\nChapter 1\n")
    assert "more about tide pools (https://example.com/tide-pools)" in result.content
    assert "Creature\tZone\tCount" in result.content and "**" not in result.content


async def test_workbook_sheets_are_tables_selectable_by_number_or_name(site: Site, fetcher: Fetcher) -> None:
    site.serve("/data.xlsx", docmaker.xlsx(250), content_type=XLSX)
    whole = await fetcher.fetch(site.url("/data.xlsx"), max_length=200)
    assert whole.outline == (
        'Document: Excel workbook, 2 sheets: 1 "Summary" (3 rows), 2 "Data" (251 rows). '
        'Select sheets with the pages argument, e.g. pages="2" or "1-3".'
    )
    data = await fetcher.fetch(site.url("/data.xlsx"), pages="data", max_length=100_000)
    assert data.content.startswith("## Sheet 2: Data\n\n| id | name | price | when | in stock |\n| --- |")
    assert "| 3 | item 3 | 3.75 | 2024-01-04 | FALSE |" in data.content
    assert (await fetcher.fetch(site.url("/data.xlsx"), pages="1")).content.startswith("## Sheet 1: Summary")
    assert site.hits("/data.xlsx") == 1


async def test_opendocument_spreadsheet_is_read(site: Site, fetcher: Fetcher) -> None:
    site.serve("/pools.ods", docmaker.ods(), content_type="application/vnd.oasis.opendocument.spreadsheet")
    result = await fetcher.fetch(site.url("/pools.ods"))
    assert result.content.startswith("## Sheet 1: Pools\n\n| Creature | Zone | Count |")


async def test_deck_has_a_section_per_slide_with_bullets_tables_and_notes(
    site: Site, fetcher: Fetcher
) -> None:
    site.serve("/deck.pptx", docmaker.pptx(4), content_type=PPTX)
    result = await fetcher.fetch(site.url("/deck.pptx"), pages="2", max_length=100_000)
    assert result.outline == "Document: PowerPoint deck, 4 slides. Showing slide 2."
    text = result.content
    assert text.startswith("## Slide 2: Topic 2\n\n- Point 2.1: Paragraph 2")
    assert "\n  - Detail 2.1.1\n- Point 2.2" in text
    assert "| Creature | Zone | Count |" in text
    assert text.rstrip().endswith("> Notes: Speaker note 2")
    first = await fetcher.fetch(site.url("/deck.pptx"), pages="1")
    assert first.content.startswith("## Slide 1: Tide Pools\n\nA field guide")


async def test_epub_chapters_come_in_spine_order(site: Site, fetcher: Fetcher) -> None:
    site.serve("/book.epub", docmaker.epub(3), content_type="application/epub+zip")
    result = await fetcher.fetch(site.url("/book.epub"), max_length=100_000)
    assert result.title == "Tide Pools"
    assert result.outline is not None and result.outline.startswith("Document: EPUB book, 3 chapters.")
    text = result.content
    assert text.index("# Chapter 1") < text.index("<!-- chapter 2 -->") < text.index("# Chapter 3")
    assert "- first point\n- second point" in text and "[more](https://example.com/tide-pools)" in text


async def test_csv_and_tsv_become_tables(site: Site, fetcher: Fetcher) -> None:
    site.serve("/t.csv", "name;count\nanemone;12\ncrab|hermit;7\n", content_type="text/csv; charset=utf-8")
    site.serve("/t.tsv", "name\tcount\nanemone\t12\n", content_type="text/tab-separated-values")
    csv_result = await fetcher.fetch(site.url("/t.csv"))
    assert csv_result.content == (
        "| name | count |\n| --- | --- |\n| anemone | 12 |\n| crab\\|hermit | 7 |\n"
    )
    assert csv_result.outline == "Document: CSV table (3 rows)."
    tsv_result = await fetcher.fetch(site.url("/t.tsv"))
    assert tsv_result.content == "| name | count |\n| --- | --- |\n| anemone | 12 |\n"
    raw = await fetcher.fetch(site.url("/t.csv"), raw=True)
    assert raw.content.startswith("name;count")


async def test_json_records_become_a_table(site: Site, fetcher: Fetcher) -> None:
    site.serve(
        "/r.json",
        json.dumps([{"id": 1, "ok": True}, {"id": 2, "note": "x"}]),
        content_type="application/json",
    )
    result = await fetcher.fetch(site.url("/r.json"))
    assert result.content == "| id | ok | note |\n| --- | --- | --- |\n| 1 | true |  |\n| 2 |  | x |\n"


async def test_rss_and_atom_feeds_list_their_entries(site: Site, fetcher: Fetcher) -> None:
    rss = (
        "<?xml version='1.0'?><rss version='2.0'><channel><title>Tide news</title>"
        "<description>Pools</description>"
        "<item><title>Crabs return</title><link>https://example.com/crabs</link>"
        "<pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate>"
        "<description>&lt;p&gt;The &lt;b&gt;crabs&lt;/b&gt; are back.&lt;/p&gt;</description>"
        "</item></channel></rss>"
    )
    atom = (
        "<?xml version='1.0'?><feed xmlns='http://www.w3.org/2005/Atom'><title>Atom pools</title>"
        "<entry><title>Stars</title><link href='https://example.com/stars'/><updated>2024-02-01T00:00:00Z</updated>"
        "<summary type='text'>Sea stars &lt;3 pools</summary></entry></feed>"
    )
    site.serve("/rss", rss, content_type="application/rss+xml")
    site.serve("/atom", atom, content_type="application/atom+xml")
    feed = await fetcher.fetch(site.url("/rss"))
    assert feed.content.startswith("# Tide news\n\nPools\n\n## [Crabs return](https://example.com/crabs)\n")
    assert "The **crabs** are back." in feed.content and feed.outline == "Document: RSS feed (1 entries)."
    entries = await fetcher.fetch(site.url("/atom"))
    assert (
        "## [Stars](https://example.com/stars)\n\n2024-02-01T00:00:00Z\n\nSea stars <3 pools"
        in entries.content
    )


async def test_plain_xml_is_indented_in_a_fence(site: Site, fetcher: Fetcher) -> None:
    site.serve("/d.xml", "<a><b x='1'>t</b></a>", content_type="application/xml")
    result = await fetcher.fetch(site.url("/d.xml"))
    assert result.content == '```xml\n<a>\n  <b x="1">t</b>\n</a>\n```\n'


async def test_pages_on_a_web_page_is_refused(site: Site, fetcher: Fetcher) -> None:
    site.serve("/page", "<html><body><p>hello</p></body></html>")
    with pytest.raises(InvalidInput, match="pages applies to documents"):
        await fetcher.fetch(site.url("/page"), pages="2")


async def test_documents_may_be_larger_than_pages(site: Site) -> None:
    from .conftest import loopback_settings

    pdf = docmaker.pdf(30)
    client = Fetcher(loopback_settings(max_download_bytes=len(pdf) // 2, max_document_bytes=len(pdf) * 2))
    try:
        site.serve("/big.pdf", pdf, content_type=PDF)
        site.serve("/big.html", b"<p>" + b"x" * len(pdf) + b"</p>")
        assert "# Chapter 30" in (await client.fetch(site.url("/big.pdf"), pages="30")).content
        with pytest.raises(Exception, match=r"download limit.*--max-download-bytes"):
            await client.fetch(site.url("/big.html"))
    finally:
        await client.aclose()
