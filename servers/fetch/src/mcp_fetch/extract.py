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

from bs4 import BeautifulSoup, Comment, Tag
from markdownify import ATX, MarkdownConverter

Output = Literal["markdown", "text", "html"]

# Elements that never hold readable content.
_NEVER_CONTENT = (
    "script", "style", "noscript", "template", "iframe", "frame", "frameset", "object", "embed",
    "applet", "canvas", "svg", "math", "button", "input", "select", "textarea", "option", "label",
    "dialog", "link", "meta", "base", "head",
)  # fmt: skip
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
_UNLIKELY_SUBSTRINGS = ("cookie", "consent", "gdpr", "advert", "sponsor", "newsletter", "sidebar",
                        "breadcrumb", "table-of-contents", "tableofcontents", "social", "share-")
# ... unless the class/id also says this is the content.
_CONTENT_WORDS = frozenset({"article", "body", "content", "main", "post", "entry", "story", "text", "blog"})
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_CODE_LANGUAGE = re.compile(
    r"(?:^|\s)(?:language-|lang-|highlight-source-|highlight-|brush:\s*)([a-z0-9_+#.-]+)", re.IGNORECASE
)
_NOT_LANGUAGES = frozenset({"default", "none", "text", "plain", "plaintext", "notranslate", "nohighlight"})
_BLOCKS = ("p", "pre", "td", "blockquote", "li", "dd")
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


def convert_html(html: str, base_url: str, output: Output = "markdown", *, parser: str | None = None) -> Converted:
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


def _is_hidden(tag: Tag) -> bool:
    if tag.decomposed:  # already removed along with an ancestor
        return False
    if tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).lower() == "true":
        return True
    style = tag.get("style")
    return bool(style) and _HIDDEN_STYLE.search(str(style)) is not None


def _remove_never_content(soup: BeautifulSoup) -> None:
    for comment in soup.find_all(string=lambda node: isinstance(node, Comment)):
        comment.extract()
    for tag in soup.find_all(_NEVER_CONTENT):
        tag.decompose()
    for form in soup.find_all("form"):
        # Some sites (ASP.NET) wrap the whole page in one <form>; keep its content, drop real forms.
        if _text_length(form) > 500:
            form.unwrap()
        else:
            form.decompose()
    for tag in soup.find_all(_is_hidden):
        tag.decompose()


def _class_words(tag: Tag) -> list[str]:
    classes = tag.get("class") or []
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
    for tag in root.find_all(True):
        if tag.decomposed or not _looks_like_boilerplate(tag):
            continue
        # A wrapper that merely has a misleading class must not take the real content with it.
        if tag.find(["main", "article"]) is not None or tag.find(attrs={"role": "main"}) is not None:
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

    for main in body.find_all(["main"]) + body.find_all(attrs={"role": "main"}):
        if good_enough(main):
            return main
    articles = body.find_all("article")
    if articles:
        longest = max(articles, key=_text_length)
        if good_enough(longest):
            return longest
    return _densest_container(body) or body


def _densest_container(body: Tag) -> Tag | None:
    """Readability's heuristic: paragraphs vote for their parent (and, halved, grandparent)."""
    scores: dict[int, float] = {}
    tags: dict[int, Tag] = {}
    for block in body.find_all(_BLOCKS):
        text = " ".join(block.get_text(" ").split())
        if len(text) < 25:
            continue
        score = 1.0 + text.count(",") + min(len(text) / 100.0, 3.0)
        ancestor: Tag | None = block.parent
        for divisor in (1.0, 2.0, 3.0):
            if ancestor is None or not isinstance(ancestor, Tag):
                break
            if ancestor.name in _CONTAINERS:
                tags[id(ancestor)] = ancestor
                scores[id(ancestor)] = scores.get(id(ancestor), 0.0) + score / divisor
            ancestor = ancestor.parent
    if not scores:
        return None
    best: Tag | None = None
    best_score = 0.0
    for key, score in scores.items():
        tag = tags[key]
        adjusted = score * (1.0 - _link_density(tag, _text_length(tag)))
        if adjusted > best_score:
            best, best_score = tag, adjusted
    return best


def _absolutise(root: Tag, base_url: str) -> None:
    for link in root.find_all("a"):
        href = str(link.get("href", "")).strip()
        if not href or href.lower().startswith(("javascript:", "data:", "vbscript:")):
            link.unwrap()
            continue
        link["href"] = urljoin(base_url, href)
    for image in root.find_all("img"):
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
    code = pre.find("code")
    if isinstance(code, Tag):
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
        classes = tag.get("class") or []
        match = _CODE_LANGUAGE.search(" ".join(classes) if isinstance(classes, list) else str(classes))
        if match and match.group(1).lower() not in _NOT_LANGUAGES:
            return match.group(1).lower()
    return None


class _Markdown(MarkdownConverter):
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

    def convert_hN(self, n: int, el: Tag, text: str, parent_tags: set[str]) -> str:  # noqa: N802
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
    tags = [root, *root.find_all(True)]
    # Read code languages before any wrapper's class (e.g. div.highlight-python) is stripped.
    languages = {id(tag): _code_language(tag) for tag in tags if tag.name == "pre"}
    for tag in tags:
        tag.attrs = {name: value for name, value in tag.attrs.items() if name in _KEPT_ATTRIBUTES}
        if languages.get(id(tag)):
            tag["class"] = f"language-{languages[id(tag)]}"
    return _tidy(str(root), preserve_fences=False)


def _render(root: Tag, base_url: str, output: Output) -> str:
    _absolutise(root, base_url)
    if output == "html":
        return _clean_html(root)
    converter = _PlainText() if output == "text" else _Markdown()
    return _tidy(converter.convert_soup(root), preserve_fences=True)


_BLANK_RUN = re.compile(r"\n{3,}")


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
