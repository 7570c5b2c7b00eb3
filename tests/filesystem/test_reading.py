"""reading.py: read_text_file paging/caps, read_media_file, read_multiple_files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp_batteries.errors import InvalidInput, LimitExceeded, NotFound
from mcp_batteries.safety import AllowedDirectories
from mcp_filesystem.reading import read_media_file, read_multiple_files, read_text_file

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 20
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 20


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "allowed"
    d.mkdir()
    return d


@pytest.fixture
def allowed(root: Path) -> AllowedDirectories:
    return AllowedDirectories([root])


def _lines(n: int, start: int = 1) -> str:
    return "".join(f"line {i}\n" for i in range(start, start + n))


def test_small_file_is_returned_whole(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\n")
    page = read_text_file(allowed, "a.txt")
    assert (page.text, page.start_line, page.end_line, page.truncated, page.notice) == (
        "one\ntwo\n",
        1,
        2,
        False,
        None,
    )
    assert page.render() == "one\ntwo\n"


def test_file_without_trailing_newline_keeps_it_that_way(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo")
    assert read_text_file(allowed, "a.txt").text == "one\ntwo"
    assert read_text_file(allowed, "a.txt", tail=1).text == "two"


def test_crlf_line_endings_are_preserved(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    assert read_text_file(allowed, "a.txt").text == "one\r\ntwo\r\n"
    assert read_text_file(allowed, "a.txt", tail=1).text == "two\r\n"


def test_empty_file_reads_as_empty(allowed: AllowedDirectories, root: Path) -> None:
    (root / "e.txt").write_bytes(b"")
    for page in (read_text_file(allowed, "e.txt"), read_text_file(allowed, "e.txt", tail=3)):
        assert page.text == "" and not page.truncated


def test_head_returns_first_lines(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text(_lines(100))
    page = read_text_file(allowed, "a.txt", head=3)
    assert page.text == _lines(3)
    assert (page.start_line, page.end_line, page.truncated) == (1, 3, False)


def test_tail_returns_last_lines_with_numbers_when_file_is_small(
    allowed: AllowedDirectories, root: Path
) -> None:
    (root / "a.txt").write_text(_lines(100))
    page = read_text_file(allowed, "a.txt", tail=3)
    assert page.text == _lines(3, start=98)
    assert (page.start_line, page.end_line) == (98, 100)


def test_tail_larger_than_file_returns_everything(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text(_lines(5))
    page = read_text_file(allowed, "a.txt", tail=50)
    assert page.text == _lines(5)
    assert (page.start_line, page.end_line) == (1, 5)


def test_tail_across_block_boundaries(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text(_lines(50_000))  # ~600 KB: many 64 KiB blocks
    page = read_text_file(allowed, "a.txt", tail=5000, max_bytes=10**7)
    assert page.text == _lines(5000, start=45_001)


def test_offset_and_limit_page_with_one_based_lines(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text(_lines(10))
    page = read_text_file(allowed, "a.txt", offset=4, limit=3)
    assert page.text == _lines(3, start=4)
    assert (page.start_line, page.end_line, page.truncated, page.next_offset) == (4, 6, True, 7)
    assert "offset=7, limit=3" in (page.notice or "")
    last = read_text_file(allowed, "a.txt", offset=7, limit=10)
    assert last.text == _lines(4, start=7) and not last.truncated and last.next_offset is None


def test_offset_past_the_end_says_how_many_lines_exist(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text(_lines(10))
    page = read_text_file(allowed, "a.txt", offset=50)
    assert page.text == "" and "10 line(s)" in (page.notice or "")


def test_whole_file_read_is_capped_by_lines_with_a_notice(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text(_lines(5000))
    page = read_text_file(allowed, "a.txt")
    assert page.text == _lines(2000)
    assert page.truncated and page.next_offset == 2001
    assert "Showing lines 1-2000" in (page.notice or "")
    assert "offset=2001, limit=2000" in (page.notice or "")
    assert page.render().endswith("limit=2000 for more]")


def test_whole_file_read_is_capped_by_bytes(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text(("x" * 99 + "\n") * 100)
    page = read_text_file(allowed, "a.txt", max_bytes=1000)
    assert page.text == ("x" * 99 + "\n") * 10
    assert page.truncated and page.next_offset == 11 and "cap" in (page.notice or "")


def test_cap_is_a_parameter(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text(_lines(50))
    page = read_text_file(allowed, "a.txt", max_lines=10)
    assert page.end_line == 10 and page.next_offset == 11


def test_overlong_line_is_cut_and_reported(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text("short\n" + "y" * 5000 + "\nafter\n")
    first = read_text_file(allowed, "a.txt", max_bytes=100)
    assert first.text == "short\n" and first.next_offset == 2
    assert "truncated; output cap of 100 bytes reached" in (first.notice or "")
    page = read_text_file(allowed, "a.txt", offset=2, max_bytes=100)
    assert page.text == "y" * 100 + "\n" and page.next_offset == 3
    assert "line(s) 2 were longer than the byte cap" in (page.notice or "")


def test_non_utf8_is_read_as_windows_1252_reversibly_and_reported(
    allowed: AllowedDirectories, root: Path
) -> None:
    every_byte = bytes(b for b in range(1, 256) if b != 0x0A)  # no NUL (binary), no newline
    (root / "legacy.txt").write_bytes(b"caf\xe9\n" + every_byte + b"\n")
    page = read_text_file(allowed, "legacy.txt")
    assert page.text.startswith("café\n") and page.encoding == "windows-1252"
    assert page.text.encode("cp1252", "mcp-filesystem-whatwg-1252") == b"caf\xe9\n" + every_byte + b"\n"
    assert "not valid UTF-8" in (page.notice or "") and "windows-1252" in (page.notice or "")
    # The streaming paths (paging, tail) say the same.
    assert read_text_file(allowed, "legacy.txt", offset=2, limit=1).encoding == "windows-1252"
    assert read_text_file(allowed, "legacy.txt", tail=2).encoding == "windows-1252"


def test_a_line_cut_by_the_byte_cap_is_cut_between_characters(
    allowed: AllowedDirectories, root: Path
) -> None:
    (root / "wide.txt").write_text("é" * 100 + "\n")
    page = read_text_file(allowed, "wide.txt", offset=1, limit=1, max_bytes=51)  # 25.5 characters
    assert page.encoding == "utf-8" and page.text.rstrip("\n") == "é" * 25
    tail = read_text_file(allowed, "wide.txt", tail=1, max_bytes=51)
    assert tail.encoding == "utf-8" and set(tail.text.rstrip("\n")) == {"é"}


def test_binary_file_is_refused_with_media_advice(allowed: AllowedDirectories, root: Path) -> None:
    (root / "img.png").write_bytes(PNG)
    with pytest.raises(InvalidInput, match="read_media_file"):
        read_text_file(allowed, "img.png")


def test_non_utf8_file_name_can_be_read(allowed: AllowedDirectories, root: Path) -> None:
    with open(os.fsencode(root) + b"/\xff\xfe.txt", "wb") as f:
        f.write(b"hi\n")
    assert read_text_file(allowed, os.fsdecode(b"\xff\xfe.txt")).text == "hi\n"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"head": 1, "tail": 1}, "either head or tail"),
        ({"head": 1, "offset": 2}, "cannot be combined"),
        ({"offset": 0}, "offset must be >= 1"),
        ({"limit": 0}, "limit must be >= 1"),
        ({"tail": -1}, "tail must be >= 1"),
    ],
)
def test_bad_paging_arguments_are_rejected(
    kwargs: dict[str, int], message: str, allowed: AllowedDirectories, root: Path
) -> None:
    (root / "a.txt").write_text("x\n")
    with pytest.raises(InvalidInput, match=message):
        read_text_file(allowed, "a.txt", **kwargs)  # type: ignore[arg-type]


def test_missing_file_is_not_found(allowed: AllowedDirectories) -> None:
    with pytest.raises(NotFound):
        read_text_file(allowed, "nope.txt")


def test_huge_sparse_file_tail_and_paging_read_only_a_bounded_amount(
    allowed: AllowedDirectories, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = 300 * 1024 * 1024
    head_text, tail_text = _lines(3000), _lines(100, start=900_001)
    with open(root / "huge.log", "wb") as f:
        f.write(head_text.encode())
        f.truncate(size)  # a hole of NULs in the middle: costs no disk
        f.seek(size)
        f.write(tail_text.encode())

    read_bytes = 0
    real_pread = os.pread

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        nonlocal read_bytes
        data = real_pread(fd, n, offset)
        read_bytes += len(data)
        return data

    monkeypatch.setattr(os, "pread", counting_pread)

    tail = read_text_file(allowed, "huge.log", tail=10)
    assert tail.text == _lines(10, start=900_091)
    assert tail.start_line is None  # unknown without a full scan
    assert read_bytes < 1024 * 1024

    read_bytes = 0
    page = read_text_file(allowed, "huge.log", offset=2001, limit=500)
    assert page.text == _lines(500, start=2001)
    assert read_bytes < 1024 * 1024

    read_bytes = 0
    first = read_text_file(allowed, "huge.log")
    assert first.text == _lines(2000) and first.truncated
    assert "MiB file" in (first.notice or "") and "offset=2001" in (first.notice or "")
    assert read_bytes < 1024 * 1024


def test_tail_of_a_giant_last_line_is_bounded(allowed: AllowedDirectories, root: Path) -> None:
    (root / "one-line.txt").write_text("a\n" + "z" * 2_000_000 + "END\n")
    page = read_text_file(allowed, "one-line.txt", tail=1, max_bytes=1000)
    assert page.text.endswith("zzzEND\n") and len(page.text) <= 1001
    assert "only its end" in (page.notice or "")


# --- read_media_file ---------------------------------------------------------------------------


def test_media_file_returns_bytes_and_mime(allowed: AllowedDirectories, root: Path) -> None:
    (root / "pic.png").write_bytes(PNG)
    data, mime = read_media_file(allowed, "pic.png")
    assert (data, mime) == (PNG, "image/png")


def test_media_type_comes_from_magic_when_extension_lies(allowed: AllowedDirectories, root: Path) -> None:
    (root / "pic.bmp").write_bytes(JPEG)
    assert read_media_file(allowed, "pic.bmp").mime_type == "image/jpeg"


def test_media_with_checkable_extension_but_wrong_content_is_refused(
    allowed: AllowedDirectories, root: Path
) -> None:
    (root / "fake.png").write_text("not a png at all")
    with pytest.raises(InvalidInput, match="content is not image/png"):
        read_media_file(allowed, "fake.png")


@pytest.mark.parametrize(
    ("name", "content", "mime"),
    [
        ("a.gif", b"GIF89a" + b"\x00" * 10, "image/gif"),
        ("a.webp", b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        ("a.wav", b"RIFF\x00\x00\x00\x00WAVEfmt ", "audio/wav"),
        ("a.mp3", b"ID3\x03\x00" + b"\x00" * 10, "audio/mpeg"),
        ("a.ogg", b"OggS\x00" + b"\x00" * 10, "audio/ogg"),
        ("a.flac", b"fLaC\x00" + b"\x00" * 10, "audio/flac"),
        ("a.m4a", b"\x00\x00\x00\x20ftypM4A \x00\x00", "audio/mp4"),
        ("a.svg", b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>', "image/svg+xml"),
        ("noext", PNG, "image/png"),
    ],
)
def test_common_media_types_are_recognised(
    name: str, content: bytes, mime: str, allowed: AllowedDirectories, root: Path
) -> None:
    (root / name).write_bytes(content)
    assert read_media_file(allowed, name).mime_type == mime


def test_non_media_file_is_refused(allowed: AllowedDirectories, root: Path) -> None:
    (root / "notes.txt").write_text("hello")
    with pytest.raises(InvalidInput, match="not an image or audio"):
        read_media_file(allowed, "notes.txt")


def test_media_over_the_cap_is_a_limit_error(allowed: AllowedDirectories, root: Path) -> None:
    (root / "big.png").write_bytes(PNG + b"\x00" * 2000)
    with pytest.raises(LimitExceeded, match="limited to 1000 bytes"):
        read_media_file(allowed, "big.png", max_bytes=1000)


# --- read_multiple_files -----------------------------------------------------------------------


def test_multiple_files_one_failure_does_not_sink_the_rest(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.txt").write_text("A\n")
    (root / "b.txt").write_text("B\n")
    out = read_multiple_files(allowed, ["a.txt", "missing.txt", "b.txt"])
    assert [r.text for r in out.results] == ["A\n", None, "B\n"]
    assert out.results[1].error and "does not exist" in out.results[1].error
    assert out.notice is None


def test_multiple_files_total_cap_skips_later_files_with_a_notice(
    allowed: AllowedDirectories, root: Path
) -> None:
    for name in "abc":
        (root / f"{name}.txt").write_text(("x" * 99 + "\n") * 10)
    out = read_multiple_files(allowed, ["a.txt", "b.txt", "c.txt"], max_total_bytes=1500)
    assert out.results[0].text == ("x" * 99 + "\n") * 10
    assert out.results[1].truncated
    assert out.results[2].text is None and "total output cap" in (out.results[2].error or "")
    assert out.notice and "1 file(s) not read" in out.notice


def test_multiple_files_rejects_a_bare_string(allowed: AllowedDirectories) -> None:
    with pytest.raises(InvalidInput):
        read_multiple_files(allowed, "a.txt")


def test_the_one_read_page_equals_the_line_by_line_reader(tmp_path: Path) -> None:
    """The fast forward reader (one pread, C-level split) answers exactly like the streaming one
    it replaced, on every shape of file: empty lines, no final newline, a line over the cap."""
    import random

    from mcp_filesystem.reading import _read_forward, _read_forward_streaming

    rng = random.Random(7)
    for trial in range(300):
        lines = [b"x" * rng.choice([0, 1, 3, 10, 40]) for _ in range(rng.randint(0, 30))]
        data = b"\n".join(lines) + (b"\n" if rng.random() < 0.6 else b"")
        path = tmp_path / f"t{trial}.txt"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            for _ in range(5):
                offset, count = rng.randint(1, 35), rng.randint(1, 12)
                max_bytes, paging = rng.choice([1, 5, 16, 50, 1000]), rng.random() < 0.5
                args = (fd, offset, count, max_bytes, len(data))
                fast = _read_forward(*args, paging=paging)
                slow = _read_forward_streaming(*args, paging=paging)
                assert fast == slow, (data, offset, count, max_bytes, paging)
        finally:
            os.close(fd)
