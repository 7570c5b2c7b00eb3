"""Running tests on each platform family, and as a platform without POSIX's path facilities would.

- `PLATFORM_FAMILIES`: the families this machine can run (`posix` where it is capable, `portable`
  everywhere); `forced_platform_family(name)` runs a block on one of them in-process (the escape
  corpora are parametrised over both).
- `without_posix_facilities(directory)`: the environment for a subprocess that sees this Python
  as a platform without descriptor-relative opens would be: `fcntl` and `termios` cannot be
  imported by the project's own modules (`mcp_*`; libraries such as the SDK keep theirs and choose
  their own branches by `sys.platform`), `os.O_NOFOLLOW`, `os.O_PATH` and `os.O_DIRECTORY` do not
  exist, every call given `dir_fd`/`src_dir_fd`/`dst_dir_fd` raises `NotImplementedError` (as on
  Windows), `os.scandir` refuses a descriptor, and nothing under `/proc` can be opened, listed,
  stat'ed or read as a link. It works through a `sitecustomize` module put first on `PYTHONPATH`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from mcp_batteries._platform.family import Family, forced, posix_capable

__all__ = [
    "HIDDEN_MARKER",
    "PLATFORM_FAMILIES",
    "forced_platform_family",
    "without_posix_facilities",
]

PLATFORM_FAMILIES: Final[tuple[Family, ...]] = ("posix", "portable") if posix_capable() else ("portable",)

#: Written to stderr by the hidden-POSIX `sitecustomize` once it is in force (tests look for it).
HIDDEN_MARKER: Final = "mcp-batteries test: POSIX path facilities hidden"


@contextmanager
def forced_platform_family(name: Family) -> Iterator[None]:
    with forced(name):
        yield


_SITECUSTOMIZE = '''
"""Hide what a platform without descriptor-relative opens lacks (mcp_batteries.testing)."""
import builtins
import io
import os
import sys

_HIDDEN_MODULES = {"fcntl", "termios"}
_real_import = builtins.__import__


def _ours(importer_globals):
    name = (importer_globals or {}).get("__name__") or ""
    return name.split(".")[0].startswith("mcp_")


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and name.split(".")[0] in _HIDDEN_MODULES and _ours(globals):
        raise ImportError(f"No module named {name!r} (hidden: a platform without it)", name=name)
    return _real_import(name, globals, locals, fromlist, level)


builtins.__import__ = _import

for _name in ("O_NOFOLLOW", "O_PATH", "O_DIRECTORY"):
    if hasattr(os, _name):
        delattr(os, _name)
if hasattr(os, "fwalk"):
    del os.fwalk


def _in_proc(path):
    if isinstance(path, int):
        return False
    try:
        text = os.fsdecode(path)
    except TypeError:
        return False
    return text == "/proc" or text.startswith("/proc/")


def _no_dir_fd(function, *path_positions):
    def wrapper(*args, **kwargs):
        for key in ("dir_fd", "src_dir_fd", "dst_dir_fd"):
            if kwargs.get(key) is not None:
                raise NotImplementedError(f"{key} unavailable on this platform")
        for position in path_positions:
            if position < len(args) and _in_proc(args[position]):
                raise FileNotFoundError(2, "No such file or directory (hidden /proc)", args[position])
        return function(*args, **kwargs)

    wrapper.__name__ = function.__name__
    wrapper.__doc__ = function.__doc__
    return wrapper


for _name, _positions in {
    "open": (0,), "stat": (0,), "lstat": (0,), "mkdir": (0,), "unlink": (0,), "remove": (0,),
    "rmdir": (0,), "rename": (0, 1), "replace": (0, 1), "readlink": (0,), "symlink": (0, 1),
    "link": (0, 1), "chmod": (0,), "chown": (0,), "utime": (0,), "access": (0,), "listdir": (0,),
    "mkfifo": (0,), "mknod": (0,),
}.items():
    if hasattr(os, _name):
        setattr(os, _name, _no_dir_fd(getattr(os, _name), *_positions))

_real_scandir = os.scandir


def _scandir(path="."):
    if isinstance(path, int):
        raise TypeError("scandir: path should be string, bytes, os.PathLike or None, not int")
    if _in_proc(path):
        raise FileNotFoundError(2, "No such file or directory (hidden /proc)", path)
    return _real_scandir(path)


os.scandir = _scandir
os.supports_dir_fd = set()
os.supports_fd = {f for f in os.supports_fd if getattr(f, "__name__", "") not in ("scandir", "listdir")}

_real_open = io.open


def _open(file, *args, **kwargs):
    if _in_proc(file):
        raise FileNotFoundError(2, "No such file or directory (hidden /proc)", file)
    return _real_open(file, *args, **kwargs)


builtins.open = _open
io.open = _open

if "shutil" in sys.modules:
    sys.modules["shutil"]._use_fd_functions = False

sys.stderr.write("MARKER\\n")
'''


def without_posix_facilities(directory: Path) -> dict[str, str]:
    """Environment variables for a subprocess that hides POSIX's path facilities (see above);
    `directory` receives the `sitecustomize.py` that does it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(_SITECUSTOMIZE.replace("MARKER", HIDDEN_MARKER))
    existing = os.environ.get("PYTHONPATH")
    path = str(directory) if not existing else os.pathsep.join([str(directory), existing])
    environment = {"PYTHONPATH": path}
    # Not forced: the family must be chosen because the facilities are missing.
    environment["MCP_BATTERIES_PLATFORM"] = ""
    return environment
