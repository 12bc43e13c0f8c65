"""The engine's event rounds (docs/physics.md §1, steps 3 and 4 of
:mod:`tdbtools.physics.engine`): the time of the next event (a clash, a coupler going taut,
a group stopping), moving every group to it, and applying it.

With a few groups (:data:`~tdbtools.physics.engine_groups.SMALL`) the times and moves run on
Python floats (:func:`next_event_small`, :func:`advance_small`): the scalar clash and
stopping times are the vectorised ones element by element, so both give the same numbers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tdbtools.physics.engine_bodies import SNAP_GAP, T_TOL, Event
from tdbtools.physics.interaction import clash_time, clash_times_ab, stopping_time
from tdbtools.physics.joints import _stop_times, _touch_time, _touch_times

#: The Engine of tdbtools.physics.engine, whose state these functions read and write (not
#: imported: that module imports this one).
Engine = Any

__all__ = ["advance", "apply", "next_event"]


def next_event(eng: Engine, horizon: float):
    grp = eng._groups
    if grp.lists is not None:
        return next_event_small(eng, horizon)
    t_min = math.inf
    jb = grp.joints
    tc = tt = ts = None
    mv = None
    jt = jb
    if jb.size:
        # clash (gap -> 0) and coupler (slack - gap -> 0) times in one call: the coupler's
        # A and B are the clash's negated (0.0 - x: exact, and +0.0 where x is 0.0, as
        # the subtraction with the cars swapped gives)
        # per group, then per joint: v[jb] is vg[kf] and v[jb + 1] is vg[kf + 1]
        kf = grp.joint_group
        vg, ag = grp.v, grp.a
        S = eng._gap[jb]
        B = (vg[1:] - vg[:-1])[kf]
        A = (ag[1:] - ag[:-1])[kf] * 0.5
        hi = grp.joint_hi
        cp = hi < math.inf
        ncp = np.count_nonzero(cp)
        if ncp == jb.size:
            jt = jb
            s2, A2, B2 = (
                np.concatenate((S, hi - S)),
                np.concatenate((A, 0.0 - A)),
                np.concatenate((B, 0.0 - B)),
            )
        elif ncp:
            jt = jb[cp]
            Ac, Bc = A[cp], B[cp]
            s2 = np.concatenate((S, hi[cp] - S[cp]))
            A2, B2 = np.concatenate((A, 0.0 - Ac)), np.concatenate((B, 0.0 - Bc))
        else:
            jt = jb[:0]
            s2, A2, B2 = S, A, B
        T = clash_times_ab(s2, A2, B2)
        z = s2 <= 0.0
        if np.count_nonzero(z):
            T[z] = _touch_times(B2[z], A2[z])
        t_min = float(T[T.argmin()])
        tc, tt = T[: jb.size], T[jb.size :]
    vg = grp.v
    mv = (vg != 0.0).nonzero()[0]
    if mv.size == vg.size:  # every group moves: no gathers
        Mg = grp.mass
        ts = _stop_times(grp.resist / Mg, grp.drive / Mg, vg)
    elif mv.size:
        Mg = grp.mass[mv]
        ts = _stop_times(grp.resist[mv] / Mg, grp.drive[mv] / Mg, vg[mv])
    if ts is not None:
        t_min = min(t_min, float(ts[ts.argmin()]))
    if t_min >= horizon:
        return t_min, None
    lim = t_min + T_TOL
    hits = (
        jb[tc <= lim] if tc is not None else jb[:0],
        jt[tt <= lim] if tt is not None else jb[:0],
        mv[ts <= lim] if ts is not None else mv[:0],
    )
    return t_min, hits


def next_event_small(eng: Engine, horizon: float):
    """:meth:`_next_event` on Python floats (the scalar clash/stopping times are the
    vectorised ones element by element)."""
    gl = eng._groups.lists
    assert gl is not None
    t_min = math.inf
    vg, ag = gl.v, gl.a
    jt = []
    if gl.joints:
        gap, hil = eng._gap, eng._hil
        for j, k in zip(gl.joints, gl.joint_group):
            S = float(gap[j])
            vf, vr, af, ar = vg[k], vg[k + 1], ag[k], ag[k + 1]
            if S <= 0.0:
                tc = _touch_time(vr - vf, 0.5 * (ar - af))
            else:
                tc = clash_time(S, vr, vf, ar, af)
            hi = hil[j]
            if hi < math.inf:
                St = hi - S
                if St <= 0.0:
                    tt = _touch_time(vf - vr, 0.5 * (af - ar))
                else:
                    tt = clash_time(St, vf, vr, af, ar)
            else:
                tt = math.inf
            jt.append((j, tc, tt))
            t_min = min(t_min, tc, tt)
    st = []
    Mg, Dg, Rg = gl.mass, gl.drive, gl.resist
    for k, V in enumerate(vg):
        if V != 0.0:
            ts = stopping_time(Rg[k] / Mg[k], Dg[k] / Mg[k], V)
            st.append((k, ts))
            t_min = min(t_min, ts)
    if t_min >= horizon:
        return t_min, None
    lim = t_min + T_TOL
    return t_min, (
        [j for j, tc, _ in jt if tc <= lim],
        [j for j, _, tt in jt if tt <= lim],
        [k for k, ts in st if ts <= lim],
    )


def advance(eng: Engine, t: float, events: list[Event]) -> None:
    if t <= 0.0:
        return
    grp = eng._groups
    if grp.lists is not None:
        advance_small(eng, t, events)
        return
    vg, ag = grp.v, grp.a
    if events is not None:
        st = (vg == 0.0) & (ag != 0.0)
        if np.count_nonzero(st):
            for k in st.nonzero()[0].tolist():
                events.append(group_event(eng, "started", k))
    dg = vg * t + 0.5 * ag * (t * t)
    grp.v = vg + ag * t
    jb = grp.joints
    if jb.size:
        g = eng._gap[jb] + (dg[:-1] - dg[1:])[grp.joint_group]
        hi = grp.joint_hi
        g = np.minimum(np.maximum(g, 0.0), hi)
        z = g < SNAP_GAP
        near = (hi - g) < SNAP_GAP
        if np.count_nonzero(z) or np.count_nonzero(near):
            g[z] = 0.0
            g[near] = hi[near]
            eng._contacts_dirty = True
            eng._gap[jb] = g
            eng._atz[jb] = g <= 0.0
            eng._att[jb] = g >= hi
        else:
            # SNAP_GAP <= g <= hi - SNAP_GAP: off both limits
            eng._gap[jb] = g
            eng._atz[jb] = False
            eng._att[jb] = False
        eng._gaps_changed()
    eng._xlead += dg[grp.lead]
    eng._x_cache = None
    eng._v = grp.v[grp.of_car]
    eng._time += t


def advance_small(eng: Engine, t: float, events: list[Event]) -> None:
    grp = eng._groups
    gl = grp.lists
    assert gl is not None
    vg, ag = gl.v, gl.a
    if events is not None:
        for k, (vk, ak) in enumerate(zip(vg, ag)):
            if vk == 0.0 and ak != 0.0:
                events.append(group_event(eng, "started", k))
    tt = t * t
    dg = [vk * t + 0.5 * ak * tt for vk, ak in zip(vg, ag)]
    vg = gl.v = [vk + ak * t for vk, ak in zip(vg, ag)]
    if gl.joints:
        gap, hil, atz, att = eng._gap, eng._hil, eng._atz, eng._att
        for j, k in zip(gl.joints, gl.joint_group):
            hi = hil[j]
            g = min(max(float(gap[j]) + (dg[k] - dg[k + 1]), 0.0), hi)
            z = g < SNAP_GAP
            near = (hi - g) < SNAP_GAP
            if z or near:
                if z:
                    g = 0.0
                if near:
                    g = hi
                eng._contacts_dirty = True
            gap[j] = g
            atz[j] = g <= 0.0
            att[j] = g >= hi
        eng._gaps_changed()
    xl = eng._xlead
    for i, k in enumerate(gl.lead):
        xl[i] += dg[k]
    eng._x_cache = None
    grp.v = vga = np.array(vg)
    eng._v = vga[grp.of_car]
    eng._time += t


def apply(eng: Engine, t_ev: float, hits, events: list[Event]) -> None:
    clash, taut, stops = hits
    grp = eng._groups
    eng._x_cache = None
    if len(clash):
        eng._gap[clash] = 0.0
        eng._set_limits(clash)
        eng._gaps_changed()
        eng._contacts_dirty = True
    if len(taut):
        eng._gap[taut] = eng._hi[taut]
        eng._set_limits(taut)
        eng._gaps_changed()
        eng._contacts_dirty = True
    if len(stops):
        grp.v[stops] = 0.0
        if grp.lists is not None:
            for k in stops:
                grp.lists.v[k] = 0.0
        eng._v = grp.v[grp.of_car]
        for k in stops if grp.lists is not None else stops.tolist():
            events.append(group_event(eng, "stopped", k))


def group_event(eng: Engine, kind: str, k: int) -> Event:
    starts = eng._groups.starts
    s = int(starts[k])
    e = int(starts[k + 1]) - 1 if k + 1 < starts.size else eng.n - 1
    cars = (s,) if s == e else (s, e)
    return Event(kind, eng._time, cars, int(eng.bodies.line[s]))
