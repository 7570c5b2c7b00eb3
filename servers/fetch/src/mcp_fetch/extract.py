"""HTML → the page's main content, as Markdown, plain text or cleaned HTML. Pure Python, synchronous.

Pipeline (all on one BeautifulSoup tree; lxml parser when installed, html.parser otherwise):

1. Drop what is never content: scripts, styles, embedded objects, form controls, hidden elements.
2. Drop boilerplate: nav/aside/footer, site headers, ARIA landmark roles for navigation, banners and
   dialogs, and elements whose class/id say cookie banner, ad, share bar, sidebar, table of contents...
3. Pick the main content: <main> / role=main, else <article>, else a readability-style density score
   over block containers (text in paragraphs, commas, minus link density).
4. Resolve links and images against the page's base URL, then convert with a customised markdownify
   (ATX headings, fenced code with the language from the class, Markdown tables, image links).

When what survives is only a sliver of the page (a portal or index that is mostly navigation), the
whole page is converted instead, so the model still sees the links; `Converted.whole_page` says so.

Conversion is CPU-bound: callers in async code run it in a worker thread.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Comment, Doctype, Tag
from bs4.element import NavigableString
from markdownify import (  # type: ignore[attr-defined]  # helpers missing from its stub
    ATX,
    MarkdownConverter,
    should_remove_whitespace_inside,
    should_remove_whitespace_outside,
)

Output = Literal["markdown", "text", "html"]

# Elements that never hold readable content.
_NEVER_CONTENT = (
    "script", "style", "noscript", "template", "iframe", "frame", "frameset", "object", "embed",
    "applet", "canvas", "svg", "math", "button", "input", "select", "textarea", "option", "label",
    "dialog", "link", "meta", "base", "head",
)  # fmt: skip
_NEVER_CONTENT_SET = frozenset(_NEVER_CONTENT)
_BOILERPLATE_TAGS = ("nav", "aside", "footer", "menu")
_BOILERPLATE_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "dialog",
     "alertdialog", "toolbar", "tablist"}
)  # fmt: skip
# Class/id words that mark boilerplate (matched as whole words of the class/id) ...
_UNLIKELY_WORDS = frozenset(
    {"nav", "navbar", "navigation", "menu", "menubar", "sidebar", "side", "aside", "footer", "header",
     "masthead", "banner", "breadcrumb", "breadcrumbs", "pagination", "pager", "share", "sharing",
     "social", "related", "recommended", "comments", "comment", "disqus", "ad", "ads", "advert",
     "advertisement", "adsbygoogle", "sponsor", "sponsored", "promo", "newsletter", "subscribe",
     "signup", "popup", "modal", "overlay", "toc", "skip", "widget", "cookie", "cookies", "consent",
     "gdpr", "outbrain", "taboola", "toolbar", "topbar", "hidden", "print"}
)  # fmt: skip
# ... or as substrings (these never appear inside innocent words).
_UNLIKELY_SUBSTRINGS = (
    "cookie",
    "consent",
    "gdpr",
    "advert",
    "sponsor",
    "newsletter",
    "sidebar",
    "breadcrumb",
    "table-of-contents",
    "tableofcontents",
    "social",
    "share-",
)
# ... unless the class/id also says this is the content.
_CONTENT_WORDS = frozenset({"article", "body", "content", "main", "post", "entry", "story", "text", "blog"})
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_HEADING = re.compile(r"h[1-6]$")
_EDGE_NEWLINES = re.compile(r"^(\n*)((?:.*[^\n])?)(\n*)$", flags=re.DOTALL)
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_CODE_LANGUAGE = re.compile(
    r"(?:^|\s)(?:language-|lang-|highlight-source-|highlight-|brush:\s*)([a-z0-9_+#.-]+)", re.IGNORECASE
)
_NOT_LANGUAGES = frozenset({"default", "none", "text", "plain", "plaintext", "notranslate", "nohighlight"})
_BLOCKS = frozenset({"p", "pre", "td", "blockquote", "li", "dd"})
_SHORTLIST = 12
_CONTAINERS = frozenset({"div", "section", "article", "main", "td", "body", "blockquote", "center", "form"})
# The extracted main content must hold at least this much of the text of the boilerplate-free page,
# unless it is substantial on its own; otherwise the density pick is probably wrong.
_MIN_SHARE = 0.2
_SUBSTANTIAL_CHARS = 1500
# Below this many characters, extraction is deemed to have found nothing and the whole page is used.
_NEAR_EMPTY_CHARS = 200
# Inline data: URIs (base64 images) waste the model's context; longer ones are dropped.
_MAX_DATA_URI = 100


@dataclass(frozen=True)
class Converted:
    title: str | None
    content: str
    whole_page: bool = False  # main-content extraction found too little; the whole page was converted


def default_parser() -> str:
    """lxml when installed (several times faster), else the pure-Python parser."""
    return "lxml" if importlib.util.find_spec("lxml") is not None else "html.parser"


def truncate_html(html: str, max_chars: int) -> tuple[str, bool]:
    """At most `max_chars` of `html`, cut before a tag so no half tag reaches the parser."""
    if len(html) <= max_chars:
        return html, False
    cut = html.rfind("<", 0, max_chars)
    return html[: cut if cut > 0 else max_chars], True


def html_to_markdown(html: str, base_url: str) -> Converted:
    return convert_html(html, base_url, "markdown")


def convert_html(
    html: str, base_url: str, output: Output = "markdown", *, parser: str | None = None
) -> Converted:
    """The main content of `html` (fetched from `base_url`) in the requested output format."""
    parser = parser or default_parser()
    soup = BeautifulSoup(html, parser)
    base_url = _document_base(soup, base_url)
    title = _title(soup)
    _remove_never_content(soup)
    body = soup.body or soup
    page_text_length = _text_length(body)
    _remove_boilerplate(body)
    root = _main_content(body)
    content = _render(root, base_url, output)
    if len(content) < _NEAR_EMPTY_CHARS and page_text_length > 2 * max(len(content), _NEAR_EMPTY_CHARS // 2):
        # Mostly navigation: extraction stripped nearly everything, so give the model the whole page.
        soup = BeautifulSoup(html, parser)
        _remove_never_content(soup)
        content = _render(soup.body or soup, base_url, output)
        return Converted(title, content, whole_page=True)
    return Converted(title, content)


def _document_base(soup: BeautifulSoup, base_url: str) -> str:
    base = soup.find("base", href=True)
    if isinstance(base, Tag):
        return urljoin(base_url, str(base["href"]).strip())
    return base_url


def _title(soup: BeautifulSoup) -> str | None:
    for candidate in (
        soup.find("meta", attrs={"property": "og:title"}),
        soup.title,
        soup.find("h1"),
    ):
        if not isinstance(candidate, Tag):
            continue
        text = str(candidate.get("content", "")) if candidate.name == "meta" else candidate.get_text(" ")
        text = " ".join(text.split())
        if text:
            return text
    return None


def _removed(tag: Tag) -> bool:
    """Whether tag was decomposed along with an ancestor earlier in the same sweep.

    Not `tag.decomposed`: on a live Tag that property's getattr falls through to bs4's child-tag
    lookup (`tag.find("_decomposed")`), a subtree search per call, which made sweeps quadratic.
    """
    return bool(tag.__dict__.get("_decomposed", False))


def _is_hidden(tag: Tag) -> bool:
    if _removed(tag):
        return False
    if tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).lower() == "true":
        return True
    style = tag.get("style")
    return bool(style) and _HIDDEN_STYLE.search(str(style)) is not None


def _tags(root: Tag) -> list[Tag]:
    """Every element under root, in document order. One plain walk: bs4's find_all filter machinery
    costs about a second per pass over a 2 MB page, so sweeps avoid it."""
    return [node for node in root.descendants if isinstance(node, Tag)]


def _remove_never_content(soup: BeautifulSoup) -> None:
    comments = [node for node in soup.descendants if isinstance(node, Comment)]
    for comment in comments:
        comment.extract()
    forms: list[Tag] = []
    for tag in _tags(soup):
        if _removed(tag):
            continue
        if tag.name in _NEVER_CONTENT_SET or _is_hidden(tag):
            tag.decompose()
        elif tag.name == "form":
            forms.append(tag)
    for form in forms:
        if _removed(form):
            continue
        # Some sites (ASP.NET) wrap the whole page in one <form>; keep its content, drop real forms.
        if _text_length(form) > 500:
            form.unwrap()
        else:
            form.decompose()


def _class_words(tag: Tag) -> list[str]:
    classes: Any = tag.get("class") or []
    names = " ".join(classes) if isinstance(classes, list) else str(classes)
    return [word for word in _WORD_SPLIT.split(f"{names} {tag.get('id', '')}".lower()) if word]


def _looks_like_boilerplate(tag: Tag) -> bool:
    if tag.name in ("html", "body", "main", "article"):
        return False
    role = str(tag.get("role", "")).lower()
    if role in _BOILERPLATE_ROLES:
        return True
    if tag.name in _BOILERPLATE_TAGS:
        return True
    if tag.name == "header" and tag.find_parent(["article", "main"]) is None:
        return True
    words = _class_words(tag)
    if not words or _CONTENT_WORDS.intersection(words):
        return False
    joined = "-".join(words)
    return bool(_UNLIKELY_WORDS.intersection(words)) or any(s in joined for s in _UNLIKELY_SUBSTRINGS)


def _remove_boilerplate(root: Tag) -> None:
    for tag in _tags(root):
        if _removed(tag) or not _looks_like_boilerplate(tag):
            continue
        # A wrapper that merely has a misleading class must not take the real content with it.
        if any(inner.name in ("main", "article") or inner.get("role") == "main" for inner in _tags(tag)):
            continue
        tag.decompose()


def _text_length(tag: Tag) -> int:
    return len(" ".join(tag.get_text(" ").split()))


def _link_density(tag: Tag, text_length: int) -> float:
    if text_length == 0:
        return 1.0
    link_text = sum(_text_length(a) for a in tag.find_all("a"))
    return min(1.0, link_text / text_length)


def _main_content(body: Tag) -> Tag:
    total = _text_length(body)

    def good_enough(tag: Tag) -> bool:
        length = _text_length(tag)
        return length >= _SUBSTANTIAL_CHARS or length >= _MIN_SHARE * total

    tags = _tags(body)
    for main in [tag for tag in tags if tag.name == "main" or tag.get("role") == "main"]:
        if good_enough(main):
            return main
    articles = [tag for tag in tags if tag.name == "article"]
    if articles:
        longest = max(articles, key=_text_length)
        if good_enough(longest):
            return longest
    return _densest_container(tags) or body


def _densest_container(tags: list[Tag]) -> Tag | None:
    """Readability's heuristic: paragraphs vote for their parent (and, halved, grandparent)."""
    scores: dict[int, float] = {}
    containers: dict[int, Tag] = {}
    for block in (tag for tag in tags if tag.name in _BLOCKS):
        text = " ".join(block.get_text(" ").split())
        if len(text) < 25:
            continue
        score = 1.0 + text.count(",") + min(len(text) / 100.0, 3.0)
        ancestor: Tag | None = block.parent
        for divisor in (1.0, 2.0, 3.0):
            if ancestor is None or not isinstance(ancestor, Tag):
                break
            if ancestor.name in _CONTAINERS:
                containers[id(ancestor)] = ancestor
                scores[id(ancestor)] = scores.get(id(ancestor), 0.0) + score / divisor
            ancestor = ancestor.parent
    if not scores:
        return None
    best: Tag | None = None
    best_score = 0.0
    # Link density needs a subtree walk per candidate, so only the strongest few are weighed.
    shortlist = sorted(scores.items(), key=lambda item: item[1], reverse=True)[:_SHORTLIST]
    for key, score in shortlist:
        tag = containers[key]
        adjusted = score * (1.0 - _link_density(tag, _text_length(tag)))
        if adjusted > best_score:
            best, best_score = tag, adjusted
    return best


