"""Prompt texts: a commit message for the staged changes, a review of a diff."""

from __future__ import annotations

from mcp_batteries.errors import InvalidInput

from mcp_git.history import diff_page, log
from mcp_git.pages import TextPage
from mcp_git.runner import Git

__all__ = ["commit_message_prompt", "review_prompt"]

MAX_PROMPT_LINES = 1500


def _recent_subjects(git: Git) -> str:
    _, recent = log(git, max_count=5)
    subjects = [str(row[4]).splitlines()[0] for row in recent.rows if row[4]]
    return "\n".join(f"- {s}" for s in subjects) or "(no commits yet)"


def commit_message_prompt(git: Git) -> str:
    page = diff_page(git, staged=True, context_lines=3, max_lines=MAX_PROMPT_LINES)
    if page.empty:
        raise InvalidInput(f"nothing is staged in {git.repository.key}: stage changes with git_add first")
    cut = "\n(the diff is longer; only its beginning is shown)" if page.more else ""
    return (
        f"Write a commit message for the changes staged in the repository {git.repository.key}.\n"
        "Use a short imperative subject line (at most 72 characters), a blank line, then a body "
        "that explains what changed and why, wrapped at 72 columns. Match the style of the "
        f"recent commits:\n{_recent_subjects(git)}\n\nThe staged diff:\n```diff\n{page.text}\n```{cut}\n"
        "Reply with the commit message only."
    )


def review_prompt(git: Git, target: str | None) -> str:
    if target:
        page = diff_page(git, target=target, max_lines=MAX_PROMPT_LINES)
        what = (
            f"the changes between {target} and the working tree"
            if ".." not in target
            else f"the range {target}"
        )
    else:
        staged = diff_page(git, staged=True, max_lines=MAX_PROMPT_LINES)
        unstaged = diff_page(git, max_lines=MAX_PROMPT_LINES)
        text = "\n".join(p.text for p in (staged, unstaged) if not p.empty)
        page = TextPage(text, 1, 1, staged.more or unstaged.more)
        what = "the uncommitted changes (staged and unstaged)"
    if page.empty:
        raise InvalidInput(f"there is nothing to review: {what} are empty in {git.repository.key}")
    cut = (
        "\n(the diff is longer; only its beginning is shown: read the rest with git_diff)"
        if page.more
        else ""
    )
    return (
        f"Review {what} in the repository {git.repository.key}.\n"
        "Look for bugs, security problems, missing error handling, unclear names and missing tests. "
        "For each finding give the file and line, what is wrong, and a concrete fix; end with a "
        f"short overall verdict.\n\n```diff\n{page.text}\n```{cut}"
    )
