"""Route requests and reservations: a train's claim on the signals ahead of it, the
routes they clear, the sections reserved for it, the block states of signals no train
has claimed, and the train's authority up to its next signal (docs/signals.md §4.2, §4.3).

Open Rails keeps the same concept in its ``Signals`` route setting and the trains'
authority (Simulation/Signalling, ``SignalObject.requestClearSignal``,
``TrackCircuitSection.Reserve``); here :class:`RouteSetting` is the part of the
:class:`~tdbtools.signals.runtime.Interlocking` that sets and releases routes.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable
from heapq import heappop, heappush

from .aspects import SignalAspects
from .circuits import (
    BLOCK_CLEAR,
    BLOCK_JN_OBSTRUCTED,
    BLOCK_OCCUPIED,
    BLOCKED,
    FORCED_WAIT,
    OCC_OPPOSITE,
    OCC_SAME,
    RESERVABLE,
    RESERVED,
    RESERVED_OTHER,
    Element,
    Section,
    TrackCircuits,
)
from .deadlock import DeadlockWatch
from .objects import SignalObject
from .schedule import changed_at
from .trains import TrainState

#: Speed below which a train counts as standing (m/s), as in Open Rails.
STANDING = 0.5
#: Gap the driver keeps before a signal at danger (m; Open Rails' AI value).
STOP_GAP = 15.0
#: Gap kept behind another train on the same stretch without a signal between (m).
FOLLOW_GAP = 50.0
#: Metres beyond a stop target searched for a junction whose clearance zone it is in.
JUNCTION_LOOK = 200.0
#: A stretch shorter than this between junctions is part of a junction area (not to wait on).
SHORT_LINK_M = 400.0


class RouteSetting:
    """Route requests, reservations, free blocks and authorities of an interlocking."""

    # (the interlocking's state this part reads and writes; set in Interlocking.__init__)
    objects: list[SignalObject]
    circuits: TrackCircuits
    sections: list[Section]
    switches: dict[int, int]
    sig_section: list[int]
    aspects: SignalAspects
    deadlock: DeadlockWatch
    trains: list[TrainState]
    ahead: float | None
    clearance: Callable[[int], float] | None
    incremental: bool
    block: list[int]
    enabled_train: list[int]
    req: list[int]
    route_of: list[list[Element] | None]
    next_normal: list[int]
    _clear_cache: dict[int, float]
    _holders: dict[int, set[int]]
    _routes: dict[tuple[int, int], tuple[list[Element], int]]
    _routes_ahead: float | None
    _nca: list[tuple[int, int, int]]
    _free_walks: dict[int, tuple[list[tuple[Section, int]], int, list[int]]]
    _free_result: dict[int, tuple[int, int]]
    _walk_sigs: dict[int, set[int]]
    _redo: set[int]
    _pending: set[int]
    _block_shadow: tuple[list[int], list[int], list[int]] | None
    _thrown_seen: int
    node_secs: dict[int, list[int]]

    def _hold_start(self, t: TrainState, *, quiet: bool) -> None:
        """Auto Node: the train holds its track up to the first signal (§4.3)."""
        upto = t.signals[t.next_signal][0] if t.next_signal < len(t.signals) else t.end_s
        upto = self._horizon(t, t.front, upto)
        for e in self._elements_between(t, t.front - t.length, upto - 1e-3):
            tcs = self.sections[e.section]
            if e.s0 > t.front and (
                (tcs.reserved >= 0 and tcs.reserved != t.index)
                or any(k != t.index for k in tcs.occupants)
                or self.deadlock.opposed(t, e.section)
            ):
                break  # ahead of its front it holds nothing beyond what it cannot have
            if tcs.reserved < 0:
                self._reserve(tcs, t.index, e.direction)
                if e.route >= 0:
                    self.circuits.set_switch(tcs.node, e.route, quiet=quiet)

    def _clear(self, junction: int) -> float:
        if self.clearance is None:
            return 0.0
        c = self._clear_cache.get(junction)
        if c is None:
            c = self._clear_cache[junction] = float(self.clearance(junction))
        return c

    def _horizon(self, t: TrainState, s: float, upto: float) -> float:
        """Where reservations from ``s`` stop: ``upto``, or with ``ahead`` set, the first
        junction at least ``ahead`` metres on (reserved up to just before it)."""
        if self.ahead is None or upto <= s + self.ahead:
            return upto
        i = bisect.bisect_left(t.e_s1, s + self.ahead)
        while i < len(t.elements):
            e = t.elements[i]
            if e.s0 >= upto:
                break
            if self.sections[e.section].kind == "junction" and e.s0 >= s + self.ahead:
                return e.s0
            i += 1
        return upto

    def _clear_stop(self, t: TrainState, stop: float) -> float:
        """A stop target moved back out of the clearance zone of a junction just ahead."""
        if self.clearance is None:
            return stop
        i = bisect.bisect_left(t.e_s1, stop - 1.0)
        while i < len(t.elements) and t.elements[i].s0 <= stop + JUNCTION_LOOK:
            e = t.elements[i]
            if self.sections[e.section].kind == "junction":
                c = self._clear(self.sections[e.section].node)
                if e.s0 - c < stop <= e.s0 + 1e-6:
                    stop = max(e.s0 - c - 1.0, t.front)
            i += 1
        return stop

    def _elements_between(self, t: TrainState, a: float, b: float) -> list[Element]:
        i = bisect.bisect_left(t.e_s1, a)
        out = []
        while i < len(t.elements) and t.elements[i].s0 <= b + 1e-6:
            out.append(t.elements[i])
            i += 1
        return out

    def _section_state(self, sec: Section, train: int, direction: int, route: int = -1) -> int:
        """A section's state for ``train`` entering it in ``direction`` (docs/signals.md §4.2),
        in Open Rails' order (``TrackCircuitSection.GetSectionState``): occupied by the train
        itself counts as its own reservation; else occupied by another train (standing or
        the same way before the other way); a junction another train stands on set against
        the route is blocked; only a section no other train occupies reads its reservation."""
        occ = sec.occupants
        if train in occ:
            state = RESERVED
        elif occ:
            state = OCC_OPPOSITE
            for other, odir in occ.items():
                if abs(self.trains[other].speed) <= STANDING or odir == direction:
                    state = OCC_SAME
                    break
        else:
            state = -1
        if occ and sec.kind == "junction" and route >= 0 and self.switches.get(sec.node, 0) != route:
            if any(k != train for k in occ):
                return BLOCKED
        if state < 0:
            if sec.reserved == train:
                state = RESERVED
            elif sec.reserved >= 0:
                state = RESERVED_OTHER
            else:
                state = RESERVABLE
        return state

    def signal_route(self, sig: int, t: TrainState) -> list[Element]:
        """The train's elements from just beyond the signal up to the next NORMAL signal.

        It depends only on the train's path and ``ahead``: worked out once per train and
        signal (the list is shared; nobody changes it)."""
        if not self.incremental:
            return self._signal_route_of(sig, t)
        if self._routes_ahead != self.ahead:
            self._routes.clear()
            self._routes_ahead = self.ahead
        key = (t.index, sig)
        hit = self._routes.get(key)
        if hit is None:
            elems = self._signal_route_of(sig, t)
            # (not on its path: next_normal is left as it is, -2 says so)
            nxt = self.next_normal[sig] if any(x == sig for _s, x in t.signals) else -2
            hit = self._routes[key] = (elems, nxt)
            return elems
        elems, nxt = hit
        if nxt != -2:
            self.next_normal[sig] = nxt
        return elems

    def _signal_route_of(self, sig: int, t: TrainState) -> list[Element]:
        pos = next((i for i, (_s, x) in enumerate(t.signals) if x == sig), -1)
        if pos < 0:
            return []
        s_sig = t.signals[pos][0]
        s_next = t.signals[pos + 1][0] if pos + 1 < len(t.signals) else self._horizon(t, s_sig, t.end_s)
        self.next_normal[sig] = t.signals[pos + 1][1] if pos + 1 < len(t.signals) else -1
        return [
            e
            for e in self._elements_between(t, s_sig + 1e-3, s_next - 1e-3)
            if e.s1 > s_sig + 1e-3 or e.s0 > s_sig
        ]

    def _route_state(self, elems: list[Element], train: int) -> tuple[int, int]:
        worst, blocker = RESERVABLE, -1
        for e in elems:
            st = self._section_state(self.sections[e.section], train, e.direction, e.route)
            if st > worst:
                worst, blocker = st, e.section
            if st > RESERVABLE:
                break
        return worst, blocker

    def _request(self, sig: int, t: TrainState, clear_next: int, propagated: bool) -> None:
        """Enable ``sig`` for train ``t`` and check its route (§4.3)."""
        if self.enabled_train[sig] not in (-1, t.index):
            return
        self.enabled_train[sig] = t.index
        elems = self.signal_route(sig, t)
        self.route_of[sig] = elems
        msts, orts, normal_heads = self._nca[sig]
        if msts > -2:
            req = (clear_next if clear_next > 0 else msts) - normal_heads
        elif orts == -1:
            req = clear_next if clear_next > 0 else 1
        elif orts == 0:
            req = 0
        else:
            req = (clear_next - 1) if clear_next > 0 else orts - 1
        self.req[sig] = req
        state, _ = self._route_state(elems, t.index)
        if state <= RESERVABLE and self.deadlock.avoid:
            opp: set[int] = set()
            for e in elems:
                if self.sections[e.section].reserved != t.index:
                    opp |= self.deadlock.opposed(t, e.section)
            if opp:
                t.opposed = opp
                state = FORCED_WAIT
        if state <= RESERVABLE:
            for e in elems:
                sec = self.sections[e.section]
                self._reserve(sec, t.index, e.direction)
                if e.route >= 0:
                    self.circuits.set_switch(sec.node, e.route)
            self.block[sig] = BLOCK_CLEAR
            nxt = self.next_normal[sig]
            if req > 0 and nxt >= 0:
                self._request(nxt, t, req, True)
        else:
            self.block[sig] = BLOCK_OCCUPIED if state == OCC_SAME else BLOCK_JN_OBSTRUCTED

    def _reserve(self, sec: Section, train: int, direction: int = -1) -> None:
        """Reserve ``sec`` for ``train`` (-1: release it); a change is noted for the free
        blocks. With the ``direction`` the train runs, the signals without a NORMAL head in
        the section facing it become enabled for the train (§4.5)."""
        self.circuits.reserve(sec, train)
        if train >= 0 and direction >= 0:
            self.aspects.note_reserved(sec.index, direction, train)

    def _set_occupants(self, k: int) -> None:
        """Section ``k``'s occupants from its holders, in train order (as if filled afresh)."""
        hs = self._holders.get(k)
        trains = self.trains
        self.circuits.put_occupants(k, {x: trains[x].occ[k] for x in sorted(hs)} if hs else {})

    def _take_over(self, sig: int, t: TrainState) -> None:
        """A signal asked for by a train further back, and not cleared for it, goes to a
        train nearer to it (one that came in between from a branch, §4.3): else the nearer
        train waits at a red that only clears for the one behind it."""
        owner = self.enabled_train[sig]
        if owner < 0 or owner == t.index or self.block[sig] == BLOCK_CLEAR:
            return
        o = self.trains[owner]
        mine = t.signals[t.next_signal][0] - t.front
        theirs = next((s - o.front for s, x in o.signals[o.next_signal :] if x == sig), math.inf)
        if mine < theirs:
            self.enabled_train[sig] = -1
            self.route_of[sig] = None

    def update_blocks(self) -> None:
        """Block states: signals no train has claimed from their default route; claimed
        ones re-check their route when it was not clear.

        A free signal's block depends only on the sections of its walk (their reservation,
        occupants and whether these move) and on the switches the walk went through: it is
        worked out again only when one of these changed, else it is the one worked out
        last. So a cycle looks only at the signals something happened to (docs/signals.md
        §4.4): free ones whose walk changed, those another part wrote to (a train passed,
        claimed or left them) and the claimed ones not yet clear, in signal order as a
        pass over all of them would. Not ``incremental``: every signal, worked out afresh."""
        if not self.incremental:
            self._update_blocks_plain()
            return
        block, enabled, nn = self.block, self.enabled_train, self.next_normal
        result, walk_sigs = self._free_result, self._walk_sigs
        touched = self.circuits.touched
        todo = self._redo
        self._redo = set()
        self._drop_thrown(todo, -1)
        for sec in touched:
            for k in walk_sigs.get(sec, ()):
                result.pop(k, None)
                todo.add(k)
        # (sections written from here on stay in touched for the next update)
        touched.clear()
        # What was written since the last update (by the cycle, requests, passed signals,
        # trains leaving): those signals are looked at; a claimed one not clear every time.
        pending = self._pending
        shadow = self._block_shadow
        if shadow is None:
            written: Iterable[int] = range(len(self.objects))
        else:
            written = set(changed_at(block, shadow[0]))
            written.update(changed_at(enabled, shadow[1]), changed_at(nn, shadow[2]))
        for k in written:
            todo.add(k)
            if enabled[k] >= 0 and block[k] != BLOCK_CLEAR:
                pending.add(k)
            else:
                pending.discard(k)
        todo |= pending
        self._block_shadow = (list(block), list(enabled), list(nn))
        heap = sorted(todo)
        while heap:
            k = heappop(heap)
            if enabled[k] < 0:
                r = result.get(k)
                if r is None:
                    self._free_block(k)
                else:
                    block[k], nn[k] = r
            elif block[k] != BLOCK_CLEAR:
                t = self.trains[enabled[k]]
                before = (list(block), list(enabled), list(nn))
                self._request(k, t, self.req[k] if self.req[k] > 0 else 0, False)
                # What it wrote or reserved: later signals see it now, earlier ones next time.
                now = set(changed_at(block, before[0]))
                now.update(changed_at(enabled, before[1]), changed_at(nn, before[2]))
                self._drop_thrown(now, k)
                for sec in touched:
                    for j in walk_sigs.get(sec, ()):
                        if j > k:
                            result.pop(j, None)
                        now.add(j)
                for j in now:
                    if j > k and j not in todo:
                        todo.add(j)
                        heappush(heap, j)
                    elif j <= k:
                        self._redo.add(j)

    def _update_blocks_plain(self) -> None:
        """:meth:`update_blocks` the plain way: every free block walked afresh."""
        self.circuits.touched.clear()
        self._forget_free()
        for k in range(len(self.objects)):
            if self.enabled_train[k] < 0:
                self._free_block(k)
            elif self.block[k] != BLOCK_CLEAR:
                t = self.trains[self.enabled_train[k]]
                self._request(k, t, self.req[k] if self.req[k] > 0 else 0, False)
                self._forget_free()
        self._forget_free()

    def _forget_free(self) -> None:
        """Drop every free walk and block (the next incremental update starts afresh)."""
        self._free_walks.clear()
        self._free_result.clear()
        self._walk_sigs.clear()
        self._redo.clear()
        self._pending.clear()
        self._block_shadow = None
        self._thrown_seen = len(self.circuits.thrown)

    def _drop_thrown(self, todo: set[int], upto: int) -> None:
        """The free walks through a switch thrown since they were worked out are dropped with
        their blocks; their signals go to ``todo`` (beyond ``upto``) or to the next update."""
        thrown = self.circuits.thrown
        if self._thrown_seen == len(thrown):
            return
        for j in thrown[self._thrown_seen :]:
            ids = self.node_secs.get(j)
            for k in list(self._walk_sigs.get(ids[0], ())) if ids else ():
                fw = self._free_walks.pop(k, None)
                self._free_result.pop(k, None)
                if fw is not None:
                    for s_id in fw[2]:
                        self._walk_sigs[s_id].discard(k)
                (todo if k > upto else self._redo).add(k)
        self._thrown_seen = len(thrown)

    def _free_block(self, sig: int) -> None:
        """Block state of a signal no train has claimed: its default route (§4.2)."""
        if not self.objects[sig].is_normal:
            self._other_block(sig)
            return
        sec = self.sig_section[sig]
        if sec < 0:
            self.block[sig] = BLOCK_JN_OBSTRUCTED
            return
        # (docs/signals.md §4.4) The walk's sections and the signal ending it stay the same until a
        # switch it goes through is thrown: only the occupants and reservations are read every cycle.
        fw = self._free_walks.get(sig)
        if fw is None:
            walk = self.circuits.walk_from(sec, self.objects[sig].tc_direction)
            nxt = -1
            for s_id, sd in walk:
                s = self.sections[s_id]
                if s.kind == "normal" and s.end_signal[sd] >= 0:
                    nxt = s.end_signal[sd]
            ids = [s_id for s_id, _sd in walk]
            fw = self._free_walks[sig] = ([(self.sections[s_id], sd) for s_id, sd in walk], nxt, ids)
            for s_id in ids:
                got = self._walk_sigs.get(s_id)
                if got is None:
                    self._walk_sigs[s_id] = {sig}
                else:
                    got.add(sig)
        secs, self.next_normal[sig] = fw[0], fw[1]
        if not secs:
            self.block[sig] = BLOCK_JN_OBSTRUCTED
            self._free_result[sig] = (BLOCK_JN_OBSTRUCTED, fw[1])
            return
        # The first section that is not clear decides, occupancy before reservation (§4.2).
        worst = BLOCK_CLEAR
        for s, sd in secs:
            if s.occupants:
                same = any(abs(self.trains[x].speed) <= STANDING or od == sd for x, od in s.occupants.items())
                worst = BLOCK_OCCUPIED if same else BLOCK_JN_OBSTRUCTED
                break
            if s.reserved >= 0:
                worst = BLOCK_JN_OBSTRUCTED
                break
        self.block[sig] = worst
        self._free_result[sig] = (worst, fw[1])

    def _other_block(self, sig: int) -> None:
        """Block state of a signal without a NORMAL head (DISTANCE, REPEATER, SHUNTING,
        INFO ...), as Open Rails' ``getBlockState_notRouted`` (Simulation/Signalling/
        SignalObject.cs, read for facts): from the section holding the signal along the
        switches as set up to the section that ends at a NORMAL signal, any train occupying
        a section makes it OCCUPIED (in the signal's own section only a train ahead of the
        signal counts); reservations do not count (§4.5). Before issue 27 these signals
        had no section and always read JN_OBSTRUCTED."""
        o = self.objects[sig]
        d = o.tc_direction
        fw = self._free_walks.get(sig)
        if fw is None:
            own = self.aspects._section_at(o.node, o.offset)
            walk: list[tuple[int, int]] = []
            nxt = -1
            if own >= 0:
                walk = [(own, d)]
                if self.sections[own].end_signal[d] < 0:
                    walk += self.circuits.walk_from(own, d)
                last, ld = walk[-1]
                if self.sections[last].kind == "normal":
                    nxt = self.sections[last].end_signal[ld]
            ids = [s_id for s_id, _sd in walk]
            fw = self._free_walks[sig] = ([(self.sections[s_id], sd) for s_id, sd in walk], nxt, ids)
            for s_id in ids:
                self._walk_sigs.setdefault(s_id, set()).add(sig)
        secs, self.next_normal[sig] = fw[0], fw[1]
        worst = BLOCK_CLEAR if secs else BLOCK_JN_OBSTRUCTED
        for i, (s, _sd) in enumerate(secs):
            if not s.occupants:
                continue
            if i == 0 and not any(self._ahead_of(x, s.index, o.offset, d) for x in s.occupants):
                continue
            worst = BLOCK_OCCUPIED
            break
        self.block[sig] = worst
        if secs and secs[0][0].occupants:
            # where in its own section a train stands is not a change the update notes:
            # worked out again at every update while that section is occupied
            self._free_result.pop(sig, None)
            self._redo.add(sig)
        else:
            self._free_result[sig] = (worst, fw[1])

    def _ahead_of(self, train: int, sec: int, offset: float, d: int) -> bool:
        """Some of ``train`` lies in section ``sec`` beyond node offset ``offset`` in
        direction ``d`` (1: forward along the node)."""
        ext = self.trains[train].extent(sec)
        if ext is None:
            return True
        lo, hi = ext
        return hi > offset if d == 1 else lo < offset

    def _authority(self, t: TrainState) -> float | None:
        """Auto Node (§4.3): the track up to the next signal is the train's if no other train
        holds it; the first stretch another train holds (reserved or occupied) ends its
        authority. Returns where the front must stop, or None."""
        tel, sections, ti, front, ahead = t.elements, self.sections, t.index, t.front, self.ahead
        upto = t.signals[t.next_signal][0] if t.next_signal < len(t.signals) else t.end_s
        bound = upto if ahead is None or upto <= front + ahead else self._horizon(t, front, upto)
        if t.hold_s is not None:  # a held exit ($hold): nothing beyond it is reserved
            bound = min(bound, max(t.hold_s, front))
        i = bisect.bisect_left(t.e_s1, front)
        held: list[Element] = []  # ahead of the front, held by this train, in order

        n, upto_m, bound_m = len(tel), upto - 1e-3, bound - 1e-3
        while i < n and tel[i].s0 < upto_m:
            e = tel[i]
            if e.s0 >= bound_m:
                # Not reserved yet (beyond the horizon): stop before it, clear of the junction.
                return self._clear_stop(t, e.s0 - STOP_GAP)
            sec = sections[e.section]
            occ = sec.occupants
            if sec.reserved == ti and (not occ or (len(occ) == 1 and ti in occ)):
                # Its own and no other train on it (the common case): nothing to decide.
                if e.s0 > front:
                    held.append(e)
                i += 1
                continue
            others = [k for k in occ if k != ti]
            if (
                others
                and self.ahead is not None
                and e.s0 > t.front
                and any(sec.occupants[k] != e.direction for k in others)
            ):
                t.stopped_by = set(others)
                return self._give_back(t, held, e.s0 - STOP_GAP)  # a train coming the other way
            if others:
                t.stopped_by = set(others)
                if sec.kind == "junction" and e.s0 > t.front:
                    # A junction is not followed into: wait clear of it (its clearance zone).
                    return self._give_back(t, held, e.s0 - STOP_GAP)
                # Following in the same stretch: stop short of the nearest train ahead.
                near = math.inf
                for k in others:
                    lo, hi = self.trains[k].extent(e.section) or (sec.start, sec.end)
                    for off in (lo, hi):
                        sm = e.s0 + (off - sec.start) if e.direction == 1 else e.s0 + (sec.end - off)
                        if sm > t.front - 1.0:
                            near = min(near, sm)
                if near < math.inf:
                    return self._clear_stop(t, near - FOLLOW_GAP)
                if e.s0 > t.front:
                    return self._give_back(t, held, e.s0 - STOP_GAP)
            elif sec.reserved >= 0 and sec.reserved != t.index:
                t.stopped_by = {sec.reserved}
                return self._give_back(t, held, e.s0 - STOP_GAP) if e.s0 > t.front else None
            if sec.reserved < 0 and e.s0 > t.front:
                opp = self.deadlock.opposed(t, e.section)
                if opp:
                    t.opposed = opp
                    return self._give_back(t, held, e.s0 - STOP_GAP)
            if sec.reserved < 0:
                self._reserve(sec, ti, e.direction)
                if e.route >= 0:
                    self.circuits.set_switch(sec.node, e.route)
            if e.s0 > t.front:
                held.append(e)
            i += 1
        return None

    def _give_back(self, t: TrainState, held: list[Element], stop: float) -> float:
        """Do not wait inside a junction area (§4.8): junctions and short links ``held``
        just before the blocked stretch go back, the train stops before them."""
        if self.ahead is None:
            return stop
        while held:
            e = held[-1]
            sec = self.sections[e.section]
            if (
                not (sec.kind == "junction" or e.s1 - e.s0 < SHORT_LINK_M)
                or t.index in sec.occupants
                or e.s0 <= t.front
            ):
                break
            self._reserve(sec, -1)
            held.pop()
            stop = e.s0 - STOP_GAP
        return self._clear_stop(t, stop)
