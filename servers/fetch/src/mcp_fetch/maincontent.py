"""Main-content selection on a boilerplate-free tree.

<main> / role=main if it holds enough of the page's text, else the longest <article> if it does, else
a readability-style density score over block containers (text in paragraphs, commas, minus link
density), else the whole body.
"""

from __future__ import annotations

from bs4 import Tag

from .htmlclean import tags, text_length

_BLOCKS = frozenset({"p", "pre", "td", "blockquote", "li", "dd"})
_SHORTLIST = 12
_CONTAINERS = frozenset({"div", "section", "article", "main", "td", "body", "blockquote", "center", "form"})
# The extracted main content must hold at least this much of the text of the boilerplate-free page,
# unless it is substantial on its own; otherwise the density pick is probably wrong.
_MIN_SHARE = 0.2
_SUBSTANTIAL_CHARS = 1500


def main_content(body: Tag) -> Tag:
    total = text_length(body)

    def good_enough(tag: Tag) -> bool:
        length = text_length(tag)
        return length >= _SUBSTANTIAL_CHARS or length >= _MIN_SHARE * total

    all_tags = tags(body)
    for main in [tag for tag in all_tags if tag.name == "main" or tag.get("role") == "main"]:
        if good_enough(main):
            return main
    articles = [tag for tag in all_tags if tag.name == "article"]
    if articles:
        longest = max(articles, key=text_length)
        if good_enough(longest):
            return longest
    return _densest_container(all_tags) or body


def _link_density(tag: Tag, length: int) -> float:
    if length == 0:
        return 1.0
    link_text = sum(text_length(a) for a in tag.find_all("a"))
    return min(1.0, link_text / length)


def _densest_container(all_tags: list[Tag]) -> Tag | None:
    """Readability's heuristic: paragraphs vote for their parent (and, halved, grandparent)."""
    scores: dict[int, float] = {}
    containers: dict[int, Tag] = {}
    for block in (tag for tag in all_tags if tag.name in _BLOCKS):
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
        adjusted = score * (1.0 - _link_density(tag, text_length(tag)))
        if adjusted > best_score:
            best, best_score = tag, adjusted
    return best
