"""The signalling runtime: track circuits, section states, route reservation, aspects from the
scripts, and what each train may do (docs/signals.md §4).

:class:`Interlocking` is independent of the physics: a train is given as a *line* (any object
with the :class:`TrackLine` columns ``seg_node``, ``seg_dir``, ``seg_s0``, ``seg_s1``,
``seg_off0``, ``junction_s``, ``junction_node``, ``junction_route``), its length and where its
path ends. Each :meth:`Interlocking.update` takes the trains' fronts and speeds; afterwards
:meth:`Interlocking.targets` tells the driver where it must stop and which speeds the
signals impose. Events (aspects seen, waits, passing a signal at danger, deadlocks) are
collected in :attr:`Interlocking.events`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..formats.route import Route
from ..formats.sigcfg import ASPECTS, CLEAR_2, RESTRICTING, STOP, STOP_AND_PROCEED, SUBTYPES
from ..formats.tdb import JunctionNode, VectorNode
from .events import AspectSeen, Deadlock, ReplayEvent, SignalWait, Spad
from .objects import Head, SignalObject, SignalSet

# Internal section states, ordered: a higher value is worse (§4.2).
RESERVED, RESERVABLE, OCC_SAME, RESERVED_OTHER, FORCED_WAIT, OCC_OPPOSITE, OPEN, BLOCKED = range(8)
BLOCK_CLEAR, BLOCK_OCCUPIED, BLOCK_JN_OBSTRUCTED = 0, 1, 2
#: Speed below which a train counts as standing (m/s), as in Open Rails.
STANDING = 0.5
#: Gap the driver keeps before a signal at danger (m; Open Rails' AI value).
STOP_GAP = 15.0
#: Gap kept behind another train on the same stretch without a signal between (m).
FOLLOW_GAP = 50.0
#: Passing speed for RESTRICTING / STOP_AND_PROCEED (m/s, creepSpeedMpS).
CREEP = 2.5
#: Longest default-route walk (sections) for signals no train has claimed.
MAX_WALK = 64
#: Metres beyond a stop target searched for a junction whose clearance zone it is in.
JUNCTION_LOOK = 200.0
#: A stretch shorter than this between junctions is part of a junction area (not to wait on).
SHORT_LINK_M = 400.0
NOT_SET = -1
#: Writes a slot without the watching ``Section.__setattr__``: the runtime's own writes
#: mark the sections they change themselves (only real changes, see Interlocking._reserve).
_setslot = object.__setattr__


@dataclass(slots=True)
class Section:
    index: int
    node: int
    start: float  # node offsets (0, 0 for a junction)
    end: float
    kind: str  # "normal" | "junction"
    end_signal: list[int] = field(default_factory=lambda: [-1, -1])  # per TC direction
    reserved: int = -1  # train index
    occupants: dict[int, int] = field(default_factory=dict)  # train -> direction
    #: The interlocking's set of sections whose ``reserved`` or ``occupants`` were set
    #: since its last block update (Interlocking.update_blocks); None: not watched.
    watch: set[int] | None = field(default=None, repr=False, compare=False)

    def __setattr__(self, name: str, value: Any) -> None:
        # Writes from outside the runtime (tests, tools) are noticed here; the runtime
        # itself writes through _setslot and marks only what it changed.
        object.__setattr__(self, name, value)
        if name == "reserved" or name == "occupants":
            try:
                w = self.watch
            except AttributeError:  # still in __init__
                return
            if w is not None:
                w.add(self.index)


@dataclass(slots=True)
class Element:
    """One section of a train's route: line distances s0..s1, walked in ``direction``."""

    section: int
    direction: int
    s0: float
    s1: float
    route: int = -1  # junctions: the route taken


@dataclass(slots=True)
class TrainState:
    index: int
    name: str
    elements: list[Element]
    e_s1: list[float]
    signals: list[tuple[float, int]]  # (line distance, signal) of NORMAL signals in its direction
    speed_heads: list[tuple[float, int]]  # (line distance, head id) of SPEED heads in its direction
    end_s: float
    length: float
    front: float = 0.0
    speed: float = 0.0
    next_signal: int = 0  # index into signals of the first not yet passed
    waiting_since: float | None = None
    waiting_at: int = -1
    seen: dict[int, int] = field(default_factory=dict)
    last_seen: tuple[int, int] | None = None
    stop_s: float | None = None
    limits: list[tuple[float, float, float]] = field(default_factory=list)  # (from s, to s, m/s)
    creep_at: float | None = None
    #: Sections occupied as of the last update: section -> direction (docs/signals.md §4.1).
    occ: dict[int, int] = field(default_factory=dict)
    #: The occupied elements with the rear and front they were worked out for (extents).
    occ_elems: list[tuple[Element, float, float]] = field(default_factory=list)  # (e, sec start, end)
    occ_span: tuple[float, float] | None = None
    #: Whether it was moving (faster than STANDING) at the last update; None: not yet known.
    moving: bool | None = None
    #: Per SPEED head in speed_heads: the line distance of the next NORMAL signal beyond it.
    speed_next: list[float] = field(default_factory=list)
    done: bool = False
    deadlocked: bool = False
    #: False while the train is not in the world (before it enters, after it left): it
    #: occupies, reserves and requests nothing (docs/signals.md §4.8).
    on_track: bool = True
    #: Trains coming the other way that hold the single line ahead: it waits for them (§4.9).
    opposed: set[int] = field(default_factory=set)
    #: Trains holding the track where its authority between signals ends (Auto Node).
    stopped_by: set[int] = field(default_factory=set)
    #: Its own track reaches its next signal (else another train is in between, §4.3).
    up_to_signal: bool = True
    #: It asks for no signal while True: a timetable train standing at a platform whose
    #: exit signal is held ($hold, docs/timetables.md §5.4).
    holding: bool = False

    @property
    def extents(self) -> dict[int, tuple[float, float]]:
        """Section -> node offsets (low, high) it covers, as of the last update."""
        out: dict[int, tuple[float, float]] = {}
        if self.occ_span is None:
            return out
        rear, front = self.occ_span
        for e, start, end in self.occ_elems:
            a, b = max(rear, e.s0) - e.s0, min(front, e.s1) - e.s0
            out[e.section] = (start + a, start + b) if e.direction == 1 else (end - b, end - a)
        return out

    def extent(self, section: int) -> tuple[float, float] | None:
        """``extents.get(section)`` without building the whole dict."""
        got = None
        for item in self.occ_elems:
            if item[0].section == section:
                got = item  # (the last one counts, as in extents)
        if got is None or self.occ_span is None:
            return None
        e, start, end = got
        rear, front = self.occ_span
        a, b = max(rear, e.s0) - e.s0, min(front, e.s1) - e.s0
        return (start + a, start + b) if e.direction == 1 else (end - b, end - a)


