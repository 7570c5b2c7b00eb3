"""Hostile documents, built by the tests: bombs, forged sizes, entities, deep nesting, damage."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from . import docmaker


def zeros_deflated(size: int) -> bytes:
    """`size` zero bytes, raw-deflated in pieces (never held whole in memory)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = b"\0" * (1024 * 1024)
    out = [compressor.compress(piece) for _ in range(size // len(piece))]
    out.append(compressor.flush())
    return b"".join(out)


def with_member(document: bytes, name: str, data: bytes) -> bytes:
    """`document` (a zip) with one more member."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(document)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            target.writestr(info, source.read(info))
        target.writestr(name, data)
    return out.getvalue()


def zip_bomb_docx(size: int = 64 * 1024 * 1024) -> bytes:
    """A Word document with a member that expands ~1000-fold (declared honestly)."""
    return with_member(docmaker.docx(1), "word/media/bomb.bin", b"\0" * size)


def forged_size_xlsx(actual: int = 32 * 1024 * 1024, declared: int = 1000) -> bytes:
    """A workbook with a member whose zip headers declare `declared` bytes but which inflates to `actual`."""
    name = b"xl/padding.xml"
    body = with_member(docmaker.xlsx(2), name.decode(), b"\0" * 10)
    archive = zipfile.ZipFile(io.BytesIO(body))
    info = archive.getinfo(name.decode())
    payload = zeros_deflated(actual)
    # Rebuild: everything before the member, the member with the big payload, then a central
    # directory whose entry for it carries the forged sizes.
    members = [(i, archive.read(i)) for i in archive.infolist() if i.filename != info.filename]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for member, data in members:
            target.writestr(member, data)
    data = bytearray(out.getvalue())
    end = data.rfind(b"PK\x05\x06")
    entries, cd_size, cd_offset = struct.unpack("<HII", data[end + 10 : end + 20])
    central = bytes(data[cd_offset : cd_offset + cd_size])
    local_offset = cd_offset
    crc = zlib.crc32(b"\0" * 0)  # wrong on purpose: the CRC is never reached
    local = (
        struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(payload), declared, len(name), 0)
        + name
    )
    entry = struct.pack(
        "<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(payload), declared, len(name),
        0, 0, 0, 0, 0, local_offset,
    ) + name  # fmt: skip
    new_offset = local_offset + len(local) + len(payload)
    new_central = central + entry
    tail = struct.pack(
        "<4s4H2IH", b"PK\x05\x06", 0, 0, entries + 1, entries + 1, len(new_central), new_offset, 0
    )
    return bytes(data[:cd_offset]) + local + payload + new_central + tail


def deflate_bomb_pdf(size: int = 1024 * 1024 * 1024) -> bytes:
    """A one-page PDF whose content stream inflates to `size` bytes of zeros."""
    stream = zlib.compress(b"", 9)
    compressor = zlib.compressobj(9)
    piece = b" " * (1024 * 1024)
    stream = b"".join([compressor.compress(piece) for _ in range(size // len(piece))] + [compressor.flush()])
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length "
        + str(len(stream)).encode()
        + b" /Filter /FlateDecode >>\nstream\n"
        + stream
        + b"\nendstream",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE rss ['
    b'<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">'
    b'<!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">'
    b'<!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"><!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">'
    b'<!ENTITY secret SYSTEM "file:///etc/passwd">]>'
    b'<rss version="2.0"><channel><title>Laughs &g;</title><description>&secret;</description>'
    b"<item><title>Entry &g;</title><link>https://example.com/a</link><description>&secret;</description></item>"
    b"</channel></rss>"
)


def xxe_docx() -> bytes:
    """A Word document whose body declares an external entity (a file on the server) and uses it."""
    document = docmaker.docx(1)
    source = zipfile.ZipFile(io.BytesIO(document))
    body = source.read("word/document.xml").decode()
    body = body.replace(
        "<w:document ",
        '<!DOCTYPE w:document [<!ENTITY secret SYSTEM "file:///etc/passwd">]><w:document ',
        1,
    ).replace("first point", "first &secret; point", 1)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info, body if info.filename == "word/document.xml" else source.read(info))
    return out.getvalue()


def deep_json(depth: int = 100_000) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_xml(depth: int = 5000) -> bytes:
    return b"<?xml version='1.0'?>" + b"<a>" * depth + b"</a>" * depth


def huge_sheet_xlsx() -> bytes:
    """A workbook whose one sheet spans A1:XFD1048576 (two cells, 17 billion in its range)."""
    body = docmaker.xlsx(1, sheets=("Only",))
    source = zipfile.ZipFile(io.BytesIO(body))
    sheet = source.read("xl/worksheets/sheet1.xml").decode()
    start = sheet.index("<sheetData>") if "<sheetData>" in sheet else sheet.index("<sheetData/>")
    end = (
        sheet.index("</sheetData>") + len("</sheetData>")
        if "</sheetData>" in sheet
        else start + len("<sheetData/>")
    )
    cells = (
        '<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c></row>'
        '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>z</t></is></c></row></sheetData>'
    )
    sheet = sheet[:start] + cells + sheet[end:]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info, sheet if info.filename == "xl/worksheets/sheet1.xml" else source.read(info))
    return out.getvalue()
