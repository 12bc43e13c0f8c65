"""The numeric core of :meth:`tdbtools.physics.driver.DriverBatch.drive` compiled with numba
(docs/running-time.md §2.1): train by train, the same IEEE operations as the batch's numpy
calls, so the same numbers bit for bit (``tests/test_driver_batch.py`` runs both).

Elementwise numpy operations are exact per element, so a loop over the trains that does
each one in the same order gives the same values; ``np.maximum`` is ``a`` where ``a >= b``
or ``a`` is NaN, else ``b``; ``np.argmin`` gives the first minimum. numba's ``numpy``
error model gives IEEE results for a division by zero, as ``np.errstate(all="ignore")``
does. Only :mod:`tdbtools.physics.driver` imports this module, when numba is installed.
"""

from __future__ import annotations

import math

from numba import njit


@njit(cache=True, nogil=True, error_model="numpy")
def _max(a, b):
    return a if (a >= b or a != a) else b


@njit(cache=True, nogil=True, error_model="numpy")
def core(
    fr, sp, re, code, applied, counts, post_v, post_s, base, sf, vmax, two_a, three_a,
    reach_lag, dec, lag_on, lag_div, bd, release, build, emergency_at, settled, sig_stop,
    creep_at, lim_a, lim_b, lim_there, vk, d, valid, dt, dt_min, window,
    on_curve_by, standing, arrived_within,
    best_out, asked_out, emergency_out, applied_out, ok_out, braking_out,
):  # fmt: skip
    """DriverBatch.drive from the counts of posts to ``ok`` (see there), for every row."""
    m = fr.size
    C = vk.shape[1]
    S = 1 + window
    L = lim_a.shape[1]
    inf = math.inf
    for i in range(m):
        f = fr[i]
        v = sp[i]
        first = counts[i]
        a_ = max(counts[m + i] - 1, 0)
        b_ = max(first - 1, 0)
        low = post_v[base[i] + a_]
        for j in range(1, b_ - a_ + 1):
            cand = post_v[base[i] + a_ + j]
            if cand < low:
                low = cand
        ls = low * sf[i]
        cap = ls if ls < vmax[i] else vmax[i]
        top = _max(v, cap)
        reach = top * top / two_a[i] + 50.0 + v * reach_lag[i]
        vk[i, 0] = cap
        at = base[i] + first
        for w in range(window):
            pv = post_v[at + w] * sf[i]
            vk[i, 1 + w] = pv
            d[i, 1 + w] = post_s[at + w] - f
            valid[i, 1 + w] = pv < cap
        after = post_s[at + window] - f
        c = code[i]
        d[i, S] = _max(c - f, 0.0)
        valid[i, S] = c == c
        d[i, S + 1] = _max(sig_stop[i] - f, 0.0)
        d[i, S + 2] = creep_at[i] - f
        valid[i, S + 2] = creep_at[i] > f
        for k in range(L):
            d[i, S + 3 + k] = _max(lim_a[i, k] - f, 0.0)
            valid[i, S + 3 + k] = lim_there[i, k] and not (lim_b[i, k] < re[i])
        ap = applied[i]
        short = _max(dec[i] - ap, 0.0)
        delay = short * short / lag_div[i] if lag_on[i] else 0.0
        fwd = _max(v, 0.0)
        ahead = fwd * (dt + delay)
        kbest = 0
        best = inf
        for k in range(C):
            dk = d[i, k]
            vkk = vk[i, k]
            room = _max(dk - ahead, 0.0)
            p = math.sqrt(vkk * vkk + two_a[i] * room) if dk > 0.0 else vkk
            if not (valid[i, k] and p < inf):
                p = inf
            if k == 0 or p < best:
                best = p
                kbest = k
        vb = vk[i, kbest]
        db = d[i, kbest]
        on_curve = db > 0.0 and vb < v and v > best - on_curve_by
        room = db - fwd * delay
        need = (v * v - vb * vb) / (2.0 * room) if room > 1e-3 else three_a[i]
        over = (not on_curve) and v > best + 1e-6
        if on_curve:
            asked = three_a[i] if three_a[i] < need else need
        elif over:
            x = (v - best) / dt_min
            asked = three_a[i] if three_a[i] < x else x
        else:
            asked = 0.0
        emergency_out[i] = on_curve and db > 1e-3 and need > emergency_at[i]
        up = asked - ap
        up = release[i] if release[i] > up else up
        up = build[i] if build[i] < up else up
        applied_out[i] = asked if bd[i] <= 0.0 else ap + up
        ok_out[i] = (
            settled[i]
            and v >= 0.0
            and c != -inf
            and not (c == c and abs(v) < standing and c - f < arrived_within)
            and after > reach + 1.0
        )
        best_out[i] = best
        asked_out[i] = asked
        braking_out[i] = on_curve or over


