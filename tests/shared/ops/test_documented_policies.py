"""The policy examples of docs/deploy.md parse and decide what the page says they decide."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mcp_batteries._signin.auth import ScopeNames, load_tokens_file
from mcp_batteries.testing import write_private

DOCS = Path(__file__).parents[3] / "docs"


def test_the_documented_policy_examples_mean_what_deploy_md_says(tmp_path: Path) -> None:
    text = (DOCS / "deploy.md").read_text()
    start = text.index("```toml\n# tokens.toml")
    example = text[start + len("```toml\n") : text.index("```", start + 7)]
    entries = example.split('sha256 = "..."')
    filled = "".join(
        part + (f'sha256 = "{hashlib.sha256(str(n).encode()).hexdigest()}"' if n < len(entries) - 1 else "")
        for n, part in enumerate(entries)
    )
    callers = load_tokens_file(
        write_private(tmp_path / "tokens.toml", filled), ScopeNames("mcp:read", "mcp:write")
    )
    by_name = {caller.name: caller for caller in callers.values()}
    intern, bot, agent = by_name["intern"], by_name["ci-bot"], by_name["agent"]
    assert intern.may_call("sql", "query", writes=False) and not intern.may_call(
        "sql", "execute", writes=True
    )
    assert bot.may_call("git", "git_commit", writes=True) and not bot.may_call(
        "filesystem", "read_file", writes=False
    )
    assert bot.rate_limit == 20
    assert agent.may_call("tasks", "add_task", writes=True)
    assert agent.may_call("filesystem", "read_text_file", writes=False)
    assert not agent.may_call("filesystem", "write_file", writes=True)
    assert not agent.may_call("git", "git_log", writes=False)
    assert agent.max_calls_in_flight == 4


def test_the_documented_bundle_limits_give_each_server_and_identity_its_own(tmp_path: Path) -> None:
    from mcp_batteries._bundle.configfile import parse_serve_args

    text = (DOCS / "deploy.md").read_text()
    start = text.index("```toml\n# team.toml\nrate_limit")
    example = text[start + len("```toml\n") : text.index("```", start + 7)]
    (tmp_path / "team.toml").write_text(example)
    config = parse_serve_args(["sql", "--config", str(tmp_path / "team.toml")])
    assert config.settings.rate_limit == 10 and config.settings.max_calls_in_flight == 4
    assert config.servers["sql"][1].rate_limit == 2 and config.servers["sql"][1].max_calls_in_flight == 4
    assert config.identities == {"user:ci-bot": (50.0, 16)}
