"""Containment on a case-insensitive volume (APFS and NTFS by default, ext4 `casefold`): a
differently-cased path to an allowed file is allowed, a differently-cased escape is not.

This machine cannot mount one: its kernel lacks CONFIG_UNICODE (ext4 `casefold` refuses to mount:
"Filesystem with casefold feature cannot be mounted without CONFIG_UNICODE") and has no vfat. So
the volume is simulated: `os.stat`/`os.lstat` find a name in any case, as such a volume does, and
`resolve_path` runs on top of that, on each platform family.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries._safety.paths import AllowedDirectories, _respelled_under_a_root, resolve_path
from mcp_batteries.errors import AccessDenied

pytestmark = pytest.mark.usefixtures("each_platform_family")


@pytest.fixture
def volume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/Vol/Project (allowed) and tmp/Vol/Project-evil, on a simulated case-insensitive volume."""
    vol = tmp_path / "Vol"
    (vol / "Project" / "Docs").mkdir(parents=True)
    (vol / "Project" / "Docs" / "README.md").write_text("public\n")
    (vol / "Project-evil").mkdir()
    (vol / "Project-evil" / "secret.txt").write_text("SECRET\n")
    stored = {str(p).casefold(): str(p) for p in [vol, *vol.rglob("*")]}

    def case_insensitive(real: Callable[..., os.stat_result]) -> Callable[..., os.stat_result]:
        def lookup(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            try:
                return real(path, *args, **kwargs)
            except FileNotFoundError:
                if isinstance(path, int) or kwargs.get("dir_fd") is not None:
                    raise
                found = stored.get(os.fsdecode(path).casefold())
                if found is None:
                    raise
                return real(found, *args, **kwargs)

        return lookup

    monkeypatch.setattr(os, "stat", case_insensitive(os.stat))
    monkeypatch.setattr(os, "lstat", case_insensitive(os.lstat))
    return vol


def test_a_differently_cased_path_to_an_allowed_file_is_allowed_and_spelled_from_the_root(
    volume: Path,
) -> None:
    allowed = AllowedDirectories([volume / "Project"])
    other_case = str(volume).replace("Vol", "VOL") + "/PROJECT/docs/readme.md"
    real = resolve_path(other_case, allowed)
    assert real == volume / "Project" / "docs" / "readme.md"
    assert resolve_path(str(volume) + "/project", allowed) == volume / "Project"


def test_a_differently_cased_escape_is_refused(volume: Path) -> None:
    allowed = AllowedDirectories([volume / "Project"])
    for escape in [
        str(volume) + "/PROJECT-EVIL/secret.txt",
        str(volume) + "/project-evil/secret.txt",
        str(volume) + "/PROJECT/../Project-evil/secret.txt",
        str(volume) + "/PROJECT/../PROJECT-evil",
        str(volume).replace("Vol", "vol"),
    ]:
        with pytest.raises(AccessDenied):
            resolve_path(escape, allowed)


def test_the_identity_fallback_finds_only_allowed_directories(volume: Path) -> None:
    allowed = AllowedDirectories([volume / "Project"])
    assert _respelled_under_a_root(Path(str(volume) + "/PROJECT/new/file"), allowed) == (
        volume / "Project" / "new" / "file"
    )
    assert _respelled_under_a_root(Path(str(volume) + "/project-EVIL/x"), allowed) is None
    assert _respelled_under_a_root(volume, allowed) is None
