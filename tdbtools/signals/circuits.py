"""Track circuits: the route's track cut into sections at its NORMAL signals, the
switches as set, walks along them, and which sections changed since the last block
update (docs/signals.md §4.1).

Open Rails keeps the same concept in ``TrackCircuitSection`` (Simulation/Signalling);
here the sections are plain records and :class:`TrackCircuits` owns every write to
their reservation and occupants, so that a change is always noticed: it bumps
:attr:`TrackCircuits.version` and lists the section in :attr:`TrackCircuits.touched`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

from ..formats.route import Route
from ..formats.tdb import JunctionNode, VectorNode
from .objects import SignalObject

# Internal section states, ordered: a higher value is worse (§4.2).
RESERVED, RESERVABLE, OCC_SAME, RESERVED_OTHER, FORCED_WAIT, OCC_OPPOSITE, OPEN, BLOCKED = range(8)
BLOCK_CLEAR, BLOCK_OCCUPIED, BLOCK_JN_OBSTRUCTED = 0, 1, 2
#: Longest default-route walk (sections) for signals no train has claimed.
MAX_WALK = 64


@dataclass(slots=True)
class Section:
    """One track circuit section. Written only through :class:`TrackCircuits` (or the
    interlocking's :meth:`~tdbtools.signals.runtime.Interlocking.reserve_section` /
    :meth:`~tdbtools.signals.runtime.Interlocking.set_occupants`)."""

    index: int
    node: int
    start: float  # node offsets (0, 0 for a junction)
    end: float
    kind: str  # "normal" | "junction"
    end_signal: list[int] = field(default_factory=lambda: [-1, -1])  # per TC direction
    reserved: int = -1  # train index
    occupants: dict[int, int] = field(default_factory=dict)  # train -> direction


@dataclass(slots=True)
class Element:
    """One section of a train's route: line distances s0..s1, walked in ``direction``."""

    section: int
    direction: int
    s0: float
    s1: float
    route: int = -1  # junctions: the route taken


class TrackCircuits:
    """The sections of one interlocking, its switches and its change tracking."""

    def __init__(
        self,
        route: Route,
        objects: list[SignalObject],
        switches: dict[int, int],
        switch_setter: Callable[[int, int], None] | None,
    ) -> None:
        self.route = route
        self.objects = objects
        self.nodes = route.tdb.nodes
        self.switches = switches
        self.switch_setter = switch_setter
        self.walks: dict[tuple[int, int, int, bool], list[tuple[int, int]]] = {}
        #: Bumped when a switch is thrown (walks and free blocks depend on the switches).
        self.switch_epoch = 0
        #: The junctions set, in order, one entry per bump of switch_epoch: each reader
        #: keeps its own place in it (what depended on those switches is worked out again).
        self.thrown: list[int] = []
        #: Bumped by every change of a section's reservation or occupants.
        self.version = 0
        #: Sections whose reservation or occupants changed since the last block update.
        self.touched: set[int] = set()
        self.sections: list[Section] = []
        self.node_cuts: dict[int, list[float]] = {}
        self.node_secs: dict[int, list[int]] = {}
        self.sig_section = [-1] * len(objects)
        self._build()
        self.sec_pos = [0] * len(self.sections)
        for ids in self.node_secs.values():
            for i, k in enumerate(ids):
                self.sec_pos[k] = i

    def _build(self) -> None:
        cuts: dict[int, set[float]] = {}
        for o in self.objects:
            if o.is_normal:
                cuts.setdefault(o.node, set()).add(o.offset)
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

    # -- writes (every one noticed) ------------------------------------------------------------
    def reserve(self, sec: Section, train: int) -> None:
        """Reserve ``sec`` for ``train`` (-1: release it); a change is noted."""
        if sec.reserved != train:
            sec.reserved = train
            self.touched.add(sec.index)
            self.version += 1

    def put_occupants(self, k: int, occupants: dict[int, int]) -> None:
        """Section ``k``'s occupants (train -> direction), noted as changed."""
        self.sections[k].occupants = occupants
        self.touched.add(k)
        self.version += 1

    def note_moved(self, secs: dict[int, int]) -> None:
        """What a free block reads of these sections' occupants (moving or not) changed."""
        self.touched.update(secs)
        self.version += 1

    # -- switches and walks --------------------------------------------------------------------
    def set_switch(self, junction: int, route: int, quiet: bool = False) -> None:
        if self.switches.get(junction, 0) != route or junction not in self.switches:
            changed = self.switches.get(junction) != route
            self.switches[junction] = route
            self.walks.clear()
            self.switch_epoch += 1
            self.thrown.append(junction)
            if changed and not quiet and self.switch_setter is not None:
                self.switch_setter(junction, route)

    def walk_from(
        self, sec: int, direction: int, limit: int = MAX_WALK, *, past_signals: bool = False
    ) -> list[tuple[int, int]]:
        """Sections after ``sec``, following the switches, up to and including the one that
        ends at a NORMAL signal in the direction (or the end of the track). ``past_signals``:
        on past NORMAL signals up to the end of the track, the first section met twice (a
        loop) or ``limit`` sections. Cached until a switch is thrown."""
        key = (sec, direction, limit, past_signals)
        hit = self.walks.get(key)
        if hit is None:
            hit = self.walks[key] = self.walk(sec, direction, limit, past_signals)
        return hit

    def walk(self, sec: int, direction: int, limit: int, past_signals: bool = False) -> list[tuple[int, int]]:
        """:meth:`walk_from` without the cache."""
        out: list[tuple[int, int]] = []
        seen = {sec}
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
            if past_signals:
                if cur in seen:
                    break
                seen.add(cur)
            out.append((cur, d))
            if (
                not past_signals
                and self.sections[cur].kind == "normal"
                and self.sections[cur].end_signal[d] >= 0
            ):
                break
        return out
