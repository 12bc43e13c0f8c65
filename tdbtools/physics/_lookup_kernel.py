"""``np.interp`` over the replay's line table, compiled with numba, remembering each point's
table row from the last call (docs/physics.md §1.1).

A bogie moves a few metres a step, so its row is found next to where it was, instead of by
a search from the previous point. The result of ``np.interp`` depends only on the row (the
last ``j`` with ``xp[j] <= x``, the same whichever way it is found) and on its formula,
done here operation for operation: ``fp[0]``/``fp[-1]`` outside the table, ``fp[j]`` at
the last point or where ``x == xp[j]``, else ``slope·(x - xp[j]) + fp[j]`` with
``slope = (fp[j+1] - fp[j]) / (xp[j+1] - xp[j])``, and from the right end when that is
not a number. ``tests/test_replay_fast_paths.py`` compares it with ``np.interp``.

:func:`owner_cross` is the collision checks' pairing of nearby cars of nearby trains
(``proximity._owner_pairs``) in one pass, without the numpy code's temporary arrays of every
candidate pair; ``tests/test_collision_checks.py`` compares the two.
"""

from __future__ import annotations

import numpy as np
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


@_jit
def owner_cross(oi, oj, start, size, lo_x, hi_x, lo_z, hi_z, olo_x, ohi_x, olo_z, ohi_z, pad):
    """The pairs of boxes of the owner pairs ``(oi, oj)`` within ``pad`` of each other, as
    ``tdbtools.physics.proximity._owner_pairs`` makes them with numpy: per owner pair, the boxes
    of one near the other's owner box against those of the other near the first's, the
    first's boxes outer, each pair as (smaller, larger) index and tested as written there
    (the same comparisons, so the same pairs in the same order)."""
    n_max = 0
    for p in range(oi.size):
        n_max = max(n_max, size[oi[p]], size[oj[p]])
    near_a = np.empty(n_max, np.int64)
    near_b = np.empty(n_max, np.int64)
    # twice: counting the pairs, then writing them (growing the output as it fills was
    # ten times slower)
    got = 0
    out_a = np.empty(0, np.int64)
    out_b = np.empty(0, np.int64)
    for write in (False, True):
        if write:
            out_a = np.empty(got, np.int64)
            out_b = np.empty(got, np.int64)
            got = 0
        for p in range(oi.size):
            A = oi[p]
            B = oj[p]
            na = 0
            for c in range(start[A], start[A] + size[A]):
                if (
                    (lo_x[c] - pad <= ohi_x[B])
                    & (olo_x[B] - pad <= hi_x[c])
                    & (lo_z[c] - pad <= ohi_z[B])
                    & (olo_z[B] - pad <= hi_z[c])
                ):
                    near_a[na] = c
                    na += 1
            nb = 0
            for c in range(start[B], start[B] + size[B]):
                if (
                    (lo_x[c] - pad <= ohi_x[A])
                    & (olo_x[A] - pad <= hi_x[c])
                    & (lo_z[c] - pad <= ohi_z[A])
                    & (olo_z[A] - pad <= hi_z[c])
                ):
                    near_b[nb] = c
                    nb += 1
            for x in range(na):
                a = near_a[x]
                # (the four tests without branches between them: most pairs fail one, at
                # random; the test is the same both ways round)
                alx = lo_x[a] - pad
                ahx = hi_x[a]
                alz = lo_z[a] - pad
                ahz = hi_z[a]
                for y in range(nb):
                    b = near_b[y]
                    if (alx <= hi_x[b]) & (lo_x[b] - pad <= ahx) & (alz <= hi_z[b]) & (lo_z[b] - pad <= ahz):
                        if write:
                            out_a[got] = min(a, b)
                            out_b[got] = max(a, b)
                        got += 1
    return out_a, out_b


@_jit
def boxes_near(lo_x, hi_x, lo_z, hi_z, pad, order):
    """Which boxes have another within ``pad``: a box of a pair of
    ``tdbtools.physics.proximity.box_pairs`` (the same four tests as written there), by a
    sweep over the boxes in ``order`` (by ``lo_x``, NaN last): a box's partners further on
    start by ``lo_x - pad <= hi_x`` of the first, which stays false once false."""
    n = lo_x.size
    near = np.zeros(n, np.bool_)
    for a in range(n):
        i = order[a]
        for b in range(a + 1, n):
            j = order[b]
            if not lo_x[j] - pad <= hi_x[i]:
                break
            if (lo_x[i] - pad <= hi_x[j]) & (lo_z[i] - pad <= hi_z[j]) & (lo_z[j] - pad <= hi_z[i]):
                near[i] = True
                near[j] = True
    return near


@_jit
def _lt(a, b):
    """numpy's sort order: ``a < b`` with a NaN after every number."""
    return a < b or (b != b and a == a)


@_jit
def _search(a, v, left):
    """``np.searchsorted(a, v, "left" if left else "right")`` of one value."""
    lo = 0
    hi = a.size
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        if (_lt(a[mid], v)) if left else (not _lt(v, a[mid])):
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def on_lines(line, s, base, seg_first, seg1, seg1l, pt_first, S, SL, seg_node, X, Z, Y, node, ox, oz, oy):
    """:meth:`tdbtools.physics.stages.linetable.LineTable.on_lines` point by point, operation
    for operation (its numpy code is the reference; ``tests/test_collision_checks.py``
    compares the two): the node traversal (the global ``searchsorted`` clipped to the
    line's rows and settled onto the line's own distances), the sample row likewise, and
    np.interp's formula."""
    for k in range(s.size):
        ln = line[k]
        sk = s[k]
        g = sk + base[ln]
        f = seg_first[ln]
        last = seg_first[ln + 1] - 1
        i = min(max(_search(seg1, g, True), f), last)
        while i > f and seg1l[max(i - 1, f)] >= sk:
            i -= 1
        while i < last and seg1l[i] < sk:
            i += 1
        p0 = pt_first[ln]
        p1 = pt_first[ln + 1] - 1
        j = min(max(_search(S, g, False) - 1, p0), p1)
        while j > p0 and SL[j] > sk:
            j -= 1
        while j < p1 and SL[min(j + 1, p1)] <= sk:
            j += 1
        jn = min(j + 1, p1)
        sj = SL[j]
        den = SL[jn] - sj
        if den == 0.0:
            den = 1.0
        as_is = j == p1 or sj == sk
        left = sk < SL[p0]
        d = sk - sj
        node[k] = seg_node[i]
        for col, out in ((X, ox), (Z, oz), (Y, oy)):
            cj = col[j]
            out[k] = col[p0] if left else (cj if as_is else (col[jn] - cj) / den * d + cj)
