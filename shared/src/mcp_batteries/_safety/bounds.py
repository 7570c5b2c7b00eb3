"""The one reply bound: no tool result, resource read or prompt is larger than the reply cap.

Tools page their own output (a few hundred KiB at most); this is the net under all of them,
applied by `BatteriesServer` to the wire form of every `tools/call`, `resources/read` and
`prompts/get` result, so no tool can forget it. The rule, for a result whose JSON encoding is
larger than `cap` bytes:

- **Content is kept in order** while it fits. The first text that does not fit is cut (on a
  character boundary, at a line end when one is near) to what remains; binary content (an image,
  audio, a blob) is never cut, since part of an image is no image: it is left out whole. Everything
  after the cut is left out.
- **A note is added** (a text block, a text `contents` entry, or a user message) saying what was
  cut, how large it was, and how to get the rest: the paging arguments the tool, resource or
  prompt declared at registration (`paging=`), else "ask for less".
- **structuredContent is kept only whole.** It is kept when it fits in half the cap (the text is
  then cut around it); otherwise it is removed and the result becomes `isError`, because a cut
  object would still look complete to a host that shows only `structuredContent`, and a
  validating client checks structured content against the output schema for every result
  except errors. The error's text is the cut content and the note.

The cut result is always smaller than `cap`. Measuring costs nothing for a text-only reply whose
length alone proves it fits (six bytes a character at most), else one JSON encoding of the
result (pydantic-core, the transport's own encoder: ~1.7 ms per MB).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic_core

__all__ = ["MIN_REPLY_CAP", "bound_reply", "cut_text", "encoded_size"]

#: The smallest cap a server accepts: room for a note and some content.
MIN_REPLY_CAP = 16 * 1024
#: Room kept for the note and the result's envelope (`isError`, `_meta`, a block's keys).
_NOTE_ROOM = 2048
#: Content types that are binary: left out whole, never cut.
_BINARY_BLOCKS = frozenset({"image", "audio"})


def encoded_size(value: Any) -> int:
    """Bytes of `value` as JSON, as the transport sends it (UTF-8, no escaping of non-ASCII)."""
    return len(pydantic_core.to_json(value))


def cut_text(text: str, budget: int) -> str:
    """The longest prefix of `text` whose JSON string encoding takes at most `budget` bytes,
    cut on a character boundary, at the last line end when one lies in the last quarter."""
    if budget <= 2:
        return ""
    room = budget - 2  # the quotes
    # A first guess by UTF-8 bytes (what most text costs).
    prefix = text.encode("utf-8")[:room].decode("utf-8", "ignore")
    encoded = pydantic_core.to_json(prefix)
    if len(encoded) > budget:
        # Escapes (\n, \", control characters) made it longer: cut the encoding itself and read it
        # back, stepping back over a cut escape or UTF-8 sequence (at most 6 bytes).
        cut = encoded[: budget - 1]
        for back in range(8):
            try:
                prefix = pydantic_core.from_json(cut[: len(cut) - back] + b'"')
                break
            except ValueError:
                continue
    if len(prefix) < len(text):
        line_end = prefix.rfind("\n")
        if line_end >= len(prefix) * 3 // 4:
            prefix = prefix[: line_end + 1]
    return prefix


@dataclass
class _Cut:
    """What one bounding did: for the note."""

    #: Sentences on what was cut or left out, in content order.
    parts: list[str] = field(default_factory=list)
    left_out: int = 0

    def cut(self, what: str, kept: str, original: str) -> None:
        lines = kept.count("\n")
        self.parts.append(
            f"{what} shows its first {len(kept):,} of {len(original):,} characters ({lines:,} complete "
            f"line{'s' if lines != 1 else ''})"
        )

    def binary(self, what: str, size: int) -> None:
        self.parts.append(f"{what} ({size:,} bytes encoded) is left out whole: binary content is never cut")


def bound_reply(
    method: str, result: dict[str, Any], cap: int, *, subject: str, paging: str | None
) -> dict[str, Any]:
    """`result` (the wire form of a `method` result) if its encoding fits in `cap` bytes, else a
    copy cut below `cap` with a note (see the module docstring). `subject` names what produced it
    (`tool git_show`); `paging` says how to get the rest."""
    if result.get("resultType", "complete") != "complete":
        return result  # an input_required round trip carries no content
    if _surely_fits(result, cap):
        return result
    try:
        size = encoded_size(result)
    except ValueError:
        return result  # not encodable (a lone surrogate): the transport's own net answers it
    if size <= cap:
        return result
    if method == "tools/call":
        return _bound_tool_result(result, cap, size, subject, paging)
    if method == "resources/read":
        return _bound_listed(result, "contents", cap, size, subject, paging, _resource_note)
    if method == "prompts/get":
        return _bound_listed(result, "messages", cap, size, subject, paging, _prompt_note)
    return result


#: Top-level keys holding a result's items (content blocks, resource contents, prompt messages).
_ITEM_LISTS = ("content", "contents", "messages")
#: What one character can cost in JSON at most (`\u0000`).
_MAX_BYTES_PER_CHAR = 6


def _surely_fits(result: dict[str, Any], cap: int) -> bool:
    """True when an upper bound of the encoding, found without encoding, is within `cap`: the
    usual text-only reply costs a few `len()` calls instead of an encoding (~1.7 ms per MB)."""
    if "structuredContent" in result:
        return False
    bound = 1024
    for key, value in result.items():
        if key not in _ITEM_LISTS:
            bound += len(key) + 8 + _upper_bound(value)
            continue
        if not isinstance(value, list):
            return False
        for item in value:
            inner = item.get("content") if isinstance(item, dict) and "role" in item else item
            if not isinstance(inner, dict):
                return False
            bound += 16 + sum(len(name) + 8 + _upper_bound(part) for name, part in inner.items())
            if bound > cap:
                return False
    return bound <= cap


def _upper_bound(value: Any) -> int:
    """At least the encoded size of `value`: strings by length, anything nested encoded."""
    if isinstance(value, str):
        return len(value) * _MAX_BYTES_PER_CHAR + 2
    if value is None or isinstance(value, (bool, int, float)):
        return 32
    return encoded_size(value)  # nested (annotations, _meta, an embedded resource): small or rare


def _note(subject: str, size: int, cap: int, cut: _Cut, paging: str | None) -> str:
    details = list(cut.parts)
    if cut.left_out:
        details.append(f"{cut.left_out:,} more item{'s' if cut.left_out != 1 else ''} left out")
    rest = paging or "ask for less (a narrower request, or the paging arguments if there are any)"
    return (
        f"[The reply of {subject} was cut: it was {size:,} bytes, over this server's reply cap of "
        f"{cap:,} bytes. {'; '.join(details) or 'Content was left out'}. To get the rest: {rest}.]"
    )


def _bound_tool_result(
    result: dict[str, Any], cap: int, size: int, subject: str, paging: str | None
) -> dict[str, Any]:
    bounded = dict(result)
    budget = cap - _NOTE_ROOM - encoded_size({k: v for k, v in result.items() if k != "content"})
    structured = result.get("structuredContent")
    dropped_structured = False
    if structured is not None:
        structured_size = encoded_size(structured)
        if structured_size > cap // 2:
            del bounded["structuredContent"]
            bounded["isError"] = True
            budget += structured_size
            dropped_structured = True
    cut = _Cut()
    content = _fit_blocks(list(result.get("content") or []), budget, cut, _cut_content_block)
    note = _note(subject, size, cap, cut, paging)
    if dropped_structured:
        note = note[:-2] + (
            f". Its structuredContent ({structured_size:,} bytes) was removed, since only a whole "
            "object is complete; so this result is marked as an error.]"
        )
    bounded["content"] = [*content, {"type": "text", "text": note}]
    return bounded


def _bound_listed(
    result: dict[str, Any],
    key: str,
    cap: int,
    size: int,
    subject: str,
    paging: str | None,
    note_item: Callable[[Sequence[dict[str, Any]], str], dict[str, Any]],
) -> dict[str, Any]:
    bounded = dict(result)
    items = list(result.get(key) or [])
    budget = cap - _NOTE_ROOM - encoded_size({k: v for k, v in result.items() if k != key})
    cut = _Cut()
    cutter = _cut_resource_contents if key == "contents" else _cut_prompt_message
    kept = _fit_blocks(items, budget, cut, cutter)
    bounded[key] = [*kept, note_item(items, _note(subject, size, cap, cut, paging))]
    return bounded


def _resource_note(items: Sequence[dict[str, Any]], note: str) -> dict[str, Any]:
    uri = items[0].get("uri", "") if items else ""
    return {"uri": uri, "mimeType": "text/plain", "text": note}


def _prompt_note(items: Sequence[dict[str, Any]], note: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": note}}


#: Cuts one item to a byte budget: the cut item (None: left out) and the note's record.
_ItemCutter = Callable[[dict[str, Any], int, _Cut, str], dict[str, Any] | None]


def _fit_blocks(
    items: list[dict[str, Any]], budget: int, cut: _Cut, cutter: _ItemCutter
) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        item_size = encoded_size(item) + 1  # the comma
        if item_size <= budget:
            kept.append(item)
            budget -= item_size
            continue
        shortened = cutter(item, budget, cut, f"item {index + 1}")
        if shortened is not None:
            kept.append(shortened)
        cut.left_out += len(items) - index - 1
        break
    return kept


def _cut_text_field(
    item: dict[str, Any], key: str, budget: int, cut: _Cut, what: str
) -> dict[str, Any] | None:
    text = item.get(key)
    if not isinstance(text, str):
        cut.binary(what, encoded_size(item))
        return None
    envelope = encoded_size({**item, key: ""})
    kept = cut_text(text, budget - envelope)
    cut.cut(what, kept, text)
    return {**item, key: kept} if kept else None


def _cut_content_block(block: dict[str, Any], budget: int, cut: _Cut, what: str) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return _cut_text_field(block, "text", budget, cut, f"{what} (text)")
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        if "text" in resource:
            inner = _cut_text_field(
                resource, "text", budget - encoded_size({**block, "resource": {}}), cut, what
            )
            return None if inner is None else {**block, "resource": inner}
        cut.binary(f"{what} (embedded {resource.get('mimeType', 'binary')} resource)", encoded_size(block))
        return None
    if kind in _BINARY_BLOCKS:
        cut.binary(f"{what} ({block.get('mimeType', kind)})", encoded_size(block))
        return None
    cut.binary(f"{what} ({kind})", encoded_size(block))
    return None


def _cut_resource_contents(item: dict[str, Any], budget: int, cut: _Cut, what: str) -> dict[str, Any] | None:
    if "text" in item:
        return _cut_text_field(item, "text", budget, cut, f"{what} ({item.get('uri', 'resource')})")
    cut.binary(f"{what} ({item.get('mimeType', 'binary')})", encoded_size(item))
    return None


def _cut_prompt_message(message: dict[str, Any], budget: int, cut: _Cut, what: str) -> dict[str, Any] | None:
    content = message.get("content")
    envelope = encoded_size({**message, "content": None})
    if isinstance(content, dict):
        inner = _cut_content_block(content, budget - envelope, cut, what)
        return None if inner is None else {**message, "content": inner}
    if isinstance(content, list):
        kept = _fit_blocks(content, budget - envelope, cut, _cut_content_block)
        return {**message, "content": kept} if kept else None
    cut.binary(what, encoded_size(message))
    return None
