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

import math

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
def same_bits(a, b):
    """Whether the floats ``a`` and ``b`` are the same bits (a NaN never is: a caller that
    skips work on "nothing changed" then does the work)."""
    if a != b:
        return False
    return a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b)


@_jit
def step_valves(bp, aux, cyl, state, ratio, app_rate, rel_rate, aux_rate, full_service_bp, dt):
    """:meth:`AirBrakeTrain.step_valves` (in place), car by car: the same operations as its
    numpy masks and ``np.where``s, each car's on its own numbers (no car reads another's).
    Returns whether any value it wrote differs from what was there (bit for bit)."""
    changed = False
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
        x = x + dq
        b = b - dq * _AUX_PIPE_VOLUME_RATIO
        if not changed:
            changed = not (
                same_bits(x, aux[i]) and same_bits(b, bp[i]) and same_bits(c, cyl[i]) and s == state[i]
            )
        aux[i] = x
        bp[i] = b
        cyl[i] = c
        state[i] = s
    return changed


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
def _block(a, s, n, f):
    """numpy's ``pairwise_sum`` of at most 128 elements ``a[s:s + n]·f``: a plain sum below
    8, else 8 running partial sums combined as a tree, then the rest one by one (each
    product rounded on its own, as numpy's ``a * f`` array is: no fused multiply-add)."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[s + i] * f
        return res
    r0 = a[s] * f
    r1 = a[s + 1] * f
    r2 = a[s + 2] * f
    r3 = a[s + 3] * f
    r4 = a[s + 4] * f
    r5 = a[s + 5] * f
    r6 = a[s + 6] * f
    r7 = a[s + 7] * f
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[s + i] * f
        r1 += a[s + i + 1] * f
        r2 += a[s + i + 2] * f
        r3 += a[s + i + 3] * f
        r4 += a[s + i + 4] * f
        r5 += a[s + i + 5] * f
        r6 += a[s + i + 6] * f
        r7 += a[s + i + 7] * f
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[s + i] * f
        i += 1
    return res


@_jit
def _pairwise(a, s, n, f):
    """numpy's pairwise sum of ``a[s:s + n]·f``: blocks of at most 128 (:func:`_block`),
    longer runs halved (at a multiple of 8) and the halves' sums added. Without
    recursion (a recursive function loaded from numba's cache crashed the process): the
    same tree walked with a stack of tasks, a negative count meaning "add the last two
    sums" (a split pushes that, then its right and its left half, so the left goes
    first; the depth is at most ~60, so 128 entries suffice)."""
    if n <= 128:
        return _block(a, s, n, f)
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
            vals[nv] = _block(a, st, c, f)
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
    (so a sum of −0.0s is +0.0). (``x·1.0`` is ``x``.)"""
    return 0.0 + _pairwise(a, s, e - s, 1.0)


@_jit
def scaled_sum(a, f):
    """``np.add.reduce(a * f)`` for a contiguous float64 array ``a`` and a float ``f``
    (orts/auto_brakes.py: BrakePlan.full_force), bit for bit, without the product array."""
    return 0.0 + _pairwise(a, 0, a.size, f)


@_jit
def two_sums(x, y, s, e):
    """(``np.add.reduce(x[s:e])``, ``np.add.reduce(y[s:e])``) in one call (a train's
    gravity and resistance, orts/replay_forces.py)."""
    return np_sum(x, s, e), np_sum(y, s, e)


# rows of train_brakes' per-car constants (``cars``) and entries of its train constants
# (``consts``), packed once per train (orts/replay_forces.py: _TrainBrakes)
B_VOL, B_APP_RATE, B_REL_RATE, B_AUX_RATE, B_RATIO, B_MAX_CYL, B_SPRING, B_CAPACITY = range(8)
N_BRAKE_ROWS = 8
P_CHARGING, P_SERVICE_TAU, P_EMERGENCY_TAU, P_TAU, P_SETTLED, P_FULL_SERVICE_BP = range(6)
P_LAW, P_NORMALISER, P_SHOE_MIN, P_SHOE_MAX = range(6, 10)
N_BRAKE_CONSTS = 10


# train_brakes' memory of its last call (``memo``, per train): whether that call's pipe and
# valves left every value as it was (QUIET, or RELEASED: quiet with every cylinder's share
# +0.0 and every capacity a finite number without a sign bit), the inputs it had, and the
# mean cylinder share
M_QUIET, M_TARGET, M_HAS_TARGET, M_EMERGENCY, M_DT, M_APPLIED = range(6)
N_BRAKE_MEMO = 6
BUSY, QUIET, RELEASED = 0.0, 1.0, 2.0


