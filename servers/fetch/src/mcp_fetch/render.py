"""The chosen subtree → Markdown, plain text or cleaned HTML.

- Markdown: markdownify, customised: ATX headings, "-" bullets, fenced code with the language read
  from the class / data-lang (of the <pre>, its <code> or up to two wrappers), Markdown tables with an
  inferred header row, image links, no escaping of _ and *, source line breaks inside paragraphs
  joined. `process_tag` is markdownify 1.2's without its slow per-element ancestor search.
- Plain text: the same converter with inline markup, links and images reduced to their text.
- HTML: the subtree with only essential attributes (href, src, alt, ...) and a language-* class on code.

All three end tidied: trailing spaces and runs of blank lines removed (not inside fenced code).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from bs4 import Comment, Doctype, Tag
from bs4.element import NavigableString
from markdownify import (  # type: ignore[attr-defined]  # helpers missing from its stub
    ATX,
    MarkdownConverter,
    should_remove_whitespace_inside,
    should_remove_whitespace_outside,
)

from .htmlclean import tags

Output = Literal["markdown", "text", "html"]

_HEADING = re.compile(r"h[1-6]$")
_EDGE_NEWLINES = re.compile(r"^(\n*)((?:.*[^\n])?)(\n*)$", flags=re.DOTALL)
_CODE_LANGUAGE = re.compile(
    r"(?:^|\s)(?:language-|lang-|highlight-source-|highlight-|brush:\s*)([a-z0-9_+#.-]+)", re.IGNORECASE
)
_NOT_LANGUAGES = frozenset({"default", "none", "text", "plain", "plaintext", "notranslate", "nohighlight"})


def render(root: Tag, output: Output) -> str:
    """root (already cleaned and with absolute links) in the requested output format."""
    if output == "html":
        return _clean_html(root)
    converter = _PlainText() if output == "text" else _Markdown()
    return _tidy(converter.convert_soup(root), preserve_fences=True)


def _code_language(pre: Tag) -> str | None:
    candidates: list[Tag] = [pre]
    code = next((child for child in pre.children if isinstance(child, Tag) and child.name == "code"), None)
    if code is not None:
        candidates.append(code)
    parent = pre.parent
    for _ in range(2):  # Sphinx/Pygments put the language two wrappers up: div.highlight-python > div
        if isinstance(parent, Tag):
            candidates.append(parent)
            parent = parent.parent
    for tag in candidates:
        for attribute in ("data-lang", "data-language"):
            if tag.get(attribute):
                return str(tag[attribute]).lower()
        classes: Any = tag.get("class") or []
        match = _CODE_LANGUAGE.search(" ".join(classes) if isinstance(classes, list) else str(classes))
        if match and match.group(1).lower() not in _NOT_LANGUAGES:
            return match.group(1).lower()
    return None


class _Markdown(MarkdownConverter):
    def process_tag(self, node: Tag, parent_tags: set[str] | None = None) -> str:
        """markdownify's process_tag, minus its per-element `node.find_parent("pre")`.

        That ancestor search (through bs4's slow filter machinery) was ~40% of the conversion time
        of a large page; `parent_tags` already says whether we are inside <pre>. Kept behaviourally
        identical to markdownify 1.2's version otherwise.
        """
        parent_tags = parent_tags or set()
        remove_inside = should_remove_whitespace_inside(node)

        def ignorable(el: Any) -> bool:
            if isinstance(el, Tag):
                return False
            if isinstance(el, (Comment, Doctype)):
                return True
            if isinstance(el, NavigableString):
                if str(el).strip() != "":
                    return False
                if remove_inside and (not el.previous_sibling or not el.next_sibling):
                    return True
                return bool(
                    should_remove_whitespace_outside(el.previous_sibling)
                    or should_remove_whitespace_outside(el.next_sibling)
                )
            return el is None

        children = [el for el in node.children if not ignorable(el)]
        child_parent_tags = set(parent_tags)
        child_parent_tags.add(node.name)
        if _HEADING.match(node.name) is not None or node.name in ("td", "th"):
            child_parent_tags.add("_inline")
        if node.name in ("pre", "code", "kbd", "samp"):
            child_parent_tags.add("_noformat")
        strings = [
            self.process_element(el, parent_tags=child_parent_tags)  # type: ignore[attr-defined]
            for el in children
        ]
        strings = [string for string in strings if string]
        if node.name != "pre" and "pre" not in parent_tags:
            # Collapse newlines at child boundaries to at most two, as markdownify does.
            collapsed = [""]
            for string in strings:
                match = _EDGE_NEWLINES.match(string)
                assert match is not None
                leading, content, trailing = match.groups()
                if collapsed[-1] and leading:
                    previous = collapsed.pop()
                    leading = "\n" * min(2, max(len(previous), len(leading)))
                collapsed.extend([leading, content, trailing])
            strings = collapsed
        text = "".join(strings)
        convert = self.get_conv_fn_cached(node.name)  # type: ignore[attr-defined]
        if convert is not None:
            text = convert(node, text, parent_tags=parent_tags)
        return str(text)

    def process_text(self, el: Any, parent_tags: set[str] | None = None) -> str:
        text: str = super().process_text(el, parent_tags=parent_tags)  # type: ignore[misc]
        # Source line breaks inside a paragraph are just whitespace; outside <pre> they only add noise.
        if (parent_tags and "pre" in parent_tags) or not text.strip():
            return text
        return text.replace("\n", " ")

    def __init__(self, **options: Any) -> None:
        super().__init__(
            heading_style=ATX,
            bullets="-",
            code_language_callback=_code_language,
            # Escaping every _ and * turns snake_case and maths into noise for the model.
            escape_underscores=False,
            escape_asterisks=False,
            escape_misc=False,
            table_infer_header=True,
            keep_inline_images_in=["td", "th", "a", "figure"],
            **options,
        )


def _plain(self: Any, el: Tag, text: str, parent_tags: set[str]) -> str:
    return text


def _block(self: Any, el: Tag, text: str, parent_tags: set[str]) -> str:
    return f"\n\n{text.strip()}\n\n" if text.strip() else ""


class _PlainText(_Markdown):
    convert_a = convert_b = convert_strong = convert_em = convert_i = convert_code = _plain
    convert_del = convert_s = convert_kbd = convert_samp = convert_sub = convert_sup = _plain
    convert_blockquote = _block

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return str(el.get("alt", ""))

    def convert_hN(self, n: int, el: Tag, text: str, parent_tags: set[str]) -> str:
        return _block(self, el, text, parent_tags)

    def convert_pre(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return f"\n\n{text.strip(chr(10))}\n\n" if text.strip() else ""

    def convert_hr(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return "\n\n"

    def convert_td(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return " ".join(text.split()) + "\t"

    convert_th = convert_td

    def convert_tr(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return text.rstrip("\t") + "\n"


_KEPT_ATTRIBUTES = frozenset({"href", "src", "alt", "title", "colspan", "rowspan", "lang"})


def _clean_html(root: Tag) -> str:
    all_tags = [root, *tags(root)]
    # Read code languages before any wrapper's class (e.g. div.highlight-python) is stripped.
    languages = {id(tag): _code_language(tag) for tag in all_tags if tag.name == "pre"}
    for tag in all_tags:
        tag.attrs = {name: value for name, value in tag.attrs.items() if name in _KEPT_ATTRIBUTES}
        if languages.get(id(tag)):
            tag["class"] = f"language-{languages[id(tag)]}"
    return _tidy(str(root), preserve_fences=False)


def _tidy(text: str, *, preserve_fences: bool) -> str:
    """Trailing spaces and runs of blank lines removed, except inside fenced code blocks."""
    lines: list[str] = []
    in_fence = False
    blank_run = 0
    for line in text.split("\n"):
        if preserve_fences and line.lstrip().startswith("```"):
            in_fence = not in_fence
            blank_run = 0
            lines.append(line.rstrip())
            continue
        if in_fence:
            lines.append(line)
            continue
        stripped = line.rstrip()
        blank_run = blank_run + 1 if not stripped.strip() else 0
        if blank_run <= 1:
            lines.append(stripped if stripped.strip() else "")
    return "\n".join(lines).strip("\n") + "\n" if any(line for line in lines) else ""
