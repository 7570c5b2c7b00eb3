# Sourced by the scripts in this folder: make `uv` the version pinned in pyproject.toml
# ([tool.uv] required-version), installing it from PyPI into .tools/uv when needed. Needs only
# Python 3.11+ with venv (and only to install uv: once it is there, a client that starts
# scripts/run with a bare PATH needs no python3 on it). Everything printed here goes to stderr:
# stdout may be the MCP protocol.
UV_VERSION=$(sed -n 's/^required-version = "==\(.*\)"$/\1/p' pyproject.toml)
uv_version() { "$1" --version 2>/dev/null | cut -d' ' -f2; }
if ! command -v uv >/dev/null 2>&1 || [ "$(uv_version uv)" != "$UV_VERSION" ]; then
  if [ ! -x .tools/uv/bin/uv ] || [ "$(uv_version .tools/uv/bin/uv)" != "$UV_VERSION" ]; then
    if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "MCP Batteries needs Python 3.11 or newer as python3 (found: $(python3 --version 2>&1))" >&2
      exit 2
    fi
    echo "installing uv $UV_VERSION from PyPI into .tools/uv ..." >&2
    python3 -m venv .tools/uv >&2
    .tools/uv/bin/python -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" >&2
  fi
  export PATH="$PWD/.tools/uv/bin:$PATH"
fi
