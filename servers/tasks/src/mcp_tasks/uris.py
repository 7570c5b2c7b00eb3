"""The resources' URIs: what each one shows, and how a URI maps back to a list or task.

tasks://list                    every task the caller can see, as a JSON array (the classic demo)
tasks://lists                   the caller's lists with counts (JSON)
tasks://lists/{list}            one list and its tasks in tree order (JSON)
tasks://lists/{list}/markdown   the same as a Markdown checklist
tasks://tasks/{task_id}         one task with subtasks and dependencies (JSON)
tasks://tasks/{task_id}/markdown
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, unquote

SCHEME = "tasks://"
ALL_TASKS = "tasks://list"
ALL_LISTS = "tasks://lists"
LIST_TEMPLATE = "tasks://lists/{list}"
LIST_MARKDOWN_TEMPLATE = "tasks://lists/{list}/markdown"
TASK_TEMPLATE = "tasks://tasks/{task_id}"
TASK_MARKDOWN_TEMPLATE = "tasks://tasks/{task_id}/markdown"


def list_uris(key: str) -> list[str]:
    base = f"{SCHEME}lists/{quote(key, safe=':')}"
    return [base, base + "/markdown"]


def task_uris(task_id: int) -> list[str]:
    base = f"{SCHEME}tasks/{task_id}"
    return [base, base + "/markdown"]


@dataclass(frozen=True)
class ParsedUri:
    kind: Literal["all_tasks", "all_lists", "list", "task"]
    key: str = ""
    task_id: str = ""
    markdown: bool = False


def parse(uri: str) -> ParsedUri | None:
    if uri == ALL_TASKS:
        return ParsedUri("all_tasks")
    if uri == ALL_LISTS:
        return ParsedUri("all_lists")
    if not uri.startswith(SCHEME):
        return None
    parts = uri[len(SCHEME) :].split("/")
    markdown = len(parts) == 3 and parts[2] == "markdown"
    if len(parts) not in (2, 3) or (len(parts) == 3 and not markdown) or not parts[1]:
        return None
    if parts[0] == "lists":
        return ParsedUri("list", key=unquote(parts[1]), markdown=markdown)
    if parts[0] == "tasks":
        return ParsedUri("task", task_id=unquote(parts[1]), markdown=markdown)
    return None