@_jit
def _shares_forces(v, frac, capacity, law, normaliser, lo, hi, force):
    """:func:`brake_forces`' forces from the cylinders' shares ``frac`` it gave."""
    for i in range(v.size):
        u = abs(v[i]) * 3.6
        mu = 7.6 / (u + 17.5) + 0.07
        shoe = mu if law == LAW_MU else _np_clip(mu / normaliser, lo, hi)
        force[i] = capacity[i] * frac[i] * shoe


@_jit
def _released(frac, capacity):
    """Whether every share in ``frac`` is +0.0 and every capacity a finite number without
    a sign bit: then each car's ``capacity · share · shoe`` is +0.0 whatever its speed
    but a NaN one (the shoe factor of a finite or infinite speed is finite and positive:
    ``7.6/(u + 17.5) + 0.07`` ≥ 0.07, clipped to positive bounds or not)."""
    for i in range(frac.size):
        c = frac[i]
        k = capacity[i]
        if not (c == 0.0 and math.copysign(1.0, c) > 0.0):
            return False
        if not (k >= 0.0 and math.copysign(1.0, k) > 0.0 and k < math.inf):
            return False
    return True


@_jit
def _released_forces(v, frac, capacity, law, normaliser, lo, hi, force):
    """:func:`_shares_forces` of released brakes (:func:`_released`): +0.0 per car but
    where the speed is NaN (worked out there, so its NaN is the formula's); returns
    ``np_sum`` of the forces (+0.0 without a NaN: numpy's sum of +0.0s)."""
    nan = False
    for i in range(v.size):
        s = v[i]
        if s == s:
            force[i] = 0.0
        else:
            nan = True
            u = abs(s) * 3.6
            mu = 7.6 / (u + 17.5) + 0.07
            shoe = mu if law == LAW_MU else _np_clip(mu / normaliser, lo, hi)
            share_force = capacity[i] * frac[i]
            force[i] = share_force * shoe
    return np_sum(force, 0, v.size) if nan else 0.0


@_jit
def _pipe_at(bp, target, settled):
    """Whether :func:`step_pipe` towards ``target`` leaves ``bp`` as it is: every car's
    pressure is the target's bits (then it is within ``settled`` and set to the target)."""
    if not 0.0 <= settled:
        return False
    for i in range(bp.size):
        if not same_bits(bp[i], target):
            return False
    return True


@_jit
def train_brakes(bp, aux, cyl, state, cars, consts, target, has_target, emergency, dt, v, force, frac, memo):
    """One train's air brakes for a step of ``dt`` s in one call: :func:`step_pipe` towards
    ``target`` (``has_target`` False: lapped), :func:`step_valves`, then
    :func:`brake_forces` into ``force`` and ``frac`` (per car); returns the mean of
    ``frac`` as numpy's ``np.add.reduce(frac) / frac.size`` gives it, and
    ``np.add.reduce(force)``. The same functions
    as the three calls it replaces, so the same numbers, with a dozen arguments instead
    of some thirty (numba's dispatch costs per argument).

    A released train's brakes come to rest: the pipe at the target and the valves
    changing nothing. ``memo`` (``M_*``) remembers a call whose pipe and valves changed
    nothing and its inputs; the next call with the same inputs (bit for bit) skips both,
    since they are functions of the state and those inputs alone and would change
    nothing again; the cylinders' shares in ``frac`` and their mean are then those of the
    last call too. The forces, which follow the cars' speeds, are worked out each call;
    of released brakes (RELEASED: every share +0.0, see :func:`_released`) they are +0.0
    without the shoe's arithmetic (the same bits)."""
    law = LAW_MU if consts[P_LAW] == LAW_MU else LAW_FACTOR
    n = frac.size
    if (
        memo[M_QUIET] != BUSY
        and same_bits(target, memo[M_TARGET])
        and has_target == (memo[M_HAS_TARGET] != 0.0)
        and emergency == (memo[M_EMERGENCY] != 0.0)
        and same_bits(dt, memo[M_DT])
    ):
        if memo[M_QUIET] == RELEASED:
            total = _released_forces(
                v, frac, cars[B_CAPACITY], law, consts[P_NORMALISER], consts[P_SHOE_MIN], consts[P_SHOE_MAX],
                force,
            )  # fmt: skip
            return memo[M_APPLIED], total
        _shares_forces(
            v, frac, cars[B_CAPACITY], law, consts[P_NORMALISER], consts[P_SHOE_MIN], consts[P_SHOE_MAX], force
        )  # fmt: skip
        return memo[M_APPLIED], np_sum(force, 0, n)
    pipe_still = has_target and _pipe_at(bp, target, consts[P_SETTLED])
    step_pipe(
        bp, cars[B_VOL], target, has_target, emergency, consts[P_CHARGING], consts[P_SERVICE_TAU],
        consts[P_EMERGENCY_TAU], consts[P_TAU], dt, consts[P_SETTLED],
    )  # fmt: skip
    valves_changed = step_valves(
        bp, aux, cyl, state, cars[B_RATIO], cars[B_APP_RATE], cars[B_REL_RATE], cars[B_AUX_RATE],
        consts[P_FULL_SERVICE_BP], dt,
    )  # fmt: skip
    memo[M_QUIET] = QUIET if (pipe_still and not valves_changed) else BUSY
    memo[M_TARGET] = target
    memo[M_HAS_TARGET] = 1.0 if has_target else 0.0
    memo[M_EMERGENCY] = 1.0 if emergency else 0.0
    memo[M_DT] = dt
    brake_forces(
        v, cyl, cars[B_MAX_CYL], cars[B_SPRING], cars[B_CAPACITY], law, consts[P_NORMALISER],
        consts[P_SHOE_MIN], consts[P_SHOE_MAX], force, frac,
    )  # fmt: skip
    applied = np_sum(frac, 0, n) / n
    memo[M_APPLIED] = applied
    if memo[M_QUIET] != BUSY and _released(frac, cars[B_CAPACITY]):
        memo[M_QUIET] = RELEASED
    return applied, np_sum(force, 0, n)