@njit(cache=True, nogil=True, error_model="numpy")
def _npmax(a, b):
    """``np.maximum`` of two floats: a NaN from either, and ``b`` on a tie (so the second
    of two zeros of different sign)."""
    return a if (a > b or a != a) else b


@njit(cache=True, nogil=True, error_model="numpy")
def _npmin(a, b):
    """``np.minimum`` of two floats (as :func:`_npmax`)."""
    return a if (a < b or a != a) else b


@njit(cache=True, nogil=True, error_model="numpy")
def controls(
    vk, Gs, Rs, F, M, tgt, brake, decel, emergency, throttle, applied, maxbrake, release, build,
    vmax, dt, emergency_factor, taper_ms, a_out, scale_out, ratio_out,
):  # fmt: skip
    """The per-train part of ``Replay._traction_and_brakes_batch`` in force mode, train by
    train with its operations in its order: the brakes' new applied fraction, the
    traction scale and its ratio to the throttle (``np.where`` takes the branch taken
    here; ``_pmax``/``_pmin`` are Python's ``max``/``min``)."""
    slope = 1.0 / taper_ms
    for k in range(vk.size):
        v = vk[k]
        t = tgt[k]
        has_t = t == t
        th = 1.0 if has_t else throttle[k]
        fwd = -1.0 if v < 0.0 else 1.0
        other = Gs[k] - fwd * Rs[k]
        f_other = fwd * other
        m = M[k]
        reach_t = m * (t - v) / dt
        hold = _npmax(f_other - reach_t, 0.0)
        mb = maxbrake[k]
        if hold > 0.0:
            demand = _npmin(hold / mb, 1.0)
        elif brake[k] > 0 or decel[k] <= 0:
            demand = brake[k]
        else:
            demand = _npmin(_npmax((m * decel[k] + f_other) / mb, 0.0), 1.0)
        if emergency[k]:
            demand = emergency_factor
        ap = applied[k]
        a = ap + _npmin(_npmax(demand - ap, release[k]), build[k])
        a = _npmin(_npmax(a, 0.0), emergency_factor)
        net = other - fwd * (a * mb)
        f = F[k]
        q = 1.0
        if has_t:
            q = 0.0
            if f > 0:
                x = (reach_t - net) / f
                q = _npmin(0.0 if 0.0 > x else x, 1.0)
        # the top-speed taper (forces.taper_factor), solved implicitly
        force = f * q
        taper = 1.0
        top = vmax[k]
        if force > 0.0 and v + dt * (force + net) / m > top - taper_ms:
            dv = (net + slope * force * (top - v)) / (m / dt + slope * force)
            x = slope * (top - v - dv)
            x = 0.0 if 0.0 > x else x
            taper = 1.0 if 1.0 < x else x
        s = q * taper * th
        a_out[k] = a
        scale_out[k] = s
        ratio_out[k] = s / (th if th > 0 else 1.0)


@njit(cache=True, nogil=True, error_model="numpy")
def _pymax(a, b):
    """Python's ``max(a, b)`` of two floats: ``b`` only where ``b > a``."""
    return b if b > a else a


@njit(cache=True, nogil=True, error_model="numpy")
def _pymin(a, b):
    """Python's ``min(a, b)`` of two floats: ``b`` only where ``b < a``."""
    return b if b < a else a


@njit(cache=True, nogil=True, error_model="numpy")
def _bisect_right(s, x):
    lo = 0
    hi = s.size
    while lo < hi:
        mid = (lo + hi) // 2
        if x < s[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, nogil=True, error_model="numpy")
def _weigh(vk, d, ahead, two_a, v, coast_before, best, best_vk, best_d, coast):
    """One constraint (speed ``vk`` from ``d`` m ahead) weighed as ``AutoDriver.__call__``
    weighs it: its permitted speed now, the first minimum kept; coasting before it."""
    p = math.sqrt(vk * vk + two_a * _pymax(d - ahead, 0.0)) if d > 0.0 else vk
    if p < best:
        best, best_vk, best_d = p, vk, d
    if coast_before > 0.0 and d > 0.0 and vk < v:
        coast = coast or (d - (v * v - vk * vk) / two_a < v * coast_before)
    return best, best_vk, best_d, coast


