"""The replay step's per-car arithmetic around the engine, compiled with numba
(docs/physics.md §1.1): before the engine, the gravity, running and curve resistance of
every car (:func:`car_forces`); after it, the energy and top-speed sums and the bogie
measures (:func:`after_step`).

Each replaces a dozen numpy calls on short arrays whose fixed cost, not their arithmetic,
made most of a few-train step. The operations are numpy's, element by element and in the
same order (elementwise IEEE operations do not depend on how they are batched), so the
results are the same bits: ``tests/test_replay_fast_paths.py`` compares them with the
numpy code and whole replays run both ways.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._engine_kernel import _seg_sum
from ._lookup_kernel import interp

_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def car_forces(
    x, v, fbrb, line_len, base, half_length,
    S, Y, rows_b, gb, yb,
    P1, PC, rows_c,
    neg_mg, spacing, da, db, dc, start, f0, vm, slope, mg_curve,
    grav, dav, crv, resist,
):  # fmt: skip
    """Per car: ``grav`` (−m·g·sinθ from the elevations under its bogies), ``dav``
    (Davis, blended with the starting resistance below the merge speed where ``start``),
    ``crv`` (the curve resistance at its middle) and ``resist = dav + crv``.

    ``fbrb``: the bogies' line distances (front, rear per car), ``x − half_length`` the
    middles'; each is
    clipped onto the car's line (``[0, line_len]``) and moved by the line's ``base`` into
    the global table (``S``, ``Y``; ``P1``, ``PC`` the curvature pieces' ends and
    values). ``rows_b``/``rows_c``: each point's table row from the last call (-1: none);
    ``gb``/``yb``: work arrays of 2n."""
    n = x.size
    # The bogies, rear then front, from the last car to the first: rising distances,
    # as the numpy code looks them up (the rows kept per point stay close).
    for i in range(n):
        k = n - 1 - i
        for j in range(2):
            g = fbrb[k, 1 - j]
            if g < 0.0:  # np.maximum / np.minimum: a NaN stays
                g = 0.0
            if g > line_len[k]:
                g = line_len[k]
            gb[2 * i + j] = g + base[k]
    interp(gb, S, Y, Y, yb, yb, rows_b, False)
    m = P1.size
    last_piece = PC.size - 1
    for k in range(n):
        i = n - 1 - k
        sin = (yb[2 * i + 1] - yb[2 * i]) / spacing[k]
        if sin < -1.0:
            sin = -1.0
        elif sin > 1.0:
            sin = 1.0
        grav[k] = neg_mg[k] * sin
        speed = abs(v[k])
        if start and speed < vm[k]:
            dav[k] = f0[k] + slope[k] * speed
        else:
            dav[k] = da[k] + speed * (db[k] + speed * dc[k])
        # the middle's curvature piece: searchsorted(P1, g, "left") (NaN: past the end)
        g = x[k] - half_length[k]
        if g < 0.0:
            g = 0.0
        if g > line_len[k]:
            g = line_len[k]
        g = g + base[k]
        if g != g:
            p = m
        else:
            p = rows_c[k]
            if p < 0 or p > m:
                lo = 0
                hi = m
                while lo < hi:
                    mid = lo + ((hi - lo) >> 1)
                    if P1[mid] < g:
                        lo = mid + 1
                    else:
                        hi = mid
                p = lo
            else:
                while p < m and P1[p] < g:
                    p += 1
                while p > 0 and P1[p - 1] >= g:
                    p -= 1
            rows_c[k] = p
        c = PC[p if p < last_piece else last_piece]
        crv[k] = mg_curve[k] * abs(c)
        resist[k] = dav[k] + crv[k]


@_jit
def after_step(x0, x1, v1, trac, brk, trac_car, brake_car, vmax_car, fbrb, front_bogie, spacing, len_tol):
    """The step's sums and bogies, per car: ``trac_car += max(trac·dx, 0)``,
    ``brake_car += brk·|dx|``, ``vmax_car = max(vmax_car, |v1|)``, the bogies ``fbrb``
    (front, rear per car): ``x1 − front_bogie`` and that ``− spacing``. Returns (a front bogie past ``len_tol``, a
    rear bogie before the line's start)."""
    over = False
    under = False
    for k in range(x1.size):
        dx = x1[k] - x0[k]
        t = trac[k] * dx
        if t < 0.0:
            t = 0.0
        trac_car[k] += t
        brake_car[k] += brk[k] * abs(dx)
        s = abs(v1[k])
        if s != s or s > vmax_car[k]:  # (np.maximum: a NaN wins)
            vmax_car[k] = s
        f = x1[k] - front_bogie[k]
        r = f - spacing[k]
        fbrb[k, 0] = f
        fbrb[k, 1] = r
        if f > len_tol[k]:
            over = True
        if r < -1e-9:
            under = True
    return over, under


@_jit
def _pymax(a, b):
    """Python's ``max(a, b)``: ``a`` unless ``b > a`` (a NaN or −0.0 ``a`` stays)."""
    return b if b > a else a


@_jit
def _pymin(a, b):
    """Python's ``min(a, b)``: ``a`` unless ``b < a``."""
    return b if b < a else a


@_jit
def _taper(force, other, inertia, v, vmax, dt, taper_ms):
    """forces.taper_factor, operation for operation."""
    if not force > 0.0 or not v + dt * (force + other) / inertia > vmax - taper_ms:
        return 1.0
    slope = 1.0 / taper_ms
    dv = (other + slope * force * (vmax - v)) / (inertia / dt + slope * force)
    return _pymin(_pymax(slope * (vmax - v - dv), 0.0), 1.0)


@_jit
def train_forces(
    ctl, dt, trac0, grav, resist, dav, crv, v,
    start, stop, M, maxbrake, decel_mode, release, build, vmax, spec_decel,
    full, inertial, emergency_factor, taper_ms,
    applied, trac, brk, drive, res, scale,
):  # fmt: skip
    """The scalar per-train loop of ``Replay._traction_and_brakes`` (docs/running-time.md
    §2–§7) and its per-car products, for trains without brake-shoe curves.

    ``ctl`` per train: has a speed target (1/0), the target, throttle (1 with a target),
    brake, deceleration, emergency (1/0). Per train k (cars ``start[k]:stop[k]``): the
    sums of ``trac0``, ``grav`` and ``resist`` as ``np.add.reduceat`` gives them, the brake
    demand and ``applied`` fraction (updated), the traction ``scale``; per car
    ``trac = trac0·ratio``, ``brk = full·applied`` (0 in deceleration mode, plus what the
    hourly brake adds), ``drive = trac + grav``, ``res = resist + brk``."""
    T = start.size
    any_decel = False
    decel_car = np.zeros(T)
    for k in range(T):
        s = start[k]
        e = stop[k]
        Fs = _seg_sum(trac0, s, e)
        Gs = _seg_sum(grav, s, e)
        Rs = _seg_sum(resist, s, e)
        has_t = ctl[k, 0] != 0.0
        tgt = ctl[k, 1]
        thr = ctl[k, 2]
        c_brake = ctl[k, 3]
        c_dec = ctl[k, 4]
        vk = v[s]
        Mk = M[k]
        fwd = -1.0 if vk < 0.0 else 1.0
        other = Gs - fwd * Rs
        b_force = 0.0
        hold = 0.0
        if has_t:
            hold = _pymax(fwd * other - Mk * (tgt - vk) / dt, 0.0)
        if decel_mode[k]:
            a_b = c_dec if c_dec > 0 else c_brake * spec_decel[k]
            if hold > 0.0:
                a_b = hold / Mk - fwd * other / Mk
            if a_b > 0:
                any_decel = True
                decel_car[k] = a_b
                b_force = _pymax(Mk * a_b + fwd * other, 0.0)
        else:
            if ctl[k, 5] != 0.0:
                demand = emergency_factor
            elif hold > 0.0:
                demand = _pymin(hold / maxbrake[k], 1.0)
            elif c_brake > 0 or c_dec <= 0:
                demand = c_brake
            else:
                demand = _pymin(_pymax((Mk * c_dec + fwd * other) / maxbrake[k], 0.0), 1.0)
            a = applied[k]
            a += _pymin(_pymax(demand - a, -dt / release[k]), dt / build[k])
            a = _pymin(_pymax(a, 0.0), emergency_factor)
            applied[k] = a
            b_force = a * maxbrake[k]
        net = other - fwd * b_force
        q = 1.0
        if has_t:
            if Fs > 0:
                q = _pymin(_pymax((Mk * (tgt - vk) / dt - net) / Fs, 0.0), 1.0)
            else:
                q = 0.0
        sc = q * _taper(Fs * q, net, Mk, vk, vmax[k], dt, taper_ms) * thr
        scale[k] = sc
        ratio = sc / (thr if thr > 0 else 1.0)
        fa = 0.0 if decel_mode[k] else applied[k]
        for i in range(s, e):
            trac[i] = trac0[i] * ratio
            brk[i] = full[i] * fa
    for k in range(T):
        dc = decel_car[k]
        for i in range(start[k], stop[k]):
            if any_decel:
                # forces.opposing_resistance, and np.maximum(…, 0.0) (a NaN stays, ±0 → +0)
                opp = dav[i] + crv[i] - (-1.0 if v[i] < 0 else 1.0) * grav[i]
                add = inertial[i] * dc - opp
                if not (add > 0.0 or add != add):
                    add = 0.0
                brk[i] = brk[i] + add * (1.0 if dc > 0 else 0.0)
            drive[i] = trac[i] + grav[i]
            res[i] = resist[i] + brk[i]
    return any_decel
