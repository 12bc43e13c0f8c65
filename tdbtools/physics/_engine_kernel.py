"""The engine step compiled with numba (docs/physics.md §1.1): the same IEEE operations in
the same order as :class:`tdbtools.physics.engine.Engine`'s own Python/numpy code, so both
give the same numbers bit for bit (``tests/test_engine_kernel.py``).

What makes that possible:

* numpy's ``np.add.reduceat`` sums a segment as its first element plus numpy's pairwise sum
  of the rest (blocks of 8 partial sums up to 128 elements, halved above):
  :func:`_seg_sum` does the same additions in the same order;
* ``np.add.accumulate``/``cumsum`` and the Python loops add left to right, as here;
* ``math.fsum`` is exactly rounded, so any exact summation gives its result (:func:`_fsum`
  is Shewchuk's partials with round-half-even across partials);
* numba does not contract ``a*b + c`` into fused multiply-adds nor reorder sums unless
  ``fastmath`` is set, and it is not.

Only the physics package imports this module (the engine, and
:func:`tdbtools.physics.compiled.compile_kernels`), and only when numba is installed
(``pip install tdbtools[fast]``); compiled code is cached next to the module.

It is one file of ~1,100 lines on purpose: numba's cache of a compiled function is checked
against the file that defines it only, not the files of the functions it calls, so the
step's callees split into another module could be edited without the cached step noticing.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba import types as nt

# keep in step with tdbtools.physics.engine (tests/test_engine_kernel.py checks them)
EPS_V = 1e-9
SNAP_GAP = 1e-9
V_REST = 1e-12
T_TOL = 1e-12
LINEAR_EPS = 1e-6
STOP_EPS = 1e-7
_GE = 1
_LE = 2
_EQ = 3

# event kinds in the event table (column 0)
# (numpy integers: numba types Python int constants as literals, each a specialisation)
K_IMPACT = np.int64(0)
K_TAUT = np.int64(1)
K_STOPPED = np.int64(2)
K_STARTED = np.int64(3)

# The entry point has its one signature: compiled once with its callees (at import, or
# loaded from the cache), never again for other argument types (a read-only array would
# make a new specialisation of the whole call tree, ~20 s). Callees get no literal ints
# (numpy ints instead): each literal would be a specialisation of its own.
F8, I8, B1 = nt.float64, nt.int64, nt.boolean
AF, AI, AB = nt.float64[::1], nt.int64[::1], nt.boolean[::1]
EV = nt.float64[:, ::1]
W2F, W2I, W2B = nt.float64[:, ::1], nt.int64[:, ::1], nt.boolean[:, ::1]


def _jit(sig):
    return njit(sig, cache=True, nogil=True)


_lazy = njit(cache=True, nogil=True)
# small helpers of the round, inlined (numba's IR inlining): a call passes every array
# with a reference count taken and dropped, which costs more than the helper's work
_inline = njit(cache=True, nogil=True, inline="always")


# ----------------------------------------------------------------------------- sums
@_lazy
def _pairwise(a, s, n):
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[s + i]
        return res
    if n <= 128:
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
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(a, s, n2) + _pairwise(a, s + n2, n - n2)


@_lazy
def _seg_sum(a, s, e):
    """``np.add.reduceat``'s sum of ``a[s:e]``."""
    if e - s == 1:
        return a[s]
    return a[s] + _pairwise(a, s + 1, e - s - 1)


