"""Glob and .gitignore matching for the walking tools, compiled once to regexes.

Glob semantics (a subset of minimatch with ``{dot: true}``, which the reference server uses):

* ``*`` matches any run of characters except ``/``; ``?`` one character except ``/``;
  ``[abc]``, ``[a-z]``, ``[!x]``/``[^x]`` a character class (never ``/``); ``\\x`` a literal ``x``.
* ``**`` as a whole path segment matches zero or more segments: ``**/*.py`` matches ``a.py`` and
  ``x/y/a.py``; ``src/**`` matches ``src`` and everything below it; ``a/**/b`` matches ``a/b``.
  Inside a segment (``a**b``) it acts like ``*``.
* ``{a,b}`` alternatives are expanded before matching (nesting allowed; numeric ranges are not).
* Dot-files are matched by ``*`` like any other name (``dot: true``). Matching is case-sensitive.
* A leading ``./`` or ``/`` is dropped; paths are always relative to the walk root with ``/``.
* Not supported: ``!`` negation and extglobs such as ``+(a|b)`` (taken literally).

Exclude patterns (``excludePatterns``) use a gitignore-like reading of the same globs, which is a
superset of the reference's ``directory_tree`` rules and fixes its top-level-only ``*.ext`` bug:

* a pattern without ``/`` matches an entry's *name* at any depth (``node_modules``, ``*.pyc``);
* a pattern with ``/`` is anchored at the root (``src/gen``, ``docs/**/*.tmp``), except that a
  pattern with no glob characters also matches as a path suffix at any depth (the reference
  tries ``**/pattern`` for those);
* a trailing ``/`` restricts the pattern to directories;
* an excluded directory is not entered, so everything below it is excluded too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mcp_batteries.errors import InvalidInput

GLOB_CHARS = frozenset("*?[{")
_MAX_BRACE_EXPANSIONS = 256


def has_glob_chars(pattern: str) -> bool:
    return any(c in GLOB_CHARS for c in pattern)


def expand_braces(pattern: str) -> list[str]:
    """Expand ``{a,b}`` alternatives like minimatch's braceExpand; unbalanced braces stay literal."""
    results = [pattern]
    done: list[str] = []
    while results:
        current = results.pop()
        span = _first_brace_group(current)
        if span is None:
            done.append(current)
            continue
        start, end, options = span
        for option in options:
            results.append(current[:start] + option + current[end + 1 :])
        if len(results) + len(done) > _MAX_BRACE_EXPANSIONS:
            raise InvalidInput(
                f"Pattern {pattern!r} expands to more than {_MAX_BRACE_EXPANSIONS} alternatives; "
                "use fewer {a,b} groups."
            )
    done.reverse()
    return done


def _first_brace_group(pattern: str) -> tuple[int, int, list[str]] | None:
    """Find the first ``{...}`` group holding a top-level comma: (start, end, alternatives)."""
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth, j, parts, last = 0, i, [], i + 1
            while j < len(pattern):
                d = pattern[j]
                if d == "\\":
                    j += 2
                    continue
                if d == "{":
                    depth += 1
                elif d == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif d == "," and depth == 1:
                    parts.append(pattern[last:j])
                    last = j + 1
                j += 1
            if j < len(pattern) and parts:
                parts.append(pattern[last:j])
                return i, j, parts
        i += 1
    return None


