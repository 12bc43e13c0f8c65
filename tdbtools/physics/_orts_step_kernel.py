"""The Open Rails profile's forces of one train's replay step in one compiled call
(docs/physics.md §7.9; issue 32): the per-car gravity and resistance of every car
(``_step_kernel.car_forces_sums``, when asked), then the train's part of
``OrtsTrainForces.forces``: the speed target's throttle from its power units'
capacities, the units' tractive force (``_orts_kernel.unit_force``), the air brakes'
pipe, valves and forces (``_orts_kernel.train_brakes``), and per car the traction, the
brake force and the engine's drive and opposing forces.

The Python code of ``orts/replay_forces.py`` is the reference, operation for operation
and in the same order: Python's ``min``/``max`` spelt out, ``sum()`` of the units'
capacities as the running Python adds floats (:func:`py_sum`), every per-car product
as numpy's. A step this call does not cover for a train (an automatic driver that needs
its brakes: a deceleration demand, or a speed target the train overruns without
traction) is handed back *before* any state of the train changed (the status), and the
caller runs the reference for that train; so is a train whose units or brakes the
compiled kernels do not cover (decided once, ``orts/fused_step.py``).

numba's cache checks only this file: a change to a function imported here needs this
module's cache dropped too (so this file is edited with them, which drops it: last for
``_orts_kernel.train_brakes``' released brakes and ``_step_kernel._elevations``' kept
row, issue 32).
"""

from __future__ import annotations

import math

from numba import njit

from ._orts_kernel import N_UNIT_SPEC, np_sum, train_brakes, unit_capacity, unit_force
from ._step_kernel import F_BRAKE, F_DRIVE, F_GRAV, F_OPPOSED, F_RESIST, F_TRAC, car_forces_sums

_jit = njit(cache=True, nogil=True, error_model="numpy")

# the columns of ``units`` after the spec (each unit's state, as PowerUnit keeps it)
U_RPM, U_DRPM, U_AVERAGE, U_TRACTION, U_PREV_SPEED = range(N_UNIT_SPEC, N_UNIT_SPEC + 5)
N_UNIT_COLS = N_UNIT_SPEC + 5
# entries of ``tconst`` (per train): the brakes' constants and memo (``_orts_kernel``'s
# P_* and M_*, as slices), then these
Q_INERTIA, Q_NEUMAIER, Q_APPLIED, Q_BRAKES_ON, Q_MOVING = range(5)
N_TRAIN_Q = 5
# the step's outcome for the train
DONE, DEFERRED = 0, 1


@_jit
def py_sum(a, n, neumaier):
    """Python's ``sum()`` of the ``n`` floats ``a[:n]``: ``0 + a[0]`` (an int and a float:
    ``0.0 + a[0]``), then the rest added one by one; from Python 3.12 on (``neumaier``)
    with CPython's compensation (Neumaier's), its sum added at the end when it is
    non-zero and finite. The empty sum is the int 0 (0.0 here: only compared with 0)."""
    if n == 0:
        return 0.0
    s = 0.0 + a[0]
    c = 0.0
    for i in range(1, n):
        x = a[i]
        if neumaier:
            t = s + x
            if abs(s) >= abs(x):
                c += (s - t) + x
            else:
                c += (x - t) + s
            s = t
        else:
            s += x
    if neumaier and c != 0.0 and math.isfinite(c):
        s += c
    return s


