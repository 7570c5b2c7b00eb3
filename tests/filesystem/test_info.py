"""info.py: get_file_info and MIME guessing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp_batteries.errors import AccessDenied, NotFound
from mcp_batteries.safety import AllowedDirectories
from mcp_filesystem.info import get_file_info, guess_mime_type, sniff_mime_type


@pytest.fixture
def root(tmp_path: Path) -> Path:
    d = tmp_path / "allowed"
    d.mkdir()
    return d


@pytest.fixture
def allowed(root: Path) -> AllowedDirectories:
    return AllowedDirectories([root])


def test_file_info_of_a_regular_file(allowed: AllowedDirectories, root: Path) -> None:
    (root / "a.json").write_text("{}")
    os.chmod(root / "a.json", 0o640)
    info = get_file_info(allowed, "a.json")
    assert (info.type, info.size, info.permissions, info.is_symlink) == ("file", 2, "640", False)
    assert info.mime_type == "application/json"
    assert info.modified.tzinfo is not None
    text = info.format()
    assert "isFile: true" in text and "permissions: 640" in text


def test_file_info_of_a_directory(allowed: AllowedDirectories, root: Path) -> None:
    (root / "d").mkdir()
    info = get_file_info(allowed, "d")
    assert info.type == "directory" and info.mime_type is None
    assert "isDirectory: true" in info.format()


def test_file_info_of_symlink_inside_shows_target(allowed: AllowedDirectories, root: Path) -> None:
    (root / "real.png").write_bytes(b"x" * 10)
    (root / "alias").symlink_to("real.png")
    info = get_file_info(allowed, "alias")
    assert info.is_symlink and info.symlink_target == str(root / "real.png")
    assert info.type == "file" and info.size == 10 and info.mime_type == "image/png"


def test_file_info_of_symlink_outside_hides_target(
    allowed: AllowedDirectories, root: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.bin").write_bytes(b"x" * 12345)
    (root / "out").symlink_to(tmp_path / "secret.bin")
    info = get_file_info(allowed, "out")
    assert info.is_symlink and info.symlink_target is None and info.type == "symlink"
    assert info.size != 12345
    assert str(tmp_path / "secret.bin") not in info.format()


def test_file_info_outside_is_refused(allowed: AllowedDirectories, tmp_path: Path) -> None:
    (tmp_path / "x").write_text("x")
    with pytest.raises(AccessDenied):
        get_file_info(allowed, str(tmp_path / "x"))


def test_file_info_missing_is_not_found(allowed: AllowedDirectories) -> None:
    with pytest.raises(NotFound):
        get_file_info(allowed, "ghost")


@pytest.mark.parametrize(
    ("name", "mime"),
    [
        ("a.PNG", "image/png"),
        ("b.jpeg", "image/jpeg"),
        ("c.m4a", "audio/mp4"),
        ("d.flac", "audio/flac"),
        ("e", None),
    ],
)
def test_guess_mime_type_by_extension(name: str, mime: str | None) -> None:
    assert guess_mime_type(name) == mime


def test_sniff_mime_type_recognises_magic_and_rejects_text() -> None:
    assert sniff_mime_type(b"\x89PNG\r\n\x1a\n....") == "image/png"
    assert sniff_mime_type(b"  <svg xmlns='http://www.w3.org/2000/svg'/>") == "image/svg+xml"
    assert sniff_mime_type(b"hello world") is None
    assert sniff_mime_type(b"") is None
