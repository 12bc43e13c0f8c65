"""One automatic driver's step compiled (docs/running-time.md §2.1).

:meth:`AutoDriver.__call__ <tdbtools.physics.driver.AutoDriver.__call__>` is the
reference: after its stops (arrivals, waits, departures) and its passed targets, it hands
the rest of the step (the constraints ahead, the braking curves, the brakes' follow-up)
to its :attr:`~tdbtools.physics.driver.AutoDriver.compiled`, a :class:`CompiledStep`,
which calls ``_driver_kernel.one_step``: the same operations in the same order, so the
same controls and brake state bit for bit. What the kernel does not take (extra targets,
constraints replaced by anything but the train's own signal wrapper, a lapping driver
once it brakes: its level is found by bisection through ``stop_gain``) goes on in the
Python, as it did. The replay sets it on the automatic drivers it makes when it runs the
compiled kernels (:func:`~tdbtools.physics.kernels.replay_compiled`, one switch).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..signals.runtime import CREEP
from .driver import EMERGENCY_OVER, AutoDriver, Controls, DriveState
from .kernels import LazyKernel, entry_point
from .signalling import SignalDriver

__all__ = ["CompiledStep", "compile_driver"]

_ONE_STEP = LazyKernel("_driver_kernel", "one_step")
_NO_LIMITS = np.zeros((0, 3))
#: one_step's arguments that are flags (the first three are arrays, the rest floats)
_FLAGS = frozenset((15, 16, 17, 19, 21))


class CompiledStep:
    """The compiled rest of one :class:`AutoDriver`'s step (module docstring).
    ``wrapper``: the signal wrapper whose constraints the driver's are (None: its own);
    its stop, creep and limits are read at each call, its limits turned into an array
    when the list is replaced (the replay's signals hand over a new one)."""

    __slots__ = ("_kernel", "_lim", "_lim_of", "_posts", "_posts_of", "wrapper")

    def __init__(self, kernel: Any, wrapper: Any = None) -> None:
        self._kernel = kernel
        self.wrapper = wrapper
        self._posts_of: tuple = ()
        self._posts: tuple[np.ndarray, np.ndarray] = (_NO_LIMITS[:, 0], _NO_LIMITS[:, 0])
        self._lim_of: object = None
        self._lim = _NO_LIMITS

    def step(self, d: AutoDriver, st: DriveState) -> Controls | None:
        """The controls of ``d`` for this step, its ``_applied`` and ``_braking`` set as
        its Python does; None: the Python must decide (``d`` untouched)."""
        w = self.wrapper
        if vars(d).get("constraints") is not (None if w is None else w.constraints):
            return None  # someone else's constraints
        ls, lv = d.limit_s, d.limit_v
        of = self._posts_of
        if not of or of[0] is not ls or of[1] is not lv:
            self._posts_of = (ls, lv)
            self._posts = (np.array(ls, dtype=np.float64), np.array(lv, dtype=np.float64))
        stops = d.stops
        decel = d.decel
        nan = math.nan
        if w is None:
            lim = _NO_LIMITS
            sig_stop = creep_at = None
        else:
            sig_stop, creep_at = w.stop_s, w.creep_at
            got = w.limits
            if got is not self._lim_of:
                self._lim_of = got
                self._lim = np.array(got, dtype=np.float64).reshape(-1, 3) if got else _NO_LIMITS
            lim = self._lim
        args: tuple[Any, ...] = (
            self._posts[0], self._posts[1], lim, st.front, st.rear, st.speed, st.dt, decel,
            d.brake_level or decel, d._applied, d.brake_delay, d.max_speed, d.speed_factor,
            d.coast_before, d.release_over_build, d.lap_brakes, d._braking, bool(stops),
            stops[0].s if stops else nan, sig_stop is not None,
            nan if sig_stop is None else sig_stop, creep_at is not None,
            nan if creep_at is None else creep_at, CREEP, d.ON_CURVE, EMERGENCY_OVER,
        )  # fmt: skip
        kernel: Any = self._kernel
        dispatcher: Any = _ONE_STEP.value
        if kernel is not dispatcher:  # (the compiled code found at the first call)
            kind, value, applied, emergency = kernel(*args)
        else:
            # the first call through numba's dispatcher, with the types every call then
            # hands over (an int or a numpy float is made a float when it is unboxed)
            args = tuple(a if k < 3 else bool(a) if k in _FLAGS else float(a) for k, a in enumerate(args))
            kind, value, applied, emergency = kernel(*args)
            self._kernel = entry_point(kernel, args)
        if kind < 0:
            return None
        d._applied = applied
        if kind == 0:
            return Controls(0.0, 0.0, 0.0, value)
        if kind == 1:
            return Controls()
        if kind == 3:
            d._braking = d.lap_brakes
        return Controls(deceleration=value, emergency=emergency)


def compile_driver(driver: Any) -> bool:
    """Give ``driver`` (an :class:`AutoDriver`, or a signal wrapper holding one) its
    compiled step when the compiled kernels are there; whether it got one."""
    kernel = _ONE_STEP()
    if kernel is None:
        return False
    if type(driver) is AutoDriver:
        driver.compiled = CompiledStep(kernel)
        return True
    if type(driver) is SignalDriver and type(driver.inner) is AutoDriver:
        driver.inner.compiled = CompiledStep(kernel, driver)
        return True
    return False
