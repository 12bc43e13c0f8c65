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

import numpy as np
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


@_jit
def _block(a, s, n):
    """numpy's ``pairwise_sum`` of at most 128 elements ``a[s:s + n]``: a plain sum below
    8, else 8 running partial sums combined as a tree, then the rest one by one."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[s + i]
        return res
    r0 = a[s]
    r1 = a[s + 1]
    r2 = a[s + 2]
    r3 = a[s + 3]
    r4 = a[s + 4]
    r5 = a[s + 5]
    r6 = a[s + 6]
    r7 = a[s + 7]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[s + i]
        r1 += a[s + i + 1]
        r2 += a[s + i + 2]
        r3 += a[s + i + 3]
        r4 += a[s + i + 4]
        r5 += a[s + i + 5]
        r6 += a[s + i + 6]
        r7 += a[s + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[s + i]
        i += 1
    return res


@_jit
def _pairwise(a, s, n):
    """numpy's pairwise sum of ``a[s:s + n]``: blocks of at most 128 (:func:`_block`),
    longer runs halved (at a multiple of 8) and the halves' sums added. Without
    recursion (a recursive function loaded from numba's cache crashed the process): the
    same tree walked with a stack of tasks, a negative count meaning "add the last two
    sums" (a split pushes that, then its right and its left half, so the left goes
    first; the depth is at most ~60, so 128 entries suffice)."""
    if n <= 128:
        return _block(a, s, n)
    ts = np.empty(128, np.int64)
    tn = np.empty(128, np.int64)
    vals = np.empty(64)
    ts[0] = s
    tn[0] = n
    nt = 1
    nv = 0
    while nt > 0:
        nt -= 1
        st = ts[nt]
        c = tn[nt]
        if c < 0:
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
        elif c <= 128:
            vals[nv] = _block(a, st, c)
            nv += 1
        else:
            n2 = c // 2
            n2 -= n2 % 8
            tn[nt] = -1
            ts[nt + 1] = st + n2
            tn[nt + 1] = c - n2
            ts[nt + 2] = st
            tn[nt + 2] = n2
            nt += 3
    return vals[0]


@_jit
def np_sum(a, s, e):
    """``np.add.reduce(a[s:e])`` of a contiguous float64 array, bit for bit: numpy starts
    the reduction from its identity, +0.0, and adds the pairwise sum of all the elements
    (so a sum of −0.0s is +0.0)."""
    return 0.0 + _pairwise(a, s, e - s)


# rows of train_brakes' per-car constants (``cars``) and entries of its train constants
# (``consts``), packed once per train (orts/replay_forces.py: _TrainBrakes)
B_VOL, B_APP_RATE, B_REL_RATE, B_AUX_RATE, B_RATIO, B_MAX_CYL, B_SPRING, B_CAPACITY = range(8)
N_BRAKE_ROWS = 8
P_CHARGING, P_SERVICE_TAU, P_EMERGENCY_TAU, P_TAU, P_SETTLED, P_FULL_SERVICE_BP = range(6)
P_LAW, P_NORMALISER, P_SHOE_MIN, P_SHOE_MAX = range(6, 10)
N_BRAKE_CONSTS = 10


@_jit
def train_brakes(bp, aux, cyl, state, cars, consts, target, has_target, emergency, dt, v, force, frac):
    """One train's air brakes for a step of ``dt`` s in one call: :func:`step_pipe` towards
    ``target`` (``has_target`` False: lapped), :func:`step_valves`, then
    :func:`brake_forces` into ``force`` and ``frac`` (per car); returns the mean of
    ``frac`` as numpy's ``np.add.reduce(frac) / frac.size`` gives it. The same functions
    as the three calls it replaces, so the same numbers, with a dozen arguments instead
    of some thirty (numba's dispatch costs per argument)."""
    step_pipe(
        bp, cars[B_VOL], target, has_target, emergency, consts[P_CHARGING], consts[P_SERVICE_TAU],
        consts[P_EMERGENCY_TAU], consts[P_TAU], dt, consts[P_SETTLED],
    )  # fmt: skip
    step_valves(
        bp, aux, cyl, state, cars[B_RATIO], cars[B_APP_RATE], cars[B_REL_RATE], cars[B_AUX_RATE],
        consts[P_FULL_SERVICE_BP], dt,
    )  # fmt: skip
    law = LAW_MU if consts[P_LAW] == LAW_MU else LAW_FACTOR
    brake_forces(
        v, cyl, cars[B_MAX_CYL], cars[B_SPRING], cars[B_CAPACITY], law, consts[P_NORMALISER],
        consts[P_SHOE_MIN], consts[P_SHOE_MAX], force, frac,
    )  # fmt: skip
    n = frac.size
    return np_sum(frac, 0, n) / n