class HeadRuntime:
    """A head while the runtime runs it: what its script reads (docs/signals.md §2.6)."""

    __slots__ = (
        "ilk",
        "sig",
        "head",
        "hid",
        "state",
        "draw_state",
        "enabled",
        "approach_position",
        "approach_speed",
        "type",
        "_dds",
        "_feat",
    )

    def __init__(self, ilk: Interlocking, sig: int, head: Head, hid: int) -> None:
        self.ilk, self.sig, self.head, self.hid = ilk, sig, head, hid
        self.type = head.type
        self.state = STOP
        self.draw_state = 0
        self.enabled = 0
        t = head.type
        self.approach_position = int(t.approach_position) if t and t.approach_position is not None else -1
        self.approach_speed = int(t.approach_speed) if t and t.approach_speed is not None else -1
        # What the scripts ask every pass of data that never changes (types and world
        # flags are frozen): worked out once.
        self._dds = {a: t.def_draw_state(a) for a in range(len(ASPECTS))} if t is not None else {}
        o = ilk.objects[sig]
        self._feat = tuple(o.sig_feature(f) for f in range(len(SUBTYPES)))

    # MSTS set ---------------------------------------------------------------------------------
    def block_state(self) -> int:
        return self.ilk.block[self.sig]

    def route_set(self) -> int:
        return self.ilk.route_set(self.sig, self.head)

    def next_sig_lr(self, fn: int) -> int:
        nxt = self.ilk.next_signal(self.sig, fn)
        if nxt < 0:
            return STOP
        a = self.ilk.sig_lr(nxt, fn)
        return CLEAR_2 if a < 0 and fn == 0 else (STOP if a < 0 else a)

    def next_sig_mr(self, fn: int) -> int:
        nxt = self.ilk.next_signal(self.sig, fn)
        if nxt < 0:
            return STOP
        a = self.ilk.sig_mr(nxt, fn)
        return STOP if a < 0 else a

    def this_sig_lr(self, fn: int) -> int:
        return self.ilk.sig_lr(self.sig, fn)

    def this_sig_mr(self, fn: int) -> int:
        return self.ilk.sig_mr(self.sig, fn)

    def opp_sig_lr(self, fn: int) -> int:
        return STOP

    opp_sig_mr = opp_sig_lr

    def dist_multi_sig_mr(self, fn1: int, fn2: int) -> int:
        return self.ilk.dist_multi(self.sig, fn1, fn2, use_route_set=True)

    def dist_multi_sig_mr_of_lr(self, fn1: int, fn2: int) -> int:
        return self.ilk.dist_multi(self.sig, fn1, fn2, use_route_set=False)

    def sig_feature(self, feature: int) -> int:
        if 0 <= feature < len(self._feat):
            return self._feat[feature]
        return self.ilk.objects[self.sig].sig_feature(feature)

    def hashead(self, n: int) -> int:
        return self.ilk.objects[self.sig].hashead(n)

    def def_draw_state(self, aspect: int) -> int:
        d = self._dds.get(aspect)
        if d is not None:
            return d
        return self.type.def_draw_state(aspect) if self.type is not None else -1

    # OR additions (the common ones; the rest read 0) ------------------------------------------
    def next_nsig_lr(self, fn: int, n: int) -> int:
        sig = self.sig
        a = STOP
        for _ in range(max(n, 1)):
            sig = self.ilk.next_signal(sig, fn)
            if sig < 0:
                return STOP
            a = self.ilk.sig_lr(sig, fn)
            if a <= STOP:
                return STOP
        return a

    def next_sig_id(self, fn: int) -> int:
        return self.ilk.next_signal(self.sig, fn)

    def next_nsig_id(self, fn: int, n: int) -> int:
        sig = self.sig
        for _ in range(max(n, 1)):
            sig = self.ilk.next_signal(sig, fn)
            if sig < 0:
                return -1
        return sig

    def opp_sig_id(self, fn: int) -> int:
        return -1

    def id_sig_enabled(self, sid: int) -> int:
        return int(0 <= sid < len(self.ilk.objects) and self.ilk.enabled_train[sid] >= 0)

    def id_sig_lr(self, sid: int, fn: int) -> int:
        if not 0 <= sid < len(self.ilk.objects):
            return STOP
        a = self.ilk.sig_lr(sid, fn)
        return STOP if a < 0 else a

    def store_lvar(self, i: int, v: int) -> int:
        lv = self.ilk.lvars[self.sig]
        if lv.get(i) != v or i not in lv:
            self.ilk._lvar_changed = True
        lv[i] = v
        return 0

    def this_sig_lvar(self, i: int) -> int:
        return self.ilk.lvars[self.sig].get(i, 0)

    def next_sig_lvar(self, fn: int, i: int) -> int:
        nxt = self.ilk.next_signal(self.sig, fn)
        return self.ilk.lvars[nxt].get(i, 0) if nxt >= 0 else 0

    def id_sig_lvar(self, sid: int, i: int) -> int:
        return self.ilk.lvars[sid].get(i, 0) if 0 <= sid < len(self.ilk.objects) else 0

    def approach_control_position(self, d: int) -> int:
        return 1

    approach_control_position_forced = approach_control_position

    def approach_control_speed(self, d: int, v: int) -> int:
        return 1

    approach_control_next_stop = approach_control_speed

    def this_sig_noupdate(self) -> int:
        return 0

    def switchstand(self, a0: int, a1: int) -> int:
        return a0

    def __getattr__(self, name: str) -> Callable[..., int]:
        # Built-ins the runtime does not model (call-on, timing triggers, debug output) read 0.
        if name.startswith("_"):
            raise AttributeError(name)
        return _zero


