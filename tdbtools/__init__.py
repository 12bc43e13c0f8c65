"""tdbtools: read, model, travel and replay Microsoft Train Simulator / Open Rails routes."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from .errors import TdbToolsError

try:
    __version__ = _version("tdbtools")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["TdbToolsError", "__version__", "load_route", "stf"]


def __getattr__(name: str):
    # Imported on first use so that `import tdbtools` stays cheap.
    if name == "load_route":
        from .formats.route import load_route

        return load_route
    if name == "stf":
        from . import stf

        return stf
    raise AttributeError(f"module 'tdbtools' has no attribute {name!r}")
