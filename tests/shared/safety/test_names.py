"""Names that are not clean text: one reversible, git-compatible quoted form."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest
from mcp_batteries._safety.names import quote_name, quote_path, scrub, unquote_name, unquote_path


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"plain.txt", "plain.txt"),
        (b"caf\xc3\xa9 menu.txt", "café menu.txt"),
        (b"bad\xff\xfename.txt", '"bad\\377\\376name.txt"'),
        (b"line\nbreak", '"line\\nbreak"'),
        (b"tab\there", '"tab\\there"'),
        (b"esc\x1b[31mred", '"esc\\033[31mred"'),
        (b'say "hi"', '"say \\"hi\\""'),
        (b"back\\slash", '"back\\\\slash"'),
        ("evil\u202etxt.exe".encode(), '"evil\\342\\200\\256txt.exe"'),
        (b"del\x7f", '"del\\177"'),
    ],
)
def test_a_name_is_shown_plain_or_quoted_like_git_and_comes_back_exactly(raw: bytes, shown: str) -> None:
    assert quote_name(raw) == shown
    assert os.fsencode(unquote_name(shown)) == raw


def test_every_byte_string_survives_the_round_trip() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        raw = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 12))).replace(b"/", b"_")
        name = os.fsdecode(raw)
        assert unquote_name(quote_name(name)) == name


def test_the_form_is_what_git_itself_prints(tmp_path: Path) -> None:
    # git's default quoting (core.quotePath=true) for names whose only non-ASCII bytes are not UTF-8.
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    names = [b"bad\xff\xfename.txt", b"line\nbreak", b'say "hi"', b"tab\tx", b"back\\slash"]
    for raw in names:
        (Path(os.fsdecode(bytes(repo))) / os.fsdecode(raw)).write_bytes(b"x")
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo, capture_output=True, check=True,
    ).stdout.decode("utf-8", "surrogateescape")  # fmt: skip
    shown = {line[3:] for line in out.splitlines()}
    assert shown == {quote_name(raw) for raw in names}


def test_literal_input_is_taken_as_it_is() -> None:
    assert unquote_name("plain.txt") == "plain.txt"
    assert unquote_name('"unterminated') == '"unterminated'
    assert unquote_name('"bad escape \\q"') == '"bad escape \\q"'
    assert unquote_name('a"b') == 'a"b'


def test_paths_quote_as_a_whole_and_accept_quoted_components() -> None:
    path = os.fsdecode(b"/data/dir/bad\xffname.txt")
    assert quote_path(path) == '"/data/dir/bad\\377name.txt"'
    assert unquote_path('"/data/dir/bad\\377name.txt"') == path
    assert unquote_path('/data/dir/"bad\\377name.txt"') == path
    assert unquote_path("/data/plain.txt") == "/data/plain.txt"


def test_scrub_makes_free_text_serializable() -> None:
    assert scrub("ok") == "ok"
    assert scrub("x\ud800y") == "x\ufffdy"
    assert scrub("café") == "café"
