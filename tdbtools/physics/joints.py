"""The engine's joint arithmetic (docs/physics.md §1): the solver of a run of cars whose
joints are at their limits (buffers touching, couplers taut), and the times at which
groups stop and joints touch. Pure functions of their arguments; the
:class:`~tdbtools.physics.engine.Engine` calls them (and ``_engine_kernel`` does the same
operations compiled).
"""

from __future__ import annotations

import math

import numpy as np

from tdbtools.physics.interaction import STOP_EPS

#: Speeds (m/s) that differ by no more than this count as equal.
EPS_V = 1e-9

# joint types at a limit (the constraint on the values y of the car ahead / behind)
_GE = 1  # buffers touching: y_front >= y_rear (the cars can only move apart)
_LE = 2  # coupler taut:      y_front <= y_rear (they can only come closer)
_EQ = 3  # both (rigid coupler, slack 0)


# --------------------------------------------------------------------------- block solver
#
# On a run of cars joined by joints at their limits, minimise
#     Σ_i ½·w_i·y_i² - f_i·y_i  (+ r_i·|y_i| for a block at rest)
# subject to y_j >= y_{j+1} (buffers, _GE), y_j <= y_{j+1} (taut coupler, _LE) or both (_EQ).
# Forces: w = m, f = F, y = acceleration (Gauss's principle of least constraint).
# Impulses: w = m, f = m·v, y = velocity after a perfectly inelastic impulse.
# The solution is piecewise constant: groups at their pooled mean Σf/Σw. These pure-Python
# loops only run for a block whose joint forces have the wrong sign (a split); the usual case
# is checked vectorised in Engine._regroup.


def _max_upper_set(g: list[float], types: list[int]) -> tuple[float, list[bool]]:
    """The set U of maximum total weight Σ_{i∈U} g_i that is closed upwards under the chain
    order (``i ∈ U`` and ``y_j`` bound to be ``>= y_i`` → ``j ∈ U``); dynamic programming."""
    k = len(g)
    b0, b1 = 0.0, g[0]
    back0 = [0] * k
    back1 = [1] * k
    for i in range(1, k):
        t = types[i - 1]
        # car i out of U: from out always; from in if the front may be higher (buffers)
        if t == _GE and b1 > b0:
            n0, back0[i] = b1, 1
        else:
            n0, back0[i] = b0, 0
        # car i in U: from in always; from out if the rear may be higher (taut coupler)
        if t == _LE and b0 > b1:
            n1, back1[i] = b0 + g[i], 0
        else:
            n1, back1[i] = b1 + g[i], 1
        b0, b1 = n0, n1
    member = [False] * k
    state = 1 if b1 > b0 else 0
    best = b1 if state else b0
    for i in range(k - 1, -1, -1):
        member[i] = bool(state)
        state = back1[i] if state else back0[i]
    return best, member


# Runs of up to this many elements are checked on Python floats, longer ones with numpy
# (the same IEEE operations in the same order: np.add.accumulate sums left to right).
_CHAIN_NUMPY = 48


