"""The engine's impulses (docs/physics.md §1, step 1 of :mod:`tdbtools.physics.engine`).

Every joint between two groups that is at a limit and whose cars close into it is resolved
by a perfectly inelastic impulse over the run of cars held by joints at their limits around
it (:func:`~tdbtools.physics.joints._solve_chain`); a joint the impulse leaves opening
slower than the engine's ``rest_speed`` is held at its limit (resting contact,
:func:`rest_solve`, whose rounds that only move one cut are taken up without solving the
run again). A short run is resolved on Python floats (:func:`impulse_small`), a long one
through numpy arrays (:func:`impulse_block`): the same IEEE operations in the same order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tdbtools.physics import joints
from tdbtools.physics.engine_bodies import Event
from tdbtools.physics.engine_groups import joint_types
from tdbtools.physics.joints import _EQ, _GE, _LE, EPS_V, _solve_chain

#: The Engine of tdbtools.physics.engine, whose state these functions read and write (not
#: imported: that module imports this one).
Engine = Any

__all__ = ["impulses"]


def impulses(eng: Engine, events: list[Event]) -> None:
    # Only a joint between two groups can have unequal speeds (v = vg[gid]), and only
    # one at a limit can be violated: look at those, not at every car.
    grp = eng._groups
    jb = grp.joints
    if not len(jb):
        return
    atz, att = eng._atz, eng._att
    gl = grp.lists
    bad: list[int] = []
    dvb: list[float] = []  # v[j] - v[j + 1] of each bad joint (> 0: the car ahead is faster)
    if gl is not None:
        vgl = gl.v
        for j, k in zip(gl.joints, gl.joint_group):
            d = vgl[k] - vgl[k + 1]
            if (d < -EPS_V and atz[j]) or (d > EPS_V and att[j]):
                bad.append(j)
                dvb.append(d)
        if not bad:
            return
    else:
        vg = grp.v
        dvj = (vg[:-1] - vg[1:])[grp.joint_group]
        viol = (atz[jb] & (dvj < -EPS_V)) | (att[jb] & (dvj > EPS_V))
        if not np.count_nonzero(viol):
            return
        bad = jb[viol].tolist()
        dvb = dvj[viol].tolist()
    v = eng._v = eng._v.copy()  # never change an array already handed out
    starts = grp.starts
    of_car = grp.of_car
    ng = starts.size
    n = eng.n
    i = 0
    while i < len(bad):
        # the run of cars held by joints at a limit around joint bad[i], walked group by
        # group (a group's inner joints are all at a limit)
        j = bad[i]
        g = int(of_car[j])
        while g > 0:
            jj = int(starts[g]) - 1
            if not (atz[jj] or att[jj]):
                break
            g -= 1
        s = int(starts[g])
        g = int(of_car[j + 1])
        while g + 1 < ng:
            jj = int(starts[g + 1]) - 1
            if not (atz[jj] or att[jj]):
                break
            g += 1
        e = int(starts[g + 1]) if g + 1 < ng else n
        i0 = i
        while i < len(bad) and bad[i] < e - 1:
            i += 1
        if e - s <= joints._CHAIN_NUMPY:
            impulse_small(eng, s, e, bad[i0:i], dvb[i0:i], v, events)
        else:
            impulse_block(eng, s, e, bad[i0:i], dvb[i0:i], v, events)
    eng._blocks = None


def impulse_block(
    eng: Engine, s: int, e: int, js: list[int], dvs: list[float], v: np.ndarray, events
) -> None:
    """Resolve the impulses of the run of cars ``s..e-1`` (joints at a limit) whose joints
    ``js`` (closing speeds ``dvs``) are violated; numpy version for long runs."""
    atz, att = eng._atz, eng._att
    w = eng._m[s:e]
    v0 = v[s:e].copy()
    f = w * v0
    tol = 1e-12 * math.fsum(np.abs(f).tolist()) + 1e-300
    types = joint_types(atz, att, s, e)
    y = np.array(rest_solve(w.tolist(), f.tolist(), types.tolist(), tol, eng.rest_speed))
    ke0 = 0.5 * math.fsum((w * v0 * v0).tolist())
    ke1 = 0.5 * math.fsum((w * y * y).tolist())
    v[s:e] = y
    # impulse through joint j = momentum gained by the cars ahead of it
    dp = np.cumsum(w * (y - v0))
    imp = [abs(float(dp[j - s])) for j in js]
    impulse_events(eng, js, dvs, imp, max(ke0 - ke1, 0.0), events)


def impulse_small(
    eng: Engine, s: int, e: int, js: list[int], dvs: list[float], v: np.ndarray, events
) -> None:
    """:meth:`_impulse_block` on Python floats (the same IEEE operations in the same order:
    products element by element, running sums left to right, exactly rounded sums)."""
    w = eng._ml[s:e]
    v0 = v[s:e].tolist()
    f = [wi * vi for wi, vi in zip(w, v0)]
    tol = 1e-12 * math.fsum([abs(x) for x in f]) + 1e-300
    types = [
        (_EQ if t else _GE) if z else _LE
        for z, t in zip(eng._atz[s : e - 1].tolist(), eng._att[s : e - 1].tolist())
    ]
    k = e - s
    y = rest_solve(w, f, types, tol, eng.rest_speed)
    ke0 = 0.5 * math.fsum([wi * vi * vi for wi, vi in zip(w, v0)])
    ke1 = 0.5 * math.fsum([wi * yi * yi for wi, yi in zip(w, y)])
    v[s:e] = y
    dp = [0.0] * k
    acc = 0.0
    for i in range(k):
        x = w[i] * (y[i] - v0[i])
        acc = x if i == 0 else acc + x
        dp[i] = acc
    imp = [abs(dp[j - s]) for j in js]
    impulse_events(eng, js, dvs, imp, max(ke0 - ke1, 0.0), events)


def impulse_events(
    eng: Engine, js: list[int], dvs: list[float], imp: list[float], lost: float, events
) -> None:
    """One event per violated joint; the run's energy loss shared in proportion to
    impulse × relative speed."""
    atz, att = eng._atz, eng._att
    line = eng.bodies.line
    rel = [abs(d) for d in dvs]
    share = [i * r for i, r in zip(imp, rel)]
    tot = math.fsum(share)
    for j, d, i_, r_, sh in zip(js, dvs, imp, rel, share):
        kind = "impact" if (atz[j] and (d < 0 or not att[j])) else "coupler_taut"
        events.append(
            Event(
                kind,
                eng._time,
                (j, j + 1),
                int(line[j]),
                r_,
                i_,
                lost * (sh / tot) if tot > 0 else lost / len(js),
            )
        )


def rest_solve(w: list[float], f: list[float], types: list[int], tol: float, rest: float) -> list[float]:
    """The speeds after the impulse of a run of cars (masses ``w``, momenta ``f``, joint
    ``types``) with resting contacts (docs/physics.md §1.1, "Resting contacts"): solve;
    hold every cut that opens slower than ``rest``; solve again; until no cut is held. A
    round that holds one cut is followed by :func:`_take_up`, which does the rounds after
    it without solving the whole run while each of them moves that cut by one joint;
    then the run is solved again (the same holds, so the same speeds bit for bit, as the
    repeated solves give)."""
    types = list(types)
    while True:
        y, cuts = _solve_chain(w, f, types, tol)
        held = []
        for i in cuts:
            ti = types[i]
            if ti == _EQ:
                continue
            d = y[i] - y[i + 1]
            opening = d if ti == _GE else -d
            if 0.0 < opening < rest:
                held.append(i)
        if not held:
            return y
        tc = types[held[0]]
        for i in held:
            types[i] = _EQ
        if len(held) == 1:
            _take_up(w, f, types, tol, rest, y, cuts, held[0], tc)


_INF = math.inf


def _bounds(w, f, types, tol, a, eb):
    """For the joints ``a..eb-1`` of the window of cars ``a..eb``: the bounds the mean of a
    block that starts at ``a`` (``pre``) or ends at ``eb`` (``suf``) must keep for the
    joint's force to have the right sign (a block is whole when its mean is within the
    bounds of all its joints), and their running maxima / minima from ``a`` (over
    ``a..j``) and from ``eb`` (over ``j..eb-1``) under ``types``. Naive running sums (they
    only decide, within ``tol``)."""
    n = eb - a
    plo, phi, slo, shi = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    F = W = 0.0
    for j in range(a, eb):
        F += f[j]
        W += w[j]
        plo[j - a] = (F - tol) / W  # buffers (_GE): the block's mean >= this
        phi[j - a] = (F + tol) / W  # coupler (_LE): the block's mean <= this
    F = W = 0.0
    for j in range(eb - 1, a - 1, -1):
        F += f[j + 1]
        W += w[j + 1]
        slo[j - a] = (F - tol) / W  # coupler (_LE): the block's mean >= this
        shi[j - a] = (F + tol) / W  # buffers (_GE): the block's mean <= this
    cplo, cphi = _envelope(types, plo, phi, a, range(a, eb), _GE, _LE)
    cslo, cshi = _envelope(types, slo, shi, a, range(eb - 1, a - 1, -1), _LE, _GE)
    return plo, phi, slo, shi, cplo, cphi, cslo, cshi


def _envelope(types, low, high, a, joints, t_low, t_high):
    """Running maximum of ``low`` over the joints of type ``t_low`` and minimum of ``high``
    over those of type ``t_high``, in the order of ``joints`` (lists indexed from ``a``)."""
    n = len(low)
    out_lo, out_hi = [-_INF] * n, [_INF] * n
    lo, hi = -_INF, _INF
    for j in joints:
        t = types[j]
        if t == t_low:
            lo = max(lo, low[j - a])
        elif t == t_high:
            hi = min(hi, high[j - a])
        out_lo[j - a], out_hi[j - a] = lo, hi
    return out_lo, out_hi


def _opening(t: int, d: float) -> float:
    return d if t == _GE else -d


def _take_up(w, f, types, tol, rest, y, cuts, c, tc) -> None:
    """The rounds of :func:`rest_solve` after the one that held cut ``c`` alone (its type
    was ``tc``; ``y``/``cuts``: that round's solution), between the cuts around ``c``
    (the window of blocks ``A`` in front of ``c`` and ``B`` behind it), while each round
    moves the cut by one joint of type ``tc``: forward (the rear of ``A`` joins ``B``) or
    back (the front of ``B`` joins ``A``). A round's answer is checked to be the run's
    solution (both blocks whole, the cut between them and the cuts around the window not
    closing; every other block is the same as before); then it holds what that answer
    leaves opening slower than ``rest``, in ``types``. It stops at a round that holds no
    cut or more than the new one, or whose answer it cannot check: the caller solves the
    run again from there (that solve gives the final answer, or goes on with the rule)."""
    k = len(w)
    q = cuts.index(c)
    a = cuts[q - 1] + 1 if q > 0 else 0
    eb = cuts[q + 1] if q + 1 < len(cuts) else k - 1
    plo, phi, slo, shi, cplo, cphi, cslo, cshi = _bounds(w, f, types, tol, a, eb)
    fwd = 0  # 1: the cut moves forward, -1: back, 0: not known yet
    lo, hi = -_INF, _INF  # the growing block's bounds over the joints it took in
    while True:
        ok = False
        if fwd >= 0:  # the cars of A behind its last joint of type tc join B
            p = c - 1
            while p >= a and types[p] != tc:
                p -= 1
            if p >= a:
                m = math.fsum(f[p + 1 : eb + 1]) / math.fsum(w[p + 1 : eb + 1])
                ya = math.fsum(f[a : p + 1]) / math.fsum(w[a : p + 1])
                nlo, nhi = (cslo[c + 1 - a], cshi[c + 1 - a]) if fwd == 0 and c + 1 < eb else (-_INF, _INF)
                nlo, nhi = max(lo, nlo), min(hi, nhi)
                for j in range(p + 1, c):
                    if types[j] == _LE:
                        nlo = max(nlo, slo[j - a])
                    elif types[j] == _GE:
                        nhi = min(nhi, shi[j - a])
                whole = nlo <= m <= nhi and (p == a or cplo[p - 1 - a] <= ya <= cphi[p - 1 - a])
                if whole:
                    ok, fwd, lo, hi = True, 1, nlo, nhi
                    yf, yr = ya, m  # the values in front of and behind the new cut
        if not ok and fwd <= 0:  # the cars of B in front of its first joint of type tc join A
            p = c + 1
            while p < eb and types[p] != tc:
                p += 1
            if p < eb:
                m = math.fsum(f[a : p + 1]) / math.fsum(w[a : p + 1])
                yb = math.fsum(f[p + 1 : eb + 1]) / math.fsum(w[p + 1 : eb + 1])
                nlo, nhi = (cplo[c - 1 - a], cphi[c - 1 - a]) if fwd == 0 and c > a else (-_INF, _INF)
                nlo, nhi = max(lo, nlo), min(hi, nhi)
                for j in range(c + 1, p):
                    if types[j] == _GE:
                        nlo = max(nlo, plo[j - a])
                    elif types[j] == _LE:
                        nhi = min(nhi, phi[j - a])
                whole = nlo <= m <= nhi and (p == eb - 1 or cslo[p + 1 - a] <= yb <= cshi[p + 1 - a])
                if whole:
                    ok, fwd, lo, hi = True, -1, nlo, nhi
                    yf, yr = m, yb
        if not ok:
            return
        op = _opening(tc, yf - yr)
        if not op > 0.0:
            return
        ha = hb = False
        if a > 0:
            oa = _opening(types[a - 1], y[a - 1] - yf)
            if not oa > 0.0:
                return
            ha = oa < rest
        if eb < k - 1:
            ob = _opening(types[eb], yr - y[eb + 1])
            if not ob > 0.0:
                return
            hb = ob < rest
        hp = op < rest
        if ha or hb:  # this round holds more than the new cut: the general rounds go on
            for i, h in ((a - 1, ha), (p, hp), (eb, hb)):
                if h:
                    types[i] = _EQ
            return
        if not hp:  # the final round: its answer is the solver's, which the caller solves
            return
        types[p] = _EQ
        c = p
