"""Listings, directory_tree and search_files: reference formats, bounds, symlinks, patterns."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.errors import InvalidInput, NotFound
from mcp_batteries.safety import AllowedDirectories
from mcp_filesystem import walking
from mcp_filesystem.patterns import ExcludeMatcher, compile_glob, expand_braces, gitignored, parse_gitignore
from mcp_filesystem.walker import Walker
from mcp_filesystem.walking import Listing, SearchResult, TreeResult, format_size

# These tests are about listing semantics: every directory is allowed. Containment has its own
# tests (test_escapes.py), through the same entry points.
EVERYWHERE = AllowedDirectories(["/"])


def list_directory(path: Path, *args: Any, **kwargs: Any) -> Listing:
    return walking.list_directory(EVERYWHERE, str(path), *args, **kwargs)


def list_directory_with_sizes(path: Path, *args: Any, **kwargs: Any) -> Listing:
    return walking.list_directory_with_sizes(EVERYWHERE, str(path), *args, **kwargs)


def directory_tree(path: Path, *args: Any, **kwargs: Any) -> TreeResult:
    return walking.directory_tree(EVERYWHERE, str(path), *args, **kwargs)


def search_files(path: Path, *args: Any, **kwargs: Any) -> SearchResult:
    return walking.search_files(EVERYWHERE, str(path), *args, **kwargs)


def _make(root: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/"):
            p.mkdir(exist_ok=True)
        else:
            p.write_text(content)


# --- glob translation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),  # * never crosses "/"
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**", "src", True),
        ("src/**", "src/x/y", True),
        ("src/**", "srcx/y", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/x/y/bc", False),
        ("*", ".hidden", True),  # dot: true
        ("**/*", ".git/config", True),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("[]x].md", "].md", True),
        ("*.{py,md}", "r.md", True),
        ("{src,lib}/**/*.js", "lib/a/b.js", True),
        ("{src,lib}/**/*.js", "test/a.js", False),
        ("a**b", "axxb", True),
        ("a**b", "a/b", False),
        ("./docs/*.md", "docs/x.md", True),
        ("file\\*.txt", "file*.txt", True),
        ("file\\*.txt", "fileX.txt", False),
        ("*.PY", "a.py", False),  # case-sensitive, like minimatch
        ("a.(b)+", "a.(b)+", True),  # regex metacharacters are literal
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert (compile_glob(pattern).match(path) is not None) is expected


def test_brace_expansion_nested_and_unbalanced() -> None:
    assert expand_braces("a{b,c{d,e}}f") == ["abf", "acdf", "acef"]
    assert expand_braces("a{b") == ["a{b"]
    assert expand_braces("{single}") == ["{single}"]


def test_brace_expansion_explosion_is_refused() -> None:
    with pytest.raises(InvalidInput, match="alternatives"):
        expand_braces("{a,b,c,d}" * 5)


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "expected"),
    [
        ("node_modules", "node_modules", True, True),
        ("node_modules", "pkg/node_modules", True, True),  # no slash: any depth
        ("*.log", "deep/er/x.log", False, True),  # fixes the reference's top-level-only quirk
        ("src/gen", "src/gen", True, True),
        ("src/gen", "lib/src/gen", True, True),  # glob-free slash patterns also match as suffix
        ("src/*.tmp", "src/a.tmp", False, True),
        ("src/*.tmp", "x/src/a.tmp", False, False),  # slash + glob: anchored at the root
        ("build/", "build", True, True),
        ("build/", "build", False, False),  # trailing slash: directories only
        ("/top", "top", True, True),
        ("**/cache/**", "a/cache/b", False, True),
    ],
)
def test_exclude_pattern_semantics(pattern: str, path: str, is_dir: bool, expected: bool) -> None:
    assert ExcludeMatcher.compile([pattern]).excluded(path, is_dir) is expected


def test_gitignore_negation_and_directory_rules() -> None:
    layer = parse_gitignore("# comment\n*.log\n!keep.log\nbuild/\n", "")
    assert layer is not None
    assert gitignored([layer], "a/b.log", False)
    assert not gitignored([layer], "a/keep.log", False)
    assert gitignored([layer], "x/build", True)
    assert not gitignored([layer], "x/build", False)


# --- list_directory ---------------------------------------------------------------------------


def test_list_directory_reference_format_sorted(tmp_path: Path) -> None:
    _make(tmp_path, {"b.txt": "", "A.txt": "", "sub/": "", "c/": ""})
    listing = list_directory(tmp_path)
    assert listing.text == "[FILE] A.txt\n[FILE] b.txt\n[DIR] c\n[DIR] sub"
    assert listing.entries == 4 and not listing.truncated


def test_list_directory_shows_symlinks_without_following(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _make(outside, {"secret.txt": "s"})
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "dangling").symlink_to(tmp_path / "missing")
    text = list_directory(root).text
    assert f"[LINK] link -> {outside}" in text
    assert "[LINK] dangling ->" in text
    assert "secret" not in text


def test_list_directory_truncates_with_advice(tmp_path: Path) -> None:
    for i in range(15):
        (tmp_path / f"f{i:02}").write_text("")
    listing = list_directory(tmp_path, max_entries=10)
    lines = listing.text.splitlines()
    assert listing.truncated and listing.entries == 15
    assert len(lines) == 11
    assert "Showing entries 1-10 of 15" in lines[-1] and "offset=10" in lines[-1]
    rest = list_directory(tmp_path, max_entries=10, offset=10).text.splitlines()
    assert rest[:-1] == [f"[FILE] f{i:02}" for i in range(10, 15)]
    assert rest[-1] == "[Showing entries 11-15 of 15.]"
    sized = list_directory_with_sizes(tmp_path, max_entries=10, offset=10).text
    assert "[FILE] f10" in sized and "f09" not in sized and "Total: 15 files" in sized


def test_list_directory_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        list_directory(tmp_path / "missing")
    (tmp_path / "f").write_text("")
    with pytest.raises(InvalidInput, match="not a directory"):
        list_directory(tmp_path / "f")
    assert list_directory(tmp_path / ".." / tmp_path.name).entries == 1
    (tmp_path / "empty").mkdir()
    assert list_directory(tmp_path / "empty").text == "(empty directory)"


def test_format_size_matches_reference() -> None:
    assert format_size(0) == "0 B"
    assert format_size(1023) == "1023 B"
    assert format_size(1024) == "1.00 KB"
    assert format_size(1536) == "1.50 KB"
    assert format_size(5 * 1024**3) == "5.00 GB"
    assert format_size(3 * 1024**5) == "3072.00 TB"


def test_list_directory_with_sizes_reference_layout(tmp_path: Path) -> None:
    _make(tmp_path, {"small.txt": "x" * 10, "big.bin": "y" * 2048, "dir/": ""})
    text = list_directory_with_sizes(tmp_path).text
    lines = text.splitlines()
    assert lines[0] == f"[FILE] {'big.bin'.ljust(30)} {'2.00 KB'.rjust(10)}"
    assert lines[1] == "[DIR] dir"
    assert lines[2] == f"[FILE] {'small.txt'.ljust(30)} {'10 B'.rjust(10)}"
    assert lines[-3:] == ["", "Total: 2 files, 1 directories", "Combined size: 2.01 KB"]


def test_list_directory_with_sizes_sort_by_size_and_lstat_for_links(tmp_path: Path) -> None:
    _make(tmp_path, {"a": "1", "b": "1" * 500, "huge_target": "z" * 100_000})
    root = tmp_path / "r"
    root.mkdir()
    (root / "a").write_text("1")
    (root / "b").write_text("1" * 500)
    (root / "ln").symlink_to(tmp_path / "huge_target")
    listing = list_directory_with_sizes(root, sortBy="size")
    lines = listing.text.splitlines()
    assert lines[0].startswith("[FILE] b ")
    assert any(line.startswith("[LINK] ln") and "->" in line for line in lines)
    assert "Total: 2 files, 0 directories, 1 symlinks" in listing.text
    assert "Combined size: 501 B" in listing.text  # the link's target is never counted


def test_list_directory_with_sizes_rejects_bad_sort(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="sortBy"):
        list_directory_with_sizes(tmp_path, sortBy="date")  # type: ignore[arg-type]


# --- directory_tree ---------------------------------------------------------------------------


def test_directory_tree_reference_structure(tmp_path: Path) -> None:
    _make(tmp_path, {"a.txt": "", "src/main.py": "", "src/empty/": ""})
    result = directory_tree(tmp_path)
    assert json.loads(result.json_text) == [
        {"name": "a.txt", "type": "file"},
        {
            "name": "src",
            "type": "directory",
            "children": [
                {"name": "empty", "type": "directory", "children": []},
                {"name": "main.py", "type": "file"},
            ],
        },
    ]
    assert result.text == result.json_text  # no notes when complete
    assert " " not in result.json_text  # compact by default
    assert directory_tree(tmp_path, pretty=True).json_text.startswith('[\n  {\n    "name"')


def test_directory_tree_excludes_prune_at_any_depth(tmp_path: Path) -> None:
    _make(tmp_path, {"node_modules/x/y.js": "", "pkg/node_modules/z.js": "", "pkg/a.log": "", "pkg/a.py": ""})
    tree = json.loads(directory_tree(tmp_path, ["node_modules", "*.log"]).json_text)
    assert tree == [{"name": "pkg", "type": "directory", "children": [{"name": "a.py", "type": "file"}]}]


def test_directory_tree_symlinks_are_leaves(tmp_path: Path) -> None:
    _make(tmp_path, {"outside/secret.txt": "", "root/f.txt": ""})
    (tmp_path / "root" / "loop").symlink_to(tmp_path / "root", target_is_directory=True)
    (tmp_path / "root" / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    result = directory_tree(tmp_path / "root")
    tree = json.loads(result.json_text)
    assert {"name": "loop", "type": "symlink", "target": str(tmp_path / "root")} in tree
    assert "secret" not in result.json_text
    assert result.entries == 3


def test_directory_tree_max_depth_marks_unexpanded_dirs(tmp_path: Path) -> None:
    _make(tmp_path, {"a/b/c/d.txt": "", "top.txt": ""})
    result = directory_tree(tmp_path, max_depth=2)
    tree = json.loads(result.json_text)
    assert tree[0] == {
        "name": "a",
        "type": "directory",
        "children": [{"name": "b", "type": "directory", "children": [], "truncated": True}],
    }
    assert result.truncated
    assert "depth 2" in result.text and "max_depth" in result.text
    with pytest.raises(InvalidInput):
        directory_tree(tmp_path, max_depth=0)


def test_directory_tree_entry_limit_is_breadth_first_and_explained(tmp_path: Path) -> None:
    files = {f"top{i}.txt": "" for i in range(5)}
    files |= {f"d{j}/f{i}.txt": "" for j in range(3) for i in range(10)}
    _make(tmp_path, files)
    result = directory_tree(tmp_path, max_entries=12)
    tree = json.loads(result.json_text)
    assert result.truncated and result.entries == 12
    assert [e["name"] for e in tree] == [
        "d0",
        "d1",
        "d2",
        "top0.txt",
        "top1.txt",
        "top2.txt",
        "top3.txt",
        "top4.txt",
    ]
    assert len(tree[0]["children"]) == 4 and tree[0]["truncated"] is True
    assert tree[1]["truncated"] is True and tree[1]["children"] == []
    assert "Tree truncated after 12 entries" in result.text
    json.loads(result.json_text)  # still valid JSON


def test_directory_tree_respects_nested_gitignore(tmp_path: Path) -> None:
    _make(
        tmp_path,
        {
            ".gitignore": "*.log\nbuild/\n",
            ".git/HEAD": "",
            "app.log": "",
            "build/out.o": "",
            "src/.gitignore": "!important.log\ngenerated.py\n",
            "src/important.log": "",
            "src/other.log": "",
            "src/generated.py": "",
            "src/main.py": "",
        },
    )
    tree = json.loads(directory_tree(tmp_path, respect_gitignore=True).json_text)
    names = {e["name"] for e in tree}
    assert names == {".gitignore", "src"}
    src = next(e for e in tree if e["name"] == "src")
    assert {c["name"] for c in src["children"]} == {".gitignore", "important.log", "main.py"}
    everything = json.loads(directory_tree(tmp_path).json_text)
    assert {e["name"] for e in everything} >= {".git", "app.log", "build"}


def test_gitignore_that_is_a_symlink_is_not_read(tmp_path: Path) -> None:
    _make(tmp_path, {"outside/.gitignore": "*\n", "root/a.txt": ""})
    (tmp_path / "root" / ".gitignore").symlink_to(tmp_path / "outside" / ".gitignore")
    tree = json.loads(directory_tree(tmp_path / "root", respect_gitignore=True).json_text)
    assert {e["name"] for e in tree} == {".gitignore", "a.txt"}


def test_walk_reports_progress_every_500_entries(tmp_path: Path) -> None:
    for d in range(3):
        _make(tmp_path, {f"d{d}/f{i}": "" for i in range(400)})
    calls: list[tuple[int, str]] = []
    directory_tree(tmp_path, progress=lambda n, where: calls.append((n, where)))
    assert [n for n, _ in calls] == [500, 1000]
    assert all(where.startswith(str(tmp_path)) for _, where in calls)


def test_walker_visit_limit_stops_walk(tmp_path: Path) -> None:
    _make(tmp_path, {f"f{i}": "" for i in range(20)})
    walker = Walker.open(EVERYWHERE, tmp_path, max_visited=5)
    assert len(list(walker.walk())) == 5
    assert walker.hit_visit_limit


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read unreadable directories")
def test_unreadable_directory_is_skipped_and_counted(tmp_path: Path) -> None:
    _make(tmp_path, {"locked/x.txt": "", "ok.txt": ""})
    (tmp_path / "locked").chmod(0)
    try:
        result = directory_tree(tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert "could not be read" in result.text


# --- search_files -----------------------------------------------------------------------------


def test_search_files_glob_is_relative_like_reference(tmp_path: Path) -> None:
    _make(tmp_path, {"a.py": "", "src/b.py": "", "src/deep/c.py": "", "src/d.txt": ""})
    top = search_files(tmp_path, "*.py")
    assert top.paths == [str(tmp_path / "a.py")]
    everywhere = search_files(tmp_path, "**/*.py")
    assert everywhere.paths == [str(tmp_path / p) for p in ("a.py", "src/b.py", "src/deep/c.py")]
    assert everywhere.text == "\n".join(everywhere.paths)


def test_search_files_matches_directories_too(tmp_path: Path) -> None:
    _make(tmp_path, {"src/tests/x.py": ""})
    assert search_files(tmp_path, "**/tests").paths == [str(tmp_path / "src" / "tests")]


def test_search_files_without_glob_chars_is_case_insensitive_substring(tmp_path: Path) -> None:
    _make(tmp_path, {"ReadMe.md": "", "docs/readme_old.txt": "", "other.txt": ""})
    result = search_files(tmp_path, "readme")
    assert result.paths == [str(tmp_path / "ReadMe.md"), str(tmp_path / "docs" / "readme_old.txt")]
    assert search_files(tmp_path, "docs/README").paths == [str(tmp_path / "docs" / "readme_old.txt")]


def test_search_files_excludes_prune_directories(tmp_path: Path) -> None:
    _make(tmp_path, {"node_modules/a.js": "", "lib/node_modules/b.js": "", "lib/c.js": ""})
    result = search_files(tmp_path, "**/*.js", ["node_modules"])
    assert result.paths == [str(tmp_path / "lib" / "c.js")]


def test_search_files_no_match_message_with_hint(tmp_path: Path) -> None:
    _make(tmp_path, {"sub/x.py": ""})
    result = search_files(tmp_path, "*.py")
    assert result.text.startswith("No matches found")
    assert "'**/*.py'" in result.text
    assert search_files(tmp_path, "zzz").text == "No matches found"


def test_search_files_is_bounded(tmp_path: Path) -> None:
    _make(tmp_path, {f"f{i}.txt": "" for i in range(30)})
    result = search_files(tmp_path, "*.txt", max_results=10)
    assert result.truncated and len(result.paths) == 10
    assert "Showing results 1-10; there are more" in result.text and "offset=10" in result.text
    pages = [search_files(tmp_path, "*.txt", max_results=10, offset=o).paths for o in (10, 20, 30)]
    assert sorted(result.paths + pages[0] + pages[1]) == sorted(
        str(tmp_path / f"f{i}.txt") for i in range(30)
    )
    assert pages[2] == []


def test_search_files_never_descends_symlinks(tmp_path: Path) -> None:
    _make(tmp_path, {"outside/target.py": "", "root/mine.py": ""})
    (tmp_path / "root" / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    result = search_files(tmp_path / "root", "**/*")
    assert result.paths == [str(tmp_path / "root" / "mine.py"), str(tmp_path / "root" / "out")]


def test_search_files_empty_pattern_is_invalid(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        search_files(tmp_path, "  ")
