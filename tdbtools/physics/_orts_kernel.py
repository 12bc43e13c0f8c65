"""The Open Rails profile's brakes (docs/physics.md §7.3), compiled with numba:
:meth:`tdbtools.physics.orts.airbrake.AirBrakeTrain.step_pipe`'s sub-steps, its triple
valves, and each car's brake force from its cylinder and shoes, operation for operation
(the numpy/Python code is the reference; ``tests/test_orts_replay.py`` compares the two).
The pipe's sweep from the front is sequential, car after car, and runs some hundred
sub-steps per replay step (``BrakePipeTimeFactor`` 0.0015 s): in Python that is most of
a replay's time while a train brakes. The valves and the forces replace a dozen numpy
calls each on a long train's cars, whose fixed cost was most of their time.
"""

from __future__ import annotations

from numba import njit

_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def step_pipe(
    bp, vol, target, has_target, emergency, charging_rate, service_tau, emergency_tau, tau, dt, settled
):
    """Advance the pipe pressures ``bp`` (in place) by ``dt`` s towards ``target``
    (``has_target`` False: the handle laps, the lead is left alone). A pipe within
    ``settled`` psi of the target everywhere is set to it instead (the Python code's
    ``np.max(np.abs(bp - target)) <= settled``: a NaN anywhere is not settled)."""
    if has_target:
        near = True
        for i in range(bp.size):
            d = abs(bp[i] - target)
            if not d <= settled:  # (a NaN too)
                near = False
                break
        if near:
            bp[:] = target
            return
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


# the triple valves' states (orts/airbrake.py's LAP, APPLY, RELEASE, EMERGENCY) and constants
_LAP, _APPLY, _RELEASE, _EMERGENCY = 0, 1, 2, 3
_VALVE_BAND = 1.0
_AUX_PIPE_VOLUME_RATIO = 3.1


@_jit
def _np_max(a, b):
    """``np.maximum(a, b)`` element by element: a NaN from either side, else ``b`` unless
    ``a > b`` (so of two zeros the second, as numpy's loop gives)."""
    return a if (a > b or a != a) else b


@_jit
def _np_min(a, b):
    """``np.minimum(a, b)`` element by element (as :func:`_np_max`)."""
    return a if (a < b or a != a) else b


@_jit
def step_valves(bp, aux, cyl, state, ratio, app_rate, rel_rate, aux_rate, full_service_bp, dt):
    """:meth:`AirBrakeTrain.step_valves` (in place), car by car: the same operations as its
    numpy masks and ``np.where``s, each car's on its own numbers (no car reads another's)."""
    emerg_below = full_service_bp - _VALVE_BAND
    for i in range(bp.size):
        b, x, c, s0, r = bp[i], aux[i], cyl[i], state[i], ratio[i]
        emerg = b < emerg_below
        release = ((not emerg) and b > x + _VALVE_BAND) or (s0 == _EMERGENCY and b > x)
        apply_ = (not emerg) and (not release) and s0 != _EMERGENCY and b < x - _VALVE_BAND
        lap = s0 == _APPLY and (not emerg) and (not release) and (not apply_) and b >= x
        s = s0
        if emerg:
            s = _EMERGENCY
        if release:
            s = _RELEASE
        if apply_:
            s = _APPLY
        if lap:
            s = _LAP
        a = s == _APPLY or s == _EMERGENCY
        dp = dt * app_rate[i]
        if x - dp / r < c + dp:
            dp = (x - c) * r / (1.0 + r)
        at_pipe = b > x - dp / r
        if at_pipe:
            dp = (x - b) * r
        dp = _np_max(dp, 0.0) if a else 0.0
        if a and at_pipe and s == _APPLY:
            s = _LAP
        x = x - dp / r
        c = c + dp
        rel = s == _RELEASE
        if rel:
            c = _np_max(c - dt * rel_rate[i], 0.0)
        dq = _np_min(dt * aux_rate[i], (b - x) / (1.0 + _AUX_PIPE_VOLUME_RATIO))
        dq = _np_max(dq, 0.0) if (rel and x < b) else 0.0
        aux[i] = x + dq
        bp[i] = b - dq * _AUX_PIPE_VOLUME_RATIO
        cyl[i] = c
        state[i] = s


@_jit
def _np_clip(x, lo, hi):
    """``np.clip(x, lo, hi)`` of one element as numpy's loop gives it: ``x`` unless below
    ``lo`` or above ``hi`` (so a NaN stays, and so does −0.0 against a ``lo`` of 0.0)."""
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


# the default brake-shoe curve (orts/brakes.py: default_shoe_mu, DEFAULT_SHOE_NORMALISER)
# and the factor's clamp (formats/stock_parts.py: BRAKE_SHOE_FACTOR_MIN/MAX)
LAW_FACTOR, LAW_MU = 0, 1


@_jit
def brake_forces(v, cyl, max_cyl, spring, capacity, law, normaliser, lo, hi, force, frac):
    """Per car (written into ``force`` and ``frac``): the cylinder's share of the full
    force, ``clip((cyl − spring)/(max_cyl − spring), 0, 1)``, and the brake force
    ``capacity · share · shoe``, the shoe's factor by Open Rails' default curve at the
    car's speed ``v``: μ itself (``law`` LAW_MU) or ``clip(μ/normaliser, lo, hi)``
    (LAW_FACTOR); as :class:`~tdbtools.physics.orts.brakes.ShoeFactors` and
    :func:`~tdbtools.physics.orts.brakes.cylinder_fraction` give them with numpy."""
    for i in range(v.size):
        u = abs(v[i]) * 3.6
        mu = 7.6 / (u + 17.5) + 0.07
        shoe = mu if law == LAW_MU else _np_clip(mu / normaliser, lo, hi)
        c = _np_clip((cyl[i] - spring[i]) / (max_cyl[i] - spring[i]), 0.0, 1.0)
        frac[i] = c
        force[i] = capacity[i] * c * shoe