def _solve_chain(w, f, types, tol: float) -> tuple[list[float], list[int]]:
    """Minimise Σ ½w·y² - f·y under the chain constraints. Returns the values and the local
    joints (``j``: between elements ``j`` and ``j + 1``) where the groups separate.

    ``w``, ``f`` (k floats) and ``types`` (k - 1 joint types) are sequences or arrays.
    Recursive partitioning (the threshold theorem of isotonic regression): with the pooled
    mean ``ȳ`` of a run, the maximum-weight upper set of ``g = f - w·ȳ`` holds exactly the
    elements above ``ȳ`` in the solution, and the constraints between it and the rest are
    then slack, so each piece is solved on its own. A run whose joint forces already have the
    right signs is one group (checked with one cumulative sum for a long run: the cost of a
    long train's events stays linear in its cars)."""
    wa = fa = ta = None
    if isinstance(w, list) and isinstance(f, list) and isinstance(types, list):
        wl, fl, tl = w, f, types  # the arrays are made only if a run is long
    else:
        wa = np.asarray(w, dtype=np.float64)
        fa = np.asarray(f, dtype=np.float64)
        ta = np.asarray(types, dtype=np.int64)
        wl, fl, tl = wa.tolist(), fa.tolist(), ta.tolist()
    k = len(wl)
    y = [0.0] * k
    cuts: list[int] = []
    stack = [(0, k)]
    while stack:
        s, e = stack.pop()
        if e - s == 1:  # fsum of one number is that number (+ 0.0: fsum never gives -0.0)
            y[s] = (fl[s] + 0.0) / (wl[s] + 0.0)
            continue
        W = math.fsum(wl[s:e])
        ybar = math.fsum(fl[s:e]) / W
        ok = True
        g: list[float] | None = None
        if e - s > _CHAIN_NUMPY:
            if wa is None or fa is None or ta is None:
                wa, fa, ta = np.array(wl), np.array(fl), np.array(tl, dtype=np.int64)
            ga = fa[s:e] - wa[s:e] * ybar
            Pa = np.add.accumulate(ga[:-1])
            t = ta[s : e - 1]
            if np.any(((t == _GE) & (Pa > tol)) | ((t == _LE) & (Pa < -tol))):
                ok = False
                g = ga.tolist()
        else:
            P = 0.0
            for j in range(s, e - 1):
                P += fl[j] - wl[j] * ybar
                tj = tl[j]
                if (tj == _GE and P > tol) or (tj == _LE and P < -tol):
                    ok = False
                    break
        if not ok:
            if g is None:
                g = [fl[i] - wl[i] * ybar for i in range(s, e)]
            best, member = _max_upper_set(g, tl[s : e - 1])
            ok = best <= tol or all(member) or not any(member)
        if ok:
            y[s:e] = [ybar] * (e - s)
            continue
        r = s
        for i in range(s + 1, e):
            if member[i - s] != member[i - 1 - s]:
                cuts.append(i - 1)
                stack.append((r, i))
                r = i
        stack.append((r, e))
    cuts.sort()
    return y, cuts


_FLIP = {_GE: _LE, _LE: _GE, _EQ: _EQ}


def _solve_static(
    w: list[float], d: list[float], r: list[float], types: list[int], tol: float
) -> tuple[list[float], list[int]]:
    """Accelerations of a block at rest: minimise Σ ½w·y² - d·y + r·|y| (Coulomb friction).

    The cars that move forward are the maximum-weight upper set of ``d - r`` (threshold at
    0⁺), those that move back the maximum-weight lower set of ``-d - r``; each moving run is
    then a linear problem with the friction signed against its motion; the rest stay."""
    k = len(w)
    up, mu = _max_upper_set([d[i] - r[i] for i in range(k)], types)
    dn, md = _max_upper_set([-d[i] - r[i] for i in range(k)], [_FLIP[t] for t in types])
    lab = [0] * k
    for i in range(k):
        fwd = up > tol and mu[i]
        back = dn > tol and md[i]
        lab[i] = 1 if fwd and not back else (-1 if back and not fwd else 0)
    y = [0.0] * k
    cuts: list[int] = []
    s = 0
    for i in range(1, k + 1):
        if i < k and lab[i] == lab[s]:
            continue
        if lab[s] != 0:
            sign = lab[s]
            ys, cs = _solve_chain(w[s:i], [d[j] - sign * r[j] for j in range(s, i)], types[s : i - 1], tol)
            # friction cannot reverse the motion: a piece that would, stays (rounding only)
            y[s:i] = [v if v * sign > 0 else 0.0 for v in ys]
            cuts += [s + c for c in cs]
        if i < k:
            cuts.append(i - 1)
        s = i
    return y, cuts


def _stop_times(fr: np.ndarray, oth: np.ndarray, V: np.ndarray) -> np.ndarray:
    """:func:`~tdbtools.physics.interaction.stopping_times` of groups that move (no speed
    is 0), with the same operations."""
    a = oth - np.sign(V) * np.abs(fr)
    never = (np.abs(a) < STOP_EPS) | (a * V > 0.0)
    t = -V / np.where(never, 1.0, a)
    t[never] = np.inf
    return t


def _touch_times(B: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Next contact of a joint that is at its limit now (distance 0): ``B`` closing speed,
    ``A`` half the closing acceleration. Closing → 0; opening with a closing acceleration →
    the other root ``-B/A``; else never. (The article's formula would answer 0 for the root at
    the start.)"""
    out = np.full(B.shape, np.inf)
    out[B > EPS_V] = 0.0
    back = (B < -EPS_V) & (A > 0.0)
    out[back] = -B[back] / A[back]
    return out


def _touch_time(B: float, A: float) -> float:
    """:func:`_touch_times` of one joint."""
    if B > EPS_V:
        return 0.0
    if B < -EPS_V and A > 0.0:
        return -B / A
    return math.inf
