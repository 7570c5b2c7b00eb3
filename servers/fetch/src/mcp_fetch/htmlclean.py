"""HTML cleaning, in place on a BeautifulSoup tree: what is never content, boilerplate, links and images.

- `remove_never_content`: comments, scripts, styles, embedded objects, form controls and hidden elements
  (``hidden``, ``aria-hidden="true"``, ``display: none`` / ``visibility: hidden``); small forms go, a form
  wrapping the whole page (ASP.NET) is unwrapped.
- `remove_boilerplate`: nav/aside/footer, site headers, ARIA landmark roles for navigation, banners and
  dialogs, and elements whose class/id say cookie banner, ad, share bar, sidebar, table of contents...
- `normalise_structure`: "¶" heading permalinks dropped, table captions moved out of their tables.
- `absolutise`: links and images resolved against the page's base URL; script links unwrapped, lazy
  image sources used, long inline data: URIs dropped.

Also the cheap tree helpers shared by the rest of the extraction (`tags`, `removed`, `text_length`).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Comment, Tag

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
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
# Inline data: URIs (base64 images) waste the model's context; longer ones are dropped.
_MAX_DATA_URI = 100
_PERMALINK_MARKS = frozenset({"", "¶", "#", "§", "🔗", "link"})


def removed(tag: Tag) -> bool:
    """Whether tag was decomposed along with an ancestor earlier in the same sweep.

    Not `tag.decomposed`: on a live Tag that property's getattr falls through to bs4's child-tag
    lookup (`tag.find("_decomposed")`), a subtree search per call, which made sweeps quadratic.
    """
    return bool(tag.__dict__.get("_decomposed", False))


def tags(root: Tag) -> list[Tag]:
    """Every element under root, in document order. One plain walk: bs4's find_all filter machinery
    costs about a second per pass over a 2 MB page, so sweeps avoid it."""
    return [node for node in root.descendants if isinstance(node, Tag)]


def text_length(tag: Tag) -> int:
    return len(" ".join(tag.get_text(" ").split()))


def _is_hidden(tag: Tag) -> bool:
    if removed(tag):
        return False
    if tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).lower() == "true":
        return True
    style = tag.get("style")
    return bool(style) and _HIDDEN_STYLE.search(str(style)) is not None


def remove_never_content(soup: BeautifulSoup) -> None:
    comments = [node for node in soup.descendants if isinstance(node, Comment)]
    for comment in comments:
        comment.extract()
    forms: list[Tag] = []
    for tag in tags(soup):
        if removed(tag):
            continue
        if tag.name in _NEVER_CONTENT_SET or _is_hidden(tag):
            tag.decompose()
        elif tag.name == "form":
            forms.append(tag)
    for form in forms:
        if removed(form):
            continue
        # Some sites (ASP.NET) wrap the whole page in one <form>; keep its content, drop real forms.
        if text_length(form) > 500:
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


def remove_boilerplate(root: Tag) -> None:
    for tag in tags(root):
        if removed(tag) or not _looks_like_boilerplate(tag):
            continue
        # A wrapper that merely has a misleading class must not take the real content with it.
        if any(inner.name in ("main", "article") or inner.get("role") == "main" for inner in tags(tag)):
            continue
        tag.decompose()


def normalise_structure(root: Tag) -> None:
    # "¶" permalinks beside headings are noise once the heading is text.
    all_tags = tags(root)
    for link in (tag for tag in all_tags if tag.name == "a" and tag.has_attr("href")):
        if removed(link):
            continue
        if str(link["href"]).startswith("#") and link.get_text(strip=True) in _PERMALINK_MARKS:
            link.decompose()
    # A <caption> before the first row stops markdownify from seeing that row as the header row.
    for caption in (tag for tag in all_tags if tag.name == "caption" and not removed(tag)):
        table = caption.find_parent("table")
        caption.extract()
        caption.name = "p"
        if table is not None:
            table.insert_before(caption)


def absolutise(root: Tag, base_url: str) -> None:
    all_tags = tags(root)
    for link in (tag for tag in all_tags if tag.name == "a"):
        href = str(link.get("href", "")).strip()
        if not href or href.lower().startswith(("javascript:", "data:", "vbscript:")):
            link.unwrap()
            continue
        link["href"] = urljoin(base_url, href)
    for image in (tag for tag in all_tags if tag.name == "img"):
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
