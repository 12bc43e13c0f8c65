"""``np.interp`` over the replay's line table, compiled with numba, remembering each point's
table row from the last call (docs/physics.md §1.1).

A bogie moves a few metres a step, so its row is found next to where it was, instead of by
a search from the previous point. The result of ``np.interp`` depends only on the row (the
last ``j`` with ``xp[j] <= x``, the same whichever way it is found) and on its formula,
done here operation for operation: ``fp[0]``/``fp[-1]`` outside the table, ``fp[j]`` at
the last point or where ``x == xp[j]``, else ``slope·(x - xp[j]) + fp[j]`` with
``slope = (fp[j+1] - fp[j]) / (xp[j+1] - xp[j])``, and from the right end when that is
not a number. ``tests/test_replay_fast_paths.py`` compares it with ``np.interp``.
"""

from __future__ import annotations

from numba import njit

_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def interp(x, xp, f1, f2, out1, out2, rows, two):
    """``out1 = np.interp(x, xp, f1)`` and, if ``two``, ``out2 = np.interp(x, xp, f2)``;
    ``rows``: each point's table row, the start of its search and updated (len(x); -1:
    none yet, start from the previous point's)."""
    m = xp.size
    first = xp[0]
    last = xp[m - 1]
    j = 0
    for i in range(x.size):
        xv = x[i]
        if xv != xv:
            out1[i] = xv
            if two:
                out2[i] = xv
            continue
        if xv > last:
            out1[i] = f1[m - 1]
            if two:
                out2[i] = f2[m - 1]
            continue
        if xv < first:
            out1[i] = f1[0]
            if two:
                out2[i] = f2[0]
            continue
        # the last j with xp[j] <= xv: a few steps from where the point was, else bisection
        r = rows[i]
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
            out1[i] = f1[j]
            if two:
                out2[i] = f2[j]
            continue
        # (the two columns written out: a shared helper function, even inlined, made
        # this loop 4.5x slower, 0.32 -> 1.43 ms for 42,000 points)
        dx = xp[j + 1] - xp[j]
        d0 = xv - xp[j]
        slope = (f1[j + 1] - f1[j]) / dx
        v = slope * d0 + f1[j]
        if v != v:
            v = slope * (xv - xp[j + 1]) + f1[j + 1]
            if v != v and f1[j] == f1[j + 1]:
                v = f1[j]
        out1[i] = v
        if two:
            slope = (f2[j + 1] - f2[j]) / dx
            v = slope * d0 + f2[j]
            if v != v:
                v = slope * (xv - xp[j + 1]) + f2[j + 1]
                if v != v and f2[j] == f2[j + 1]:
                    v = f2[j]
            out2[i] = v