@njit(cache=True, nogil=True, error_model="numpy")
def one_step(
    limit_s, limit_v, sig_limits, front, rear, v, dt, decel, level, applied, bd, max_speed,
    factor, coast_before, release_over_build, lap, braking, has_stop, stop_s, has_sig_stop,
    sig_stop, has_creep, creep_at, creep, on_curve_by, emergency_over,
):  # fmt: skip
    """One automatic driver's step after its stops and targets: ``AutoDriver.__call__``
    from ``constraints`` on (with a signal wrapper's stop, creep and ``sig_limits`` rows
    ``(a, b, v)``), the same operations in the same order as the Python, so the same
    numbers: ``(kind, value, applied, emergency)``, kind 0: run up to the speed ``value``;
    1: coast; 2: brake at ``value`` on the curve of a lower target; 3: brake at ``value``,
    over the limit; -1: left to the Python (a lapping driver's brakes, no limit posts,
    a rear ahead of the front); ``applied``: the driver's ``_applied`` after it;
    ``level``: ``brake_level or decel``."""
    inf = math.inf
    n = limit_s.size
    first = _bisect_right(limit_s, front)
    a = _bisect_right(limit_s, rear) - 1
    a = a if a > 0 else 0
    b = first - 1 if first - 1 > 0 else 0
    if n == 0 or a > b or decel == 0.0 or release_over_build == 0.0:
        return -1, 0.0, applied, False  # (the Python raises where it divides by these)
    low = limit_v[a]
    for j in range(a + 1, b + 1):
        if limit_v[j] < low:
            low = limit_v[j]
    cap = _pymin(max_speed, low * factor)
    top = _pymax(v, cap)
    reach = top * top / (2.0 * decel) + 50.0 + v * (dt + bd + coast_before)
    two_a = 2.0 * decel
    rate = 0.0
    delay = 0.0
    if bd > 0.0:
        rate = _pymax(level, decel) / (2.0 * bd)
        if decel > 0.0:
            short = _pymax(decel - applied, 0.0)
            delay = short * short / (2.0 * decel * rate)
    fwd = _pymax(v, 0.0)
    ahead = fwd * (dt + delay)
    # the constraints in constraints()'s order, each weighed as it comes
    best, best_vk, best_d, coast = _weigh(cap, 0.0, ahead, two_a, v, coast_before, inf, cap, 0.0, False)
    for k in range(first, n):
        d = limit_s[k] - front
        if d > reach:
            break
        vk = limit_v[k] * factor
        if vk < cap:
            best, best_vk, best_d, coast = _weigh(
                vk, d, ahead, two_a, v, coast_before, best, best_vk, best_d, coast
            )
    if has_stop:
        best, best_vk, best_d, coast = _weigh(
            0.0, _pymax(stop_s - front, 0.0), ahead, two_a, v, coast_before, best, best_vk, best_d, coast
        )
    if has_sig_stop:
        best, best_vk, best_d, coast = _weigh(
            0.0, _pymax(sig_stop - front, 0.0), ahead, two_a, v, coast_before, best, best_vk, best_d, coast
        )
    if has_creep and creep_at > front:
        best, best_vk, best_d, coast = _weigh(
            creep, creep_at - front, ahead, two_a, v, coast_before, best, best_vk, best_d, coast
        )
    for r in range(sig_limits.shape[0]):
        if sig_limits[r, 1] < rear:
            continue
        best, best_vk, best_d, coast = _weigh(
            sig_limits[r, 2], _pymax(sig_limits[r, 0] - front, 0.0), ahead, two_a, v, coast_before,
            best, best_vk, best_d, coast,
        )  # fmt: skip
    vk, d = best_vk, best_d
    if d > 0.0 and vk < v and v > best - on_curve_by:
        if lap:
            return -1, 0.0, applied, False
        room = d - fwd * delay
        need = (v * v - vk * vk) / (2.0 * room) if room > 1e-3 else 3.0 * decel
        asked = _pymin(need, 3.0 * decel)
        emergency = d > 1e-3 and need > emergency_over * decel
        return 2, asked, _follow(applied, asked, dt, bd, rate, release_over_build), emergency
    if v > best + 1e-6:
        asked = _pymin((v - best) / _pymax(dt, 1e-3), 3.0 * decel)
        return 3, asked, _follow(applied, asked, dt, bd, rate, release_over_build), False
    if lap and braking:
        return -1, 0.0, applied, False
    applied = _follow(applied, 0.0, dt, bd, rate, release_over_build)
    if coast:
        return 1, 0.0, applied, False
    return 0, best, applied, False


@njit(cache=True, nogil=True, error_model="numpy")
def _follow(applied, asked, dt, bd, rate, release_over_build):
    """``AutoDriver._follow_brakes``: the brakes' application after asking ``asked``."""
    if bd <= 0.0:
        return asked
    step = asked - applied
    return applied + _pymin(_pymax(step, -dt * rate / release_over_build), dt * rate)
