"""The `mcp-batteries` console script: `serve`, `config` and `new`, each in its own module."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mcp_batteries._core.cli import EXIT_CONFIG_ERROR, fail
from mcp_batteries._core.version import distribution_version

PROG = "mcp-batteries"

USAGE = f"""usage: {PROG} {{serve,config,new}} ... (see {PROG} COMMAND --help)

MCP Batteries: ready-made MCP servers, served together, configured for your client, or a new one.

commands:
  serve [NAME...]        every installed server (or those named) in one HTTP process, at /<name>/mcp
  config CLIENT [NAME...]
                         the configuration for claude-desktop, claude-code, cline, cursor or vscode;
                         printed, or merged into the client's file with --write
  new NAME               a new server package in this checkout: servers/NAME, its test and docs

options:
  -h, --help             show this help and exit
  --version              show the version and exit
"""


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        raise SystemExit(0 if args else EXIT_CONFIG_ERROR)
    if args[0] == "--version":
        sys.stdout.write(f"{PROG} {distribution_version('mcp-batteries')}\n")
        return
    command, rest = args[0], args[1:]
    if command == "serve":
        from mcp_batteries._bundle.serve import serve_main

        serve_main(rest, prog=f"{PROG} serve")
    elif command == "config":
        from mcp_batteries._bundle.clients import config_main

        config_main(rest, prog=f"{PROG} config")
    elif command == "new":
        from mcp_batteries._bundle.scaffold import new_main

        new_main(rest, prog=f"{PROG} new")
    else:
        fail(f"unknown command {command!r}: choose serve, config or new (see {PROG} --help)", prog=PROG)
