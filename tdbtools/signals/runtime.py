"""The signalling runtime: track circuits, section states, route reservation, aspects from the
scripts, and what each train may do (docs/signals.md §4).

:class:`Interlocking` is independent of the physics: a train is given as a *line* (any object
with the :class:`TrackLine` columns ``seg_node``, ``seg_dir``, ``seg_s0``, ``seg_s1``,
``seg_off0``, ``junction_s``, ``junction_node``, ``junction_route``), its length and where its
path ends. Each :meth:`Interlocking.update` takes the trains' fronts and speeds; afterwards
:meth:`Interlocking.targets` tells the driver where it must stop and which speeds the
signals impose. Events (aspects seen, waits, passing a signal at danger, deadlocks) are
collected in :attr:`Interlocking.events`.

The parts, one concept per module as Open Rails splits its Signalling folder:
:mod:`.circuits` (sections, switches, walks, change tracking), :mod:`.routes` (route
requests, reservations, free blocks, authorities), :mod:`.aspects` (heads, scripts, signal
look-ups), :mod:`.deadlock` (look-ahead and cycle detection), :mod:`.trains` (a train's
state). This module holds the cycle that drives them and the trains' targets.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from ..formats.route import Route
from ..formats.sigcfg import ASPECTS, RESTRICTING, STOP, STOP_AND_PROCEED
from .aspect_speed import aspect_speed, no_speed_reduction, passed_limit
from .aspects import HeadRuntime, SignalAspects
from .circuits import (
    BLOCK_CLEAR,
    BLOCK_JN_OBSTRUCTED,
    BLOCK_OCCUPIED,
    BLOCKED,
    FORCED_WAIT,
    MAX_WALK,
    OCC_OPPOSITE,
    OCC_SAME,
    OPEN,
    RESERVABLE,
    RESERVED,
    RESERVED_OTHER,
    Element,
    Section,
    TrackCircuits,
)
from .deadlock import DeadlockWatch
from .events import AspectSeen, ReplayEvent, SignalWait, Spad
from .objects import SignalObject, SignalSet
from .routes import FOLLOW_GAP, JUNCTION_LOOK, SHORT_LINK_M, STANDING, STOP_GAP, RouteSetting
from .trains import TrainState

#: Passing speed for RESTRICTING / STOP_AND_PROCEED (m/s, creepSpeedMpS).
CREEP = 2.5
NOT_SET = -1


class Interlocking(RouteSetting):
    """Track circuits, reservations and aspects for one replay (docs/signals.md §4)."""

    def __init__(
        self,
        route: Route,
        signals: SignalSet | list[SignalObject],
        *,
        switch_setter: Callable[[int, int], None] | None = None,
        deadlock_after: float = 300.0,
        initial_switches: dict[int, int] | None = None,
        ahead: float | None = None,
        clearance: Callable[[int], float] | None = None,
    ) -> None:
        self.route = route
        # ahead: metres beyond which Auto Node and a last signal's route reserve no more
        # (then on to the next junction); clearance: metres from a junction's switch point
        # to its clearance point (a train standing closer fouls it). None: unbounded / 0.
        self.ahead = ahead
        self.clearance = clearance
        self._clear_cache: dict[int, float] = {}
        objects = list(signals.signals if isinstance(signals, SignalSet) else signals)
        self.objects: list[SignalObject] = objects
        self.circuits = TrackCircuits(route, objects, dict(initial_switches or {}), switch_setter)
        # (the circuits' lists, read in every cycle; never replaced)
        self.sections: list[Section] = self.circuits.sections
        self.node_secs: dict[int, list[int]] = self.circuits.node_secs
        self.sig_section: list[int] = self.circuits.sig_section
        self.switches: dict[int, int] = self.circuits.switches
        self.deadlock = DeadlockWatch(self, deadlock_after)
        self.events: list[ReplayEvent] = []
        self.trains: list[TrainState] = []
        self.time = 0.0
        n = len(objects)
        self.block = [BLOCK_JN_OBSTRUCTED] * n
        self.enabled_train = [-1] * n
        self.req = [0] * n
        self.route_of: list[list[Element] | None] = [None] * n
        self.next_normal: list[int] = [-1] * n
        self.aspects = SignalAspects(self)
        self._occupied: set[int] = set()
        # Free signals (docs/signals.md §4.4): signal -> (its walk's sections, the signal
        # ending it, the section ids), signal -> (block, next signal), section -> free
        # signals walking it; signals to look at in the next update, claimed signals not
        # clear; the block, enabled-train and next-signal lists as the last update began.
        self._free_walks: dict[int, tuple[list[tuple[Section, int]], int, list[int]]] = {}
        self._free_result: dict[int, tuple[int, int]] = {}
        self._walk_sigs: dict[int, set[int]] = {}
        self._redo: set[int] = set()
        self._pending: set[int] = set()
        self._block_shadow: tuple[list[int], list[int], list[int]] | None = None
        self._thrown_seen = 0
        #: True: a cycle redoes only what changed (occupancy per train, signal routes per
        #: train and signal, free blocks of changed sections); False: everything is worked
        #: out afresh every cycle, the plain computation the tests compare with
        #: (docs/signals.md §4.4). Both give the same results.
        self.incremental = True
        #: Keep the speed of the aspect a train passes up to the next signal (Open Rails'
        #: activity mode, docs/signals.md §4.6). Off by default: on DK24 it turns one
        #: restrictive aspect at the last signal of a path into 56 km at 80 km/h.
        self.keep_aspect_limit = False
        self._holders: dict[int, set[int]] = {}  # section -> trains occupying it
        # (train, signal) -> (its route, next NORMAL signal); see signal_route.
        self._routes: dict[tuple[int, int], tuple[list[Element], int]] = {}
        self._routes_ahead = ahead
        # Per signal: (SNCA_MSTS, SNCA_ORTS, NORMAL heads).
        self._nca = [(*o.nca(), o.normal_heads) for o in objects]

    def add_train(
        self,
        name: str,
        line: Any,
        length: float,
        *,
        front: float,
        end_s: float | None = None,
        on_track: bool = True,
    ) -> int:
        """Register a train on its line (``front``: line distance of its front now). Returns its index.
        ``on_track=False``: it enters later (:meth:`enter`)."""
        k = len(self.trains)
        elements: list[Element] = []
        segs = zip(
            line.seg_node.tolist(),
            line.seg_dir.tolist(),
            line.seg_s0.tolist(),
            line.seg_s1.tolist(),
            line.seg_off0.tolist(),
        )
        junctions = list(
            zip(line.junction_s.tolist(), line.junction_node.tolist(), line.junction_route.tolist())
        )
        ji = 0
        for node, d, s0, s1, off0 in segs:
            while ji < len(junctions) and junctions[ji][0] <= s0 + 1e-6:
                js, jn, jr = junctions[ji]
                if jn in self.node_secs:
                    elements.append(Element(self.node_secs[jn][0], 1, js, js, int(jr)))
                ji += 1
            if node not in self.node_secs or s1 <= s0:
                continue
            bounds, ids = self.circuits.node_cuts[node], self.node_secs[node]
            lo, hi = (off0, off0 + (s1 - s0)) if d == 1 else (off0 - (s1 - s0), off0)
            parts = []
            for i, sec in enumerate(ids):
                a, b = max(bounds[i], lo), min(bounds[i + 1], hi)
                if b - a > 1e-6:
                    sa = s0 + (a - off0) if d == 1 else s0 + (off0 - b)
                    sb = s0 + (b - off0) if d == 1 else s0 + (off0 - a)
                    parts.append(Element(sec, d, sa, sb))
            parts.sort(key=lambda e: e.s0)
            elements.extend(parts)
        while ji < len(junctions):
            js, jn, jr = junctions[ji]
            if jn in self.node_secs:
                elements.append(Element(self.node_secs[jn][0], 1, js, js, int(jr)))
            ji += 1
        end = float(end_s) if end_s is not None else float(line.length)
        sigs: list[tuple[float, int]] = []
        speed_heads: list[tuple[float, int]] = []
        by_node: dict[int, list[int]] = {}
        for i, o in enumerate(self.objects):
            by_node.setdefault(o.node, []).append(i)
        for node, d, s0, s1, off0 in zip(
            line.seg_node.tolist(),
            line.seg_dir.tolist(),
            line.seg_s0.tolist(),
            line.seg_s1.tolist(),
            line.seg_off0.tolist(),
        ):
            for i in by_node.get(node, ()):
                o = self.objects[i]
                if o.tc_direction != d:
                    continue
                s = s0 + (o.offset - off0) if d == 1 else s0 + (off0 - o.offset)
                if s0 - 1e-6 <= s <= s1 + 1e-6 and s > front - 1e-6:
                    if o.is_normal and s <= end + 1e-6:
                        sigs.append((s, i))
                    for h in self.aspects.heads_of[i]:
                        if h.head.function == "SPEED":
                            speed_heads.append((s, h.hid))
        sigs.sort()
        speed_heads.sort()
        t = TrainState(
            k,
            name,
            elements,
            [e.s1 for e in elements],
            sigs,
            speed_heads,
            end,
            length,
            front,
            on_track=on_track,
        )
        t.speed_next = [next((x for x, _ in sigs if x > s), end) for s, _h in speed_heads]
        s0 = [e.s0 for e in elements]
        if all(a <= b for a, b in zip(s0, s0[1:])):  # (the walk's stop found by bisection)
            t.e_s0 = s0
        self.trains.append(t)
        self.deadlock.runs = None
        if on_track:
            self._hold_start(t, quiet=True)
        return k

    def can_enter(self, train: int, front: float) -> set[str]:
        """Names of the trains in the world that occupy or hold a section under ``train``
        were it to stand with its front at ``front`` (empty: it may enter)."""
        t = self.trains[train]
        who: set[int] = set()
        for e in self._under(t, front):
            sec = self.sections[e.section]
            who |= {k for k in sec.occupants if k != train and self.trains[k].on_track}
            if sec.reserved >= 0 and sec.reserved != train and self.trains[sec.reserved].on_track:
                who.add(sec.reserved)
            who |= self.deadlock.opposed(t, e.section)
        return {self.trains[k].name for k in who}

    def _under(self, t: TrainState, front: float) -> list[Element]:
        return [
            e
            for e in self._elements_between(t, front - t.length, front)
            if e.s1 >= front - t.length - 1e-6 and e.s0 <= front + 1e-6
        ]

    def enter(self, train: int, front: float) -> None:
        """Put a registered train into the world with its front at ``front``: it holds its
        track up to its first signal and requests routes from the next cycle on (§4.8)."""
        t = self.trains[train]
        t.on_track, t.done, t.front, t.passed = True, False, front, None
        t.up_to_signal = False  # known after its first update: a train may stand between
        while t.next_signal < len(t.signals) and t.signals[t.next_signal][0] <= front:
            t.next_signal += 1
        self._hold_start(t, quiet=False)

    def leave(self, train: int) -> None:
        """Take a train out of the world (at the end of its path, or before it enters):
        its sections, reservations and the signals cleared for it are released (§4.8)."""
        t = self.trains[train]
        t.on_track, t.done = False, True
        for sec in self.sections:
            if sec.reserved == train:
                self._reserve(sec, -1)
        for k in list(t.occ):
            self._holders[k].discard(train)
            self._set_occupants(k)
        self._occupied.difference_update(k for k in t.occ if not self._holders[k])
        t.occ, t.occ_elems, t.occ_span, t.moving = {}, [], None, None
        for sig, k in enumerate(self.enabled_train):
            if k == train:
                self.enabled_train[sig] = -1
                self.route_of[sig] = None
                self.block[sig] = BLOCK_JN_OBSTRUCTED
        self.aspects.forget_train(train)
        t.stop_s, t.creep_at, t.limits = None, None, []
        if t.waiting_since is not None:
            self._end_wait(t)

    def set_switch(self, junction: int, route: int) -> None:
        """Set a switch from outside (a scenario event): walks follow it from now on."""
        self.circuits.set_switch(junction, route, quiet=True)

    def walk_from(self, sec: int, direction: int, limit: int = MAX_WALK) -> list[tuple[int, int]]:
        """Sections after ``sec`` along the switches as set (:meth:`TrackCircuits.walk_from`)."""
        return self.circuits.walk_from(sec, direction, limit)

    def reserve_section(self, k: int, train: int) -> None:
        """Reserve section ``k`` for ``train`` (-1: release it) from outside the runtime
        (tests, tools): the next block update sees the change."""
        self.circuits.reserve(self.sections[k], train)

    def set_occupants(self, k: int, occupants: dict[int, int]) -> None:
        """Set section ``k``'s occupants (train -> direction) from outside the runtime."""
        self.circuits.put_occupants(k, dict(occupants))

    def run_scripts(self, *, force_enabled: bool = False) -> None:
        """One pass of the heads' scripts (:meth:`SignalAspects.run_scripts`)."""
        self.aspects.run_scripts(force_enabled=force_enabled)

    # (what tools and tests read of the parts)
    @property
    def heads(self) -> list[HeadRuntime]:
        return self.aspects.heads

    @property
    def lvars(self) -> list[dict[int, int]]:
        return self.aspects.lvars

    @property
    def script_passes(self) -> int:
        """Passes of the scripts that ran (not skipped): aspects change only then."""
        return self.aspects.passes

    @property
    def avoid_deadlocks(self) -> bool:
        """Deadlock look-ahead (§4.9) on or off."""
        return self.deadlock.avoid

    @avoid_deadlocks.setter
    def avoid_deadlocks(self, on: bool) -> None:
        self.deadlock.avoid = on

    @property
    def deadlock_after(self) -> float:
        """Seconds of waiting before a cycle of waiting trains counts as a deadlock."""
        return self.deadlock.after

    @deadlock_after.setter
    def deadlock_after(self, seconds: float) -> None:
        self.deadlock.after = seconds

    @property
    def switch_setter(self) -> Callable[[int, int], None] | None:
        """Called with (junction, route) when the runtime throws a switch."""
        return self.circuits.switch_setter

    @switch_setter.setter
    def switch_setter(self, setter: Callable[[int, int], None] | None) -> None:
        self.circuits.switch_setter = setter

    @property
    def version(self) -> int:
        """Bumped by every change of a section's reservation or occupants."""
        return self.circuits.version

    def update(self, time: float, fronts: list[float], speeds: list[float]) -> None:
        """One signalling cycle: occupancy, passed signals, requests, scripts, train targets."""
        self.time = time
        sections, holders, circuits = self.sections, self._holders, self.circuits
        incremental = self.incremental
        # Sections whose occupants change: only those are written (in train order, as if
        # filled afresh); the plain way writes every section occupied before or now.
        changed: set[int] = set() if incremental else set(self._occupied)
        # With clearances (§4.8) a junction stays occupied until the rear has passed
        # its clearance point: up to there the train still fouls the other branch.
        look = JUNCTION_LOOK if self.clearance is not None else 0.0
        for t in self.trains:
            if not t.on_track:
                continue
            ti = t.index
            t.front, t.speed = front, speed = fronts[ti], speeds[ti]
            rear = front - t.length
            tel = t.elements
            old = occ = t.occ
            if t.occ_span != (rear, front):  # (else it stands where it stood: the same)
                i = bisect.bisect_left(t.e_s1, rear - look)
                walk = self._walk_key(t, i, rear, front, look)
                if (
                    walk is None
                    or t.occ_walk is None
                    or t.occ_walk[0] != walk
                    or t.occ_walk[1] is not t.occ_elems
                ):
                    n = len(tel)
                    occ = {}
                    elems: list[tuple[Element, float, float]] = []
                    lim = front + 1e-6
                    sound = True  # (no clearance below 0: an element that ends ahead of the rear is in)
                    while i < n:
                        e = tel[i]
                        if e.s0 > lim:
                            break
                        sec = sections[e.section]
                        tail = self._clear(sec.node) if look and sec.kind == "junction" else 0.0
                        sound = sound and tail >= 0.0
                        if e.s1 + tail >= rear - 1e-6:
                            occ[e.section] = e.direction
                            elems.append((e, sec.start, sec.end))
                        i += 1
                    t.occ_elems = elems
                    t.occ_walk = (walk, elems) if walk is not None and sound else None
                t.occ_span = (rear, front)
            if occ != old:
                for k in old:
                    if k not in occ:
                        holders[k].discard(ti)
                        changed.add(k)
                for k, d in occ.items():
                    if old.get(k) != d:
                        holders.setdefault(k, set()).add(ti)
                        changed.add(k)
                t.occ = occ
            if not incremental:
                changed.update(occ)
            moving = abs(speed) > STANDING
            if moving != t.moving:  # what a free block reads of its occupants changed
                t.moving = moving
                circuits.note_moved(occ)
            # Release what the rear has left behind.
            i = bisect.bisect_left(t.e_s1, rear) - 1
            while i >= 0:
                e = tel[i]
                sec = sections[e.section]
                if sec.reserved == ti and e.section not in occ:
                    self._reserve(sec, -1)
                elif sec.reserved != ti and (not look or e.s1 < rear - look - 1.0):
                    break  # (a junction just behind may still be occupied while one before it is free)
                i -= 1
            # Signals passed: reset them; a signal passed at danger is recorded.
            while t.next_signal < len(t.signals) and t.signals[t.next_signal][0] <= t.front:
                s_sig, sig = t.signals[t.next_signal]
                if self.enabled_train[sig] != t.index or self.aspects.sig_lr(sig, 0) <= STOP:
                    self.events.append(
                        Spad(
                            time=time,
                            train=t.name,
                            signal=sig,
                            speed=round(t.speed, 3),
                            distance=round(s_sig, 3),
                        )
                    )
                s_next = t.signals[t.next_signal + 1][0] if t.next_signal + 1 < len(t.signals) else t.end_s
                t.passed = passed_limit(self.aspects, s_sig, sig, s_next)
                self.enabled_train[sig] = -1
                self.route_of[sig] = None
                self.block[sig] = BLOCK_JN_OBSTRUCTED
                t.next_signal += 1
        occupied = self._occupied
        for k in changed:
            self._set_occupants(k)
            if holders.get(k):
                occupied.add(k)
            else:
                occupied.discard(k)
        # Requests (the first signal ahead of every train), then propagation.
        for t in self.trains:
            t.opposed = set()
        for t in self.trains:
            if (
                t.next_signal < len(t.signals)
                and not t.done
                and t.on_track
                and (t.hold_s is None or t.signals[t.next_signal][0] <= t.hold_s)
                and (self.ahead is None or t.signals[t.next_signal][0] - t.front <= self.ahead)
                and (self.ahead is None or t.up_to_signal)
            ):
                sig = t.signals[t.next_signal][1]
                self._take_over(sig, t)
                if self.enabled_train[sig] in (-1, t.index):
                    self._request(sig, t, 0, False)
        self.update_blocks()
        self.aspects.run_scripts()
        for t in self.trains:
            if t.on_track:
                self._targets(t)
        self.deadlock.check()

    def _walk_key(self, t: TrainState, i: int, rear: float, front: float, look: float) -> tuple | None:
        """What decides the elements the occupancy walk of ``update`` takes for a train
        from ``rear`` to ``front`` (``i``: the first element ending at or after
        ``rear − look``): where the walk stops (the first element starting past the
        front), and which of the elements ending behind the rear a junction's clearance
        keeps. The same key as the last walk's (of the same ``occ_elems``): the same
        elements, so the walk is not made again (a long train spans dozens of elements
        and crosses one now and then; docs/signals.md §4.1). None: the elements do not
        start in order (every update walks)."""
        s0 = t.e_s0
        if not s0:
            return None
        end = max(i, bisect.bisect_right(s0, front + 1e-6))
        j = min(max(i, bisect.bisect_left(t.e_s1, rear - 1e-6)), end)
        if j == i:
            return (i, end)
        tel, sections = t.elements, self.sections
        kept = []
        for e in tel[i:j]:
            sec = sections[e.section]
            tail = self._clear(sec.node) if look and sec.kind == "junction" else 0.0
            kept.append(e.s1 + tail >= rear - 1e-6)
        return (i, end, *kept)

    def _targets(self, t: TrainState) -> None:
        t.stopped_by = set()
        t.stop_s = self._authority(t)
        t.up_to_signal = t.stop_s is None
        t.creep_at = None
        t.limits = []
        if self.keep_aspect_limit and t.passed is not None and t.passed[1] >= t.front - t.length:
            t.limits.append(t.passed)  # the limit of the signal it passed holds to the next one
        prev_s = None
        for j in range(t.next_signal, len(t.signals)):
            s, sig = t.signals[j]
            a = self.aspects.aspect(sig)
            mine = self.enabled_train[sig] == t.index
            if j == t.next_signal:
                seen = (sig, a if mine else -1)
                if seen != t.last_seen:
                    t.last_seen = seen
                    self.events.append(
                        AspectSeen(
                            time=self.time,
                            train=t.name,
                            signal=sig,
                            aspect=ASPECTS[a] if mine else "STOP (not cleared)",
                            distance_to=round(s - t.front, 1),
                        )
                    )
            if t.stop_s is not None:
                break
            if not mine or a == STOP:
                t.stop_s = self._clear_stop(t, s - STOP_GAP)
                break
            if a in (STOP_AND_PROCEED, RESTRICTING) and not no_speed_reduction(self.aspects, sig):
                t.creep_at = s if t.creep_at is None else t.creep_at
            head_speed = aspect_speed(self.aspects, sig)
            nxt = t.signals[j + 1][0] if j + 1 < len(t.signals) else t.end_s
            if head_speed > 0:
                t.limits.append((s, nxt, head_speed))
            prev_s = s
            if s - t.front > 6000.0:
                break
        del prev_s
        sh = t.speed_heads
        # (sorted by distance: those behind the rear are skipped at once)
        for j in range(bisect.bisect_left(sh, (t.front - t.length - 1.0, -1)), len(sh)):
            s, hid = sh[j]
            h = self.aspects.heads[hid]
            if h.type is None:
                continue
            v = h.type.speed(h.state)
            if v > 0:
                t.limits.append((s, t.speed_next[j], v))
        # Waiting at a signal: measured while standing within 200 m of the stop target.
        standing = abs(t.speed) < 0.1
        at_signal = t.stop_s is not None and t.stop_s - t.front < 200.0 and t.next_signal < len(t.signals)
        if standing and at_signal:
            sig = t.signals[t.next_signal][1]
            if t.waiting_since is None:
                t.waiting_since, t.waiting_at = self.time, sig
        elif t.waiting_since is not None and not standing:
            self._end_wait(t)

    def _end_wait(self, t: TrainState) -> None:
        """Record the wait of ``t`` at its signal, which ends now."""
        assert t.waiting_since is not None
        self.events.append(
            SignalWait(
                time=t.waiting_since,
                train=t.name,
                signal=t.waiting_at,
                until=self.time,
                seconds=round(self.time - t.waiting_since, 3),
            )
        )
        t.waiting_since, t.waiting_at = None, -1

    def waiting_for(self, train: int) -> set[str]:
        """Names of the trains a train waits for as of the last update: those holding its next
        signal's route or the track ahead of it, or the single line ahead (§4.9)."""
        t = self.trains[train]
        who = self.deadlock.blockers(t)[0] | t.opposed | t.stopped_by
        return {self.trains[k].name for k in who if k != train}

    def targets(self, train: int) -> tuple[float | None, float | None, list[tuple[float, float, float]]]:
        """(stop before this line distance or None, creep at this line distance or None,
        [(from s, to s, limit m/s)]) for a train, as of the last update."""
        t = self.trains[train]
        return t.stop_s, t.creep_at, t.limits

    def aspect(self, sig: int) -> int:
        """The aspect a train reads: the least restrictive of the NORMAL heads."""
        return self.aspects.aspect(sig)


__all__ = [
    "BLOCKED",
    "BLOCK_CLEAR",
    "BLOCK_JN_OBSTRUCTED",
    "BLOCK_OCCUPIED",
    "CREEP",
    "FOLLOW_GAP",
    "FORCED_WAIT",
    "JUNCTION_LOOK",
    "MAX_WALK",
    "OCC_OPPOSITE",
    "OCC_SAME",
    "OPEN",
    "RESERVABLE",
    "RESERVED",
    "RESERVED_OTHER",
    "SHORT_LINK_M",
    "STANDING",
    "STOP_GAP",
    "Element",
    "HeadRuntime",
    "Interlocking",
    "Section",
    "TrainState",
]
