"""The tool policy: allow and deny patterns over `server:tool`, read-only servers, default-deny."""

from __future__ import annotations

import pytest
from mcp_batteries._core.permissions import ToolPolicy, parse_policy


def test_without_a_policy_every_tool_is_allowed() -> None:
    assert ToolPolicy().permits("git", "git_push", writes=True)
    assert ToolPolicy().unrestricted


def test_deny_wins_over_allow_and_what_no_pattern_allows_is_refused() -> None:
    policy = parse_policy({"allow": ["git:git_*", "tasks:*"], "deny": ["git:git_push"]}, "entry")
    assert policy.permits("git", "git_log", writes=False)
    assert policy.permits("tasks", "add_task", writes=True)
    assert not policy.permits("git", "git_push", writes=True)
    assert not policy.permits("filesystem", "read_text_file", writes=False)


def test_read_only_servers_lose_their_writing_tools_only() -> None:
    policy = parse_policy({"read_only": ["filesystem"]}, "entry")
    assert policy.permits("filesystem", "read_text_file", writes=False)
    assert not policy.permits("filesystem", "write_file", writes=True)
    assert policy.permits("sql", "execute", writes=True)
    everywhere = parse_policy({"read_only": True}, "entry")
    assert not everywhere.permits("sql", "execute", writes=True)


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"allow": ["git_*"]}, "names no server"),
        ({"allow": "git:*"}, "must be a list"),
        ({"read_only": "yes"}, "'read_only' must be"),
    ],
)
def test_a_malformed_policy_says_what_is_wrong(entry: dict[str, object], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        parse_policy(entry, "entry")
