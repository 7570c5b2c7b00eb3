"""`mcp-batteries new NAME`: a new server package in a checkout of MCP Batteries.

It writes, from the templates in `templates/` (inside this package: every folder under
`servers/` must be a workspace member, so templates cannot live there):

    servers/NAME/pyproject.toml        mcp-batteries-NAME: both console scripts, the entry point
    servers/NAME/README.md, LICENSE    what PyPI shows (absolute links)
    servers/NAME/src/mcp_NAME/         __main__.py (the ServerDefinition), config.py (settings),
                                       server.py (one tool, live resources), notes.py (the domain,
                                       no MCP), live.py (what a resource URI watches)
    tests/NAME/                        the domain tested directly; the server through real clients,
                                       both eras, in-process, over stdio and over HTTP
    docs/NAME.md                       and a row in the README's table of servers

and nothing else: `uv sync --all-packages` installs it (the workspace's members are `servers/*`),
`./scripts/test tests/NAME` runs its tests, and `mcp-batteries serve` finds it through its
entry point.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from mcp_batteries._core.cli import _OneLineParser, fail
from mcp_batteries._core.version import distribution_version
from mcp_batteries.errors import ConfigError

__all__ = ["Scaffold", "find_checkout", "new_main", "new_server"]

NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
#: Names that would collide with the runtime's own distribution or command.
MAX_NAME_CHARS = 24
MAX_DESCRIPTION_CHARS = 80
RESERVED = frozenset({"batteries", "serve", "config", "new", "shared", "server", "servers"})
README_ROW = re.compile(r"^\| `mcp-[a-z0-9-]+` \|.*\|\s*$")


@dataclass(frozen=True)
class Scaffold:
    """The names a new server is written with."""

    name: str  # "weather-notes"
    version: str
    description: str

    @property
    def package(self) -> str:
        return "mcp_" + self.name.replace("-", "_")

    @property
    def class_prefix(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("-"))

    @property
    def title(self) -> str:
        return " ".join(part.capitalize() for part in self.name.split("-"))

    @property
    def env(self) -> str:
        return self.name.upper().replace("-", "_")

    def render(self, text: str) -> str:
        for token, value in (
            ("@@name@@", self.name),
            ("@@package@@", self.package),
            ("@@Class@@", self.class_prefix),
            ("@@title@@", self.title),
            ("@@scheme@@", self.name),
            ("@@ENV@@", self.env),
            ("@@version@@", self.version),
            ("@@description@@", self.description),
        ):
            text = text.replace(token, value)
        return text


def check_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name) or len(name) > MAX_NAME_CHARS:
        raise ConfigError(
            f"{name!r} is not a server name: use lowercase letters and digits, words joined by '-' "
            f"(e.g. notes, issue-tracker), at most {MAX_NAME_CHARS} characters"
        )
    if name in RESERVED or keyword.iskeyword(name.replace("-", "_")):
        raise ConfigError(f"{name!r} is reserved: choose another name")
    return name


def find_checkout(start: Path) -> Path:
    """The root of the MCP Batteries checkout containing `start` (its workspace lists servers/*)."""
    for folder in (start, *start.parents):
        pyproject = folder / "pyproject.toml"
        if not pyproject.is_file():
            continue
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            continue
        members = data.get("tool", {}).get("uv", {}).get("workspace", {}).get("members", [])
        if "servers/*" in members:
            return folder
    raise ConfigError(
        f"{start} is not inside a checkout of MCP Batteries (no pyproject.toml whose uv workspace has "
        "servers/* as members): run `mcp-batteries new` in a clone of the repository"
    )


def _checkout_version(root: Path) -> str:
    """The one version every package of the checkout carries (the runtime's)."""
    try:
        data = tomllib.loads((root / "shared" / "pyproject.toml").read_text(encoding="utf-8"))
        return str(data["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return distribution_version("mcp-batteries")


def _templates() -> list[tuple[str, str]]:
    """(template path inside templates/, destination path inside the checkout)."""
    files = [
        ("server/pyproject.toml.tmpl", "servers/{name}/pyproject.toml"),
        ("server/README.md.tmpl", "servers/{name}/README.md"),
        ("tests/test_notes.py.tmpl", "tests/{name}/test_notes.py"),
        ("tests/test_server.py.tmpl", "tests/{name}/test_server.py"),
        ("docs/page.md.tmpl", "docs/{name}.md"),
    ]
    for module in ("__init__.py", "__main__.py", "config.py", "live.py", "notes.py", "py.typed", "server.py"):
        files.append((f"server/src/package/{module}.tmpl", f"servers/{{name}}/src/{{package}}/{module}"))
    return files


def add_readme_row(readme: Path, scaffold: Scaffold) -> bool:
    """A row for the server in the README's table of servers (after the last one); False if none."""
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    rows = [index for index, line in enumerate(lines) if README_ROW.match(line)]
    if not rows:
        return False
    page = f"docs/{scaffold.name}.md"
    row = f"| `mcp-{scaffold.name}` | {scaffold.description} | [{page}]({page}) |\n"
    lines.insert(rows[-1] + 1, row)
    readme.write_text("".join(lines), encoding="utf-8")
    return True


def new_server(root: Path, name: str, *, description: str | None = None) -> list[Path]:
    """Write the new server into the checkout at `root`; the files written, relative to `root`."""
    check_name(name)
    scaffold = Scaffold(
        name=name,
        version=_checkout_version(root),
        description=description or "The notes in a folder, searched by a tool and served as live resources.",
    )
    text = scaffold.description
    if '"' in text or "\\" in text or not text.isprintable() or len(text) > MAX_DESCRIPTION_CHARS:
        raise ConfigError(
            f"--description: one line of at most {MAX_DESCRIPTION_CHARS} characters, without double quotes "
            "or backslashes"
        )
    planned = [
        (template, Path(destination.format(name=name, package=scaffold.package)))
        for template, destination in _templates()
    ]
    existing = [
        str(path) for path in (Path("servers") / name, Path("tests") / name, Path("docs") / f"{name}.md")
    ]
    clashes = [path for path in existing if (root / path).exists()]
    if clashes:
        raise ConfigError(f"{', '.join(clashes)} already exist(s): choose another name or remove them first")
    source = resources.files("mcp_batteries._bundle") / "templates"
    written: list[Path] = []
    for template, destination in planned:
        text = scaffold.render((source / template).read_text(encoding="utf-8"))
        target = root / destination
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(destination)
    license_file = root / "LICENSE"
    if license_file.is_file():
        destination = Path("servers") / name / "LICENSE"
        (root / destination).write_bytes(license_file.read_bytes())
        written.append(destination)
    readme = root / "README.md"
    if readme.is_file() and add_readme_row(readme, scaffold):
        written.append(Path("README.md"))
    return written


def new_main(argv: Sequence[str], *, prog: str = "mcp-batteries new") -> int:
    parser = _OneLineParser(
        prog=prog,
        description=(
            "Create a new server in this checkout of MCP Batteries: servers/NAME (entry point, settings,\n"
            "server.py with one tool and live resources, a domain module), its tests, docs/NAME.md and a\n"
            "README row. Then: ./scripts/uv sync --all-packages && ./scripts/test tests/NAME"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "name", metavar="NAME", help="Lowercase words joined by '-', e.g. notes or issue-tracker."
    )
    parser.add_argument("--description", metavar="TEXT", help="One line for --help, PyPI and the README.")
    parser.add_argument(
        "--directory",
        metavar="DIR",
        default=".",
        help="Where the checkout is (default: the current directory).",
    )
    options = parser.parse_args(list(argv))
    try:
        root = find_checkout(Path(options.directory).resolve())
        written = new_server(root, options.name, description=options.description)
    except ConfigError as exc:
        fail(str(exc), prog=prog)
    name = options.name
    sys.stdout.write(
        "".join(f"  created {path}\n" for path in written if path != Path("README.md"))
        + ("  added a row to README.md\n" if Path("README.md") in written else "")
        + "\nnext:\n"
        f"  ./scripts/uv sync --all-packages       # installs mcp-batteries-{name} (the pinned uv)\n"
        f"  ./scripts/test tests/{name}            # its tests: both eras, stdio and HTTP\n"
        f"  ./scripts/run {name} --help            # or: ./scripts/mcp-batteries serve {name}\n"
        f"then replace notes.py with what mcp-{name} should do (docs/new-server.md explains each file).\n"
    )
    return 0
