"""The installed version of a distribution: one version per release, read from package metadata."""

from __future__ import annotations

from importlib import metadata

__all__ = ["distribution_version"]


def distribution_version(distribution: str) -> str:
    """The installed version of `distribution` (`0+unknown` when run from an uninstalled tree)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "0+unknown"