@_lazy
def _pairwise_mv(m, v, s, n):
    """:func:`_pairwise` of the products ``m[i] * v[i]`` (each the same IEEE product as
    numpy's ``m * v``), without storing them first."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += m[s + i] * v[s + i]
        return res
    if n <= 128:
        r0 = m[s] * v[s]
        r1 = m[s + 1] * v[s + 1]
        r2 = m[s + 2] * v[s + 2]
        r3 = m[s + 3] * v[s + 3]
        r4 = m[s + 4] * v[s + 4]
        r5 = m[s + 5] * v[s + 5]
        r6 = m[s + 6] * v[s + 6]
        r7 = m[s + 7] * v[s + 7]
        i = 8
        stop = n - (n % 8)
        while i < stop:
            r0 += m[s + i] * v[s + i]
            r1 += m[s + i + 1] * v[s + i + 1]
            r2 += m[s + i + 2] * v[s + i + 2]
            r3 += m[s + i + 3] * v[s + i + 3]
            r4 += m[s + i + 4] * v[s + i + 4]
            r5 += m[s + i + 5] * v[s + i + 5]
            r6 += m[s + i + 6] * v[s + i + 6]
            r7 += m[s + i + 7] * v[s + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += m[s + i] * v[s + i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_mv(m, v, s, n2) + _pairwise_mv(m, v, s + n2, n - n2)


@_lazy
def _seg_sum_mv(m, v, s, e):
    """:func:`_seg_sum` of ``m[s:e] * v[s:e]`` (``np.add.reduceat(m * v, ...)``'s)."""
    if e - s == 1:
        return m[s] * v[s]
    return m[s] * v[s] + _pairwise_mv(m, v, s + 1, e - s - 1)


# (the unit roundoff of float64: 2**-53)
_U = 1.1102230246251565e-16


@_lazy
def _fsum(a, s, e):
    """``math.fsum(a[s:e])`` (finite values): the correctly rounded sum.

    First a cheap certified try: a running sum ``t`` with each addition's exact error
    (TwoSum) summed into ``c``, so the exact sum is ``t + (the errors' exact sum)``, and
    ``c`` is within ``B`` of that (a bound four times the recursive-summation bound
    γ·Σ|err|). Rounding is monotonic, so when ``t + (c - B)`` and ``t + (c + B)`` round
    to the same double, that double is the correctly rounded sum (fsum's result). Near a
    tie, at zero or on overflow, :func:`_fsum_exact` (Shewchuk's partials) decides."""
    t = 0.0
    c = 0.0
    ae = 0.0
    for k in range(s, e):
        t, c, ae = _two_sum_add(t, c, ae, a[k])
    return _fsum_certified(a, s, e, t, c, ae)


@_inline
def _two_sum_add(t, c, ae, x):
    """One addition of :func:`_fsum`'s pass: the running sum ``t`` with ``x`` added, its
    exact error (TwoSum) added into ``c`` and its magnitude into ``ae``."""
    u = t + x
    bp = u - t
    err = (t - (u - bp)) + (x - bp)
    return u, c + err, ae + abs(err)


@_inline
def _fsum_certified(a, s, e, t, c, ae):
    """:func:`_fsum`'s result from its TwoSum pass (``t``, ``c``, ``ae``) when the bound
    certifies it, else from :func:`_fsum_exact`."""
    r = t + c
    if math.isfinite(r):
        if ae == 0.0:  # every partial sum exact (c is 0, t the sum; fsum's +0.0 for 0)
            return r + 0.0
        if r != 0.0:
            b = ae * (4.0 * (e - s) * _U)
            if b > 0.0 and math.isfinite(b) and t + (c - b) == t + (c + b):
                return r
        # (near a tie: terms of few significant bits, as equal momenta, make errors whose
        # own sum is exact; then their sum and t are the exact sum, rounded once)
        ok, x = _fsum_errors_exact(a, s, e)
        if ok:
            return x
    return _fsum_exact(a, s, e)


@_lazy
def _fsum_errors_exact(a, s, e):
    """``(True, math.fsum(a[s:e]))`` when the TwoSum errors of the running sum of
    ``a[s:e]`` add up without rounding (each addition's own error is 0): the exact sum is
    then the running sum plus the errors' sum, two doubles, and one addition rounds it
    correctly (half to even, as fsum); else ``(False, 0.0)``."""
    t = 0.0
    c = 0.0
    for k in range(s, e):
        x = a[k]
        u = t + x
        bp = u - t
        err = (t - (u - bp)) + (x - bp)
        c2 = c + err
        bq = c2 - c
        if (c - (c2 - bq)) + (err - bq) != 0.0:
            return False, 0.0
        c = c2
        t = u
    r = t + c
    if not math.isfinite(r):
        return False, 0.0
    return True, r + 0.0


@_inline
def _running_states(w, f, rows, start, stop, step):
    """The TwoSum states of the exact sums of ``f`` and ``w`` after each car of
    ``range(start, stop, step)`` into ``rows`` (:func:`_fsum2`'s pass, each direction of
    :func:`_window_bounds`); returns the last state."""
    t = 0.0
    c = 0.0
    ae = 0.0
    t2 = 0.0
    c2 = 0.0
    ae2 = 0.0
    for j in range(start, stop, step):
        t, c, ae = _two_sum_add(t, c, ae, f[j])
        t2, c2, ae2 = _two_sum_add(t2, c2, ae2, w[j])
        # (element by element: a row view per car would take and drop a reference each,
        # an atomic operation that cost more than the sums)
        rows[j, 0] = t
        rows[j, 1] = c
        rows[j, 2] = ae
        rows[j, 3] = t2
        rows[j, 4] = c2
        rows[j, 5] = ae2
    return t, c, ae, t2, c2, ae2


@_lazy
def _fsum2(a, b, s, e, tag, st, base):
    """``(_fsum(a, s, e), _fsum(b, s, e))`` in one pass: the two running sums are
    independent chains of additions, so they overlap (the same results as two calls).
    ``tag``/``st``: the running state of both after each element ``k`` of a pass that
    started at ``tag[k] - base`` (kept for any range of the same first element that ends
    there: the same state, so the same result, without the pass). ``base``: the key of
    the current ``a`` and ``b`` (:func:`_sums_reset`: a tag of older ones never matches)."""
    if tag[e - 1] == s + base:
        q = e - 1
        return (
            _fsum_certified(a, s, e, st[q, 0], st[q, 1], st[q, 2]),
            _fsum_certified(b, s, e, st[q, 3], st[q, 4], st[q, 5]),
        )
    t, c, ae, t2, c2, ae2 = _running_states(b, a, st, s, e, 1)
    tag[s:e] = s + base
    return _fsum_certified(a, s, e, t, c, ae), _fsum_certified(b, s, e, t2, c2, ae2)


@_lazy
def _fsum_exact(a, s, e):
    """``math.fsum(a[s:e])`` (finite values) by Shewchuk's partials."""
    p = np.empty(e - s + 1)
    n = 0
    for k in range(s, e):
        x = a[k]
        i = 0
        for j in range(n):
            y = p[j]
            if abs(x) < abs(y):
                t = x
                x = y
                y = t
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                p[i] = lo
                i += 1
            x = hi
        n = i
        if x != 0.0:
            p[n] = x
            n += 1
    hi = 0.0
    lo = 0.0
    if n > 0:
        n -= 1
        hi = p[n]
        while n > 0:
            x = hi
            n -= 1
            y = p[n]
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                break
        if n > 0 and ((lo < 0.0 and p[n - 1] < 0.0) or (lo > 0.0 and p[n - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            yr = x - hi
            if y == yr:
                hi = x
    return hi


# ----------------------------------------------------------------------------- block solver
@_lazy
def _max_upper_set(g, types, k, member):
    """engine._max_upper_set of ``g[:k]``; the set goes to ``member[:k]``."""
    return _max_upper_set_w(g, types, k, member, np.empty(k, np.int8), np.empty(k, np.int8))


@_lazy
def _max_upper_set_w(g, types, k, member, back0, back1):
    """:func:`_max_upper_set` with its work arrays (``k`` values or more each) given."""
    back0[0] = 0
    back1[0] = 1
    b0 = 0.0
    b1 = g[0]
    # (selects, not branches: which way a step goes is data, badly predicted)
    for i in range(1, k):
        t = types[i - 1]
        c0 = (t == _GE) & (b1 > b0)
        c1 = (t == _LE) & (b0 > b1)
        back0[i] = c0
        back1[i] = not c1
        n0 = b1 if c0 else b0
        n1 = (b0 if c1 else b1) + g[i]
        b0 = n0
        b1 = n1
    state = 1 if b1 > b0 else 0
    best = b1 if state else b0
    for i in range(k - 1, -1, -1):
        member[i] = state == 1
        state = back1[i] if state else back0[i]
    return best


@_lazy
def _sums_cache(k):
    """A cache of :func:`_solve_chain`'s ranges of ``w`` and ``f``, two per first element
    (rows ``[s, 0]`` and ``[s, 1]``, the newer first): the range's end, its two exact sums
    and the solve in which it was found to move as one (-1: not known), then the solve each
    joint's type last changed in and the number of the current solve (``cur[0]``, never
    going back). For solving one chain again with some joints held (:func:`_impulse_run`'s
    resting contacts): the same ``w`` and ``f``, so the same sums, and a range whose joints
    kept their types since it moved as one does again (the solver is a function of the
    range's ``w``, ``f``, joint types and ``tol`` only); last, :func:`_fsum2`'s running
    states. Ends and tags are kept plus the key of their ``w`` and ``f`` (``cur[1]``). For a
    new ``w`` and ``f``: :func:`_sums_reset`."""
    c = (
        np.full((k, 2), -1, np.int64), np.empty((k, 2)), np.empty((k, 2)), np.empty((k, 2), np.int64),
        np.zeros(k, np.int64), np.zeros(2, np.int64), np.full(k, -1, np.int64), np.empty((k, 6)),
    )  # fmt: skip
    return c


@_inline
def _sums_reset(sums):
    """Forget every entry of :func:`_sums_cache` ``sums``, in O(1) (a run's cars are few
    of the rows the cache has, and it is reset per run): a new key, above every key kept
    (a key plus an end or a first element, at most the rows, never reaches the next key),
    and a new solve number, above every joint's (so no joint looks changed since a solve
    of the new ``w`` and ``f``)."""
    cur = sums[5]
    cur[0] += 1
    cur[1] += sums[0].shape[0] + 1


@_lazy
def _solve_chain(w, f, types, tol, y, cuts):
    """engine._solve_chain: values to ``y``, the cuts (sorted) to ``cuts``; returns their count."""
    return _solve_chain_c(w, f, types, tol, y, cuts, _sums_cache(w.size))


@_lazy
def _solve_chain_c(w, f, types, tol, y, cuts, sums):
    """:func:`_solve_chain` with the sums of ``w`` and ``f`` kept in ``sums`` (:func:`_sums_cache`)."""
    k = w.size
    return _solve_chain_w(
        w, f, types, tol, y, cuts, sums, np.empty(2 * k + 2, np.int64), np.empty(k), np.empty(k, np.bool_),
        np.empty(k, np.int8), np.empty(k, np.int8),
    )  # fmt: skip


@_inline
def _kept_whole(sums, s, e, slot):
    """Whether range ``s..e-1`` (in ``slot`` of :func:`_sums_cache`) moved as one in an
    earlier solve and none of its joints changed type since."""
    okv = sums[3]
    tver = sums[4]
    v = okv[s, slot]
    if v < 0:
        return False
    newest = np.int64(0)
    for j in range(s, e - 1):
        newest = max(newest, tver[j])
    return newest <= v


@_lazy
def _solve_chain_w(w, f, types, tol, y, cuts, sums, stack, g, member, back0, back1):
    """:func:`_solve_chain_c` with its work arrays given (a stack of ``2·k + 2`` values,
    the others of ``k`` or more): no allocation per call. The cuts of a range found
    whole again from ``sums`` are none, as before; the others are listed as they are found."""
    k = w.size
    nc = 0
    sp = 0
    stack[0] = 0
    stack[1] = k
    sp = 2
    s_end, s_w, s_f, okv, _tver, cur, tag, st = sums
    stamp = cur[0]
    base = cur[1]
    while sp:
        sp -= 2
        s = stack[sp]
        e = stack[sp + 1]
        if e - s == 1:
            y[s] = (f[s] + 0.0) / (w[s] + 0.0)
            continue
        if s_end[s, 0] == e + base:
            slot = 0
        elif s_end[s, 1] == e + base:
            slot = 1
        else:
            slot = -1
        if slot >= 0:
            W = s_w[s, slot]
            F = s_f[s, slot]
            if _kept_whole(sums, s, e, slot):
                ybar = F / W
                for i in range(s, e):
                    y[i] = ybar
                continue
        else:
            W, F = _fsum2(w, f, s, e, tag, st, base)
            # the newer entry first (a chain solved again meets its ranges in the same order)
            s_end[s, 1] = s_end[s, 0]
            s_w[s, 1] = s_w[s, 0]
            s_f[s, 1] = s_f[s, 0]
            okv[s, 1] = okv[s, 0]
            slot = 0
            s_end[s, 0] = e + base
            s_w[s, 0] = W
            s_f[s, 0] = F
        ybar = F / W
        ok = True
        P = 0.0
        for j in range(s, e - 1):
            P += f[j] - w[j] * ybar
            tj = types[j]
            if ((tj == _GE) & (P > tol)) | ((tj == _LE) & (P < -tol)):
                ok = False
                break
        if not ok:
            m = e - s
            for i in range(m):
                g[i] = f[s + i] - w[s + i] * ybar
            best = _max_upper_set_w(g, types[s : e - 1], m, member, back0, back1)
            if best <= tol:
                ok = True
            else:
                alli = True
                anyi = False
                for i in range(m):
                    if member[i]:
                        anyi = True
                    else:
                        alli = False
                ok = alli or not anyi
        if ok:
            okv[s, slot] = stamp
            for i in range(s, e):
                y[i] = ybar
            continue
        okv[s, slot] = -1
        r = s
        for i in range(s + 1, e):
            if member[i - s] != member[i - 1 - s]:
                cuts[nc] = i - 1
                nc += 1
                stack[sp] = r
                stack[sp + 1] = i
                sp += 2
                r = i
        stack[sp] = r
        stack[sp + 1] = e
        sp += 2
    cuts[:nc].sort()
    return nc


@_lazy
def _solve_static(w, d, r, types, tol, y, cuts):
    """engine._solve_static; returns the number of cuts."""
    k = w.size
    g = np.empty(k)
    for i in range(k):
        g[i] = d[i] - r[i]
    mu = np.empty(k, np.bool_)
    up = _max_upper_set(g, types, k, mu)
    flip = np.empty(max(k - 1, 0), np.int64)
    for i in range(k - 1):
        t = types[i]
        flip[i] = _LE if t == _GE else (_GE if t == _LE else _EQ)
    for i in range(k):
        g[i] = -d[i] - r[i]
    md = np.empty(k, np.bool_)
    dn = _max_upper_set(g, flip, k, md)
    lab = np.zeros(k, np.int64)
    for i in range(k):
        fwd = up > tol and mu[i]
        back = dn > tol and md[i]
        lab[i] = 1 if (fwd and not back) else (-1 if (back and not fwd) else 0)
    for i in range(k):
        y[i] = 0.0
    nc = 0
    s = 0
    ys = np.empty(k)
    cs = np.empty(k, np.int64)
    for i in range(1, k + 1):
        if i < k and lab[i] == lab[s]:
            continue
        if lab[s] != 0:
            sign = lab[s]
            fp = np.empty(i - s)
            for j in range(s, i):
                fp[j - s] = d[j] - sign * r[j]
            c = _solve_chain(w[s:i], fp, types[s : i - 1], tol, ys, cs)
            for j in range(i - s):
                vj = ys[j]
                y[s + j] = vj if vj * sign > 0 else 0.0
            for j in range(c):
                cuts[nc] = s + cs[j]
                nc += 1
        if i < k:
            cuts[nc] = i - 1
            nc += 1
        s = i
    return nc


# ----------------------------------------------------------------------------- events
@_lazy
def _push(ev, cnt, kind, time, c0, c1, line, rel, imp, lost):
    if cnt == ev.shape[0]:
        ev2 = np.empty((2 * cnt + 16, 8))
        ev2[:cnt] = ev[:cnt]
        ev = ev2
    ev[cnt, 0] = kind
    ev[cnt, 1] = time
    ev[cnt, 2] = c0
    ev[cnt, 3] = c1
    ev[cnt, 4] = line
    ev[cnt, 5] = rel
    ev[cnt, 6] = imp
    ev[cnt, 7] = lost
    return ev


@_inline
def _clash(s, A, B):
    """interaction.clash_times_ab of one element."""
    if abs(A) < LINEAR_EPS:
        if abs(B) >= LINEAR_EPS:
            t = s / B
            return t + 0.0 if t >= 0.0 else math.inf
        return math.inf
    D = B * B + 4.0 * A * s
    if not D >= 0.0:
        return math.inf
    q = -0.5 * (B + math.copysign(math.sqrt(D), B))
    t1 = q / A
    t2 = t1 if q == 0.0 else -s / q
    if t1 >= 0.0:
        t = min(t1, t2) if t2 >= 0.0 else t1
    else:
        t = t2 if t2 >= 0.0 else math.inf
    return t + 0.0


@_inline
def _touch(B, A):
    if B > EPS_V:
        return 0.0
    if B < -EPS_V and A > 0.0:
        return -B / A
    return math.inf


@_inline
def _stop(fr, oth, V):
    """engine._stop_times of one moving group."""
    sg = 1.0 if V > 0.0 else -1.0
    a = oth - sg * abs(fr)
    if abs(a) < STOP_EPS or a * V > 0.0:
        return math.inf
    return -V / a


# ----------------------------------------------------------------------------- rounds
@_lazy
def _types_of(atz, att, s, e, out):
    for j in range(s, e - 1):
        # (_EQ if att else _GE) if atz else _LE, without branches: 2 - z + 2·(z and t)
        z = np.int64(atz[j])
        out[j - s] = _LE - z + 2 * (z & np.int64(att[j]))


# Work arrays: made once per engine (work_arrays) and reused by every step, so a step of a
# short train does not spend its time allocating. Rows of (n + 1) values each. The last rows
# hold the engine itself (its constants and the state the kernel keeps between steps), so
# that a step is called with a few arrays: numba's dispatcher types every argument on every
# call (~0.4 us an array; the 26 arguments this step had cost ~13 us of a step).
_WF, _WI, _WB = 31, 15, 10  # float, int and bool rows of the rounds
# float rows: masses, upper limits of the joints (n - 1), lengths, gaps (n - 1), the x of
# each line's first car (one per line), the cars' speeds
R_M, R_HI, R_LEN, R_GAP, R_XLEAD, R_V = range(_WF, _WF + 6)
# int rows: each car's line, each line's first car (one per line), each car's line's first
# car, each car's line number, each car's group; META: (number of lines, round cap); LAST:
# the last step's last round's number of groups and of joints between them (LAST_NG, LAST_NJ)
I_LINE, I_LFIRST, I_FOC, I_LIDX, I_GID, I_META, I_LAST = range(_WI, _WI + 7)
LAST_NG, LAST_NJ = 0, 1
# bool rows: the joint joins two cars of one line, is at its lower / upper limit (n - 1)
B_SAME, B_ATZ, B_ATT = range(_WB, _WB + 3)


def work_arrays(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The float, int and bool work arrays of an engine of ``n`` cars (the engine's rows
    :data:`R_M` ... filled by the engine)."""
    return (
        np.zeros((R_V + 1, n + 1)),
        np.zeros((I_LAST + 1, n + 1), np.int64),
        np.zeros((B_ATT + 1, n + 1), np.bool_),
    )


# int rows of the kept results within a step (a result per block, by its first car): the
# split blocks' solutions (end, owner) and the joint-force checks (end, owner)
I_SP_OWNER, I_SP_END, I_FC_END, I_FC_OWNER = 0, 1, 11, 12


@_lazy
def _new_cache(wf, wi, wb):
    """The solutions of split blocks within one step: per first car ``s`` of a block, its end,
    direction and solution; ``owner[i]``: the block whose values car ``i`` holds (a new
    solution drops those it overlaps; a limit that moves drops the one over its joint,
    :func:`_limit_moved`). Emptied for each step."""
    owner = wi[I_SP_OWNER]
    owner[:] = -1
    end = wi[I_SP_END]
    end[:] = -1
    return owner, end, wf[0], wf[1], wb[2]


@_lazy
def _cached_split(cache, s, e, sg, a_car, brk):
    """The cached solution of block ``s..e-1`` written to ``a_car``/``brk``: its number of
    cuts, or -1 when it is not cached (Engine._split_blocks' cache, the same key: the
    joints' limits are the solution's while it is kept)."""
    _owner, end, sgn, y, cut = cache
    if end[s] != e or sgn[s] != sg:
        return -1
    c = 0
    for i in range(s, e):
        a_car[i] = y[i]
    for j in range(s, e - 1):
        if cut[j]:
            brk[j] = True
            c += 1
    return c


@_lazy
def _store_split(cache, s, e, sg, ys, cuts, nc):
    owner, end, sgn, y, cut = cache
    for i in range(s, e):
        o = owner[i]
        if o >= 0 and o != s:
            end[o] = -1
        owner[i] = s
        y[i] = ys[i - s]
    end[s] = e
    sgn[s] = sg
    for j in range(s, e - 1):
        cut[j] = False
    for i in range(nc):
        cut[s + cuts[i]] = True


@_lazy
def _workspace(wf, wi, wb):
    """The blocks' work arrays of :func:`regroup`; the segment sums and the joint-force
    checks kept per block are emptied (valid within one step)."""
    bc_end = wi[2]
    bc_end[:] = -1
    fc_end = wi[I_FC_END]
    fc_end[:] = -1
    wi[I_FC_OWNER][:] = -1
    return (
        wb[3], wi[4], wf[2], wf[3], wf[4], wf[5], wf[6], wf[7], wf[8], wf[9], wb[4], wb[5],
        bc_end, wf[11], wf[12], wf[13],
        fc_end, wi[I_FC_OWNER], wf[26], wf[27], wb[6], wb[9],
        wi[13], wi[14], wf[30],
    )  # fmt: skip


# The per-block and per-joint tests of the rounds (a block's common speed, a joint's lock,
# whether a block's check was kept) are written out where they are used: an inlined helper
# still takes a reference to each array it is given and drops it (an atomic increment and
# decrement, ~5 ns an array a call, measured), which cost more than the tests themselves.


@_inline
def _keep_check(fc, s, e, ak, sk, allmov, bad):
    """Keep block ``s..e-1``'s check; the checks kept before over any of its cars are
    dropped, so the kept checks never overlap and ``owner[i]`` is the one over car ``i``."""
    fc_end, owner, fa, fs, fbad, fmov = fc
    for i in range(s, e):
        o = owner[i]
        if o >= 0 and o != s:
            fc_end[o] = -1
        owner[i] = s
    fc_end[s] = e
    fa[s] = ak
    fs[s] = sk
    fmov[s] = allmov
    fbad[s] = bad


@_inline
def _force_check(m, drive, resist, atz, att, s, e, ak, sk, tol, allmov):
    """Whether one of block ``s..e-1``'s joint forces has the wrong sign or (at rest) a
    car could break free. A joint's force is the running sum of ``F - m·a`` from the
    block's first car (Engine: engine_groups.blocks_that_split)."""
    joints = allmov or sk != 0.0
    rest = not allmov and sk == 0.0
    bad = False
    acc = 0.0
    for i in range(s, e):
        E = drive[i] - sk * resist[i] - m[i] * ak
        acc = E if i == s else acc + E
        if i < e - 1:  # a joint inside the block: at a limit (lock)
            sj = 1.0 if atz[i] else -1.0
            bad |= joints & (atz[i] != att[i]) & (sj * acc > tol)
        bad |= rest & (abs(drive[i]) > resist[i] + tol)
    return bad


@_inline
def _limits_moved(wi, j):
    """Joint ``j`` reached or left a limit: the joint-force check and the split solution
    kept over it (if any) are dropped (the rows of the kept results in ``wi``)."""
    o = wi[I_FC_OWNER, j]
    if o >= 0 and j < wi[I_FC_END, o] - 1:
        wi[I_FC_END, o] = -1
    o = wi[I_SP_OWNER, j]
    if o >= 0 and j < wi[I_SP_END, o] - 1:
        wi[I_SP_END, o] = -1


@_lazy
def _split(m, drive, resist, atz, att, s, e, moving, sk, cache, ws):
    """The groups of block ``s..e-1`` whose joint-force check failed: each car's
    acceleration to ``a_car``, the cuts to ``brk`` (the split's solution kept in ``cache``
    and taken from it while it holds, :func:`_cached_split`)."""
    a_car, brk, types, cuts, y = ws[9], ws[10], ws[22], ws[23], ws[24]
    sg = sk if moving else 0.0
    if _cached_split(cache, s, e, sg, a_car, brk) >= 0:
        return
    _types_of(atz, att, s, e, types)
    tol_k = 1e-9 * (_fsum(np.abs(drive[s:e]), np.int64(0), e - s) + _fsum(resist, s, e)) + 1e-300
    if moving:
        f = np.empty(e - s)
        for i in range(s, e):
            f[i - s] = drive[i] - sg * resist[i]
        c = _solve_chain(m[s:e], f, types[: e - s - 1], tol_k, y, cuts)
    else:
        c = _solve_static(m[s:e], drive[s:e], resist[s:e], types[: e - s - 1], tol_k, y, cuts)
    for i in range(e - s):
        a_car[s + i] = y[i]
    for i in range(c):
        brk[s + cuts[i]] = True
    _store_split(cache, s, e, sg, y, cuts, c)


@_inline
def regroup(
    m, same, drive, resist, tol, atz, att, v, gstart, gm, gd, gr, gv, ga, jb, jg, cache, ws, full, ngp, rs, re, nr,
):  # fmt: skip
    """Engine._regroup: the groups of this round. Writes the groups' first cars, masses,
    drives, resists, speeds and accelerations, the joints between groups of one line
    (``jb``) and the group ahead of each (``jg``); returns (groups, joints). The cars'
    groups, speeds and accelerations follow from the groups (:func:`_advance`,
    :func:`step`). ``cache`` holds the solutions of the blocks that split
    (:func:`_new_cache`), ``ws`` the block sums of mass and forces and the joint-force
    checks (:func:`_workspace`); all are valid while the forces are.

    Incremental where that gives the same numbers: the blocks from the last round's
    groups (``gstart[:ngp]``) and the runs of cars the impulses moved (``rs``/``re``,
    ``nr`` of them) unless ``full``; a block's joint-force check and split solution kept
    while its cars, direction and joint limits are those of an earlier one this step
    (a kept result is looked up in O(1): :func:`_limits_moved` drops it when a limit
    of its joints moves)."""
    (
        lock, bstart, _mv, Mb, Db, Rb, vb, ab, sb, a_car, brk, _slow, bc_end, bc_M, bc_D, bc_R,
        fc_end, fc_owner, fc_a, fc_s, fc_bad, fc_mov, _types, _cuts, _y,
    ) = ws  # fmt: skip
    fc = (fc_end, fc_owner, fc_a, fc_s, fc_bad, fc_mov)
    n = m.size
    # blocks: joints at a limit with equal speeds. A joint inside one of the last round's
    # groups still is (its gap has not moved, its cars' speeds are equal), unless an
    # impulse changed the speeds of its cars: only the others are looked at again.
    nb = 1
    bstart[0] = 0
    if full:
        for j in range(n - 1):
            lock[j] = (atz[j] | att[j]) & (abs(v[j] - v[j + 1]) <= EPS_V)
            b = not lock[j]
            brk[j] = b
            if b:
                bstart[nb] = j + 1
                nb += 1
    else:
        # the joints looked at again, in order: the last round's group boundaries merged
        # with the runs' joints (disjoint runs, in order). Every other joint is inside a
        # last round's group: locked, and not a break (a cut of a split block is a group
        # boundary, so it is looked at again in the next round)
        k = 1
        r = 0
        jr = rs[0] if nr else n
        while True:
            gj = gstart[k] - 1 if k < ngp else n
            while r < nr and jr >= re[r] - 1:
                r += 1
                jr = rs[r] if r < nr else n
            j = min(gj, jr)
            if j >= n - 1:
                break
            if gj == j:
                k += 1
            if jr == j:
                jr += 1
            lock[j] = (atz[j] | att[j]) & (abs(v[j] - v[j + 1]) <= EPS_V)
            b = not lock[j]
            brk[j] = b
            if b:
                bstart[nb] = j + 1
                nb += 1
    allmov = True
    kp = 0  # the last round's group at or after this block's first car
    r = 0  # the first run of the impulses that does not end before it
    for k in range(nb):
        s = bstart[k]
        e = bstart[k + 1] if k + 1 < nb else n
        # the block's speed: its cars' common speed when they all have one (exactly, not
        # rounded through Σm·v/Σm), else Σm·v/Σm. A last round's group that no impulse
        # touched has one (its cars' speeds are its speed, :func:`_fill`): not looked at.
        uniform = False
        if not full:
            while kp < ngp and gstart[kp] < s:
                kp += 1
            if kp < ngp and gstart[kp] == s and (gstart[kp + 1] if kp + 1 < ngp else n) == e:
                while r < nr and re[r] <= s:
                    r += 1
                uniform = r >= nr or rs[r] >= e
        if not uniform:
            x = v[s]
            uniform = True
            for i in range(s + 1, e):
                if v[i] != x:
                    uniform = False
                    break
        if bc_end[s] == e:  # the same cars as a block earlier in this step: the same sums
            M = bc_M[s]
            D = bc_D[s]
            R = bc_R[s]
        else:
            M = _seg_sum(m, s, e)
            D = _seg_sum(drive, s, e)
            R = _seg_sum(resist, s, e)
            bc_end[s] = e
            bc_M[s] = M
            bc_D[s] = D
            bc_R[s] = R
        vk = v[s] if uniform else _seg_sum_mv(m, v, s, e) / M
        Mb[k] = M
        Db[k] = D
        Rb[k] = R
        if abs(vk) > V_REST:
            sg = 1.0 if vk > 0.0 else -1.0
        else:
            allmov = False
            vk = 0.0
            sg = (1.0 if D > 0.0 else -1.0) if abs(D) > R else 0.0
        vb[k] = vk
        sb[k] = sg
        ab[k] = (D - sg * R) / M if sg != 0.0 else 0.0
    # One pass over the blocks: each block's joint-force check, its split (when the check
    # fails) and its groups. A block's check, split and groups read and write only its own
    # cars' and joints' entries, so the pass makes what three passes (every check, then
    # every split, then every group) made, in fewer visits of each block.
    # The joint forces are running sums from the block's first car; a block whose forces
    # have the wrong sign, or at rest one a car could leave, splits (the tests as selects:
    # their outcomes are data, badly predicted as branches). A block checked before in
    # this step with the same inputs keeps its check. A block that did not split is a
    # group; the joints between groups on one line are the only gaps that move.
    checks = nb < n  # (every car a block of its own: nothing to check)
    ng = 0
    nj = 0
    for k in range(nb):
        s = bstart[k]
        e = bstart[k + 1] if k + 1 < nb else n
        ak = ab[k]
        sk = sb[k]
        split = False
        if checks and e - s >= 2:
            # checked earlier in this step with the same inputs: its cars, acceleration,
            # direction and whether every block moved (the forces are the step's); its
            # joints' limits are the check's too (a limit that moves drops the checks
            # over its joint, _limits_moved)
            if fc_end[s] == e and fc_a[s] == ak and fc_s[s] == sk and fc_mov[s] == allmov:
                bad = fc_bad[s]
            else:
                bad = _force_check(m, drive, resist, atz, att, s, e, ak, sk, tol, allmov)
                _keep_check(fc, s, e, ak, sk, allmov, bad)
            if bad:
                split = True
                _split(m, drive, resist, atz, att, s, e, sk != 0.0 and vb[k] != 0.0, sk, cache, ws)
        if split:
            g0 = ng
            for i in range(s, e):
                if i == s or brk[i - 1]:
                    if i and same[i - 1]:
                        jb[nj] = i - 1
                        jg[nj] = ng - 1
                        nj += 1
                    gstart[ng] = i
                    gv[ng] = vb[k]
                    ga[ng] = a_car[i]
                    ng += 1
            # the split block's groups' sums (the block's own when it did not split)
            for g in range(g0, ng):
                gs = gstart[g]
                ge = gstart[g + 1] if g + 1 < ng else e
                if bc_end[gs] == ge:
                    gm[g] = bc_M[gs]
                    gd[g] = bc_D[gs]
                    gr[g] = bc_R[gs]
                else:
                    gm[g] = bc_M[gs] = _seg_sum(m, gs, ge)
                    gd[g] = bc_D[gs] = _seg_sum(drive, gs, ge)
                    gr[g] = bc_R[gs] = _seg_sum(resist, gs, ge)
                    bc_end[gs] = ge
        else:
            if s and same[s - 1]:
                jb[nj] = s - 1
                jg[nj] = ng - 1
                nj += 1
            gstart[ng] = s
            gv[ng] = vb[k]
            ga[ng] = ab[k]
            gm[ng] = Mb[k]
            gd[ng] = Db[k]
            gr[ng] = Rb[k]
            ng += 1
    return ng, nj


@_inline
def _envelope(types, low, high, out_lo, out_hi, start, stop, step, t_low, t_high):
    """Running maximum of ``low`` over the joints of type ``t_low`` and minimum of ``high``
    over those of type ``t_high``, along ``range(start, stop, step)`` (one direction of
    :func:`_window_bounds`)."""
    lo = -np.inf
    hi = np.inf
    for j in range(start, stop, step):
        t = types[j]
        if t == t_low:
            lo = max(lo, low[j])
        elif t == t_high:
            hi = min(hi, high[j])
        out_lo[j] = lo
        out_hi[j] = hi


@_lazy
def _window_bounds(w, f, types, tol, a, eb, scf, tus):
    """engine_contacts._bounds of the window of cars ``a..eb`` into ``scf``'s rows 10-17
    (indexed by joint), and the running states of the exact sums of ``f`` and ``w`` from
    car ``a`` (``tus[0]``) and from car ``eb`` back (``tus[1]``), for :func:`_take_up`."""
    plo, phi, slo, shi = scf[10], scf[11], scf[12], scf[13]
    cplo, cphi, cslo, cshi = scf[14], scf[15], scf[16], scf[17]
    F = 0.0
    W = 0.0
    for j in range(a, eb):
        F += f[j]
        W += w[j]
        plo[j] = (F - tol) / W
        phi[j] = (F + tol) / W
    F = 0.0
    W = 0.0
    for j in range(eb - 1, a - 1, -1):
        F += f[j + 1]
        W += w[j + 1]
        slo[j] = (F - tol) / W
        shi[j] = (F + tol) / W
    _envelope(types, plo, phi, cplo, cphi, a, eb, 1, _GE, _LE)
    _envelope(types, slo, shi, cslo, cshi, eb - 1, a - 1, -1, _LE, _GE)
    _running_states(w, f, tus[0], a, eb + 1, 1)
    _running_states(w, f, tus[1], eb, a - 1, -1)


@_inline
def _mean_from(w, f, tus, side, s, e, j):
    """The exactly rounded ``fsum(f[s:e]) / fsum(w[s:e])`` from the running state at ``j``
    of the pass ``side`` of :func:`_window_bounds` (0: ``s`` its first car and ``j = e - 1``;
    1: ``e - 1`` its first car and ``j = s``)."""
    return _fsum_certified(f, s, e, tus[side, j, 0], tus[side, j, 1], tus[side, j, 2]) / _fsum_certified(
        w, s, e, tus[side, j, 3], tus[side, j, 4], tus[side, j, 5]
    )


@_inline
def _opening(t, d):
    return d if t == _GE else -d


@_lazy
def _take_up(w, f, types, tol, rest, y, cuts, nc, c, tc, tver, ver, scf, tus):
    """engine_contacts._take_up: the resting-contact rounds after one that held cut ``c``
    alone (type ``tc``; ``y`` and ``cuts[:nc]`` that round's solution) while each moves
    that cut by one joint, without solving the run; ``types`` hold what they held, each
    with ``tver`` set to ``ver``. Returns False (the caller solves again)."""
    k = w.size
    q = 0
    while cuts[q] != c:
        q += 1
    a = cuts[q - 1] + 1 if q > 0 else 0
    eb = cuts[q + 1] if q + 1 < nc else k - 1
    _window_bounds(w, f, types, tol, a, eb, scf, tus)
    plo, phi, slo, shi = scf[10], scf[11], scf[12], scf[13]
    cplo, cphi, cslo, cshi = scf[14], scf[15], scf[16], scf[17]
    fwd = 0
    lo = -np.inf
    hi = np.inf
    while True:
        ok = False
        p = c
        yf = 0.0
        yr = 0.0
        if fwd >= 0:
            p = c - 1
            while p >= a and types[p] != tc:
                p -= 1
            if p >= a:
                m = _mean_from(w, f, tus, 1, p + 1, eb + 1, p + 1)
                ya = _mean_from(w, f, tus, 0, a, p + 1, p)
                nlo = -np.inf
                nhi = np.inf
                if fwd == 0 and c + 1 < eb:
                    nlo = cslo[c + 1]
                    nhi = cshi[c + 1]
                nlo = max(lo, nlo)
                nhi = min(hi, nhi)
                for j in range(p + 1, c):
                    if types[j] == _LE:
                        nlo = max(nlo, slo[j])
                    elif types[j] == _GE:
                        nhi = min(nhi, shi[j])
                whole = nlo <= m <= nhi and (p == a or (cplo[p - 1] <= ya <= cphi[p - 1]))
                if whole:
                    ok = True
                    fwd = 1
                    lo = nlo
                    hi = nhi
                    yf = ya
                    yr = m
        if not ok and fwd <= 0:
            p = c + 1
            while p < eb and types[p] != tc:
                p += 1
            if p < eb:
                m = _mean_from(w, f, tus, 0, a, p + 1, p)
                yb = _mean_from(w, f, tus, 1, p + 1, eb + 1, p + 1)
                nlo = -np.inf
                nhi = np.inf
                if fwd == 0 and c > a:
                    nlo = cplo[c - 1]
                    nhi = cphi[c - 1]
                nlo = max(lo, nlo)
                nhi = min(hi, nhi)
                for j in range(c + 1, p):
                    if types[j] == _GE:
                        nlo = max(nlo, plo[j])
                    elif types[j] == _LE:
                        nhi = min(nhi, phi[j])
                whole = nlo <= m <= nhi and (p == eb - 1 or (cslo[p + 1] <= yb <= cshi[p + 1]))
                if whole:
                    ok = True
                    fwd = -1
                    lo = nlo
                    hi = nhi
                    yf = m
                    yr = yb
        if not ok:
            return False
        op = _opening(tc, yf - yr)
        if not op > 0.0:
            return False
        ha = False
        hb = False
        if a > 0:
            oa = _opening(types[a - 1], y[a - 1] - yf)
            if not oa > 0.0:
                return False
            ha = oa < rest
        if eb < k - 1:
            ob = _opening(types[eb], yr - y[eb + 1])
            if not ob > 0.0:
                return False
            hb = ob < rest
        hp = op < rest
        if ha or hb:
            if ha:
                types[a - 1] = _EQ
                tver[a - 1] = ver
            if hp:
                types[p] = _EQ
                tver[p] = ver
            if hb:
                types[eb] = _EQ
                tver[eb] = ver
            return False
        if not hp:
            return False
        types[p] = _EQ
        tver[p] = ver
        c = p


@_lazy
def _impulse_run(m, atz, att, v, s, e, js, dvs, nj, rest, time, line, ev, cnt, quiet, sc):
    """Engine._impulse_small / _impulse_block on the run of cars ``s..e-1``; appends the
    events of its violated joints ``js[:nj]`` but those closing slower than ``quiet`` (see
    :func:`step`). Returns the event table, its count and the number of events not made.
    ``sc``: the work arrays (:func:`_scratch`)."""
    scf, sci, scb, member, stack, sums, tus = sc
    k = e - s
    w = m[s:e]
    v0 = scf[0][:k]
    for i in range(k):
        v0[i] = v[s + i]
    f = scf[1][:k]
    af = scf[2][:k]
    npos = 0
    nneg = 0
    for i in range(k):
        x = w[i] * v0[i]
        f[i] = x
        af[i] = abs(x)
        npos += x > 0.0
        nneg += x < 0.0
    _sums_reset(sums)
    tver = sums[4]
    cur = sums[5]
    if k > 1 and (npos == 0 or nneg == 0):
        # the momenta have one sign: sum(|f|) is +-sum(f) (every operation of the exact
        # sum is symmetric in the sign), which the first solve needs: summed once, kept
        # as that solve's own miss would keep it (_solve_chain_w)
        s_end, s_w, s_f, okv, _tv, _cu, tag, st = sums
        W, F = _fsum2(w, f, np.int64(0), k, tag, st, cur[1])
        s_end[0, 0] = k + cur[1]
        s_w[0, 0] = W
        s_f[0, 0] = F
        okv[0, 0] = -1
        tol = 1e-12 * abs(F) + 1e-300
    else:
        tol = 1e-12 * _fsum(af, np.int64(0), k) + 1e-300
    types = sci[0][: max(k - 1, 0)]
    _types_of(atz, att, s, e, types)
    y = scf[3][:k]
    cuts = sci[1][:k]
    g = scf[4]
    back0 = scb[0]
    back1 = scb[1]
    while True:
        nc = _solve_chain_w(w, f, types, tol, y, cuts, sums, stack, g, member, back0, back1)
        nheld = 0
        c0 = np.int64(-1)
        t0 = np.int64(0)
        cur[0] += 1  # (the number of the next solve, which sees the joints held here)
        # only a cut can open (the cars between two cuts get one value), so only the cuts
        # are looked at, not every joint of the run
        for q in range(nc):
            i = cuts[q]
            ti = types[i]
            if ti == _EQ:
                continue
            d = y[i] - y[i + 1]
            opening = d if ti == _GE else -d
            if 0.0 < opening < rest:
                if nheld == 0:
                    c0 = i
                    t0 = ti
                types[i] = _EQ
                tver[i] = cur[0]
                nheld += 1
        if nheld == 0:
            break
        if nheld == 1:
            _take_up(w, f, types, tol, rest, y, cuts, nc, c0, t0, tver, cur[0], scf, tus)
    nkeep = nj
    if quiet > 0.0:
        nkeep = 0
        for q in range(nj):
            nkeep += not (abs(dvs[q]) < quiet)
    if not nkeep:
        # no record is made: the energy and impulses only go into records (most contacts
        # of a long train's slack are slow ones the replay drops)
        for i in range(k):
            v[s + i] = y[i]
        return ev, cnt, nj
    tmp = scf[5][:k]
    for i in range(k):
        tmp[i] = w[i] * v0[i] * v0[i]
    ke0 = 0.5 * _fsum(tmp, np.int64(0), k)
    for i in range(k):
        tmp[i] = w[i] * y[i] * y[i]
    ke1 = 0.5 * _fsum(tmp, np.int64(0), k)
    for i in range(k):
        v[s + i] = y[i]
    dp = scf[6][:k]
    acc = 0.0
    for i in range(k):
        x = w[i] * (y[i] - v0[i])
        acc = x if i == 0 else acc + x
        dp[i] = acc
    lost = max(ke0 - ke1, 0.0)
    share = scf[7][:nj]
    imp = scf[8][:nj]
    rel = scf[9][:nj]
    for q in range(nj):
        imp[q] = abs(dp[js[q] - s])
        rel[q] = abs(dvs[q])
        share[q] = imp[q] * rel[q]
    tot = _fsum(share, np.int64(0), nj)
    for q in range(nj):
        j = js[q]
        d = dvs[q]
        kind = K_IMPACT if (atz[j] and (d < 0 or not att[j])) else K_TAUT
        ls = lost * (share[q] / tot) if tot > 0 else lost / nj
        if nkeep == nj or not (rel[q] < quiet):
            ev = _push(ev, cnt, kind, time, j, j + 1, line[j], rel[q], imp[q], ls)
            cnt += 1
    return ev, cnt, nj - nkeep


@_lazy
def _scratch(n):
    """The work arrays of :func:`_impulse_run` for runs of up to ``n`` cars: float, int and
    int8 rows, a bool row, the block solver's stack and its ranges' cache (:func:`_sums_cache`),
    then :func:`_take_up`'s running sums (from the window's first car and from its last)."""
    return (
        np.empty((18, n + 1)), np.empty((2, n + 1), np.int64), np.empty((2, n + 1), np.int8),
        np.empty(n + 1, np.bool_), np.empty(2 * n + 2, np.int64), _sums_cache(n + 1), np.empty((2, n + 1, 6)),
    )  # fmt: skip


@_lazy
def _impulses(
    m, same, atz, att, v, gid, rest, time, line, ev, cnt, quiet, bad, dvb, first, jb, njb, rs, re, sc
):
    """Engine._impulses: resolve every joint between groups that is at a limit and closing
    (``bad``, ``dvb``: work arrays for the joints and their closing speeds). The joints
    between groups are those of ``gid`` in a step's ``first`` round, else the last
    round's ``jb[:njb]`` (the same joints). The runs of cars resolved go to ``rs``/``re``;
    returns the event table, its count, the number of events not made (``quiet``: see
    :func:`step`) and the number of runs. ``sc``: the work arrays
    of :func:`_impulse_run`."""
    n = m.size
    nbad = 0
    if first:
        for j in range(n - 1):
            if gid[j] == gid[j + 1] or not same[j]:
                continue
            d = v[j] - v[j + 1]
            if (d < -EPS_V and atz[j]) or (d > EPS_V and att[j]):
                bad[nbad] = j
                dvb[nbad] = d
                nbad += 1
    else:
        for q in range(njb):
            j = jb[q]
            d = v[j] - v[j + 1]
            if (d < -EPS_V and atz[j]) or (d > EPS_V and att[j]):
                bad[nbad] = j
                dvb[nbad] = d
                nbad += 1
    nr = 0
    nq = 0
    i = 0
    while i < nbad:
        j = bad[i]
        # the run of cars held by joints at a limit around joint j (a group's inner joints
        # are all at a limit, so walking car by car ends at the same group boundaries)
        s = j
        while s > 0 and (atz[s - 1] | att[s - 1]):
            s -= 1
        e = j + 1
        while e < n - 1 and (atz[e] | att[e]):
            e += 1
        e += 1
        i0 = i
        while i < nbad and bad[i] < e - 1:
            i += 1
        ev, cnt, dropped = _impulse_run(
            m, atz, att, v, s, e, bad[i0:i], dvb[i0:i], i - i0, rest, time, line, ev, cnt, quiet, sc
        )
        nq += dropped
        rs[nr] = s
        re[nr] = e
        nr += 1
    return ev, cnt, nq, nr


@_lazy
def _group_end(gstart, ng, n, k):
    return gstart[k + 1] - 1 if k + 1 < ng else n - 1


@_inline
def _group_of(gstart, ng, i):
    """The group of car ``i`` (the last group starting at or before it)."""
    lo = 0
    hi = ng - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if gstart[mid] <= i:
            lo = mid
        else:
            hi = mid - 1
    return lo


@_inline
def _fill(gstart, ng, n, gval, out):
    """Every car's value from its group's (``out[i] = gval[group of i]``)."""
    # (a slice filled: ~4x faster than a store per car, which is a check of the index's sign
    # each, on the 1,000-car train 0.28 against 1.05 us a fill, one a round)
    for k in range(ng):
        out[gstart[k] : gstart[k + 1] if k + 1 < ng else n] = gval[k]


@_inline
def _advance(
    tau, n, ng, nj, jb, jg, gstart, gv, ga, dg, gap, hi, atz, att, v, xlead, line, line_first, time, dirty, ev, cnt,
    wi,
):  # fmt: skip
    """Engine._advance: every group moves ``tau`` seconds at its acceleration; the cars'
    speeds are their groups' (also when ``tau`` is not positive: :func:`regroup` leaves
    them to this). A joint that reaches or leaves a limit drops the joint-force check
    and the split solution kept over it (``wi``: the int work rows, :func:`_limits_moved`)."""
    if not tau > 0.0:
        _fill(gstart, ng, n, gv, v)
        return ev, cnt, dirty, time
    for k in range(ng):
        if gv[k] == 0.0 and ga[k] != 0.0:
            s = gstart[k]
            ev = _push(ev, cnt, K_STARTED, time, s, _group_end(gstart, ng, n, k), line[s], 0.0, 0.0, 0.0)
            cnt += 1
    t2 = tau * tau
    for k in range(ng):
        dg[k] = gv[k] * tau + 0.5 * ga[k] * t2
        gv[k] = gv[k] + ga[k] * tau
    for q in range(nj):
        j = jb[q]
        k = jg[q]
        h = hi[j]
        g = min(max(gap[j] + (dg[k] - dg[k + 1]), 0.0), h)
        z = g < SNAP_GAP
        near = (h - g) < SNAP_GAP
        if z or near:
            if z:
                g = 0.0
            if near:
                g = h
            dirty = True
        gap[j] = g
        gz = g <= 0.0
        gt = g >= h
        if gz != atz[j] or gt != att[j]:
            _limits_moved(wi, j)
        atz[j] = gz
        att[j] = gt
    for li in range(line_first.size):
        xlead[li] += dg[_group_of(gstart, ng, line_first[li])]
    _fill(gstart, ng, n, gv, v)
    return ev, cnt, dirty, time + tau


# step's flags (its first result)
F_BAD = np.int64(1)
F_DIRTY = np.int64(2)
F_TRUNCATED = np.int64(4)
F_MOVED = np.int64(8)


@_jit(nt.Tuple((I8, EV, I8, I8))(AF, AF, F8, F8, F8, B1, F8, W2F, W2I, W2B, W2F, AI))
def step(drive, resist, dt, rest, time, dirty, quiet, wf, wi, wb, out, gid_out):
    """Engine.step's checks of the forces and its rounds on the engine kept in the work
    arrays' last rows (:data:`R_M` ...). Returns (flags, event table, event count, rows
    kept); the flags: :data:`F_BAD` (a drive is not finite or a resist not finite and >= 0:
    nothing changed), :data:`F_DIRTY` (contacts dirty), :data:`F_TRUNCATED`,
    :data:`F_MOVED` (gaps moved). The state rows are updated in place, and the step's
    results go to new arrays (the engine hands them out and never changes one): ``out``
    (3 × n) gets the cars' speeds, accelerations and x (as Engine.x makes it), ``gid_out``
    their groups. The table's first rows are the events kept: all of them but impacts and
    taut couplers closing slower than ``quiet`` m/s (Engine.quiet_contact_speed; every
    event is counted), in time order."""
    n = wf.shape[1] - 1
    nl = wi[I_META, 0]
    cap = wi[I_META, 1]
    m = wf[R_M, :n]
    hi = wf[R_HI, : n - 1]
    length = wf[R_LEN, :n]
    gap = wf[R_GAP, : n - 1]
    xlead = wf[R_XLEAD, :nl]
    v = wf[R_V, :n]
    line = wi[I_LINE, :n]
    line_first = wi[I_LFIRST, :nl]
    first_of_car = wi[I_FOC, :n]
    line_index = wi[I_LIDX, :n]
    gid = wi[I_GID, :n]
    same = wb[B_SAME, : n - 1]
    atz = wb[B_ATZ, : n - 1]
    att = wb[B_ATT, : n - 1]
    a = out[1]
    xout = out[2]
    ev = np.empty((16, 8))
    # the tolerance of the joint-force signs from the largest |drive| and resist (max is
    # exact: numpy's argmax gives the same numbers)
    # (without a branch per car: ``x - x`` is 0 for a finite x, nan else)
    dmax = 0.0
    rmax = 0.0
    ok = True
    for i in range(n):
        d = drive[i]
        r = resist[i]
        ok &= (d - d == 0.0) & (r - r == 0.0) & (r >= 0.0)
        d = abs(d)
        dmax = d if d > dmax else dmax
        rmax = r if r > rmax else rmax
    if not ok:
        return F_BAD, ev, 0, 0
    tol = 1e-9 * (dmax + rmax) + 1e-300
    cnt = 0
    nquiet = 0  # events not made (quiet contacts)
    gstart = wi[5]
    jb = wi[6]
    jg = wi[10]
    rs = wi[8]
    re = wi[9]
    gm, gd, gr, gv, ga, dg, tc, tt, ts = (
        wf[14],
        wf[15],
        wf[16],
        wf[17],
        wf[18],
        wf[19],
        wf[20],
        wf[21],
        wf[22],
    )
    cache = _new_cache(wf, wi, wb)
    ws = _workspace(wf, wi, wb)
    remaining = dt
    count = 0
    truncated = False
    moved = False
    first = True
    # the last step's last round's groups (their first cars gstart[:ng], the joints between
    # them jb[:nj]) are this step's first round's last round: its cars' speeds are their
    # groups' and its groups' inner joints are at a limit (what a round leaves, and nothing
    # moved since). So the first round looks again only at those joints and the impulses'
    # runs, as every later round does: the same groups, in proportion to what changed.
    # None (0) after the engine's state was set from outside (Engine._bind_work) or a
    # truncated step: the first round then looks at every car.
    ng = wi[I_LAST, LAST_NG]
    nj = wi[I_LAST, LAST_NJ]
    full = ng == 0
    sc = _scratch(0)
    have_sc = False
    while True:
        nr = 0
        if dirty:
            if not have_sc:  # (made once per step, when a step has impulses)
                sc = _scratch(n)
                have_sc = True
            ev, cnt, dq, nr = _impulses(
                m, same, atz, att, v, gid, rest, time, line, ev, cnt, quiet, wi[7], wf[23], first and full, jb, nj, rs, re, sc
            )  # fmt: skip
            nquiet += dq
            dirty = False
        ng, nj = regroup(
            m, same, drive, resist, tol, atz, att, v, gstart, gm, gd, gr, gv, ga, jb, jg, cache, ws, first and full, ng, rs, re, nr
        )  # fmt: skip
        first = False
        # -- next event
        t_min = math.inf
        for q in range(nj):
            j = jb[q]
            k = jg[q]
            S = gap[j]
            B = gv[k + 1] - gv[k]
            A = (ga[k + 1] - ga[k]) * 0.5
            t = _touch(B, A) if S <= 0.0 else _clash(S, A, B)
            tc[q] = t
            t_min = min(t_min, t)
            h = hi[j]
            if h < math.inf:
                S2 = h - S
                A2 = 0.0 - A
                B2 = 0.0 - B
                t = _touch(B2, A2) if S2 <= 0.0 else _clash(S2, A2, B2)
            else:
                t = math.inf
            tt[q] = t
            t_min = min(t_min, t)
        for k in range(ng):
            V = gv[k]
            if V != 0.0:
                M = gm[k]
                t = _stop(gr[k] / M, gd[k] / M, V)
            else:
                t = math.inf
            ts[k] = t
            t_min = min(t_min, t)
        last = t_min >= remaining
        tau = remaining if last else t_min
        # -- advance by tau
        ev, cnt, dirty, time = _advance(
            tau, n, ng, nj, jb, jg, gstart, gv, ga, dg, gap, hi, atz, att, v, xlead, line, line_first, time, dirty, ev, cnt, wi
        )  # fmt: skip
        if nj and tau > 0.0:
            moved = True
        if last:
            break
        remaining -= tau
        # -- apply the events at t_min
        lim = t_min + T_TOL
        for q in range(nj):
            j = jb[q]
            if tc[q] <= lim:
                _limits_moved(wi, j)
                gap[j] = 0.0
                atz[j] = True
                att[j] = 0.0 >= hi[j]
                dirty = True
                moved = True
        for q in range(nj):
            j = jb[q]
            if tt[q] <= lim:
                _limits_moved(wi, j)
                gap[j] = hi[j]
                atz[j] = hi[j] <= 0.0
                att[j] = True
                dirty = True
                moved = True
        for k in range(ng):
            if ts[k] <= lim:
                gv[k] = 0.0
                s = gstart[k]
                e = _group_end(gstart, ng, n, k)
                v[s : e + 1] = 0.0
                ev = _push(ev, cnt, K_STOPPED, time, s, e, line[s], 0.0, 0.0, 0.0)
                cnt += 1
        count += 1
        if count >= cap:
            truncated = True
            # the rest of the step without interactions (as Engine.step; never expected)
            ev, cnt, dirty, time = _advance(
                remaining, n, ng, nj, jb, jg, gstart, gv, ga, dg, gap, hi, atz, att, v, xlead, line, line_first, time, dirty, ev, cnt, wi
            )  # fmt: skip
            moved = True
            break
    wi[I_LAST, LAST_NG] = 0 if truncated else ng  # (truncated: the engine snaps the gaps)
    wi[I_LAST, LAST_NJ] = nj
    # the cars' groups and accelerations: those of the last round's groups
    for k in range(ng):
        s = gstart[k]
        e = gstart[k + 1] if k + 1 < ng else n
        gid[s:e] = k
        a[s:e] = ga[k]
    # Engine.x: the offsets behind each line's first car from one running sum over all
    # joints (numpy's cumsum), subtracted from the line's first car
    c = wf[24]
    acc = 0.0
    c[0] = 0.0
    for i in range(1, n):
        off = length[i - 1] + gap[i - 1] if same[i - 1] else 0.0
        acc = off if i == 1 else acc + off
        c[i] = acc
    if nl == 1:  # (c[0] is 0 and c[i] - 0.0 is c[i]: one line needs no look-ups)
        x0 = xlead[0]
        for i in range(n):
            xout[i] = x0 - c[i]
    else:
        for i in range(n):
            xout[i] = xlead[line_index[i]] - (c[i] - c[first_of_car[i]])
    out[0, :] = v
    gid_out[:] = gid
    flags = (F_DIRTY if dirty else 0) | (F_TRUNCATED if truncated else 0) | (F_MOVED if moved else 0)
    return flags, ev, cnt + nquiet, cnt