def _absolutise(root: Tag, base_url: str) -> None:
    tags = _tags(root)
    for link in (tag for tag in tags if tag.name == "a"):
        href = str(link.get("href", "")).strip()
        if not href or href.lower().startswith(("javascript:", "data:", "vbscript:")):
            link.unwrap()
            continue
        link["href"] = urljoin(base_url, href)
    for image in (tag for tag in tags if tag.name == "img"):
        src = str(image.get("src", "")).strip()
        lazy = image.get("data-src") or image.get("data-lazy-src") or image.get("data-original")
        if (not src or src.startswith("data:")) and lazy:
            src = str(lazy).strip()
        if src.startswith("data:") and len(src) > _MAX_DATA_URI:
            src = ""
        if not src:
            if image.get("alt"):
                image.replace_with(str(image["alt"]))
            else:
                image.decompose()
            continue
        image["src"] = urljoin(base_url, src)


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
    tags = [root, *_tags(root)]
    # Read code languages before any wrapper's class (e.g. div.highlight-python) is stripped.
    languages = {id(tag): _code_language(tag) for tag in tags if tag.name == "pre"}
    for tag in tags:
        tag.attrs = {name: value for name, value in tag.attrs.items() if name in _KEPT_ATTRIBUTES}
        if languages.get(id(tag)):
            tag["class"] = f"language-{languages[id(tag)]}"
    return _tidy(str(root), preserve_fences=False)


_PERMALINK_MARKS = frozenset({"", "¶", "#", "§", "🔗", "link"})


def _normalise_structure(root: Tag) -> None:
    # "¶" permalinks beside headings are noise once the heading is text.
    tags = _tags(root)
    for link in (tag for tag in tags if tag.name == "a" and tag.has_attr("href")):
        if _removed(link):
            continue
        if str(link["href"]).startswith("#") and link.get_text(strip=True) in _PERMALINK_MARKS:
            link.decompose()
    # A <caption> before the first row stops markdownify from seeing that row as the header row.
    for caption in (tag for tag in tags if tag.name == "caption" and not _removed(tag)):
        table = caption.find_parent("table")
        caption.extract()
        caption.name = "p"
        if table is not None:
            table.insert_before(caption)


def _render(root: Tag, base_url: str, output: Output) -> str:
    _normalise_structure(root)
    _absolutise(root, base_url)
    if output == "html":
        return _clean_html(root)
    converter = _PlainText() if output == "text" else _Markdown()
    return _tidy(converter.convert_soup(root), preserve_fences=True)


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