@_jit
def train_step(
    do_cars, x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, bounds, out, sums, k,
    throttle, has_target, target, emergency, h_target, h_has, h_emergency, dt,
    tconst, units, uidx, caps, bp, aux, cyl, state, bcars, frac,
):  # fmt: skip
    """Train ``k``'s forces of a step (cars ``bounds[k]:bounds[k + 1]``); first, if
    ``do_cars``, every car's gravity and resistance and every train's sums of them
    (``car_forces_sums`` into ``out`` and ``sums``). Returns (status, the throttle used,
    the mean cylinder share, the deceleration but for traction); DEFERRED: nothing of
    the train was changed or written, the caller runs the reference.

    ``throttle``: the throttle controller's value of the driver's handle;
    ``has_target``/``target``: the automatic driver's speed target; ``emergency``: the
    driver's emergency; (``h_target``, ``h_has``, ``h_emergency``): the train-brake
    handle's pipe target when the driver does not brake itself (the scheduled handle's,
    or the emergency position's). ``tconst``: the brakes' constants (``_orts_kernel``
    P_*), their memo (M_*), then Q_*; ``units``: per power unit (one per stock) its spec
    and state (U_*); ``uidx``: per powered car, front first, its car row (row 0) and its
    unit (row 1); ``caps``: a buffer of one float per powered car; ``bp`` … ``bcars``:
    the air brakes' arrays and per-car constants, ``frac`` their per-car buffer."""
    if do_cars:
        car_forces_sums(x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, out, bounds, sums)
    a = bounds[k]
    b = bounds[k + 1]
    nb = 10  # (N_BRAKE_CONSTS)
    bconsts = tconst[:nb]
    memo = tconst[nb : nb + 6]
    q = tconst[nb + 6 :]
    vk = v[a]
    speed = abs(vk)
    fwd = -1.0 if vk < 0.0 else 1.0
    other = sums[0, k] - fwd * sums[1, k]
    M = q[Q_INERTIA]
    G = units.shape[0]
    P = uidx.shape[1]
    if has_target:
        need = M * (target - vk) / dt - other
        for g in range(G):
            caps[g] = unit_capacity(units[g, :N_UNIT_SPEC], speed, units[g, U_RPM])
        for i in range(P):  # (the units' capacities per powered car, front first)
            caps[G + i] = caps[uidx[1, i]]
        cap = py_sum(caps[G:], P, q[Q_NEUMAIER] != 0.0)
        if cap > 0:
            t = need / cap
            t = t if not 0.0 > t else 0.0
            throttle = 1.0 if 1.0 < t else t
        else:
            throttle = 1.0 if need > 0 else 0.0
        hold = 0.0 if 0.0 > -need else -need  # (Python's max(-need, 0.0))
        if not emergency and hold > 0:
            return DEFERRED, 0.0, 0.0, 0.0
        if q[Q_APPLIED] > q[Q_BRAKES_ON] and vk > q[Q_MOVING]:
            throttle = 0.0
    for i in range(a, b):
        out[F_TRAC, i] = 0.0
    for g in range(G):
        u = units[g]
        f, r, d, avg, tr, pv = unit_force(
            u[:N_UNIT_SPEC], throttle, speed, dt, u[U_RPM], u[U_DRPM], u[U_AVERAGE], u[U_TRACTION],
            u[U_PREV_SPEED],
        )  # fmt: skip
        u[U_RPM] = r
        u[U_DRPM] = d
        u[U_AVERAGE] = avg
        u[U_TRACTION] = tr
        u[U_PREV_SPEED] = pv
        caps[g] = f
    for i in range(P):
        out[F_TRAC, uidx[0, i]] = caps[uidx[1, i]]
    brk = out[F_BRAKE, a:b]
    applied, total = train_brakes(
        bp, aux, cyl, state, bcars, bconsts, h_target, h_has, h_emergency, dt, v[a:b], brk, frac, memo
    )
    q[Q_APPLIED] = applied
    for i in range(P):  # (the units' dynamic brakes: none here, Python adds their 0.0)
        r = uidx[0, i]
        out[F_BRAKE, r] = out[F_BRAKE, r] + 0.0
    for i in range(a, b):
        out[F_DRIVE, i] = out[F_TRAC, i] + out[F_GRAV, i]
        out[F_OPPOSED, i] = out[F_RESIST, i] + out[F_BRAKE, i]
    return DONE, throttle, applied, (total - fwd * other) / M


__all__ = ["DEFERRED", "DONE", "N_TRAIN_Q", "N_UNIT_COLS", "py_sum", "train_step", "np_sum"]
