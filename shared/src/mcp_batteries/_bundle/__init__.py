"""`mcp-batteries`: the command that serves, configures and creates MCP Batteries servers.

- `serve` (`serve.py`, `app.py`, `configfile.py`): every installed server in one HTTP process;
- `config` (`clients.py`): client configuration for Claude Desktop, Claude Code, Cline, Cursor
  and VS Code, printed or merged into the client's file;
- `new` (`scaffold.py`, `templates/`): a new server package in a checkout.

May import: `_entry`, `_transport`, `_ops`, `_signin`, `_core`, `_protocol`, `_safety`,
`_platform`, `errors`. No server imports it.
"""
