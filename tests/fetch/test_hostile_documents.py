"""Hostile documents cannot hurt the server: each is refused with a clear error, and nothing leaks."""

from __future__ import annotations

import io
import zipfile
from collections.abc import AsyncIterator

import anyio
import pytest
from mcp_batteries.errors import InvalidInput, LimitExceeded
from mcp_fetch.client import Fetcher
from mcp_fetch.documents import DocumentLimits

from . import docmaker, hostile
from .conftest import Site, loopback_settings

pytestmark = pytest.mark.anyio

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@pytest.fixture
async def tight() -> AsyncIterator[Fetcher]:
    """A fetcher with a small memory budget (256 MiB) and small section limits."""
    client = Fetcher(
        loopback_settings(
            document_memory_bytes=256 * 1024 * 1024,
            document_limits=DocumentLimits(max_sections=4),
            max_document_bytes=64 * 1024 * 1024,
        )
    )
    try:
        yield client
    finally:
        await client.aclose()


async def test_encrypted_pdf_is_refused_without_guessing(site: Site, fetcher: Fetcher) -> None:
    site.serve("/secret.pdf", docmaker.encrypted_pdf(), content_type=PDF)
    with pytest.raises(
        InvalidInput, match=r"The PDF is encrypted \(password-protected\).*no password is tried"
    ):
        await fetcher.fetch(site.url("/secret.pdf"))


async def test_scanned_pdf_is_reported_with_its_page_count(site: Site, fetcher: Fetcher) -> None:
    site.serve("/scan.pdf", docmaker.scanned_pdf(3), content_type=PDF)
    with pytest.raises(InvalidInput, match=r"The PDF has 3 pages and no text layer: it is scanned"):
        await fetcher.fetch(site.url("/scan.pdf"))


async def test_huge_page_counts_are_cut_with_a_notice(site: Site, tight: Fetcher) -> None:
    site.serve("/long.pdf", docmaker.pdf(6, paragraphs_per_page=1), content_type=PDF)
    result = await tight.fetch(site.url("/long.pdf"), max_length=100_000)
    assert result.notice == "The PDF has 6 pages; only the first 4 were converted."
    assert result.outline is not None and result.outline.startswith("Document: PDF, 6 pages.")
    assert "<!-- page 4 -->" in result.content and "<!-- page 5 -->" not in result.content
    with pytest.raises(InvalidInput, match=r"it has 6; only the first 4 were converted"):
        await tight.fetch(site.url("/long.pdf"), pages="5")


async def test_pdf_deflate_bomb_is_stopped_by_the_memory_budget(site: Site, tight: Fetcher) -> None:
    site.serve("/bomb.pdf", hostile.deflate_bomb_pdf(), content_type=PDF)
    with pytest.raises(LimitExceeded, match=r"256 MiB memory budget"):
        await tight.fetch(site.url("/bomb.pdf"))


async def test_sheet_spanning_billions_of_cells_is_stopped_by_the_memory_budget(
    site: Site, tight: Fetcher
) -> None:
    site.serve("/huge.xlsx", hostile.huge_sheet_xlsx(), content_type=XLSX)
    with pytest.raises(LimitExceeded, match=r"256 MiB memory budget"):
        await tight.fetch(site.url("/huge.xlsx"))


async def test_zip_bomb_in_a_word_document_is_refused_before_decompressing(
    site: Site, fetcher: Fetcher
) -> None:
    site.serve("/bomb.docx", hostile.zip_bomb_docx(), content_type=DOCX)
    with pytest.raises(LimitExceeded, match=r"looks like a zip bomb: 'word/media/bomb.bin' would expand"):
        await fetcher.fetch(site.url("/bomb.docx"))


async def test_zip_member_that_lies_about_its_size_is_refused(site: Site, fetcher: Fetcher) -> None:
    site.serve("/forged.xlsx", hostile.forged_size_xlsx(), content_type=XLSX)
    with pytest.raises(
        LimitExceeded, match=r"forged: 'xl/padding.xml' expands beyond the 1000 bytes it declares"
    ):
        await fetcher.fetch(site.url("/forged.xlsx"))


async def test_billion_laughs_and_external_entities_in_a_feed_are_never_expanded(
    site: Site, fetcher: Fetcher
) -> None:
    site.serve("/feed", hostile.BILLION_LAUGHS, content_type="application/rss+xml")
    with pytest.raises(InvalidInput, match=r"billion laughs"):
        await fetcher.fetch(site.url("/feed"))
    xxe = b"<?xml version='1.0'?><!DOCTYPE a [<!ENTITY s SYSTEM 'file:///etc/passwd'>]><a>&s;</a>"
    site.serve("/xxe", xxe, content_type="application/xml")
    result = await fetcher.fetch(site.url("/xxe"))
    assert "root:" not in result.content and "&s;" in result.content


