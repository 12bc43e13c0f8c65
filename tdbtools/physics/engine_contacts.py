"""The engine's impulses (docs/physics.md §1, step 1 of :mod:`tdbtools.physics.engine`).

Every joint between two groups that is at a limit and whose cars close into it is resolved
by a perfectly inelastic impulse over the run of cars held by joints at their limits around
it (:func:`~tdbtools.physics.joints._solve_chain`); a joint the impulse leaves opening
slower than the engine's ``rest_speed`` is held at its limit (resting contact). A short run
is resolved on Python floats (:func:`impulse_small`), a long one with numpy
(:func:`impulse_block`): the same IEEE operations in the same order.
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
    rest = eng.rest_speed
    while True:
        y = np.array(_solve_chain(w, f, types, tol)[0])
        # resting contact: a joint the impulse leaves slower than rest_speed is held
        # at its limit (else a car between a buffer and a taut coupler bounces between
        # them with ever smaller speeds: a Zeno sequence whose limit is this)
        d = y[:-1] - y[1:]
        opening = np.where(types == _GE, d, -d)
        hold = (types != _EQ) & (opening > 0.0) & (opening < rest)
        if not hold.any():
            break
        types = np.where(hold, _EQ, types)
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
    rest = eng.rest_speed
    k = e - s
    while True:
        y = _solve_chain(w, f, types, tol)[0]
        held = False
        for i in range(k - 1):
            ti = types[i]
            if ti == _EQ:
                continue
            d = y[i] - y[i + 1]
            opening = d if ti == _GE else -d
            if 0.0 < opening < rest:
                types[i] = _EQ
                held = True
        if not held:
            break
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
