"""The Open Rails profile's brake pipe (docs/physics.md §7.3), compiled with numba:
:meth:`tdbtools.physics.orts.airbrake.AirBrakeTrain.step_pipe`'s sub-steps, operation
for operation (the numpy/Python code there is the reference; ``tests/test_orts_physics.py``
compares the two). The pipe's sweep from the front is sequential, car after car, and
runs some hundred sub-steps per replay step (``BrakePipeTimeFactor`` 0.0015 s): in
Python that is most of a replay's time while a train brakes.
"""

from __future__ import annotations

from numba import njit

_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def step_pipe(bp, vol, target, has_target, emergency, charging_rate, service_tau, emergency_tau, tau, dt):
    """Advance the pipe pressures ``bp`` (in place) by ``dt`` s towards ``target``
    (``has_target`` False: the handle laps, the lead is left alone)."""
    n = int(dt / tau + 1)
    h = dt / n
    k = min(h / tau, 1.0)
    m = bp.size
    for _ in range(n):
        if has_target:
            if bp[0] < target:
                bp[0] = min(bp[0] + h * charging_rate, target)
            elif bp[0] > target:
                t = emergency_tau if emergency else service_tau
                drop = min(h / t, 0.95) * bp[0]
                bp[0] = max(bp[0] - drop, target)
        for i in range(1, m):
            d = (bp[i] - bp[i - 1]) * k
            s = vol[i - 1] + vol[i]
            bp[i] -= d * vol[i - 1] / s
            bp[i - 1] += d * vol[i] / s
