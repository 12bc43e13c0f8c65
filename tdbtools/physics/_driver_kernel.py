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
