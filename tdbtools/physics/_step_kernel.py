"""The replay step's arithmetic around the engine, compiled with numba (docs/physics.md
§1.1): before the engine, every car's gravity, running and curve resistance
(:func:`car_forces`) and, for a few trains, the per-train traction and brake loop
(:func:`train_forces`; both in one call: :func:`few_train_forces`); after it, the energy
and top-speed sums and the bogie measures (:func:`after_step`).

Each replaces a dozen numpy calls on short arrays, or a loop of Python floats, whose fixed
cost, not their arithmetic, made most of a few-train step. The operations are those of the
numpy and Python code, element by element and in the same order (an elementwise IEEE
operation does not depend on how it is batched; Python's ``min``/``max`` are spelt out),
so the results are the same bits: ``tests/test_step_kernel.py`` compares each with the
code it stands for, and whole replays run both ways.

The fixed values come packed (numba's dispatch costs per argument): ``cars`` holds one
row per ``C_*`` below, one column per car (``ctab``: its distinct columns, ``ctype``: each
car's column there); ``trains`` one row per ``T_*``, one column per
train; ``engines`` one row per ``E_*``, one column per engine; ``out`` one row per
``F_*`` (written).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._engine_kernel import _seg_sum

# (numba's cache checks only this file: a change to np_sum needs this module's cache
# dropped too, as for the two imports above)
from ._orts_kernel import np_sum

_jit = njit(cache=True, nogil=True, error_model="numpy")

# rows of ``cars``
C_LINE_LEN, C_BASE, C_HALF, C_NEG_MG, C_SPACING, C_DA, C_DB, C_DC = range(8)
C_F0, C_VM, C_SLOPE, C_MG_CURVE, C_FULL_BRAKE, C_INERTIAL, C_FRONT_BOGIE, C_LEN_TOL = range(8, 16)
N_CAR_ROWS = 16
# rows of ``trains``
T_INERTIA, T_MAXBRAKE, T_DECEL_MODE, T_RELEASE, T_BUILD, T_VMAX, T_SPEC_DECEL = range(7)
N_TRAIN_ROWS = 7
# rows of ``engines`` (E_ROW, E_TRAIN: the engine's car and train, as floats)
E_ROW, E_TRAIN, E_FORCE, E_POWER, E_HAS_POWER, E_ADHESIVE = range(6)
N_ENGINE_ROWS = 6
# rows of ``out``
F_GRAV, F_DAV, F_CRV, F_RESIST, F_TRAC, F_BRAKE, F_DRIVE, F_OPPOSED = range(8)
N_OUT_ROWS = 8


def line_table(S: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``lines`` of :func:`car_forces`: the distances ``S``, the elevations ``Y`` and per
    row the slope to the next, ``(Y[j+1] − Y[j]) / (S[j+1] − S[j])`` (np.interp's slope,
    the same two IEEE operations, worked out once instead of per point and step; the
    last row's is never read)."""
    S = np.asarray(S, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    slope = np.zeros(S.size)
    with np.errstate(all="ignore"):  # (0/0 or x/0 where np.interp's would be too)
        np.divide(Y[1:] - Y[:-1], S[1:] - S[:-1], out=slope[:-1])
    return np.array([S, Y, slope])


@_jit
def _elevations(x, xp, fp, slope, out, rows):
    """``out = np.interp(x, xp, fp)`` with ``slope`` per row (:func:`line_table`), each
    point's table row kept in ``rows`` between calls: ``_lookup_kernel.interp``'s search
    and formula for one column, its slope read instead of divided (the same number)."""
    m = xp.size
    first = xp[0]
    last = xp[m - 1]
    j = 0
    for i in range(x.size):
        xv = x[i]
        if xv != xv:
            out[i] = xv
            continue
        if xv > last:
            out[i] = fp[m - 1]
            continue
        if xv < first:
            out[i] = fp[0]
            continue
        # the last j with xp[j] <= xv: the row the point had if it is still there (most
        # points, most steps: no write), else a few steps from it, else bisection
        r = rows[i]
        if 0 <= r < m - 1 and xp[r] <= xv and xv < xp[r + 1]:
            j = r
        else:
            if 0 <= r < m:
                j = r
            lo = 0
            hi = m
            k = 0
            while j + 1 < m and xp[j + 1] <= xv and k < 16:
                j += 1
                k += 1
            while xp[j] > xv and k < 16:
                j -= 1
                k += 1
            if k == 16:
                if xp[j] <= xv:
                    lo = j
                else:
                    hi = j
                while lo < hi:
                    mid = lo + ((hi - lo) >> 1)
                    if xv >= xp[mid]:
                        lo = mid + 1
                    else:
                        hi = mid
                j = lo - 1
            rows[i] = j
        if j == m - 1 or xp[j] == xv:
            out[i] = fp[j]
            continue
        s = slope[j]
        v = s * (xv - xp[j]) + fp[j]
        if v != v:
            v = s * (xv - xp[j + 1]) + fp[j + 1]
            if v != v and fp[j] == fp[j + 1]:
                v = fp[j]
        out[i] = v


@_jit
def _on_table(g, ctab, c):
    """A line distance ``g`` of a car with the constants ``ctab[:, c]`` clipped onto its
    line (``[0, line_len]``, as np.maximum / np.minimum: a NaN stays) and moved by the
    line's ``base`` into the global tables."""
    if g < 0.0:
        g = 0.0
    if g > ctab[C_LINE_LEN, c]:
        g = ctab[C_LINE_LEN, c]
    return g + ctab[C_BASE, c]


@_jit
def car_forces(x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, out):
    """Per car: gravity (−m·g·sinθ from the elevations under its bogies), Davis (blended
    with the starting resistance below the merge speed if ``consts[0]``), the curve
    resistance at its middle, and Davis + curve: ``out[F_GRAV:F_RESIST + 1]``.

    Car ``k``'s constants are the column ``ctype[k]`` of ``ctab`` (the ``C_*`` rows of
    ``cars``, each distinct column once: a long train's wagons share a few, and a step
    then reads one index per car, not a dozen columns; the same values, so the same
    numbers). ``fbrb``: the bogies' line distances (front, rear per car), ``x − half`` the middles';
    each goes into the global tables by :func:`_on_table` (``lines``: distance,
    elevation; ``pieces``: the curvature pieces' ends and values). ``rows``: each point's
    table row from the last call, bogies (2n) then middles (n), -1 for none; ``work``: 4n
    floats."""
    n = x.size
    start = consts[0] != 0.0
    S = lines[0]
    Y = lines[1]
    P1 = pieces[0]
    PC = pieces[1]
    gb = work[: 2 * n]
    yb = work[2 * n : 4 * n]
    # The bogies, rear then front, from the last car to the first: rising distances,
    # as the numpy code looks them up (the rows kept per point stay close).
    for i in range(n):
        k = n - 1 - i
        c = ctype[k]
        for j in range(2):
            gb[2 * i + j] = _on_table(fbrb[k, 1 - j], ctab, c)
    _elevations(gb, S, Y, lines[2], yb, rows[: 2 * n])
    m = P1.size
    last_piece = PC.size - 1
    for k in range(n):
        i = n - 1 - k
        c = ctype[k]
        sin = (yb[2 * i + 1] - yb[2 * i]) / ctab[C_SPACING, c]
        if sin < -1.0:
            sin = -1.0
        elif sin > 1.0:
            sin = 1.0
        out[F_GRAV, k] = ctab[C_NEG_MG, c] * sin
        speed = abs(v[k])
        if start and speed < ctab[C_VM, c]:
            dav = ctab[C_F0, c] + ctab[C_SLOPE, c] * speed
        else:
            dav = ctab[C_DA, c] + speed * (ctab[C_DB, c] + speed * ctab[C_DC, c])
        # the middle's curvature piece: searchsorted(P1, g, "left") (NaN: past the end)
        g = _on_table(x[k] - ctab[C_HALF, c], ctab, c)
        if g != g:
            p = m
        else:
            p = rows[2 * n + k]
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
            rows[2 * n + k] = p
        crv = ctab[C_MG_CURVE, c] * abs(PC[p if p < last_piece else last_piece])
        out[F_DAV, k] = dav
        out[F_CRV, k] = crv
        out[F_RESIST, k] = dav + crv


@_jit
def car_forces_sums(x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, out, bounds, sums):
    """:func:`car_forces`, then per train k (cars ``bounds[k]:bounds[k + 1]``) the sums of
    its gravity and of its resistance, ``np.add.reduce`` of each slice bit for bit, into
    ``sums[0, k]`` and ``sums[1, k]`` (the Open Rails profile's step reads them; its numpy
    reference sums the slices, orts/replay_forces.py)."""
    car_forces(x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, out)
    grav = out[F_GRAV]
    resist = out[F_RESIST]
    for k in range(bounds.size - 1):
        sums[0, k] = np_sum(grav, bounds[k], bounds[k + 1])
        sums[1, k] = np_sum(resist, bounds[k], bounds[k + 1])


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
def traction(ctl, v, engines, adhesion, trac0):
    """``trac0``: forces.Prepared.traction_few's force of each engine (0 for the other
    cars) at the throttle of its train's ``ctl`` row; ``adhesion``: with the adhesion
    limit."""
    trac0[:] = 0.0
    for e in range(engines.shape[1]):
        t = _pymin(_pymax(ctl[int(engines[E_TRAIN, e]), 2], 0.0), 1.0)
        vk = v[int(engines[E_ROW, e])]
        speed = abs(vk)
        f = engines[E_FORCE, e] * t
        if engines[E_HAS_POWER, e] != 0.0 and speed > 0:
            f = _pymin(f, engines[E_POWER, e] * t * t / speed)
        f = f + 0.0
        if adhesion:
            f = _pymin(f, (0.161 + 7.5 / (3.6 * abs(vk) + 44.0)) * engines[E_ADHESIVE, e])
        trac0[int(engines[E_ROW, e])] = f


@_jit
def train_forces(ctl, dt, v, trac0, cars, trains, bounds, consts, applied, out, scale):
    """The scalar per-train loop of ``Replay._traction_and_brakes`` (docs/running-time.md
    §2–§7) and its per-car products, for trains without brake-shoe curves.

    ``ctl`` per train: has a speed target (1/0), the target, throttle (1 with a target),
    brake, deceleration, emergency (1/0). Per train k (cars ``bounds[k]:bounds[k + 1]``):
    the sums of ``trac0``, gravity and Davis + curve as ``np.add.reduceat`` gives them,
    the brake demand and ``applied`` fraction (updated), the traction ``scale``; per car
    the traction ``trac0·ratio``, the brake force (``full·applied``, 0 in deceleration
    mode, plus what the hourly brake adds) and the engine's drive and opposing forces."""
    T = bounds.size - 1
    emergency_factor = consts[3]
    taper_ms = consts[4]
    any_decel = False
    decel_car = np.zeros(T)
    grav = out[F_GRAV]
    resist = out[F_RESIST]
    for k in range(T):
        s = bounds[k]
        e = bounds[k + 1]
        Fs = _seg_sum(trac0, s, e)
        Gs = _seg_sum(grav, s, e)
        Rs = _seg_sum(resist, s, e)
        has_t = ctl[k, 0] != 0.0
        tgt = ctl[k, 1]
        thr = ctl[k, 2]
        c_brake = ctl[k, 3]
        c_dec = ctl[k, 4]
        vk = v[s]
        Mk = trains[T_INERTIA, k]
        maxbrake = trains[T_MAXBRAKE, k]
        decel_mode = trains[T_DECEL_MODE, k] != 0.0
        fwd = -1.0 if vk < 0.0 else 1.0
        other = Gs - fwd * Rs
        b_force = 0.0
        hold = 0.0
        if has_t:
            hold = _pymax(fwd * other - Mk * (tgt - vk) / dt, 0.0)
        if decel_mode:
            a_b = c_dec if c_dec > 0 else c_brake * trains[T_SPEC_DECEL, k]
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
                demand = _pymin(hold / maxbrake, 1.0)
            elif c_brake > 0 or c_dec <= 0:
                demand = c_brake
            else:
                demand = _pymin(_pymax((Mk * c_dec + fwd * other) / maxbrake, 0.0), 1.0)
            a = applied[k]
            a += _pymin(_pymax(demand - a, -dt / trains[T_RELEASE, k]), dt / trains[T_BUILD, k])
            a = _pymin(_pymax(a, 0.0), emergency_factor)
            applied[k] = a
            b_force = a * maxbrake
        net = other - fwd * b_force
        q = 1.0
        if has_t:
            if Fs > 0:
                q = _pymin(_pymax((Mk * (tgt - vk) / dt - net) / Fs, 0.0), 1.0)
            else:
                q = 0.0
        sc = q * _taper(Fs * q, net, Mk, vk, trains[T_VMAX, k], dt, taper_ms) * thr
        scale[k] = sc
        ratio = sc / (thr if thr > 0 else 1.0)
        fa = 0.0 if decel_mode else applied[k]
        for i in range(s, e):
            out[F_TRAC, i] = trac0[i] * ratio
            out[F_BRAKE, i] = cars[C_FULL_BRAKE, i] * fa
    for k in range(T):
        dc = decel_car[k]
        for i in range(bounds[k], bounds[k + 1]):
            b = out[F_BRAKE, i]
            if any_decel:
                # forces.opposing_resistance, and np.maximum(…, 0.0) (a NaN stays, ±0 → +0)
                opp = out[F_DAV, i] + out[F_CRV, i] - (-1.0 if v[i] < 0 else 1.0) * grav[i]
                add = cars[C_INERTIAL, i] * dc - opp
                if not (add > 0.0 or add != add):
                    add = 0.0
                b = b + add * (1.0 if dc > 0 else 0.0)
                out[F_BRAKE, i] = b
            out[F_DRIVE, i] = out[F_TRAC, i] + grav[i]
            out[F_OPPOSED, i] = resist[i] + b


@_jit
def few_train_forces(
    x, v, fbrb, ctl, dt, cars, ctab, ctype, consts, lines, pieces, rows, work, trains, bounds, engines, applied,
    out, scale,
):  # fmt: skip
    """:func:`car_forces`, then :func:`traction` (if ``consts[1]``, with the adhesion
    limit if ``consts[2]``; else ``out[F_TRAC]`` holds the engines' forces already) and
    :func:`train_forces`: a few-train step's forces in one call. ``consts``: starting
    resistance (1/0), traction here (1/0), adhesion (1/0), the emergency brake factor,
    the top-speed taper (m/s)."""
    car_forces(x, v, fbrb, ctab, ctype, consts, lines, pieces, rows, work, out)
    trac0 = work[: x.size]
    if consts[1] != 0.0:
        traction(ctl, v, engines, consts[2] != 0.0, trac0)
    else:
        trac0[:] = out[F_TRAC]
    train_forces(ctl, dt, v, trac0, cars, trains, bounds, consts, applied, out, scale)


@_jit
def after_step(x0, x1, v1, trac, brk, sums, fbrb, ctab, ctype):
    """The step's sums and bogies, per car: ``sums[0] += max(trac·dx, 0)``, ``sums[1] +=
    brk·|dx|``, ``sums[2] = max(sums[2], |v1|)``; the bogies ``fbrb`` (front, rear per
    car): ``x1 − front_bogie`` and that ``− spacing`` (car ``k``'s constants the column
    ``ctype[k]`` of ``ctab``, as :func:`car_forces`). Returns (a front bogie past the
    line's end, a rear bogie before its start)."""
    over = False
    under = False
    for k in range(x1.size):
        dx = x1[k] - x0[k]
        t = trac[k] * dx
        if t < 0.0:
            t = 0.0
        sums[0, k] += t
        sums[1, k] += brk[k] * abs(dx)
        s = abs(v1[k])
        if s != s or s > sums[2, k]:  # (np.maximum: a NaN wins)
            sums[2, k] = s
        c = ctype[k]
        f = x1[k] - ctab[C_FRONT_BOGIE, c]
        r = f - ctab[C_SPACING, c]
        fbrb[k, 0] = f
        fbrb[k, 1] = r
        if f > ctab[C_LEN_TOL, c]:
            over = True
        if r < -1e-9:
            under = True
    return over, under
