"""Which implementation of the platform seam this process runs: `posix` or `portable`.

`posix` is what makes path safety race-free: descriptor-relative calls (`dir_fd`), `O_NOFOLLOW`
and `O_DIRECTORY` opens, `fcntl`, and a directory descriptor that `os.scandir` can list. Linux and
macOS have all of it. `portable` needs none of it (Windows has none of it): it resolves paths with
the OS and proves by identity what it opened, with a weaker guarantee against a concurrent swap
(docs/platforms.md). `MCP_BATTERIES_PLATFORM=portable` forces the portable family on any platform,
so Linux runs the whole escape corpus on both; `posix` asks for the POSIX one (refused, with the
portable one running instead, where the platform lacks what it needs).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, Literal

__all__ = ["ENVIRONMENT_VARIABLE", "Family", "active", "forced", "posix_capable", "weaker_guarantee"]

logger = logging.getLogger(__name__)

Family = Literal["posix", "portable"]

#: Forces a family: `portable` anywhere; `posix` only where it is capable.
ENVIRONMENT_VARIABLE: Final = "MCP_BATTERIES_PLATFORM"


def posix_capable() -> bool:
    """Whether this Python offers everything the POSIX family uses (read, not assumed: a platform
    that lacks one of them, or hides it, gets the portable family)."""
    if not all(hasattr(os, name) for name in ("O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK")):
        return False
    relative = {os.open, os.stat, os.mkdir, os.unlink, os.rmdir, os.rename, os.readlink}
    if not relative <= os.supports_dir_fd or os.scandir not in os.supports_fd:
        return False
    try:
        import fcntl  # noqa: F401  (only the POSIX family uses it)
    except ImportError:
        return False
    return True


def _detect() -> Family:
    wanted = os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower()
    if wanted == "portable":
        return "portable"
    capable = posix_capable()
    if wanted not in ("", "posix"):
        logger.warning(
            "%s=%s is not a platform family (posix, portable); ignored", ENVIRONMENT_VARIABLE, wanted
        )
    elif wanted == "posix" and not capable:
        logger.warning(
            "%s=posix: this platform lacks descriptor-relative opens; the portable family runs",
            ENVIRONMENT_VARIABLE,
        )
    return "posix" if capable else "portable"


_active: Family = _detect()


def active() -> Family:
    """The family serving this process."""
    return _active


def weaker_guarantee() -> str | None:
    """What a server's instructions say when the portable family is in use, else None."""
    if _active == "posix":
        return None
    return (
        "On this platform paths are checked by resolving them with the operating system and "
        "verifying what was opened, not by descriptor-relative opens: a link swapped in by another "
        "program during an operation is caught for reads, but a write or listing racing such a "
        "swap is not guaranteed to stay inside (see docs/platforms.md)."
    )


@contextmanager
def forced(family: Family) -> Iterator[None]:
    """Run a block on `family` (tests: the same corpus on both implementations, in one process).
    The POSIX family is refused where it is not capable."""
    global _active
    if family == "posix" and not posix_capable():
        raise RuntimeError("the POSIX family needs descriptor-relative opens, which this platform lacks")
    previous, _active = _active, family
    try:
        yield
    finally:
        _active = previous
