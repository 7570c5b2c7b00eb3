"""edit_file semantics: exact and whitespace-tolerant matching, line endings, diffs, dry runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_batteries.errors import InvalidInput, LimitExceeded, NotFound
from mcp_filesystem.editing import Edit, apply_edits, edit_file, fence, unified_diff


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))


def _writer(calls: list[tuple[Path, str]]):  # type: ignore[no-untyped-def]
    def write_atomic(path: Path, text: str, encoding: str) -> None:
        calls.append((path, text))
        path.write_bytes(text.encode("utf-8" if encoding == "utf-8" else "cp1252"))

    return write_atomic


def test_exact_unique_match_is_replaced() -> None:
    result = apply_edits("alpha\nbeta\ngamma\n", [Edit("beta", "BETA")])
    assert result.new_text == "alpha\nBETA\ngamma\n"
    assert result.changed
    assert result.replacements == [1]


def test_edits_accept_plain_dicts_as_sent_by_the_server() -> None:
    result = apply_edits("x = 1\n", [{"oldText": "x = 1", "newText": "x = 2"}])
    assert result.new_text == "x = 2\n"


def test_malformed_edit_object_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="oldText"):
        apply_edits("x", [{"old": "x"}])


def test_ambiguous_exact_match_is_refused_with_line_numbers() -> None:
    text = "a\nfoo\nb\nfoo\nc\nfoo\n"
    with pytest.raises(InvalidInput) as exc:
        apply_edits(text, [Edit("foo", "bar")])
    message = str(exc.value)
    assert "matches 3 places (lines 2, 4, 6)" in message
    assert "replaceAll=true" in message
    assert "No changes were written" in message


def test_replace_all_replaces_every_occurrence_and_reports_count() -> None:
    result = apply_edits("foo foo\nfoo\n", [Edit("foo", "bar", replaceAll=True)])
    assert result.new_text == "bar bar\nbar\n"
    assert result.replacements == [3]
    assert any("replaced 3 occurrences" in n for n in result.notes)


def test_replace_all_with_single_occurrence_is_fine() -> None:
    result = apply_edits("foo\n", [Edit("foo", "bar", replaceAll=True)])
    assert result.new_text == "bar\n"
    assert result.replacements == [1]


def test_sequential_edits_apply_to_previous_result() -> None:
    result = apply_edits(
        "def f():\n    return 1\n",
        [Edit("return 1", "return compute()"), Edit("compute()", "compute(2)")],
    )
    assert result.new_text == "def f():\n    return compute(2)\n"


def test_later_edit_failing_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    _write(target, "one\ntwo\n")
    calls: list[tuple[Path, str]] = []
    with pytest.raises(NotFound, match="Edit 2"):
        edit_file(target, [Edit("one", "1"), Edit("three", "3")], write_atomic=_writer(calls))
    assert calls == []
    assert target.read_text() == "one\ntwo\n"


def test_not_found_quotes_first_line_and_suggests_rereading() -> None:
    with pytest.raises(NotFound) as exc:
        apply_edits("def hello():\n    pass\n", [Edit("def helo():\n    pass", "x")], "m.py")
    message = str(exc.value)
    assert "'def helo():'" in message
    assert "Re-read the file" in message
    assert "line 1" in message  # the closest line is pointed out


def test_empty_old_text_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="oldText is empty"):
        apply_edits("abc", [Edit("", "x")])


def test_empty_edit_list_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="edits is empty"):
        apply_edits("abc", [])


def test_fuzzy_match_reindents_python_block_to_file_indentation() -> None:
    source = "class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n"
    # The model dropped the indentation of the whole block.
    result = apply_edits(
        source,
        [Edit("if x:\n    return 1", "if x:\n    y = 3\n    if y:\n        return y\nelse:\n    pass")],
    )
    assert result.new_text == (
        "class A:\n"
        "    def f(self):\n"
        "        if x:\n"
        "            y = 3\n"
        "            if y:\n"
        "                return y\n"
        "        else:\n"
        "            pass\n"
        "        return 2\n"
    )
    assert any("ignoring whitespace" in n and "3-4" in n for n in result.notes)


def test_fuzzy_match_when_only_first_line_lost_its_indentation() -> None:
    source = "def f():\n        x = 1\n        y = 2\n"
    result = apply_edits(source, [Edit("x = 1\n        y = 2", "x = 10\n        y = 20")])
    assert result.new_text == "def f():\n        x = 10\n        y = 20\n"


def test_fuzzy_match_tolerates_trailing_whitespace_and_keeps_blank_lines_empty() -> None:
    source = "def f():   \n    a = 1  \n\n    b = 2\n"
    result = apply_edits(
        source, [Edit("def f():\n    a = 1\n\n    b = 2\n", "def f():\n    a = 1\n\n    b = 3\n")]
    )
    assert result.new_text == "def f():\n    a = 1\n\n    b = 3\n"


def test_fuzzy_match_with_tab_indented_file() -> None:
    source = "func main() {\n\tif ok {\n\t\trun()\n\t}\n}\n"
    result = apply_edits(source, [Edit("if ok {\n    run()\n}", "if ok {\n    run()\n    stop()\n}")])
    assert result.new_text == "func main() {\n\tif ok {\n\t\trun()\n\t\tstop()\n\t}\n}\n"


def test_ambiguous_fuzzy_match_is_refused() -> None:
    source = "if a:\n    x()\nif a:\n        x()\n"
    with pytest.raises(InvalidInput, match=r"matches 2 places when whitespace is ignored \(lines 1, 3\)"):
        apply_edits(source, [Edit("if a:\n  x()", "if b:\n  y()")])


def test_fuzzy_replace_all_reindents_each_match() -> None:
    source = "if a:\n    x()\nif a:\n        x()\n"
    result = apply_edits(source, [Edit("if a:\n  x()", "if b:\n  y()", replaceAll=True)])
    assert result.new_text == "if b:\n    y()\nif b:\n        y()\n"
    assert result.replacements == [2]


def test_crlf_file_stays_crlf_for_exact_and_multiline_edits(tmp_path: Path) -> None:
    target = tmp_path / "win.txt"
    _write(target, "one\r\ntwo\r\nthree\r\n")
    calls: list[tuple[Path, str]] = []
    result = edit_file(target, [Edit("one\ntwo", "uno\ndos\nzwei")], write_atomic=_writer(calls))
    assert target.read_bytes() == b"uno\r\ndos\r\nzwei\r\nthree\r\n"
    assert "\r" not in result.diff  # the diff is LF-normalized, like the reference's
    assert len(calls) == 1


def test_crlf_file_fuzzy_edit_keeps_crlf() -> None:
    source = "a:\r\n    b = 1  \r\n    c = 2\r\n"
    result = apply_edits(source, [Edit("b = 1\nc = 2", "b = 10\nc = 20")])
    assert result.new_text == "a:\r\n    b = 10\r\n    c = 20\r\n"


def test_mixed_line_endings_leave_untouched_lines_byte_identical() -> None:
    source = "keep\r\nlf line\nchange me\r\nend\n"
    result = apply_edits(source, [Edit("change me", "changed")])
    assert result.new_text == "keep\r\nlf line\nchanged\r\nend\n"


def test_missing_trailing_newline_is_preserved() -> None:
    result = apply_edits("a\nb", [Edit("b", "c")])
    assert result.new_text == "a\nc"
    assert "\\ No newline at end of file" in result.diff


def test_fuzzy_edit_of_last_line_without_newline_keeps_it_that_way() -> None:
    result = apply_edits("x\n    last", [Edit("last", "final\nmore")])
    assert result.new_text == "x\n    final\nmore"  # exact match: newText taken literally
    result = apply_edits("x\n    last  ", [Edit("last\n", "final\nmore\n")])
    assert result.new_text == "x\n    final\n    more"


def test_utf8_bom_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "bom.txt"
    target.write_bytes("\ufeffhello\n".encode())
    edit_file(target, [Edit("hello", "bye")], write_atomic=_writer([]))
    assert target.read_bytes() == b"\xef\xbb\xbfbye\n"


def test_non_ascii_text_is_edited_and_diffed() -> None:
    result = apply_edits("naïve café\n日本語のテキスト\n", [Edit("日本語", "中文")], "ü.txt")
    assert result.new_text == "naïve café\n中文のテキスト\n"
    assert "+中文のテキスト" in result.diff
    assert "--- a/ü.txt" in result.diff


def test_no_op_edit_says_so_and_does_not_write(tmp_path: Path) -> None:
    target = tmp_path / "same.txt"
    _write(target, "stay\n")
    calls: list[tuple[Path, str]] = []
    result = edit_file(target, [Edit("stay", "stay")], write_atomic=_writer(calls))
    assert not result.changed
    assert result.diff == ""
    assert "No changes" in result.text
    assert "identical" in result.text
    assert calls == []


def test_dry_run_returns_diff_and_leaves_file_untouched(tmp_path: Path) -> None:
    target = tmp_path / "d.py"
    _write(target, "x = 1\n")
    before = target.stat().st_mtime_ns
    calls: list[tuple[Path, str]] = []
    result = edit_file(target, [Edit("x = 1", "x = 2")], dryRun=True, write_atomic=_writer(calls))
    assert calls == []
    assert target.read_text() == "x = 1\n"
    assert target.stat().st_mtime_ns == before
    assert "-x = 1\n+x = 2\n" in result.diff
    assert result.text.startswith("```diff\n")
    assert "Dry run" in result.text


def test_diff_has_git_headers_and_three_lines_of_context() -> None:
    lines = [f"line {i}" for i in range(1, 21)]
    result = apply_edits("\n".join(lines) + "\n", [Edit("line 10", "LINE 10")], "/proj/f.txt")
    diff = result.diff.splitlines()
    assert diff[0] == "--- a/proj/f.txt"
    assert diff[1] == "+++ b/proj/f.txt"
    assert diff[2] == "@@ -7,7 +7,7 @@"
    assert diff[3] == " line 7" and diff[-1] == " line 13"


def test_fence_grows_past_backticks_in_content() -> None:
    diff = unified_diff("a\n", "```\nb\n", "f.md")
    fenced = fence(diff)
    assert fenced.startswith("````diff\n")
    assert fenced.endswith("````\n\n")
    result = apply_edits("text\n", [Edit("text", "````code````")])
    assert result.text.startswith("`````diff\n")


def test_edit_file_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="write_file"):
        edit_file(tmp_path / "nope.txt", [Edit("a", "b")], write_atomic=_writer([]))


def test_edit_file_edits_non_utf8_as_windows_1252_and_keeps_other_bytes(tmp_path: Path) -> None:
    from mcp_batteries.safety import AllowedDirectories
    from mcp_filesystem.editing import edit_file_in

    root = tmp_path.resolve()
    target = root / "legacy.txt"
    original = b"caf\xe9 \x93quoted\x94\nkeep \x81\x8d\xff\nchange me\n"
    target.write_bytes(original)
    text = edit_file_in(
        AllowedDirectories([root]), "legacy.txt", [{"oldText": "change me", "newText": "déjà"}]
    )
    assert "windows-1252" in text and "+déjà" in text
    assert target.read_bytes() == original.replace(b"change me", b"d\xe9j\xe0")


def test_edit_file_refuses_characters_windows_1252_cannot_hold(tmp_path: Path) -> None:
    from mcp_batteries.safety import AllowedDirectories
    from mcp_filesystem.editing import edit_file_in

    root = tmp_path.resolve()
    (root / "legacy.txt").write_bytes(b"caf\xe9\n")
    with pytest.raises(InvalidInput, match=r"windows-1252.*cannot hold"):
        edit_file_in(AllowedDirectories([root]), "legacy.txt", [{"oldText": "caf", "newText": "→"}])
    assert (root / "legacy.txt").read_bytes() == b"caf\xe9\n"


def test_edit_file_refuses_binary_files(tmp_path: Path) -> None:
    target = tmp_path / "blob.bin"
    target.write_bytes(b"ab\x00cd")
    with pytest.raises(InvalidInput, match="binary"):
        edit_file(target, [Edit("ab", "x")], write_atomic=_writer([]))


def test_edit_file_rejects_files_over_the_size_cap(tmp_path: Path) -> None:
    target = tmp_path / "big.txt"
    _write(target, "x" * 100)
    with pytest.raises(LimitExceeded, match="50 bytes"):
        edit_file(target, [Edit("x", "y")], write_atomic=_writer([]), max_bytes=50)


def test_edit_file_writes_through_callback_with_display_path(tmp_path: Path) -> None:
    target = tmp_path / "w.txt"
    _write(target, "old\n")
    calls: list[tuple[Path, str]] = []
    result = edit_file(target, [Edit("old", "new")], write_atomic=_writer(calls), display_path="w.txt")
    assert calls == [(target, "new\n")]
    assert "--- a/w.txt" in result.text
    assert result.text.endswith("```\n\n")  # exactly the reference's shape when there are no notes


def test_new_text_with_dollar_and_backslashes_is_literal() -> None:
    result = apply_edits("v = X\n", [Edit("X", r"$1 \n \\g<0>")])
    assert result.new_text == "v = $1 \\n \\\\g<0>\n"


def test_edit_file_in_reads_and_writes_through_the_safe_layer(tmp_path: Path) -> None:
    from mcp_batteries.safety import AllowedDirectories
    from mcp_filesystem.editing import edit_file_in

    root = tmp_path.resolve()
    target = root / "crlf.txt"
    target.write_bytes(b"a\r\nb\r\n")
    target.chmod(0o640)
    allowed = AllowedDirectories([root])
    preview = edit_file_in(allowed, target, [{"oldText": "b", "newText": "c"}], True)
    assert "+c" in preview and "Dry run" in preview
    assert target.read_bytes() == b"a\r\nb\r\n"
    text = edit_file_in(allowed, target, [{"oldText": "b", "newText": "c"}], False)
    assert text.startswith("```diff\n")
    assert target.read_bytes() == b"a\r\nc\r\n"
    assert target.stat().st_mode & 0o777 == 0o640
