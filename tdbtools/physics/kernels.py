"""Which code a replay runs: the compiled kernels or the numpy reference they stand for.

Every compiled part of a replay asks this module, and only this module, whether it may
run: the engine's step (``_engine_kernel``), the batch drivers and their controls
(``_driver_kernel``), the line-table lookups and the collision checks' pairing of cars
(``_lookup_kernel``), the per-car arithmetic around the engine (``_step_kernel``) and
the Open Rails profile's brakes (``_orts_kernel``).
Each gives the numbers of its numpy reference bit for bit (the tests compare them).

The kernels run when a usable numba is installed (``pip install "tdbtools[fast]"``;
numba ≥ 0.60 that imports). One environment switch turns them all off:

    TDBTOOLS_PURE_PYTHON=1 tdbtools replay ...

runs a whole replay on the numpy reference code, as a machine without numba does (for a
user who suspects a kernel, and for the CI job that runs the physics tests so). It is
read when a replay first asks; :func:`reset` makes the next question read it again.

Even with numba a replay runs the kernels only where they pay off: loading them from
numba's cache costs about 0.7 s of CPU (numba's import, then each kernel's machine code),
more than a small replay spends on the reference code. :func:`replay_compiled` decides it
once per replay, from its cars and the steps of its duration, before the engine and the
stages are built (the crossover measured: docs/development.md §5). The numbers are the
same either way, bit for bit.
"""

from __future__ import annotations

import importlib
from typing import Any

# The switch itself lives below every layer (the .tdb reader's kernel reads it too).
from .._compiled import PURE_PYTHON_ENV, numba_usable, pure_python_requested

_COMPILED: bool | None = None

#: A replay runs the compiled kernels from this much work on: its cars × the steps of
#: its duration (``duration / step``). Below, loading them costs more than they save
#: (docs/development.md §5 has the measured crossover).
COMPILED_MIN_WORK = 100_000


def compiled_available() -> bool:
    """Whether the compiled kernels run: a usable numba is installed (one that imports,
    0.60 or newer) and :data:`PURE_PYTHON_ENV` does not ask for the reference code. A
    numba that cannot be imported (one made for another numpy, say) counts as none: the
    replay then runs on numpy alone."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = not pure_python_requested() and numba_usable()
    return _COMPILED


def replay_compiled(cars: int, steps: float) -> bool:
    """Whether a replay of ``cars`` cars over ``steps`` steps runs the compiled kernels:
    when they are available (:func:`compiled_available`) and its work, cars × steps, is
    at least :data:`COMPILED_MIN_WORK`. A smaller replay does not even import numba."""
    if cars * steps < COMPILED_MIN_WORK:
        return False
    return compiled_available()


class LazyKernel:
    """A compiled kernel, ``tdbtools.physics.<module>.<name>``, imported on its first call
    when :func:`compiled_available`; calling gives it, or None. ``value`` holds what was
    found (None: not looked for yet, False: none)."""

    __slots__ = ("module", "name", "value")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        self.value: object = None
        _LAZY.append(self)

    def __call__(self) -> Any:
        if self.value is None:
            self.value = False
            if compiled_available():
                self.value = getattr(importlib.import_module(f"tdbtools.physics.{self.module}"), self.name)
        return self.value or None


_LAZY: list[LazyKernel] = []


def entry_point(dispatcher: Any, args: tuple | None = None) -> Any:
    """The machine code numba's ``dispatcher`` ran for ``args`` (after a call with them),
    or, ``args`` None, its one compiled signature (a kernel declared with its signature),
    called without the dispatcher's matching of the argument types (a few µs with
    thirty arguments): only for a caller that hands it the same types every time
    (float64 arrays of one layout, Python floats, ints and bools). The dispatcher itself
    when numba keeps it otherwise."""
    try:
        if args is None:
            (compiled,) = dispatcher.overloads.values()
            return compiled.entry_point
        sig = tuple(dispatcher.typeof_pyval(a) for a in args)
        return dispatcher.overloads[sig].entry_point
    except (AttributeError, KeyError, ValueError):  # (another numba; not one signature)
        return dispatcher


def reset() -> None:
    """Forget what was decided: the next replay asks numba and the environment again."""
    global _COMPILED
    _COMPILED = None
    for k in _LAZY:
        k.value = None


__all__ = [
    "COMPILED_MIN_WORK",
    "PURE_PYTHON_ENV",
    "LazyKernel",
    "compiled_available",
    "entry_point",
    "pure_python_requested",
    "replay_compiled",
    "reset",
]