async def test_external_entity_in_a_word_document_is_not_resolved(site: Site, fetcher: Fetcher) -> None:
    site.serve("/xxe.docx", hostile.xxe_docx(), content_type=DOCX)
    try:
        result = await fetcher.fetch(site.url("/xxe.docx"), max_length=100_000)
    except InvalidInput as exc:  # refusing the document is as good as reading it without the entity
        assert "root:" not in str(exc)
    else:
        assert "root:" not in result.content


async def test_deep_nesting_is_refused(site: Site, fetcher: Fetcher) -> None:
    site.serve("/deep.json", hostile.deep_json(), content_type="application/json")
    site.serve("/deep.xml", hostile.deep_xml(), content_type="application/xml")
    with pytest.raises(LimitExceeded, match="nested too deeply"):
        await fetcher.fetch(site.url("/deep.json"))
    with pytest.raises(InvalidInput, match="Excessive depth"):
        await fetcher.fetch(site.url("/deep.xml"))


async def test_malformed_documents_get_a_clear_error(site: Site, fetcher: Fetcher) -> None:
    pdf = docmaker.pdf(2)
    site.serve("/cut.pdf", pdf[: len(pdf) // 3], content_type=PDF)
    site.serve("/fake.pdf", b"<html>not a pdf</html>", content_type=PDF)
    site.serve("/junk.docx", b"PK\x03\x04" + b"\x00" * 200, content_type=DOCX)
    with pytest.raises(InvalidInput, match=r"The PDF is damaged"):
        await fetcher.fetch(site.url("/cut.pdf"))
    with pytest.raises(InvalidInput, match=r"declared as application/pdf but its bytes are not a PDF"):
        await fetcher.fetch(site.url("/fake.pdf"))
    with pytest.raises(InvalidInput, match=r"Word document is damaged"):
        await fetcher.fetch(site.url("/junk.docx"))


async def test_macros_and_embedded_objects_are_named_never_run(site: Site, fetcher: Fetcher) -> None:
    document = hostile.with_member(docmaker.docx(1), "word/vbaProject.bin", b"\xd0\xcf\x11\xe0macro")
    document = hostile.with_member(document, "word/embeddings/oleObject1.bin", b"\xd0\xcf\x11\xe0object")
    site.serve("/macro.docm", document, content_type="application/vnd.ms-word.document.macroEnabled.12")
    result = await fetcher.fetch(site.url("/macro.docm"))
    assert result.notice is not None
    assert "The document contains macros; they were not run." in result.notice
    assert "Embedded objects were not opened: oleObject1.bin." in result.notice
    assert "# Tide Pools" in result.content


async def test_a_conversion_past_its_time_budget_is_killed(site: Site) -> None:
    client = Fetcher(loopback_settings(document_timeout=0.001))
    try:
        site.serve("/slow.pdf", docmaker.pdf(20), content_type=PDF)
        with pytest.raises(LimitExceeded, match=r"longer than the 0.001 s conversion time budget"):
            await client.fetch(site.url("/slow.pdf"))
    finally:
        await client.aclose()


async def test_a_cancelled_conversion_leaves_no_process_behind(
    site: Site, fetcher: Fetcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_fetch.documents import isolate

    site.serve("/big.pdf", docmaker.pdf(200, paragraphs_per_page=6), content_type=PDF)
    converting = anyio.Event()
    processes: list[object] = []
    kill, receive = isolate._kill, isolate._receive

    def watched_kill(process: object) -> None:
        processes.append(process)
        kill(process)

    def watched_receive(receiver: object, limit: int) -> bytes | None:
        anyio.from_thread.run_sync(converting.set)  # the child exists and is converting
        return receive(receiver, limit)  # type: ignore[arg-type]

    monkeypatch.setattr(isolate, "_kill", watched_kill)
    monkeypatch.setattr(isolate, "_receive", watched_receive)
    finished = False

    async def fetch() -> None:
        nonlocal finished
        await fetcher.fetch(site.url("/big.pdf"))
        finished = True

    async with anyio.create_task_group() as group:
        group.start_soon(fetch)
        with anyio.fail_after(30):
            await converting.wait()
        group.cancel_scope.cancel()
    assert not finished and processes
    assert all(not process.is_alive() for process in processes)  # type: ignore[attr-defined]


def test_zip_check_counts_members_and_declared_sizes() -> None:
    from mcp_fetch.documents.model import DocumentTooLarge
    from mcp_fetch.documents.safezip import SafeZip

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for i in range(20):
            archive.writestr(f"m{i}", b"x")
    with pytest.raises(DocumentTooLarge, match="holds 20 files"):
        SafeZip(out.getvalue(), DocumentLimits(max_zip_entries=10), what="test archive")
    with pytest.raises(DocumentTooLarge, match="would expand to"):
        SafeZip(out.getvalue(), DocumentLimits(max_unzipped_bytes=10), what="test archive")
