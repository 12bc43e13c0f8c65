"""The one switch of the optional compiled kernels (numba, ``pip install "tdbtools[fast]"``).

Every layer that has a kernel asks here whether numba may run: the replay's kernels
(``physics/kernels.py`` decides per replay) and the .tdb bulk reader's number reader
(``formats/_numbers_kernel.py``, for large track databases). Each kernel gives the
numbers of the numpy code it stands for, bit for bit; that code runs without numba, or
when the environment says

    TDBTOOLS_PURE_PYTHON=1 tdbtools ...

(for a user who suspects a kernel, and for the CI job that runs the tests so). This module
sits below every layer (it imports nothing of tdbtools), so that a layer below physics
reads the same switch without importing physics.
"""

from __future__ import annotations

import os

__all__ = ["PURE_PYTHON_ENV", "numba_usable", "pure_python_requested"]

#: The environment variable that runs everything on the numpy reference code ("1").
PURE_PYTHON_ENV = "TDBTOOLS_PURE_PYTHON"


def pure_python_requested() -> bool:
    """Whether the environment asks for the numpy reference code (module docstring)."""
    return os.environ.get(PURE_PYTHON_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def numba_usable() -> bool:
    """Whether numba imports and is 0.60 or newer (numpy 2 support). A numba that cannot
    be imported (one made for another numpy, say) counts as none. Not cached: callers
    keep their own answer (``physics.kernels.reset`` forgets it)."""
    try:
        import numba
    except Exception:  # noqa: BLE001 - any broken install means "not available"
        return False
    try:
        major, minor = (int(p) for p in numba.__version__.split(".")[:2])
    except (AttributeError, ValueError):
        return False
    return (major, minor) >= (0, 60)
