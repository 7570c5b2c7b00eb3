"""`mcp-batteries serve` with the conformance fixture server (tests/conformance/fixture_server.py)
installed beside the real servers, as if it had declared the entry point: the bundle takes the
installed definitions programmatically.

    python tests/bundle/serve_with_fixture.py [mcp-batteries serve arguments]
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from mcp_batteries._bundle.serve import serve_main
from mcp_batteries._entry.definition import discover

FIXTURE = Path(__file__).resolve().parents[1] / "conformance" / "fixture_server.py"


def fixture_definition() -> object:
    spec = importlib.util.spec_from_file_location("conformance_fixture_server", FIXTURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # The definition names its builder as "<module>:build_server": the module must be importable.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.definition


if __name__ == "__main__":
    definition = fixture_definition()
    serve_main(sys.argv[1:], installed={**discover(), "conformance-fixture": definition})  # type: ignore[dict-item]
