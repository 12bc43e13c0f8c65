"""The optional compiled kernels' common ground (numba, ``pip install "tdbtools[fast]"``;
docs/physics.md §1.1): whether numba is usable, and kernels imported on first use. Every
kernel gives the numbers of the Python/numpy code it stands for, which runs without it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["LazyKernel", "numba_usable"]


def numba_usable() -> bool:
    """Whether numba can be imported and is 0.60 or newer. A numba that cannot be
    imported (one made for another numpy, say) counts as none."""
    try:
        import numba
    except Exception:  # noqa: BLE001 - any broken install means "not available"
        return False
    major, minor = (int(p) for p in numba.__version__.split(".")[:2])
    return (major, minor) >= (0, 60)


class LazyKernel:
    """A compiled kernel, ``<module>.<name>`` (a module of tdbtools, dotted), imported on
    its first call when ``available()`` says numba is usable; calling gives it, or None
    without numba. ``value`` holds what was found (None: not looked for yet, False:
    none)."""

    __slots__ = ("available", "module", "name", "value")

    def __init__(self, module: str, name: str, available: Callable[[], bool] = numba_usable) -> None:
        self.module, self.name, self.available = module, name, available
        self.value: object = None

    def __call__(self) -> Any:
        if self.value is None:
            self.value = False
            if self.available():
                self.value = getattr(importlib.import_module(f"tdbtools.{self.module}"), self.name)
        return self.value or None
