#!/usr/bin/env bash
# Install the reference ("anchor") servers into bench/.anchors/, never into the project venv.
# Idempotent: each anchor is skipped when its entry point already exists.
# Usage: bash bench/anchors.sh        (FORCE=1 to reinstall)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="$here/.anchors"
mkdir -p "$dest"
force="${FORCE:-0}"

# 1. Reference filesystem server (TypeScript, from npm). Its own package.json keeps npm from
#    walking up into the workspace.
fs_dir="$dest/filesystem"
fs_entry="$fs_dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
if [[ "$force" == 1 || ! -f "$fs_entry" ]]; then
    mkdir -p "$fs_dir"
    [[ -f "$fs_dir/package.json" ]] || echo '{"name": "bench-anchor-filesystem", "private": true}' > "$fs_dir/package.json"
    (cd "$fs_dir" && npm install --no-audit --no-fund --loglevel=error @modelcontextprotocol/server-filesystem)
fi

# 2. Archived reference sqlite server: it does not start with mcp 2.x, so pin "mcp<2".
# 3. Reference fetch server (Python).
install_py_anchor() {  # name, console script, pip requirements...
    local name="$1" script="$2"; shift 2
    local venv="$dest/$name"
    if [[ "$force" == 1 || ! -x "$venv/bin/$script" ]]; then
        [[ -d "$venv" ]] || uv venv --quiet --python 3.11 "$venv"
        uv pip install --quiet --python "$venv/bin/python" "$@"
    fi
}
install_py_anchor sqlite mcp-server-sqlite mcp-server-sqlite "mcp<2"

# 4. DBHub (bytebase, TypeScript, from npm): the MySQL/MariaDB anchor of bench/sql.py --engine mysql.
dbhub_dir="$dest/dbhub"
dbhub_entry="$dbhub_dir/node_modules/@bytebase/dbhub/dist/index.js"
if [[ "$force" == 1 || ! -f "$dbhub_entry" ]]; then
    mkdir -p "$dbhub_dir"
    [[ -f "$dbhub_dir/package.json" ]] || echo '{"name": "bench-anchor-dbhub", "private": true}' > "$dbhub_dir/package.json"
    # --ignore-scripts: ssh2's optional native build takes minutes on 2 cores and is not needed here.
    (cd "$dbhub_dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error @bytebase/dbhub)
fi
install_py_anchor fetch mcp-server-fetch mcp-server-fetch
# 4. markitdown behind its MCP server: the anchor of fetch's document workloads (bench/fetch.py --documents).
install_py_anchor markitdown markitdown-mcp "markitdown[pdf,docx,xlsx,pptx]" markitdown-mcp

fs_version="$(node -p "require('$fs_dir/node_modules/@modelcontextprotocol/server-filesystem/package.json').version")"
echo "filesystem ($fs_version): node $fs_entry DIR"
echo "sqlite ($("$dest/sqlite/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp-server-sqlite"), "mcp", m.version("mcp"))')): $dest/sqlite/bin/mcp-server-sqlite --db-path FILE"
echo "fetch ($("$dest/fetch/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp-server-fetch"), "mcp", m.version("mcp"))')): $dest/fetch/bin/mcp-server-fetch --ignore-robots-txt [--allow-private-ips]"
echo "markitdown ($("$dest/markitdown/bin/python" -c 'import importlib.metadata as m; print(m.version("markitdown"), "mcp", m.version("mcp"))')): $dest/markitdown/bin/markitdown-mcp"
echo "  fetch note: with node on PATH it converts pages through Node (readabilipy);"
echo "  for the pure-Python path run it with node off PATH (harness.path_without('node')), and say which."
