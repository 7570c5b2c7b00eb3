"""The cold-start floor: a bare MCPServer with one trivial tool and nothing else.

Importing `mcp` 2.x costs ~0.7-0.8 s (notes/sdk-v2.md §9). A server's cold start is only "slow"
by what it adds on top of this, so benchmarks start it alongside ours (`ServerSpec(..., baseline=True)`).
"""

from mcp.server import MCPServer

mcp = MCPServer("floor", version="0")


@mcp.tool()
def hello() -> str:
    return "hello"


if __name__ == "__main__":
    mcp.run()  # stdio
