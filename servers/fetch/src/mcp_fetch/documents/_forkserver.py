"""Imported once, in the conversion forkserver only (never in the server): what every child needs.

The forkserver's stdout is pointed at stderr first, so no child it forks can write on the MCP
stdio channel. Its __main__ takes the server's main file name, so children do not import the
server's main module (see `isolate.MAIN_PATH_VARIABLE`). Then the converters' libraries are
imported, so each forked child has them already (a child that imported them itself would pay
~0.2 s per conversion).
"""

from __future__ import annotations

import contextlib
import os
import sys

with contextlib.suppress(OSError):
    os.dup2(2, 1)
sys.stdout = sys.stderr

_parent_main = os.environ.get("MCP_FETCH_CONVERTER_PARENT_MAIN")
if _parent_main and not hasattr(sys.modules["__main__"], "__file__"):
    sys.modules["__main__"].__file__ = _parent_main

from . import worker  # noqa: E402

worker.preload()