# -- one power unit (orts/unit.py: PowerUnit) ---------------------------------------------
# The cases compiled: a diesel with at most one engine and no ThrottleRPMTab, or an
# electric; no gearbox, no force curves, not power-limited, no dynamic brake (PowerUnit.
# compile says so and keeps the Python code for every other unit). Entries of ``spec``:
U_ENGINES, U_DIESEL_LAW, U_IDLE, U_MAX_RPM, U_CHANGE_UP, U_CHANGE_DOWN, U_RATE_UP, U_RATE_DOWN = range(8)
U_MAX_FORCE, U_RAIL_POWER, U_UNLOAD, U_MAX_VELOCITY, U_DERATE, U_DERATE_FM, U_DERATE_FC = range(8, 15)
U_DERATE_TAU, U_DRIVE_MASS, U_FORCE_UP, U_FORCE_DOWN, U_FORCE_TO_ZERO, U_POWER_UP = range(15, 21)
U_POWER_DOWN, U_POWER_TO_ZERO = range(21, 23)
N_UNIT_SPEC = 23
# keep in step with orts/diesel.py, orts/traction.py and orts/adhesion.py (tests check them)
MIN_RATE_SHARE = 0.01
EASE_FACTOR = 1.25
FADE_BAND_MS = 0.05
G = 9.80665


@_jit
def _pmin(a, b):
    """Python's ``min(a, b)``: ``a`` unless ``b < a`` (a NaN or −0.0 ``a`` stays)."""
    return b if b < a else a


@_jit
def _pmax(a, b):
    """Python's ``max(a, b)``: ``a`` unless ``b > a``."""
    return b if b > a else a


@_jit
def _step_engine(spec, rpm, drpm, demanded, dt):
    """orts/diesel.py step_engine (factor 1)."""
    if rpm < demanded:
        jerk = spec[U_RATE_UP] * 1.0
        change = spec[U_CHANGE_UP]
        want = _pmin(_pmax(math.sqrt(2.0 * jerk * (demanded - rpm)), MIN_RATE_SHARE * change), change)
        drpm = _pmin(_pmax(want, drpm - EASE_FACTOR * jerk * dt), drpm + jerk * dt)
        if rpm + drpm * dt > demanded:
            return demanded, (demanded - rpm) / dt
    elif rpm > demanded:
        jerk = spec[U_RATE_DOWN] * 1.0
        change = spec[U_CHANGE_DOWN]
        want = -_pmin(_pmax(math.sqrt(2.0 * jerk * (rpm - demanded)), MIN_RATE_SHARE * change), change)
        drpm = _pmin(_pmax(want, drpm - jerk * dt), drpm + EASE_FACTOR * jerk * dt)
        if rpm + drpm * dt < demanded:
            return demanded, (demanded - rpm) / dt
    else:
        return demanded, 0.0
    return _pmax(rpm + drpm * dt, 0.0), drpm


