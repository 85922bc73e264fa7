"""The package version, for the CLI, checkpoints and release files (one place, no imports).

>>> from thors_stream._version import __version__, library_version
>>> library_version() == __version__ or library_version() > ""
True
"""

from __future__ import annotations

__all__ = ["__version__", "library_version"]

__version__ = "0.2.0"


def library_version() -> str:
    """The installed distribution's version (importlib.metadata), else :data:`__version__`. O(1)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("thors_stream")
    except PackageNotFoundError:
        return __version__