def _segment_to_regex(segment: str) -> str:
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        c = segment[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(segment[i + 1]))
            i += 2
        elif c == "*":
            while i < n and segment[i] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            # A "]" right after "[" or "[!" is a literal member, as in fnmatch and minimatch.
            first = i + 2 if segment[i + 1 : i + 2] in ("!", "^") else i + 1
            end = segment.find("]", first + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = segment[i + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[").replace("]", "\\]")
            out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def glob_to_regex(pattern: str) -> str:
    """Translate one brace-free glob into an anchored regex over ``/``-separated relative paths."""
    segments = [s for s in pattern.split("/") if s != ""]
    # Collapse runs of globstars: a/**/**/b is a/**/b.
    collapsed: list[str] = []
    for seg in segments:
        if seg == "**" and collapsed and collapsed[-1] == "**":
            continue
        collapsed.append(seg)
    if not collapsed:
        return r"\A\Z"
    parts: list[str] = []
    last = len(collapsed) - 1
    for idx, seg in enumerate(collapsed):
        if seg == "**":
            if idx == last:
                parts.append(".*" if idx == 0 else "(?:/.*)?")
            else:
                parts.append("(?:.*/)?" if idx == 0 else "/(?:.*/)?")
            continue
        if idx > 0 and collapsed[idx - 1] != "**":
            parts.append("/")
        parts.append(_segment_to_regex(seg))
    return r"\A" + "".join(parts) + r"\Z"


def _clean(pattern: str) -> str:
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern.lstrip("/")


def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile a glob (braces expanded) into one regex matched with ``.match`` on relative paths."""
    alternatives = [glob_to_regex(_clean(p)) for p in expand_braces(pattern)]
    return re.compile("|".join(f"(?:{a})" for a in alternatives), re.DOTALL)


@dataclass(frozen=True)
class ExcludeMatcher:
    """Decides whether an entry (relative path, name, is_dir) is excluded; see the module docstring."""

    any_regex: re.Pattern[str] | None  # patterns for every entry type
    dir_regex: re.Pattern[str] | None  # trailing-slash patterns: directories only

    @classmethod
    def compile(cls, patterns: Sequence[str]) -> ExcludeMatcher:
        any_parts: list[str] = []
        dir_parts: list[str] = []
        for raw in patterns:
            if not raw or not raw.strip():
                continue
            for expanded in expand_braces(raw.strip()):
                dir_only = expanded.endswith("/")
                pattern = _clean(expanded.rstrip("/"))
                if not pattern:
                    continue
                body = glob_to_regex(pattern)[2:-2]  # drop the \A \Z anchors
                if "/" not in pattern or not has_glob_chars(pattern):
                    regex = rf"\A(?:.*/)?{body}\Z"
                else:
                    regex = rf"\A{body}\Z"
                (dir_parts if dir_only else any_parts).append(f"(?:{regex})")
        return cls(
            re.compile("|".join(any_parts), re.DOTALL) if any_parts else None,
            re.compile("|".join(dir_parts), re.DOTALL) if dir_parts else None,
        )

    def __bool__(self) -> bool:
        return self.any_regex is not None or self.dir_regex is not None

    def excluded(self, rel_path: str, is_dir: bool) -> bool:
        if self.any_regex is not None and self.any_regex.match(rel_path):
            return True
        return is_dir and self.dir_regex is not None and self.dir_regex.match(rel_path) is not None


@dataclass(frozen=True)
class IgnoreLayer:
    base: str  # directory of the .gitignore, relative to the walk root ("" for the root), with "/"
    rules: tuple[tuple[re.Pattern[str], bool], ...]  # (regex, include); last match wins
    combined: re.Pattern[str] | None  # set when there are no negations: any match means ignored


def parse_gitignore(text: str, base: str) -> IgnoreLayer | None:
    """Compile one .gitignore's lines (git's rules, via pathspec) for the directory ``base``."""
    # Imported on first use: pathspec costs ~40 ms of start-up that most sessions never need.
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    rules: list[tuple[re.Pattern[str], bool]] = []
    for line in text.splitlines():
        try:
            pattern = GitIgnoreSpecPattern(line)
        except Exception:  # a malformed line is ignored, as git does
            continue
        if pattern.include is None or pattern.regex is None:
            continue
        # pathspec names a group "ps_d" in every pattern; drop the name so patterns can be joined.
        regex = re.compile(pattern.regex.pattern.replace("(?P<ps_d>", "(?:"), pattern.regex.flags)
        rules.append((regex, pattern.include))
    if not rules:
        return None
    combined = None
    if all(include for _, include in rules):
        combined = re.compile("|".join(f"(?:{r.pattern})" for r, _ in rules))
    return IgnoreLayer(base, tuple(rules), combined)


def gitignored(layers: Sequence[IgnoreLayer], rel_path: str, is_dir: bool) -> bool:
    """Git's verdict for one entry: the deepest .gitignore with a matching rule decides."""
    for layer in reversed(layers):
        sub = rel_path[len(layer.base) + 1 :] if layer.base else rel_path
        if is_dir:
            sub += "/"  # lets "build/" (directory-only) rules match
        if layer.combined is not None:
            if layer.combined.match(sub):
                return True
            continue
        for regex, include in reversed(layer.rules):
            if regex.match(sub):
                return include
    return False