def _zero(*_args: Any) -> int:
    return 0


class Interlocking:
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
        #: Deadlock look-ahead (§4.9): a train does not enter a stretch of its path that
        #: another train's path runs the other way while that train holds part of it.
        self.avoid_deadlocks = False
        self._runs: dict[int, list[tuple[int, frozenset[int]]]] | None = None
        self._runs_at: dict[int, dict[int, list[int]]] = {}
        self._clear_cache: dict[int, float] = {}
        objects = list(signals.signals if isinstance(signals, SignalSet) else signals)
        self.objects: list[SignalObject] = objects
        self.nodes = route.tdb.nodes
        self.switch_setter = switch_setter
        self.switches: dict[int, int] = dict(initial_switches or {})
        self.deadlock_after = deadlock_after
        self.events: list[ReplayEvent] = []
        self.trains: list[TrainState] = []
        self.time = 0.0
        n = len(objects)
        self.block = [BLOCK_JN_OBSTRUCTED] * n
        self.enabled_train = [-1] * n
        self.req = [0] * n
        self.route_of: list[list[Element] | None] = [None] * n
        self.next_normal: list[int] = [-1] * n
        self.lvars: list[dict[int, int]] = [{} for _ in range(n)]
        self.heads: list[HeadRuntime] = []
        self.heads_of: list[list[HeadRuntime]] = [[] for _ in range(n)]
        for k, o in enumerate(objects):
            for h in o.heads:
                hr = HeadRuntime(self, k, h, len(self.heads))
                self.heads.append(hr)
                self.heads_of[k].append(hr)
        # NORMAL heads first, then the others (§4.5).
        self.order = [h for h in self.heads if h.head.function == "NORMAL"] + [
            h for h in self.heads if h.head.function != "NORMAL"
        ]
        self._walks: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
        self._occupied: set[int] = set()
        # What the scripts read when their last pass changed nothing (None: run them);
        # see run_scripts.
        self._scripts_at_rest: tuple | None = None
        self._switch_epoch = 0  # bumped when a switch is thrown
        self._lvar_changed = False
        #: Passes of the scripts that ran (not skipped): aspects change only then.
        self.script_passes = 0
        self._free_walks: dict[int, tuple[list[tuple[Section, int]], int]] = {}
        self._free_epoch = 0
        self._free_result: dict[int, tuple[int, int]] = {}  # signal -> (block, next signal)
        self._walk_sigs: dict[int, list[int]] = {}  # section -> free signals walking it
        self._build_sections()
        self._touched: set[int] = set()  # sections written since the last block update
        for sec in self.sections:
            sec.watch = self._touched
        #: True: a cycle redoes only what changed (occupancy per train, signal routes per
        #: train and signal, free blocks of changed sections); False: everything is worked
        #: out afresh every cycle, the plain computation the tests compare with
        #: (docs/signals.md §4.4). Both give the same results.
        self.incremental = True
        self._holders: dict[int, set[int]] = {}  # section -> trains occupying it
        # (train, signal) -> (its route, next NORMAL signal); see _signal_route.
        self._routes: dict[tuple[int, int], tuple[list[Element], int]] = {}
        self._routes_ahead = ahead
        # Per signal: (SNCA_MSTS, SNCA_ORTS, NORMAL heads) and its NORMAL heads with a type.
        self._nca = [(*o.nca(), o.normal_heads) for o in objects]
        self._normal_typed = [
            [h for h in hs if h.head.function == "NORMAL" and h.type is not None] for hs in self.heads_of
        ]
        self.sec_pos = [0] * len(self.sections)
        for ids in self.node_secs.values():
            for i, k in enumerate(ids):
                self.sec_pos[k] = i

    # -- track circuits (§4.1) -------------------------------------------------------------------
    def _build_sections(self) -> None:
        cuts: dict[int, set[float]] = {}
        for o in self.objects:
            if o.is_normal:
                cuts.setdefault(o.node, set()).add(o.offset)
        self.sections: list[Section] = []
        self.node_cuts: dict[int, list[float]] = {}
        self.node_secs: dict[int, list[int]] = {}
        for n in self.nodes[1:]:
            if isinstance(n, VectorNode):
                length = self.route.node_length(n.index)
                cs = sorted(c for c in cuts.get(n.index, ()) if 0.0 < c < length)
                bounds = [0.0] + cs + [length]
                ids = []
                for a, b in zip(bounds[:-1], bounds[1:]):
                    ids.append(len(self.sections))
                    self.sections.append(Section(len(self.sections), n.index, a, b, "normal"))
                self.node_cuts[n.index] = bounds
                self.node_secs[n.index] = ids
            elif isinstance(n, JunctionNode):
                self.node_cuts[n.index] = [0.0, 0.0]
                self.node_secs[n.index] = [len(self.sections)]
                self.sections.append(Section(len(self.sections), n.index, 0.0, 0.0, "junction"))
        self.sig_section = [-1] * len(self.objects)
        for k, o in enumerate(self.objects):
            if not o.is_normal or o.node not in self.node_secs:
                continue
            bounds = self.node_cuts[o.node]
            ids = self.node_secs[o.node]
            if o.tc_direction == 1:  # the section that ends at the signal, walking forward
                i = max(bisect.bisect_left(bounds, o.offset - 1e-6) - 1, 0)
            else:  # the section that starts there, walking backward
                i = min(bisect.bisect_right(bounds, o.offset + 1e-6) - 1, len(ids) - 1)
            sec = ids[min(i, len(ids) - 1)]
            self.sections[sec].end_signal[o.tc_direction] = k
            self.sig_section[k] = sec

    def walk_from(self, sec: int, direction: int, limit: int = MAX_WALK) -> list[tuple[int, int]]:
        """Sections after ``sec``, following the switches, up to and including the one that
        ends at a NORMAL signal in the direction (or the end of the track). Cached until a
        switch is thrown."""
        key = (sec, direction, limit)
        hit = self._walks.get(key)
        if hit is None:
            hit = self._walks[key] = self._walk_from(sec, direction, limit)
        return hit

    def _walk_from(self, sec: int, direction: int, limit: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        cur, d = sec, direction
        for _ in range(limit):
            s = self.sections[cur]
            if s.kind == "normal":
                ids = self.node_secs[s.node]
                i = self.sec_pos[cur]
                j = i + (1 if d == 1 else -1)
                if 0 <= j < len(ids):
                    cur = ids[j]
                else:
                    vn = self.nodes[s.node]
                    assert vn is not None
                    if d == 1:
                        pin = vn.pins[vn.in_pins] if len(vn.pins) > vn.in_pins else None
                    else:
                        pin = vn.pins[0] if vn.pins else None
                    if pin is None or not 0 < pin.link < len(self.nodes):
                        break
                    nxt = self.nodes[pin.link]
                    if isinstance(nxt, JunctionNode):
                        cur = self.node_secs[nxt.index][0]
                        d = pin.direction
                    elif isinstance(nxt, VectorNode):
                        ids2 = self.node_secs[nxt.index]
                        cur, d = (ids2[0], 1) if pin.direction == 1 else (ids2[-1], 0)
                    else:
                        break
            else:
                jn = self.nodes[s.node]
                assert isinstance(jn, JunctionNode)
                if d == 1:  # from the trunk: the switch decides
                    r = self.switches.get(jn.index, 0)
                    k = jn.in_pins + r
                    pin = jn.pins[k] if k < len(jn.pins) else None
                else:
                    pin = jn.pins[0] if jn.pins else None
                if pin is None or not 0 < pin.link < len(self.nodes):
                    break
                nxt = self.nodes[pin.link]
                if not isinstance(nxt, VectorNode):
                    break
                ids2 = self.node_secs[nxt.index]
                cur, d = (ids2[0], 1) if pin.direction == 1 else (ids2[-1], 0)
            out.append((cur, d))
            if self.sections[cur].kind == "normal" and self.sections[cur].end_signal[d] >= 0:
                break
        return out

    # -- trains ----------------------------------------------------------------------------------
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
            bounds, ids = self.node_cuts[node], self.node_secs[node]
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
                    for h in self.heads_of[i]:
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
        self.trains.append(t)
        self._runs = None
        if on_track:
            self._hold_start(t, quiet=True)
        return k

    def _hold_start(self, t: TrainState, *, quiet: bool) -> None:
        """Auto Node: the train holds its track up to the first signal (§4.3)."""
        upto = t.signals[t.next_signal][0] if t.next_signal < len(t.signals) else t.end_s
        upto = self._horizon(t, t.front, upto)
        for e in self._elements_between(t, t.front - t.length, upto - 1e-3):
            tcs = self.sections[e.section]
            if e.s0 > t.front and (
                (tcs.reserved >= 0 and tcs.reserved != t.index)
                or any(k != t.index for k in tcs.occupants)
                or self._opposed(t, e.section)
            ):
                break  # ahead of its front it holds nothing beyond what it cannot have
            if tcs.reserved < 0:
                self._reserve(tcs, t.index)
                if e.route >= 0:
                    self._set_switch(tcs.node, e.route, quiet=quiet)

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

    def _under(self, t: TrainState, front: float) -> list[Element]:
        return [
            e
            for e in self._elements_between(t, front - t.length, front)
            if e.s1 >= front - t.length - 1e-6 and e.s0 <= front + 1e-6
        ]

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
            who |= self._opposed(t, e.section)
        return {self.trains[k].name for k in who}

    def enter(self, train: int, front: float) -> None:
        """Put a registered train into the world with its front at ``front``: it holds its
        track up to its first signal and requests routes from the next cycle on (§4.8)."""
        t = self.trains[train]
        t.on_track, t.done, t.front = True, False, front
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
        t.stop_s, t.creep_at, t.limits = None, None, []
        if t.waiting_since is not None:
            self._end_wait(t)

    # -- deadlock look-ahead (§4.9) ------------------------------------------------------------
    def _build_runs(self) -> None:
        """For every pair of trains, the stretches of the first one's path that the other's
        path runs the other way: maximal runs of consecutive sections both use, traversed in
        opposite directions, with the junctions at their ends that both pass."""
        users: dict[int, dict[int, set[int]]] = {}
        for u in self.trains:
            for e in u.elements:
                users.setdefault(e.section, {}).setdefault(u.index, set()).add(e.direction)
        self._runs, self._runs_at = {}, {}
        for t in self.trains:
            self._runs[t.index], self._runs_at[t.index] = self._runs_of(t, users)

    def _runs_of(
        self, t: TrainState, users: dict[int, dict[int, set[int]]]
    ) -> tuple[list[tuple[int, frozenset[int]]], dict[int, list[int]]]:
        """One train's runs (other train, sections) and, per section, the runs through it."""
        runs: list[tuple[int, frozenset[int]]] = []
        at: dict[int, list[int]] = {}
        open_run: dict[int, list[int]] = {}  # other train -> sections of its run so far
        tail: dict[int, list[int]] = {}  # junctions after the run's last plain section
        lead: dict[int, list[int]] = {}  # junctions just before, both pass them

        def close(u: int) -> None:
            secs = open_run.pop(u) + tail.pop(u, [])
            rid = len(runs)
            runs.append((u, frozenset(secs)))
            for s in secs:
                at.setdefault(s, []).append(rid)

        for e in t.elements:
            us = users.get(e.section, {})
            if self.sections[e.section].kind == "junction":
                for u in list(open_run):
                    if u in us:
                        tail.setdefault(u, []).append(e.section)
                    else:
                        close(u)
                for u in us:
                    if u != t.index and u not in open_run:
                        lead.setdefault(u, []).append(e.section)
                continue
            opp = {u for u, ds in us.items() if u != t.index and (1 - e.direction) in ds}
            for u in list(open_run):
                if u not in opp:
                    close(u)
            for u in opp:
                if u in open_run:
                    open_run[u] += tail.pop(u, []) + [e.section]
                else:
                    open_run[u] = lead.get(u, []) + [e.section]
            lead = {}
        for u in list(open_run):
            close(u)
        return runs, at

    def _opposed(self, t: TrainState, section: int) -> set[int]:
        """Trains in the world whose path runs the other way over a stretch of ``t``'s path
        through ``section``, holding part of it while ``t`` holds none of it: ``t`` must not
        enter, or the two meet head-on where neither can pass (§4.9)."""
        if not self.avoid_deadlocks:
            return set()
        if self._runs is None:
            self._build_runs()
        assert self._runs is not None
        out: set[int] = set()
        runs = self._runs[t.index]
        for rid in self._runs_at[t.index].get(section, ()):
            u, secs = runs[rid]
            if u in out or not self.trains[u].on_track or self.trains[u].done:
                continue
            theirs = mine = False
            for s in secs:
                sec = self.sections[s]
                if sec.reserved == u or u in sec.occupants:
                    theirs = True
                if sec.reserved == t.index or t.index in sec.occupants:
                    mine = True
                    break
            if theirs and not mine:
                out.add(u)
        return out

    def _elements_between(self, t: TrainState, a: float, b: float) -> list[Element]:
        i = bisect.bisect_left(t.e_s1, a)
        out = []
        while i < len(t.elements) and t.elements[i].s0 <= b + 1e-6:
            out.append(t.elements[i])
            i += 1
        return out

    def set_switch(self, junction: int, route: int) -> None:
        """Set a switch from outside (a scenario event): walks follow it from now on."""
        self._set_switch(junction, route, quiet=True)

    def _set_switch(self, junction: int, route: int, quiet: bool = False) -> None:
        if self.switches.get(junction, 0) != route or junction not in self.switches:
            changed = self.switches.get(junction) != route
            self.switches[junction] = route
            self._walks.clear()
            self._switch_epoch += 1
            if changed and not quiet and self.switch_setter is not None:
                self.switch_setter(junction, route)

    # -- states (§4.2) ---------------------------------------------------------------------------
    def _section_state(self, sec: Section, train: int, direction: int, route: int = -1) -> int:
        state = RESERVED if sec.reserved == train else RESERVABLE
        if sec.reserved >= 0 and sec.reserved != train:
            state = RESERVED_OTHER
        for other, odir in sec.occupants.items():
            if other == train:
                continue
            ot = self.trains[other]
            if sec.kind == "junction" and route >= 0 and self.switches.get(sec.node, 0) != route:
                return BLOCKED
            if abs(ot.speed) <= STANDING or odir == direction:
                state = max(state, OCC_SAME)
            else:
                state = max(state, OCC_OPPOSITE)
        return state

    def _signal_route(self, sig: int, t: TrainState) -> list[Element]:
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
        elems = self._signal_route(sig, t)
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
        if state <= RESERVABLE and self.avoid_deadlocks:
            opp: set[int] = set()
            for e in elems:
                if self.sections[e.section].reserved != t.index:
                    opp |= self._opposed(t, e.section)
            if opp:
                t.opposed = opp
                state = FORCED_WAIT
        if state <= RESERVABLE:
            for e in elems:
                sec = self.sections[e.section]
                self._reserve(sec, t.index)
                if e.route >= 0:
                    self._set_switch(sec.node, e.route)
            self.block[sig] = BLOCK_CLEAR
            nxt = self.next_normal[sig]
            if req > 0 and nxt >= 0:
                self._request(nxt, t, req, True)
        else:
            self.block[sig] = BLOCK_OCCUPIED if state == OCC_SAME else BLOCK_JN_OBSTRUCTED

    def _reserve(self, sec: Section, train: int) -> None:
        """Reserve ``sec`` for ``train`` (-1: release it); a change is noted for the free blocks."""
        if sec.reserved != train:
            _setslot(sec, "reserved", train)
            self._touched.add(sec.index)

    def _set_occupants(self, k: int) -> None:
        """Section ``k``'s occupants from its holders, in train order (as if filled afresh)."""
        hs = self._holders.get(k)
        trains = self.trains
        _setslot(self.sections[k], "occupants", {x: trains[x].occ[k] for x in sorted(hs)} if hs else {})
        self._touched.add(k)

    def _free_block(self, sig: int) -> None:
        """Block state of a signal no train has claimed: its default route (§4.2)."""
        sec = self.sig_section[sig]
        if sec < 0:
            self.block[sig] = BLOCK_JN_OBSTRUCTED
            return
        # (docs/signals.md §4.4) The walk's sections and the signal ending it stay the same until a switch is
        # thrown: only the occupants and reservations are read every cycle.
        self._free_caches_current()
        fw = self._free_walks.get(sig)
        if fw is None:
            walk = self.walk_from(sec, self.objects[sig].tc_direction)
            nxt = -1
            for s_id, sd in walk:
                s = self.sections[s_id]
                if s.kind == "normal" and s.end_signal[sd] >= 0:
                    nxt = s.end_signal[sd]
            fw = self._free_walks[sig] = ([(self.sections[s_id], sd) for s_id, sd in walk], nxt)
            for s_id, _sd in walk:
                self._walk_sigs.setdefault(s_id, []).append(sig)
        secs, self.next_normal[sig] = fw
        if not secs:
            self.block[sig] = BLOCK_JN_OBSTRUCTED
            self._free_result[sig] = (BLOCK_JN_OBSTRUCTED, fw[1])
            return
        worst = BLOCK_CLEAR
        for s, sd in secs:
            if s.reserved >= 0:
                worst = BLOCK_JN_OBSTRUCTED  # the worst there is
                break
            if s.occupants:
                moving_opp = any(
                    abs(self.trains[x].speed) > STANDING and od != sd for x, od in s.occupants.items()
                )
                if moving_opp:
                    worst = BLOCK_JN_OBSTRUCTED
                    break
                worst = BLOCK_OCCUPIED
        self.block[sig] = worst
        self._free_result[sig] = (worst, fw[1])

    # -- signal look-ups for the scripts (§2.6, §2.7) -------------------------------------------
    def sig_lr(self, sig: int, fn: int) -> int:
        best = -1
        for h in self.heads_of[sig]:
            if h.head.function_index == fn and h.state > best:
                best = h.state
        return best

    def sig_mr(self, sig: int, fn: int) -> int:
        worst = 99
        for h in self.heads_of[sig]:
            if h.head.function_index == fn and h.state < worst:
                worst = h.state
        return -1 if worst == 99 else worst

    def next_signal(self, sig: int, fn: int) -> int:
        """The next signal with a head of function ``fn`` (§2.7, simplified): along the
        enabled train's route, else along the switches as set."""
        t_idx = self.enabled_train[sig]
        if fn == 0:
            return self.next_normal[sig]
        o = self.objects[sig]
        if t_idx >= 0:
            t = self.trains[t_idx]
            lst = self._all_signals(t)
            pos = next((i for i, (_s, x) in enumerate(lst) if x == sig), -1)
            if pos >= 0:
                for _s, x in lst[pos + 1 :]:
                    if any(h.head.function_index == fn for h in self.heads_of[x]):
                        return x
                    if o.is_normal and self.objects[x].is_normal:
                        return -1
                return -1
        sec = self.sig_section[sig]
        if sec < 0:
            return -1
        for s_id, sd in self.walk_from(sec, o.tc_direction):
            s = self.sections[s_id]
            for x in self._signals_in(s_id, sd):
                if any(h.head.function_index == fn for h in self.heads_of[x]):
                    return x
                if o.is_normal and self.objects[x].is_normal:
                    return -1
            del s
        return -1

    def _signals_in(self, sec: int, d: int) -> list[int]:
        s = self.sections[sec]
        cache = self.__dict__.setdefault("_sig_in", {})
        key = (sec, d)
        if key not in cache:
            found = [
                (o.offset, i)
                for i, o in enumerate(self.objects)
                if o.node == s.node and o.tc_direction == d and s.start - 1e-6 <= o.offset <= s.end + 1e-6
            ]
            found.sort(reverse=(d == 0))
            cache[key] = [i for _o, i in found]
        return cache[key]

    def _all_signals(self, t: TrainState) -> list[tuple[float, int]]:
        cache = self.__dict__.setdefault("_all_sig", {})
        if t.index not in cache:
            out = []
            for e in t.elements:
                for x in self._signals_in(e.section, e.direction):
                    o = self.objects[x]
                    s = (
                        e.s0 + (o.offset - self.sections[e.section].start)
                        if e.direction == 1
                        else e.s0 + (self.sections[e.section].end - o.offset)
                    )
                    out.append((s, x))
            cache[t.index] = sorted(set(out))
        return cache[t.index]

    def dist_multi(self, sig: int, fn1: int, fn2: int, *, use_route_set: bool) -> int:
        result = CLEAR_2
        found = False
        cur = sig
        for _ in range(32):
            cur = self.next_signal(cur, fn1)
            if cur < 0:
                break
            heads = [
                h
                for h in self.heads_of[cur]
                if h.head.function_index == fn1 and (not use_route_set or self.route_set(cur, h.head))
            ]
            if heads:
                found = True
                result = min(
                    result, min(h.state for h in heads) if use_route_set else max(h.state for h in heads)
                )
            if any(h.head.function_index == fn2 for h in self.heads_of[cur]):
                break
        return result if found else STOP

    def route_set(self, sig: int, head: Head) -> int:
        if head.junction is None:
            return 1
        main = head.junction[2]
        t_idx = self.enabled_train[sig]
        if t_idx >= 0:
            elems = self.route_of[sig] or []
            if any(self.sections[e.section].node == main for e in elems):
                return 1
        sec = self.sig_section[sig]
        if sec < 0:
            sec = next((i for i, s in enumerate(self.sections) if s.node == head.node), -1)
            if sec < 0:
                return 0
        for s_id, _d in self.walk_from(sec, 1 - head.direction, limit=MAX_WALK):
            if self.sections[s_id].node == main:
                return 1
        return 0

    # -- the update (§4.5) ------------------------------------------------------------------------
    def update(self, time: float, fronts: list[float], speeds: list[float]) -> None:
        """One signalling cycle: occupancy, passed signals, requests, scripts, train targets."""
        self.time = time
        sections, holders, touched = self.sections, self._holders, self._touched
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
                n = len(tel)
                occ = {}
                elems: list[tuple[Element, float, float]] = []
                i = bisect.bisect_left(t.e_s1, rear - look)
                lim = front + 1e-6
                while i < n:
                    e = tel[i]
                    if e.s0 > lim:
                        break
                    sec = sections[e.section]
                    tail = self._clear(sec.node) if look and sec.kind == "junction" else 0.0
                    if e.s1 + tail >= rear - 1e-6:
                        occ[e.section] = e.direction
                        elems.append((e, sec.start, sec.end))
                    i += 1
                t.occ_elems, t.occ_span = elems, (rear, front)
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
                touched.update(occ)
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
                if self.enabled_train[sig] != t.index or self.sig_lr(sig, 0) <= STOP:
                    self.events.append(
                        Spad(
                            time=time,
                            train=t.name,
                            signal=sig,
                            speed=round(t.speed, 3),
                            distance=round(s_sig, 3),
                        )
                    )
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
                and not t.holding
                and (self.ahead is None or t.signals[t.next_signal][0] - t.front <= self.ahead)
                and (self.ahead is None or t.up_to_signal)
            ):
                sig = t.signals[t.next_signal][1]
                self._take_over(sig, t)
                if self.enabled_train[sig] in (-1, t.index):
                    self._request(sig, t, 0, False)
        self.update_blocks()
        self.run_scripts()
        for t in self.trains:
            if t.on_track:
                self._targets(t)
        self._deadlocks()

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
        occupants and whether these move): it is worked out again only when one of them
        changed since the last update (or a switch was thrown), else it is the one worked
        out last. Not ``incremental``: every free block is worked out afresh."""
        self._free_caches_current()
        touched = self._touched
        walk_sigs = self._walk_sigs
        # (sections written from here on stay in touched for the next update)
        affected: set[int] = set()
        if self.incremental:
            for sec in touched:
                affected.update(walk_sigs.get(sec, ()))
        else:
            affected.update(range(len(self.objects)))
        touched.clear()
        result = self._free_result
        for k in range(len(self.objects)):
            if self.enabled_train[k] < 0:
                r = result.get(k)
                if r is None or k in affected:
                    self._free_block(k)
                else:
                    self.block[k], self.next_normal[k] = r
            else:
                t = self.trains[self.enabled_train[k]]
                if self.block[k] != BLOCK_CLEAR:
                    self._request(k, t, self.req[k] if self.req[k] > 0 else 0, False)
                    if self._free_caches_current():  # it threw a switch
                        walk_sigs = self._walk_sigs
                    for sec in touched:  # reserved just now: later signals see it
                        affected.update(walk_sigs.get(sec, ()))

    def _free_caches_current(self) -> bool:
        """Drop the free signals' walks and blocks when a switch was thrown since they
        were worked out; True if it did."""
        if self._free_epoch == self._switch_epoch:
            return False
        self._free_walks.clear()
        self._free_result.clear()
        self._walk_sigs.clear()
        self._free_epoch = self._switch_epoch
        return True

    def run_scripts(self, *, force_enabled: bool = False) -> None:
        """One pass of every head's script, NORMAL heads first (§4.5). ``force_enabled``
        makes every signal read ENABLED = 1 (for testing the scripts alone).

        The scripts are pure functions of what this key holds (docs/signals.md §4.5:
        timers and call-on read 0): when a pass changed no head and no lvar, another pass
        over the same inputs gives the same result, so it is skipped until one changes."""
        key = (
            force_enabled,
            self._switch_epoch,
            list(self.block),
            list(self.enabled_train),
            list(self.next_normal),
            list(self.route_of),
            [(h.state, h.draw_state) for h in self.order],
        )
        if key == self._scripts_at_rest:
            return
        self.script_passes += 1
        self._lvar_changed = False
        changed = False
        for h in self.order:
            if h.type is None:
                continue
            h.enabled = 1 if force_enabled else int(self.enabled_train[h.sig] >= 0)
            sc = h.head.script
            before = (h.state, h.draw_state)
            if sc is not None:
                h.state, h.draw_state = sc.function(h)
            else:
                h.state = (
                    h.type.least_restrictive()
                    if self.block[h.sig] == BLOCK_CLEAR
                    else h.type.most_restrictive()
                )
                h.draw_state = h.type.def_draw_state(h.state)
            if not changed and (h.state, h.draw_state) != before:
                changed = True
        self._scripts_at_rest = None if changed or self._lvar_changed else key

    # -- what trains may do (§4.7) ---------------------------------------------------------------
    def aspect(self, sig: int) -> int:
        """The aspect a train reads: the least restrictive of the NORMAL heads."""
        a = self.sig_lr(sig, 0)
        return STOP if a < 0 else a

    def _authority(self, t: TrainState) -> float | None:
        """Auto Node (§4.3): the track up to the next signal is the train's if no other train
        holds it; the first stretch another train holds (reserved or occupied) ends its
        authority. Returns where the front must stop, or None."""
        tel, sections, ti, front, ahead = t.elements, self.sections, t.index, t.front, self.ahead
        upto = t.signals[t.next_signal][0] if t.next_signal < len(t.signals) else t.end_s
        bound = upto if ahead is None or upto <= front + ahead else self._horizon(t, front, upto)
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
                opp = self._opposed(t, e.section)
                if opp:
                    t.opposed = opp
                    return self._give_back(t, held, e.s0 - STOP_GAP)
            if sec.reserved < 0:
                self._reserve(sec, ti)
                if e.route >= 0:
                    self._set_switch(sec.node, e.route)
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

    def _targets(self, t: TrainState) -> None:
        t.stopped_by = set()
        t.stop_s = self._authority(t)
        t.up_to_signal = t.stop_s is None
        t.creep_at = None
        t.limits = []
        prev_s = None
        for j in range(t.next_signal, len(t.signals)):
            s, sig = t.signals[j]
            a = self.aspect(sig)
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
            if a in (STOP_AND_PROCEED, RESTRICTING):
                t.creep_at = s if t.creep_at is None else t.creep_at
            head_speed = max(
                (h.type.speed(h.state) for h in self._normal_typed[sig] if h.type is not None), default=-1.0
            )
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
            h = self.heads[hid]
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
        who = self._blockers(t)[0] | t.opposed | t.stopped_by
        return {self.trains[k].name for k in who if k != train}

    def targets(self, train: int) -> tuple[float | None, float | None, list[tuple[float, float, float]]]:
        """(stop before this line distance or None, creep at this line distance or None,
        [(from s, to s, limit m/s)]) for a train, as of the last update."""
        t = self.trains[train]
        return t.stop_s, t.creep_at, t.limits

    # -- deadlocks (§4.8) -------------------------------------------------------------------------
    def _blockers(self, t: TrainState) -> tuple[set[int], list[int]]:
        if t.next_signal >= len(t.signals):
            return set(), []
        sig = t.signals[t.next_signal][1]
        elems = self._signal_route(sig, t) if self.enabled_train[sig] == t.index else []
        others: set[int] = set()
        secs: list[int] = []
        if self.enabled_train[sig] not in (-1, t.index):
            others.add(self.enabled_train[sig])
        others |= t.opposed | t.stopped_by
        for e in elems:
            sec = self.sections[e.section]
            who = set(sec.occupants) - {t.index}
            if sec.reserved >= 0 and sec.reserved != t.index:
                who.add(sec.reserved)
            if who:
                others |= who
                secs.append(e.section)
        return others, secs

    def _deadlocks(self) -> None:
        waiting = {
            t.index: t
            for t in self.trains
            if t.waiting_since is not None
            and not t.deadlocked
            and self.time - t.waiting_since >= self.deadlock_after
        }
        if len(waiting) < 2:
            return
        graph = {k: self._blockers(t) for k, t in waiting.items()}
        for start in graph:
            path = [start]
            seen = {start}
            cur = start
            while True:
                nxt = [o for o in graph.get(cur, (set(), []))[0] if o in graph]
                if not nxt:
                    break
                cur = nxt[0]
                if cur in seen:
                    cycle = path[path.index(cur) :]
                    self.events.append(
                        Deadlock(
                            time=self.time,
                            trains=tuple(self.trains[k].name for k in cycle),
                            sections=tuple(sorted({s for k in cycle for s in graph[k][1]})),
                            waiting_since=min(self.trains[k].waiting_since or self.time for k in cycle),
                        )
                    )
                    for k in cycle:
                        self.trains[k].deadlocked = True
                    return
                seen.add(cur)
                path.append(cur)


__all__ = ["CREEP", "STOP_GAP", "Element", "HeadRuntime", "Interlocking", "Section", "TrainState"]
