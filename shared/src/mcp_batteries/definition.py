"""Public: what a server package declares (its `__main__.py` and `config.py` import from here).

    from mcp_batteries.definition import ServerDefinition, ServerSettings, PathList, NameList

`ServerSettings` is subclassed once per server (each field a flag, an `MCP_<SERVER>_*` variable
and a TOML key); `ServerDefinition` names the settings class, the `module:build_server` path
(imported only when the server starts, so `--help` stays fast) and the help text. This module
loads no transport and no SDK server machinery.
"""

from mcp_batteries._core.settings import NameList, PathList, ServerSettings
from mcp_batteries._entry.definition import ServerDefinition

__all__ = ["NameList", "PathList", "ServerDefinition", "ServerSettings"]
