"""Keeping an activity's trains apart without signals, and finding their deadlocks
(docs/activities.md §4.1): the :class:`Dispatcher` an activity's replay runs every
:data:`DISPATCH_EVERY_S` seconds. Blocks are vector nodes cut into :data:`BLOCK_M`
pieces, and junction areas up to their clearance points; a train reserves the blocks
ahead of it on a first-come, first-served basis. With the route's signals the
interlocking is the authority instead; the dispatcher then only lets trains enter the
track where it is free (§4.3).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..formats.route import Route
from .events import Deadlock, ServiceStarted, StartDelayed

#: Blocks are vector nodes cut into pieces of this length (metres of node offset), and junctions.
BLOCK_M = 250.0
#: Metres a train stops short of a block another train holds.
BLOCK_MARGIN_M = 20.0
#: A junction block covers the track either side of the switch point up to where its two
#: branches are this far apart (centre lines; cars are about 3 m wide), found per
#: junction by walking both branches; at least JUNCTION_MIN_M, at most JUNCTION_MAX_M.
FOUL_SEPARATION_M = 4.0
JUNCTION_MIN_M = 20.0
JUNCTION_MAX_M = 200.0
#: Metres of track reserved beyond the braking distance.
RESERVE_EXTRA_M = 400.0
#: Seconds between dispatcher runs.
DISPATCH_EVERY_S = 1.0
#: A cycle of waiting trains standing this long is reported as a deadlock (s).
DEADLOCK_AFTER_S = 60.0


def clock(t: float | None) -> str:
    """HH:MM:SS of seconds since midnight (empty for None)."""
    if t is None or not math.isfinite(t):
        return ""
    s = int(round(t)) % 86400
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


# -- the dispatcher -------------------------------------------------------------------------


def fouling_length(route: Route, junction: int) -> float:
    """Metres from the switch point of ``junction`` along its branches to where they are
    FOUL_SEPARATION_M apart (the clearance point)."""
    from ..formats.tdb import JunctionNode
    from ..track.traveller import Traveller, TravellerError

    j = route.tdb.nodes[junction]
    if not isinstance(j, JunctionNode) or len(j.pins) < 3:
        return JUNCTION_MIN_M
    walkers = []
    for pin in j.pins[1:3]:
        node = route.tdb.nodes[pin.link]
        if node is None or not hasattr(node, "pins") or not node.pins:
            return JUNCTION_MIN_M
        at_start = node.pins[0].link == junction
        try:
            walkers.append(
                Traveller(
                    route, pin.link, 0.0 if at_start else route.node_length(pin.link), 1 if at_start else 0
                )
            )
        except TravellerError:
            return JUNCTION_MIN_M
    a, b = walkers
    d = 0.0
    step = 5.0
    while d < JUNCTION_MAX_M:
        la, lb = a.location, b.location
        if math.hypot(la.X - lb.X, la.Z - lb.Z) >= FOUL_SEPARATION_M:
            return max(d, JUNCTION_MIN_M)
        if a.move(step) > 0.01 or b.move(step) > 0.01:  # (move returns what it could not travel)
            return max(d + step, JUNCTION_MIN_M)  # a branch ends: a buffer stop inside the turnout
        d += step
    return JUNCTION_MAX_M


def block_name(b: tuple[str, int]) -> str:
    if b[0] == "j":
        return f"junction {b[1]}"
    node, piece = divmod(b[1], 100_000)
    return f"node {node} [{piece * BLOCK_M:.0f}-{(piece + 1) * BLOCK_M:.0f} m]"


class Dispatcher:
    """Plain occupancy: blocks are vector nodes and junctions (module docstring)."""

    def __init__(self, policy: Any) -> None:
        # (an activity.ActivityPolicy: the replay's trains, drivers and clock)
        self.rp = policy
        self.holder: dict[tuple[str, int], str] = {}
        self.foul: dict[int, float] = {}
        self.reserved: dict[tuple[str, int], str] = {}  # last run's reservations
        self.cycle_since: dict[frozenset, float] = {}
        self.reported: set[frozenset] = set()

    def _blocks(self, t, lo: float, hi: float) -> list[tuple[tuple[str, int], float]]:  # noqa: ANN001
        """Blocks of a train's line between two line distances, with the line distance
        where each begins (in line order)."""
        ln = t.line
        out: list[tuple[tuple[str, int], float]] = []
        i0 = int(np.searchsorted(ln.seg_s1, lo, side="right"))
        i1 = int(np.searchsorted(ln.seg_s0, hi, side="right"))
        for i in range(max(i0, 0), min(i1, len(ln.seg_s0))):
            s0, s1 = float(ln.seg_s0[i]), float(ln.seg_s1[i])
            a, b = max(lo, s0), min(hi, s1)
            if b < a:
                continue
            off0 = float(ln.seg_off0[i])
            sg = 1.0 if ln.seg_dir[i] == 1 else -1.0
            oa, ob = off0 + sg * (a - s0), off0 + sg * (b - s0)
            node = int(ln.seg_node[i])
            for piece in range(int(min(oa, ob) // BLOCK_M), int(max(oa, ob) // BLOCK_M) + 1):
                # where the line enters this piece: its low end going forward, else its high end
                edge = piece * BLOCK_M if sg > 0 else (piece + 1) * BLOCK_M
                enter = min(max(s0 + sg * (edge - off0), s0), s1)
                out.append(((("n", node * 100_000 + piece)), enter))
        j0 = int(np.searchsorted(ln.junction_s, lo - JUNCTION_MAX_M, side="left"))
        j1 = int(np.searchsorted(ln.junction_s, hi + JUNCTION_MAX_M, side="right"))
        for j in range(j0, j1):
            jn = int(ln.junction_node[j])
            f = self.foul.get(jn)
            if f is None:
                f = self.foul[jn] = fouling_length(self.rp.route, jn)
            js = float(ln.junction_s[j])
            if js + f >= lo and js - f <= hi:
                out.append(((("j", jn)), js - f))
        out.sort(key=lambda b: b[1])
        return out

    def run(self, now: float) -> None:
        if self.rp.signals is not None:
            self._run_signalled()
            return
        rp = self.rp
        x, v = rp.engine.x, rp.engine.v
        holder: dict[tuple[str, int], str] = {}
        occupied: dict[str, list] = {}
        # 1. occupied blocks (every train, started or not: it is on the track)
        for k, t in enumerate(rp.trains):
            front = float(x[rp.train_start[k]])
            rear = float(x[rp.train_end[k]] - rp.bodies.length[rp.train_end[k]])
            occ = self._blocks(t, rear, front)
            occupied[t.spec.name] = occ
            if rp.drivers[k].on_track:
                for b, _s in occ:
                    holder.setdefault(b, t.spec.name)
        # trains due to start go on the track where it is free, in order of start time
        for k in sorted(range(len(rp.trains)), key=lambda k: (rp.drivers[k].start, k)):
            d = rp.drivers[k]
            if d.state != "ready":
                continue
            name = rp.trains[k].spec.name
            taken = {holder[b] for b, _ in occupied[name] if b in holder and holder[b] != name}
            taken |= {
                self.reserved[b]
                for b, _ in occupied[name]
                if self.reserved.get(b, name) != name and rp.drivers[rp.index[self.reserved[b]]].on_track
            }
            if taken:
                _delay_start(rp, d, name, taken)
                continue
            d.state = "running"
            rp.on_off[name] = (rp.t0 + rp.time, math.inf)
            rp.log.add(ServiceStarted(time=rp.time, clock=clock(rp.t0 + rp.time), train=name))
            for b, _s in occupied[name]:
                holder[b] = name
        # 2. reservations ahead, in order of the trains' start times (first come first
        #    served); a block reserved last time stays with its train while it wants it,
        #    so nobody's authority shrinks under it
        prev = self.reserved
        running = {t.spec.name for k, t in enumerate(rp.trains) if rp.drivers[k].state == "running"}
        reserved: dict[tuple[str, int], str] = {}
        order = sorted(range(len(rp.trains)), key=lambda k: (rp.drivers[k].start, k))
        for k in order:
            t = rp.trains[k]
            d = rp.drivers[k]
            name = t.spec.name
            if d.state != "running" or t.derailed:
                continue
            d.blocked_by = set()
            d.blocked_blocks = set()
            front = float(x[rp.train_start[k]])
            speed = abs(float(v[rp.train_start[k]]))
            reach = speed * speed / (2.0 * d.auto.decel) + RESERVE_EXTRA_M + 2.0 * speed * DISPATCH_EVERY_S
            hi = min(front + reach, float(t.line.path_length))
            # Plain track is taken whole, up to the next junction area: on a single line
            # that is the way to the next loop, so trains cross there, never head-on.
            ln = t.line
            j = int(np.searchsorted(ln.junction_s, hi, side="left"))
            if j < len(ln.junction_s):
                jn = int(ln.junction_node[j])
                f = self.foul.get(jn)
                if f is None:
                    f = self.foul[jn] = fouling_length(rp.route, jn)
                hi = min(max(hi, float(ln.junction_s[j]) - f), float(ln.path_length))
            else:
                hi = float(ln.path_length)
            own = {b for b, _ in occupied[name]}
            authority = math.inf
            claims: list[tuple[tuple[str, int], float]] = []
            for b, s0 in self._blocks(t, front, hi):
                if b in own:
                    # shared with a train in the same block: stop behind its rear
                    other = holder.get(b)
                    if other is not None and other != name:
                        lim = self._behind(k, b, other, front)
                        if lim is not None:
                            authority = lim
                            d.blocked_by.add(other)
                            d.blocked_blocks.add(b)
                            break
                    continue
                other = holder.get(b)
                if other is None and prev.get(b, name) != name and prev[b] in running:
                    other = prev[b]
                if other is not None and other != name:
                    authority = s0 - BLOCK_MARGIN_M
                    d.blocked_by.add(other)
                    d.blocked_blocks.add(b)
                    # Do not wait inside a junction area: give back the junctions (and the
                    # short links between them) claimed just before, so a train waiting
                    # for a line ahead does not block the station throat behind it.
                    while claims and (claims[-1][0][0] == "j" or self._short(claims[-1][0])):
                        cb, cs = claims.pop()
                        del holder[cb]
                        del reserved[cb]
                        authority = cs - BLOCK_MARGIN_M
                    break
                holder[b] = name
                reserved[b] = name
                claims.append((b, s0))
            d.authority = authority
        self.holder = holder
        self.reserved = reserved
        self._deadlocks(now)

    def _run_signalled(self) -> None:
        """With the route's signals the interlocking is the authority (docs/activities.md
        §4.3): trains due to start enter where the interlocking has their track free, in
        order of start time; their movement authority is the signals'."""
        rp = self.rp
        assert rp.signals is not None
        ilk = rp.signals.ilk
        x = rp.engine.x
        for k in sorted(range(len(rp.trains)), key=lambda k: (rp.drivers[k].start, k)):
            d = rp.drivers[k]
            if d.state == "running":
                d.authority = math.inf
                d.blocked_by = ilk.waiting_for(k)  # named when it is stuck
            if d.state != "ready":
                continue
            name = rp.trains[k].spec.name
            front = float(x[rp.train_start[k]])
            taken = ilk.can_enter(k, front)
            if taken:
                _delay_start(rp, d, name, taken)
                continue
            d.blocked_by = set()
            d.state = "running"
            d.authority = math.inf
            ilk.enter(k, front)
            rp.on_off[name] = (rp.t0 + rp.time, math.inf)
            rp.log.add(ServiceStarted(time=rp.time, clock=clock(rp.t0 + rp.time), train=name))

    def _short(self, b: tuple[str, int]) -> bool:
        """A vector piece of a node too short to wait on (a link inside a junction area)."""
        return b[0] == "n" and self.rp.route.node_length(b[1] // 100_000) < 2 * JUNCTION_MAX_M

    def _behind(self, k: int, block: tuple[str, int], other: str, front: float) -> float | None:
        """Where train ``k`` must stop for ``other`` in a vector node both occupy, or None
        when ``other`` is not ahead."""
        if block[0] != "n":
            return None
        node_id = block[1] // 100_000
        rp = self.rp
        t = rp.trains[k]
        ko = rp.index[other]
        o = rp.trains[ko]
        x = rp.engine.x
        ofront = float(x[rp.train_start[ko]])
        orear = float(x[rp.train_end[ko]] - rp.bodies.length[rp.train_end[ko]])
        best = None
        for node, a, b in o.line.occupancy(orear, ofront):
            if node != node_id:
                continue
            for off in (a, b):
                for s in t.line.locate(node, off, tol=1.0):
                    if s > front - 1.0 and (best is None or s < best):
                        best = float(s)
        return None if best is None else best - BLOCK_MARGIN_M

    def _deadlocks(self, now: float) -> None:
        rp = self.rp
        v = rp.engine.v
        waiting = {}
        for k, t in enumerate(rp.trains):
            d = rp.drivers[k]
            if (
                d.state == "running"
                and d.blocked_by
                and abs(float(v[rp.train_start[k]])) < 0.05
                and d.authority - float(rp.engine.x[rp.train_start[k]]) < BLOCK_MARGIN_M + 5.0
            ):
                waiting[t.spec.name] = d.blocked_by
        # cycles in the wait-for graph
        seen_cycles = set()
        for start in waiting:
            path, cur = [], start
            while cur in waiting and cur not in path:
                path.append(cur)
                nxt = sorted(waiting[cur])
                cur = nxt[0]
            if cur in path:
                cyc = frozenset(path[path.index(cur) :])
                seen_cycles.add(cyc)
        for cyc in list(self.cycle_since):
            if cyc not in seen_cycles:
                del self.cycle_since[cyc]
        for cyc in seen_cycles:
            since = self.cycle_since.setdefault(cyc, now)
            if now - since >= DEADLOCK_AFTER_S and cyc not in self.reported:
                self.reported.add(cyc)
                trains = sorted(cyc)
                blocks = sorted(
                    {block_name(b) for n in trains for b in rp.drivers[rp.index[n]].blocked_blocks}
                )
                rp.log.add(
                    Deadlock(
                        time=rp.time,
                        clock=clock(rp.t0 + rp.time),
                        trains=tuple(trains),
                        sections=tuple(blocks),
                        message=f"{', '.join(trains)} wait for each other at {', '.join(blocks)}",
                    )
                )
                for n in trains:
                    k = rp.index[n]
                    rp.drivers[k].state = "stuck"
                    rp.trains[k].finish(rp.time)
                    rp.stuck.add(n)


def _delay_start(rp, d, name: str, taken: set) -> None:  # noqa: ANN001
    """A train whose start is taken waits: who blocks it, and one event the first time."""
    d.blocked_by = taken
    if not d.delayed:
        d.delayed = True
        rp.log.add(
            StartDelayed(
                time=rp.time,
                clock=clock(rp.t0 + rp.time),
                train=name,
                waiting_for=tuple(sorted(taken)),
                message=f"its start is occupied by {', '.join(sorted(taken))}",
            )
        )


__all__ = [
    "BLOCK_M",
    "DEADLOCK_AFTER_S",
    "DISPATCH_EVERY_S",
    "JUNCTION_MAX_M",
    "RESERVE_EXTRA_M",
    "Dispatcher",
    "block_name",
    "clock",
    "fouling_length",
]
