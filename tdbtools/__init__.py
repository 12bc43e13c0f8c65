"""tdbtools: read, model, travel and replay Microsoft Train Simulator / Open Rails routes."""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from .errors import TdbToolsError

try:
    __version__ = _version("tdbtools")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

#: The packages, imported on first use so that `import tdbtools` stays cheap.
_PACKAGES = ("stf", "formats", "track", "signals", "physics", "render", "export", "sweep")

__all__ = ["TdbToolsError", "__version__", "load_route", *_PACKAGES]


def __getattr__(name: str):
    if name == "load_route":
        from .formats.route import load_route

        return load_route
    if name in _PACKAGES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tdbtools' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The lazy names too, so that `tdbtools.<TAB>` completes them.
    return sorted({*__all__, "errors"})
