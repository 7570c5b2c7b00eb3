"""grep: output format, context merging, skipping rules, limits, safety."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.errors import AccessDenied, InvalidInput, NotFound
from mcp_batteries.safety import AllowedDirectories
from mcp_filesystem import grep as grep_module
from mcp_filesystem.grep import MAX_LINE_CHARS, GrepResult

# These tests are about searching: every directory is allowed. Containment is tested in
# test_escapes.py through the same entry point.
EVERYWHERE = AllowedDirectories(["/"])


def grep(path: Path, pattern: str, **kwargs: Any) -> GrepResult:
    return grep_module.grep(EVERYWHERE, str(path), pattern, **kwargs)


def _make(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


def test_grep_reports_relative_path_line_and_text(tmp_path: Path) -> None:
    _make(tmp_path, {"a.py": "import os\nx = 1\nprint(x)\n", "sub/b.py": "y = 2\nprint(y)\n"})
    result = grep(tmp_path, "print")
    assert [(m.file, m.line, m.text) for m in result.matches] == [
        ("a.py", 3, "print(x)"),
        ("sub/b.py", 2, "print(y)"),
    ]
    lines = result.text.splitlines()
    assert lines[:2] == ["a.py:3:print(x)", "sub/b.py:2:print(y)"]
    assert "2 matches in 2 files; 2 files searched" in result.text
    assert f"relative to {tmp_path}" in result.text
    assert result.files_scanned == 2 and not result.truncated


def test_grep_literal_by_default_and_case_insensitive(tmp_path: Path) -> None:
    _make(tmp_path, {"f.txt": "a.b\naxb\nA.B\n"})
    assert [m.line for m in grep(tmp_path, "a.b").matches] == [1, 3]
    assert [m.line for m in grep(tmp_path, "a.b", case_sensitive=True).matches] == [1]
    assert [m.line for m in grep(tmp_path, "a.b", is_regex=True, case_sensitive=True).matches] == [1, 2]


def test_grep_regex_anchors_work_per_line(tmp_path: Path) -> None:
    _make(tmp_path, {"f.py": "def a():\n    def inner():\ndef b():\n"})
    assert [m.line for m in grep(tmp_path, r"^def ", is_regex=True).matches] == [1, 3]


def test_grep_one_hit_per_line_even_with_many_occurrences(tmp_path: Path) -> None:
    _make(tmp_path, {"f.txt": "x x x\nno\nx\n"})
    assert [m.line for m in grep(tmp_path, "x").matches] == [1, 3]


def test_grep_invalid_regex_is_invalid_input_with_re_message(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"Invalid regular expression .*missing \)"):
        grep(tmp_path, "(oops", is_regex=True)


def test_grep_context_lines_grouped_with_separators(tmp_path: Path) -> None:
    text = "\n".join(f"line{i}" for i in range(1, 21)) + "\n"
    _make(
        tmp_path,
        {
            "f.txt": text.replace("line5\n", "HIT5\n")
            .replace("line7\n", "HIT7\n")
            .replace("line15\n", "HIT15\n")
        },
    )
    result = grep(tmp_path, "HIT", context_lines=1)
    assert result.text.split("\n\n")[0].splitlines() == [
        "f.txt-4-line4",
        "f.txt:5:HIT5",
        "f.txt-6-line6",
        "f.txt:7:HIT7",
        "f.txt-8-line8",
        "--",
        "f.txt-14-line14",
        "f.txt:15:HIT15",
        "f.txt-16-line16",
    ]
    first = result.matches[0]
    assert first.before == ["line4"] and first.after == ["line6"]


def test_grep_context_separator_between_files_and_at_file_edges(tmp_path: Path) -> None:
    _make(tmp_path, {"a.txt": "HIT\nafter\n", "b.txt": "before\nHIT"})
    body = grep(tmp_path, "HIT", context_lines=2).text.split("\n\n")[0].splitlines()
    assert body == ["a.txt:1:HIT", "a.txt-2-after", "a.txt-3-", "--", "b.txt-1-before", "b.txt:2:HIT"]


def test_grep_include_globs_filter_file_names_and_paths(tmp_path: Path) -> None:
    _make(tmp_path, {"a.py": "needle", "a.md": "needle", "docs/b.md": "needle", "src/c.py": "needle"})
    assert [m.file for m in grep(tmp_path, "needle", include=["*.py"]).matches] == ["a.py", "src/c.py"]
    assert [m.file for m in grep(tmp_path, "needle", include=["docs/**"]).matches] == ["docs/b.md"]
    assert [
        m.file for m in grep(tmp_path, "needle", include=["*.{md,py}"], excludePatterns=["src"]).matches
    ] == [
        "a.md",
        "a.py",
        "docs/b.md",
    ]


def test_grep_skips_binary_files_and_counts_them(tmp_path: Path) -> None:
    _make(tmp_path, {"bin.dat": b"needle\x00\x01\x02", "t.txt": "needle\n"})
    result = grep(tmp_path, "needle")
    assert [m.file for m in result.matches] == ["t.txt"]
    assert result.files_skipped_binary == 1
    assert "skipped 1 binary" in result.text


def test_grep_skips_large_files_and_counts_them(tmp_path: Path) -> None:
    _make(tmp_path, {"big.txt": "needle\n" * 100, "small.txt": "needle\n"})
    result = grep(tmp_path, "needle", max_file_bytes=200)
    assert [m.file for m in result.matches] == ["small.txt"]
    assert result.files_skipped_large == 1
    assert "1 larger than 200 bytes" in result.text


def test_grep_stops_at_max_matches_and_says_how_to_narrow(tmp_path: Path) -> None:
    _make(tmp_path, {"a.txt": "hit\n" * 3, "b.txt": "hit\n" * 3})
    result = grep(tmp_path, "hit", max_matches=4)
    assert len(result.matches) == 4 and result.truncated
    assert "Stopped at max_matches=4" in result.text and "include globs" in result.text


def test_grep_exactly_max_matches_is_not_reported_as_truncated(tmp_path: Path) -> None:
    _make(tmp_path, {"a.txt": "hit\nhit\n", "b.txt": "nothing\n"})
    result = grep(tmp_path, "hit", max_matches=2)
    assert len(result.matches) == 2 and not result.truncated


def test_grep_truncates_very_long_lines_around_match(tmp_path: Path) -> None:
    line = "a" * 5000 + "NEEDLE" + "b" * 5000
    _make(tmp_path, {"min.js": line})
    text = grep(tmp_path, "needle").matches[0].text
    assert "NEEDLE" in text
    assert len(text) <= MAX_LINE_CHARS + 2
    assert text.startswith("…") and text.endswith("…")


def test_grep_handles_crlf_and_non_utf8(tmp_path: Path) -> None:
    _make(tmp_path, {"w.txt": b"one\r\ntwo needle\r\n", "l.txt": b"caf\xe9 needle\n"})
    result = grep(tmp_path, "needle")
    assert [(m.file, m.line, m.text) for m in result.matches] == [
        ("l.txt", 1, "café needle"),  # not UTF-8: read as windows-1252, like read_text_file
        ("w.txt", 2, "two needle"),
    ]


def test_grep_respects_gitignore_by_default(tmp_path: Path) -> None:
    _make(
        tmp_path,
        {".gitignore": "dist/\n", "dist/x.js": "needle", ".git/config": "needle", "src.js": "needle"},
    )
    assert [m.file for m in grep(tmp_path, "needle").matches] == ["src.js"]
    found = [m.file for m in grep(tmp_path, "needle", respect_gitignore=False).matches]
    assert found == [".git/config", "dist/x.js", "src.js"]


def test_grep_never_follows_symlinks(tmp_path: Path) -> None:
    _make(tmp_path, {"outside/secret.txt": "needle", "root/ok.txt": "needle"})
    (tmp_path / "root" / "dirlink").symlink_to(tmp_path / "outside", target_is_directory=True)
    (tmp_path / "root" / "filelink.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    result = grep(tmp_path / "root", "needle")
    assert [m.file for m in result.matches] == ["ok.txt"]
    with pytest.raises(AccessDenied):
        grep_module.grep(AllowedDirectories([tmp_path / "root"]), "filelink.txt", "needle")


def test_grep_single_file_path(tmp_path: Path) -> None:
    _make(tmp_path, {"one.md": "x\nneedle\n"})
    result = grep(tmp_path / "one.md", "needle", include=["*.py"])  # include does not filter a named file
    assert [(m.file, m.line) for m in result.matches] == [("one.md", 2)]


def test_grep_no_matches_message(tmp_path: Path) -> None:
    _make(tmp_path, {"a.txt": "nothing here\n"})
    result = grep(tmp_path, "absent")
    assert result.text.startswith("No matches found")
    assert "1 files searched" in result.text


def test_grep_argument_validation(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        grep(tmp_path, "")
    with pytest.raises(InvalidInput):
        grep(tmp_path, "x", context_lines=-1)
    with pytest.raises(InvalidInput):
        grep(tmp_path, "x", max_matches=0)
    with pytest.raises(NotFound):
        grep(tmp_path / "missing", "x")


def test_grep_pattern_matching_empty_string_does_not_loop(tmp_path: Path) -> None:
    _make(tmp_path, {"f.txt": "a\n\nb\n"})
    assert [m.line for m in grep(tmp_path, "x*", is_regex=True).matches] == [
        1,
        2,
        3,
    ]  # no phantom line after the final newline


def test_grep_fast_path_keeps_case_insensitive_unicode_matches(tmp_path: Path) -> None:
    # re.IGNORECASE matches the Kelvin sign (U+212A) to "k"; the ASCII-only shortcut must not hide it.
    _make(tmp_path, {"kelvin.txt": "300 \u212a\n", "plain.txt": "300 k\n", "none.txt": "300 m\n"})
    assert [m.file for m in grep(tmp_path, "300 K").matches] == ["kelvin.txt", "plain.txt"]


def test_grep_regex_literal_shortcut_honours_inline_flags(tmp_path: Path) -> None:
    _make(tmp_path, {"a.txt": "Hello World\n", "b.txt": "HELLO world\n", "c.txt": "goodbye\n"})
    found = grep(tmp_path, r"(?i)hello\s+world", is_regex=True, case_sensitive=True)
    assert [m.file for m in found.matches] == ["a.txt", "b.txt"]
    strict = grep(tmp_path, r"Hello\s+World", is_regex=True, case_sensitive=True)
    assert [m.file for m in strict.matches] == ["a.txt"]
    loose = grep(tmp_path, r"hello\s+WORLD", is_regex=True)
    assert [m.file for m in loose.matches] == ["a.txt", "b.txt"]


def test_grep_alternation_regex_without_required_literal(tmp_path: Path) -> None:
    _make(tmp_path, {"a.txt": "foo\n", "b.txt": "bar\n", "c.txt": "baz\n"})
    assert [m.file for m in grep(tmp_path, "foo|bar", is_regex=True).matches] == ["a.txt", "b.txt"]


def test_grep_pages_with_offset(tmp_path: Path) -> None:
    _make(tmp_path, {"a.txt": "hit\n" * 3, "b.txt": "hit\nmiss\nhit\n"})
    first = grep(tmp_path, "hit", max_matches=2)
    assert first.truncated and "offset=2" in first.text
    second = grep(tmp_path, "hit", max_matches=2, offset=2)
    assert [(m.file, m.line) for m in second.matches] == [("a.txt", 3), ("b.txt", 1)]
    assert "offset=4" in second.text and "Matches 3-4" in second.text
    last = grep(tmp_path, "hit", max_matches=2, offset=4)
    assert [(m.file, m.line) for m in last.matches] == [("b.txt", 3)] and not last.truncated
    assert "No matches after the first 9" in grep(tmp_path, "hit", offset=9).text
