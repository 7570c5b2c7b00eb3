"""Per-tool permissions through a real bundle over HTTP: two identities at once, each sees and
may call only what its policy in the tokens file allows."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_batteries.testing import connect_http, write_private

from .conftest import running_bundle
from .test_serve import bundle_file

pytestmark = pytest.mark.anyio

INTERN = "intern-token-0123456789"
AGENT = "agent-token-0123456789a"


def policy_tokens(tmp_path: Path) -> Path:
    return write_private(
        tmp_path / "tokens.toml",
        f'[[tokens]]\nuser = "intern"\ntoken = "{INTERN}"\nread_only = true\n\n'
        f'[[tokens]]\nuser = "agent"\ntoken = "{AGENT}"\n'
        'allow = ["sql:*", "filesystem:*"]\ndeny = ["filesystem:write_*", "filesystem:delete_path"]\n',
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path / "tree"
    base.mkdir()
    (base / "a.txt").write_text("alpha\n")
    return base


async def test_each_identity_sees_and_calls_only_the_tools_its_policy_allows(
    tmp_path: Path, tree: Path
) -> None:
    tokens = policy_tokens(tmp_path)
    config = bundle_file(tmp_path, tree)
    config.write_text(f'tokens_file = "{tokens}"\n' + config.read_text())
    seen: dict[str, set[str]] = {}
    async with running_bundle("filesystem", "sql", "--config", str(config)) as bundle:
        url = bundle.url("filesystem")
        async with (
            connect_http(url, "legacy", token=INTERN) as intern,
            connect_http(url, "modern", token=AGENT) as agent,
        ):
            async with anyio.create_task_group() as tg:

                async def listed(name: str, client: object) -> None:
                    seen[name] = {tool.name for tool in (await client.list_tools()).tools}  # type: ignore[attr-defined]

                tg.start_soon(listed, "intern", intern)
                tg.start_soon(listed, "agent", agent)
            # A hidden tool is refused as an unknown one (-32602): no caller learns what it cannot see.
            with pytest.raises(MCPError) as refused:
                await agent.call_tool("write_file", {"path": str(tree / "x.txt"), "content": "no"})
            assert refused.value.error.code == -32602
            assert "Unknown tool" in refused.value.error.message
            written = await agent.call_tool("create_directory", {"path": str(tree / "made")})
            assert not written.is_error
            read = await intern.call_tool("read_text_file", {"path": str(tree / "a.txt")})
            assert not read.is_error
        async with connect_http(bundle.url("sql"), "legacy", token=INTERN) as intern_sql:
            sql_tools = {tool.name for tool in (await intern_sql.list_tools()).tools}
    assert "read_text_file" in seen["intern"] and "write_file" not in seen["intern"]
    assert "create_directory" not in seen["intern"]
    assert "write_file" not in seen["agent"] and "delete_path" not in seen["agent"]
    assert "create_directory" in seen["agent"] and "read_text_file" in seen["agent"]
    assert "execute" not in sql_tools and sql_tools
    assert not (tree / "x.txt").exists()
    assert (tree / "made").is_dir()
