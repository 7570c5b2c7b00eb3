r"""Windows path rules as pure functions on Windows-form paths (`ntpath`), run on any platform.

What they cannot show here: the OS's own resolution (`os.path.realpath` on Windows: final paths,
8.3 short names expanded, junctions followed), which is what containment is decided on afterwards.
"""

from __future__ import annotations

import pytest
from mcp_batteries._platform.windows import file_uri_path, is_network, is_within, normalise, refusal


@pytest.mark.parametrize(
    "path",
    [
        r"C:\data\CON",
        r"C:\data\con",
        r"C:\data\Con.txt",
        r"C:\data\nul.tar.gz",
        r"C:\data\NUL ",
        r"C:\data\aux\inner.txt",
        r"C:\data\COM1",
        r"C:\data\com9.log",
        "C:\\data\\COM\u00b9",
        r"C:\data\LPT3",
        r"C:\data\CONIN$",
        r"C:\data\conout$",
        "C:/data/prn",
    ],
)
def test_device_names_are_refused_in_any_case_and_with_any_extension(path: str) -> None:
    assert "device name" in (refusal(path) or "")


@pytest.mark.parametrize("name", ["CONSOLE", "COM10", "NULL", "auxiliary.txt", "lpt", "com.txt", "con-fig"])
def test_names_that_only_start_like_a_device_are_files(name: str) -> None:
    assert refusal("C:\\data\\" + name) is None


@pytest.mark.parametrize(
    "path",
    [r"C:\data\file.txt:secret", r"C:\data\file.txt::$DATA", r"C:\data\dir:stream\x", "C:/data/a:b"],
)
def test_alternate_data_streams_are_refused(path: str) -> None:
    assert "alternate data stream" in (refusal(path) or "")


@pytest.mark.parametrize("path", [r"C:\data\secret.txt.", r"C:\data\dir \x", r"C:\data\...", r"C:\data\a. "])
def test_names_ending_in_a_dot_or_a_space_are_refused(path: str) -> None:
    assert "ends in a dot or space" in (refusal(path) or "")


@pytest.mark.parametrize("path", [r"C:\data\.hidden", r"C:\data\a.b.c", r"C:\data\sub\..\x", r"C:\data\.\x"])
def test_ordinary_dots_are_fine(path: str) -> None:
    assert refusal(path) is None


@pytest.mark.parametrize(
    "path",
    [
        r"\\.\PhysicalDrive0",
        r"\\.\C:\x",
        "\\??\\C:\\x",
        r"\\?\GLOBALROOT\Device\HarddiskVolume1\x",
        r"\\?\Volume{01234567-89ab-cdef-0123-456789abcdef}\x",
    ],
)
def test_the_device_namespace_is_refused(path: str) -> None:
    assert "device" in (refusal(path) or "")


def test_the_long_path_prefix_is_checked_then_removed() -> None:
    assert refusal(r"\\?\C:\data\x") is None
    assert normalise(r"\\?\C:\data\x") == r"C:\data\x"
    assert "device name" in (refusal(r"\\?\C:\data\CON") or "")  # the prefix turns off no rule
    assert normalise(r"\\?\UNC\server\share\x") == r"\\server\share\x"
    assert is_network(r"\\?\UNC\server\share\x")


@pytest.mark.parametrize("path", ["C:x", "C:", r"C:..\x", "d:file.txt"])
def test_drive_relative_paths_are_refused(path: str) -> None:
    assert "current directory of drive" in (refusal(path) or "")


def test_a_rooted_path_without_a_drive_is_refused() -> None:
    assert "current drive" in (refusal(r"\Windows\win.ini") or "")


@pytest.mark.parametrize("name", ["a<b", "a>b", 'a"b', "a|b", "a?b", "a*b", "a\x01b"])
def test_characters_windows_does_not_allow_are_refused(name: str) -> None:
    assert "characters" in (refusal("C:\\data\\" + name) or "")


def test_drive_letters_and_separators_have_one_spelling() -> None:
    assert normalise("c:/Data/x") == r"C:\Data\x"
    assert normalise(r"d:\x") == r"D:\x"


def test_containment_compares_as_windows_does_at_a_separator() -> None:
    assert is_within(r"c:\DATA\x.txt", r"C:\data")
    assert is_within(r"C:\data", r"C:\data")
    assert is_within("C:/data/sub/x", r"C:\data")
    assert not is_within(r"C:\data2\x", r"C:\data")
    assert not is_within(r"C:\data-evil", r"C:\data")
    assert not is_within(r"C:\data\..\data2\x", r"C:\data")
    assert not is_within(r"D:\data\x", r"C:\data")
    assert is_within(r"\\srv\share\data\x", r"\\SRV\share\data")
    assert not is_within(r"\\srv\share\data\..\..\other\x", r"\\srv\share\data")


def test_network_paths_are_recognised_in_every_spelling() -> None:
    assert is_network(r"\\attacker\share\x")
    assert is_network("//attacker/share/x")
    assert not is_network(r"C:\data")
    assert refusal(r"\\attacker\share\x") is None  # the caller decides, before any lookup


def test_short_names_are_left_to_the_os_to_expand() -> None:
    # PROGRA~1 may be a real long name where 8.3 names are off: only the OS knows, so it is not
    # refused; containment is decided on the final path, where the OS has expanded it.
    assert refusal(r"C:\PROGRA~1\app\x.txt") is None


def test_file_uris_become_drive_paths() -> None:
    assert file_uri_path("/C:/Users/me/x y.txt") == r"C:\Users\me\x y.txt"
    assert file_uri_path("/c|/x") == r"C:\x"
    assert file_uri_path("/C:") == "C:\\"
    assert file_uri_path("/etc/passwd") is None