@_jit
def _available(spec, t, v):
    """PowerUnit.available: traction.basic_diesel_force or basic_electric_force."""
    if t <= 0:
        return 0.0
    v = abs(v)
    max_speed = spec[U_MAX_VELOCITY]
    if spec[U_DIESEL_LAW] != 0.0:
        unload = spec[U_UNLOAD]
        force = t * spec[U_MAX_FORCE]
        power = t * spec[U_RAIL_POWER]
        if unload > 0 and unload < v and v < max_speed:
            power *= _pmin(_pmax(1.0 - (v - unload) / unload, 0.0), 1.0)
    else:
        if max_speed <= 0 or v <= max_speed - FADE_BAND_MS:
            fade = 1.0
        elif v > max_speed:
            fade = 0.0
        else:
            fade = 20.0 * (max_speed - v)
        force = t * spec[U_MAX_FORCE] * fade
        power = spec[U_RAIL_POWER] * t * t
    if force * v > power:
        force = power / v
    return force


@_jit
def _limits(spec, throttle, v, rpm):
    """PowerUnit._limits (not power-limited): (effective throttle, its limit, the largest
    force allowed, the force at the throttle, at the limit)."""
    if spec[U_ENGINES] != 0.0:
        span = spec[U_MAX_RPM] - spec[U_IDLE]
        pct = (rpm - spec[U_IDLE]) / span * 100.0 if span > 0 else 0.0
        app = _pmin(_pmax(pct, 0.0), 100.0) / 100.0
        limit = _pmin(1.0, app)
        t = _pmin(throttle, app)
    else:
        limit = 1.0
        t = throttle
    t = _pmin(_pmax(t, 0.0), 1.0)
    target = _available(spec, t, v)
    at_limit = target if limit == t else _available(spec, limit, v)
    cap = at_limit if at_limit >= target else math.inf
    return t, limit, cap, target, at_limit


@_jit
def _adhesion(spec, v):
    """adhesion.adhesion_limit_of(drive mass, v) on a dry rail."""
    u = abs(v) * 3.6
    return (7.5 / (u + 44.0) + 0.161) * G * spec[U_DRIVE_MASS] * 1.0


@_jit
def _ramp(spec, force, dt, target, max_force, v, prev_speed):
    """traction.ramp_force."""
    target = _pmin(target, max_force)
    force = _pmin(force, max_force)
    to_zero = target == 0.0
    v = abs(v)
    if v > 0:
        power = force * abs(prev_speed)
        target_power = target * v
        if target_power > power and spec[U_POWER_UP] > 0:
            step = spec[U_POWER_UP] * dt
            if power + step < target_power:
                target = _pmin(target, (power + step) / v)
        down_w = spec[U_POWER_TO_ZERO] if to_zero else spec[U_POWER_DOWN]
        if target_power < power and down_w > 0:
            step = down_w * dt
            if power - step > target_power:
                target = _pmax(target, _pmin(force, (power - step) / v))
    if target > force:
        up = spec[U_FORCE_UP]
        return _pmin(force + up * dt, target) if up > 0 else target
    if target < force:
        down = spec[U_FORCE_TO_ZERO] if to_zero else spec[U_FORCE_DOWN]
        return _pmax(force - down * dt, target) if down > 0 else target
    return force


@_jit
def unit_force(spec, throttle, v, dt, rpm, drpm, average, traction, prev_speed):
    """PowerUnit.force for the units ``spec`` describes (see above): the engine's RPM, the
    limits, the ramp, the continuous-force derating and the adhesion limit, in the same
    operations. Takes and returns the unit's state: (force, rpm, drpm, average, traction,
    prev_speed)."""
    v = abs(v)
    if spec[U_ENGINES] != 0.0:
        idle = spec[U_IDLE]
        t = _pmin(_pmax(throttle, 0.0), 1.0) * 100.0
        demand = idle + t / 100.0 * (spec[U_MAX_RPM] - idle)
        rpm, drpm = _step_engine(spec, rpm, drpm, demand, dt)
    t, limit, cap, target, at_limit = _limits(spec, throttle, v, rpm)
    f = _ramp(spec, traction, dt, target, cap, v, prev_speed) if limit > 0 else 0.0
    if spec[U_DERATE] != 0.0:
        fm = spec[U_DERATE_FM]
        fc = spec[U_DERATE_FC]
        if not (fm <= 0 or fc <= 0):
            out = f * (1.0 - (fm - fc) / (fm * fc) * average)
            tau = spec[U_DERATE_TAU]
            w = _pmax((tau - dt) / tau, 0.0)
            average = w * average + (1.0 - w) * out
            f = out
    return _pmin(f, _adhesion(spec, v)), rpm, drpm, average, f, v


@_jit
def unit_capacity(spec, v, rpm):
    """PowerUnit.capacity for the units ``spec`` describes: the force at full throttle with
    the engine at ``rpm`` (no state change)."""
    v = abs(v)
    t, limit, cap, target, at_limit = _limits(spec, 1.0, v, rpm)
    f = _pmin(at_limit, cap) if limit > 0 else 0.0
    return _pmin(f, _adhesion(spec, v))
