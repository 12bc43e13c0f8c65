"""A track-database traveller (docs/formats.md §12): a position on the track network that is
placed from a world point and walks along the track, like Open Rails' Traveller.cs.

State (docs/formats.md §12.1): a track node, a section of it, an offset in that section and a
direction (:data:`FORWARD` = 1, walking the node's sections first → last, or
:data:`BACKWARD` = 0). Junction and end nodes have no sections and zero length.

Conventions and differences from Open Rails (all deliberate):

* **Metres everywhere.** :attr:`Traveller.offset` is metres along the node from its
  start, whatever the direction; inside a section the traveller keeps metres of arc
  too (Open Rails keeps radians on curves). :attr:`Traveller.track_node_offset` is
  Open Rails' TrackNodeOffset: metres down the node *in the direction of travel*.
* **Placing a point** (:meth:`Traveller.at`, :meth:`Traveller.locate_many`) follows
  the modern rule: per vector node the first section in node order that accepts the
  point (|lateral| ≤ 2.5 m, −0.5 ≤ lon ≤ length + 0.5), then the candidate with the
  smallest |lateral| (ties: lowest node index). The projection on curves is the exact
  one of :func:`~tdbtools.track.geometry.locate_in_section`, not Open Rails' asin
  (which is only exact on the centre line). As in Open Rails a point up to 0.5 m
  before the start of the accepting section leaves a small negative offset. Open
  Rails clips ``lon`` at that section's far end, which puts a point in the first
  0.5 m of the *next* section up to 0.5 m short; here the offset is exact: the
  point goes to the later section of the same node that holds it (or, if none does,
  the excess is carried on along the node up to its end). The node is chosen by
  the lateral of its first accepting section, as in Open Rails; the lateral
  reported is measured in the section that holds the point.
  Candidates come from a spatial index (:mod:`tdbtools.track.spatial`), not a scan
  of every section.
* **Zero-length "curves"** (radius ≈ 0 or angle 0, e.g. DK24's route-local 50004)
  are straights of length 0 along their heading (see
  :func:`~tdbtools.track.spatial.clean_geometry`).
* **Sections whose id is not in tsection.dat** have length 0 and are never
  candidates; a walk passes over them (Open Rails stops there).
* **End nodes have zero length** (docs/formats.md §12.4 table): a traveller that
  walks into an end node stops there and :meth:`Traveller.move` returns the distance
  it could not travel. (Open Rails' modern code lets a traveller run on "infinitely"
  past an end node, extrapolating the last section.)
* **Position on a junction or end node**: the end of the neighbouring vector node
  through pin 0 (the first valid pin if pin 0 is broken), as in Open Rails but in
  metres on curved sections too. The heading there is the heading of the direction
  of travel (Open Rails adds π only when the direction is backward, which points
  the wrong way at junctions whose trunk node starts at the junction).
* Links ≤ 0 or ≥ the node count (DK24 has 16 junctions whose trunk pin links to
  node 0) end the track: the traveller stops, it never raises IndexError.

Topology (docs/formats.md §6.4, §12.4): leaving a vector node backward uses TrPins[0],
forward TrPins[1]; a junction entered from a branch (direction 0) leaves by the trunk
TrPins[0], entered from the trunk (direction 1) by TrPins[1 + selected route]; an end
node leaves by TrPins[0] with direction 0 and has no exit with direction 1. The new
direction is the pin's direction (> 0 = forward); a vector node entered forward
starts at its first section, offset 0, entered backward at the end of its last.

Switch positions live in a :class:`Switches` object that travellers share
(``Traveller(..., switches=s)``; :meth:`Traveller.copy` shares its switches).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..formats.route import Route
from .bulk_locate import _locate
from .geometry import TILE_SIZE, WorldPoint, locate_in_section
from .items import ItemPosition, PassedItem, _item_table, _ItemTable, item_positions
from .network import (
    _END,
    _EPS,
    _JUNCTION,
    _NONE,
    _VECTOR,
    BACKWARD,
    FORWARD,
    INIT_ERROR_MARGIN,
    MAX_CENTERLINE_OFFSET,
    MIN_MOVE,
    Pose,
    TravellerError,
    _Net,
    _net,
    _normalise,
    _wrap,
)
from .spatial import nearest_track
from .switches import Switches

__all__ = [
    "BACKWARD",
    "FORWARD",
    "INIT_ERROR_MARGIN",
    "MAX_CENTERLINE_OFFSET",
    "MIN_MOVE",
    "ItemPosition",
    "Located",
    "PassedItem",
    "Pose",
    "Switches",
    "Traveller",
    "TravellerError",
    "item_positions",
]

# -- locating points -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Located:
    """The result of :meth:`Traveller.locate_many` (arrays, one entry per point).

    Where ``found`` is False: node 0, section and row −1, offsets and lateral NaN.
    ``section`` is the section's position in its node, ``row`` its row in
    ``route.tdb.sections``; ``offset`` metres from the node start, ``section_offset``
    metres from the section start (may be down to −margin), ``lateral`` metres to the
    right of the centre line in that section (+ = right in the node's forward
    direction). The node was chosen by the lateral of its first accepting section
    (Open Rails' rule), which differs from ``lateral`` by at most a join's kink.
    """

    route: Route
    found: np.ndarray
    node: np.ndarray
    section: np.ndarray
    row: np.ndarray
    offset: np.ndarray
    section_offset: np.ndarray
    lateral: np.ndarray

    def __len__(self) -> int:
        return len(self.found)

    @property
    def found_fraction(self) -> float:
        return float(self.found.mean()) if len(self.found) else 0.0

    def traveller(self, i: int, *, switches: Switches | None = None) -> Traveller:
        """A forward traveller at point ``i`` (which must have been found)."""
        if not self.found[i]:
            raise TravellerError(f"point {i} is not on the track")
        return Traveller._at_row(
            self.route, int(self.row[i]), float(self.section_offset[i]), FORWARD, switches
        )


# -- the traveller ---------------------------------------------------------------------


class Traveller:
    """A position and direction on the track network of a route (docs/formats.md §12).

    ``Traveller(route, node_index, offset=0.0, direction=FORWARD, switches=None)``
    places a traveller ``offset`` metres from the start of a vector node (or on a
    junction/end node, offset 0). :meth:`at` places one from a world point. Without
    ``switches`` a traveller gets its own :class:`Switches` (default positions);
    copies share their original's. With ``align_trailing=True`` a traveller that
    enters a junction from a branch runs that switch through (§12.7).
    """

    __slots__ = (
        "_net",
        "_switches",
        "_node",
        "_kind",
        "_sec",
        "_row",
        "_soff",
        "_dir",
        "_entry_pin",
        "_align",
    )

    def __init__(
        self,
        route: Route,
        node_index: int,
        offset: float = 0.0,
        direction: int = FORWARD,
        *,
        switches: Switches | None = None,
        align_trailing: bool = False,
    ) -> None:
        net = _net(route)
        self._setup(net, switches, direction, align_trailing)
        i = int(node_index)
        if not net.valid_link(i):
            raise TravellerError(f"no track node {node_index!r} (the route has nodes 1..{net.n_nodes - 1})")
        off = float(offset)
        if not math.isfinite(off):
            raise TravellerError(f"offset must be a finite number of metres, got {offset!r}")
        self._node = i
        self._kind = net.kind[i]
        if self._kind == _VECTOR and net.count[i]:
            cum = net.cum[i]
            total = cum[-1]
            if not -INIT_ERROR_MARGIN <= off <= total + INIT_ERROR_MARGIN:
                raise TravellerError(f"offset {off} m is outside node {i} (length {total:.3f} m)")
            k = min(max(bisect_right(cum, off) - 1, 0), net.count[i] - 1)
            self._sec = k
            self._row = net.first[i] + k
            self._soff = off - cum[k]
        else:
            self._sec = -1
            self._row = -1
            self._soff = 0.0

    def _setup(self, net: _Net, switches: Switches | None, direction, align: bool) -> None:
        if direction not in (0, 1):
            raise TravellerError(f"direction must be 1 (forward) or 0 (backward), got {direction!r}")
        if switches is not None and switches._net is not net:
            raise TravellerError("the switches belong to another route")
        self._net = net
        self._switches = switches if switches is not None else Switches(net.route)
        self._dir = int(direction)
        self._entry_pin = -1
        self._align = bool(align)

    @classmethod
    def _at_row(
        cls,
        route: Route,
        row: int,
        section_offset: float,
        direction: int,
        switches: Switches | None,
        align_trailing: bool = False,
    ) -> Traveller:
        net = _net(route)
        t = cls.__new__(cls)
        t._setup(net, switches, direction, align_trailing)
        node = int(net.geom.node[row])
        t._node = node
        t._kind = net.kind[node]
        t._sec = row - net.first[node]
        t._row = row
        t._soff = float(section_offset)
        return t

    # -- placing from world points -------------------------------------------------
    @classmethod
    def at(
        cls,
        route: Route,
        tile_x: int,
        tile_z: int,
        x: float,
        z: float,
        *,
        max_lateral: float = MAX_CENTERLINE_OFFSET,
        margin: float = INIT_ERROR_MARGIN,
        switches: Switches | None = None,
        align_trailing: bool = False,
    ) -> Traveller:
        """A forward traveller at the track point nearest to the world point
        (tile_x, tile_z, x, z) by the modern Open Rails rule (module docstring).
        Height is ignored. Raises :class:`TravellerError` when no section accepts
        the point, giving the distance to the nearest track."""
        loc = Located(route, *_locate(route, [tile_x], [tile_z], [x], [z], max_lateral, margin))
        if not loc.found[0]:
            net = _net(route)
            dist, row, _ = nearest_track(route, int(tile_x), int(tile_z), float(x), float(z), geom=net.geom)
            # (.3f of 1e308 is 300 digits: an echoed value must stay short)
            where = f"tile ({tile_x}, {tile_z}) x={_short(float(x))} z={_short(float(z))}"
            if row[0] < 0:
                raise TravellerError(f"no track near {where}: the route has no track sections")
            raise TravellerError(
                f"no track within {max_lateral} m of {where}: the nearest track centre line "
                f"is {_short(float(dist[0]), 2)} m away (node {int(net.geom.node[row[0]])})"
            )
        return cls._at_row(
            route, int(loc.row[0]), float(loc.section_offset[0]), FORWARD, switches, align_trailing
        )

    @staticmethod
    def locate_many(
        route: Route,
        tile_x,
        tile_z,
        x,
        z,
        *,
        max_lateral: float = MAX_CENTERLINE_OFFSET,
        margin: float = INIT_ERROR_MARGIN,
    ) -> Located:
        """:meth:`at` for many points at once (arrays broadcast together), vectorised.
        Points off the track are reported in :attr:`Located.found` (no error)."""
        return Located(route, *_locate(route, tile_x, tile_z, x, z, max_lateral, margin))

    # -- state ---------------------------------------------------------------------
    @property
    def route(self) -> Route:
        return self._net.route

    @property
    def switches(self) -> Switches:
        return self._switches

    @property
    def node_index(self) -> int:
        return self._node

    @property
    def node(self):
        """The current TrackNode (VectorNode, JunctionNode or EndNode)."""
        return self._net.nodes[self._node]

    @property
    def section_index(self) -> int:
        """Position of the current section in its node (−1 on junctions/end nodes)."""
        return self._sec

    @property
    def section_row(self) -> int:
        """Row of the current section in ``route.tdb.sections`` (−1 if none)."""
        return self._row

    @property
    def section_offset(self) -> float:
        """Metres from the start of the current section (0 if none)."""
        return self._soff

    @property
    def direction(self) -> int:
        """1 (:data:`FORWARD`) or 0 (:data:`BACKWARD`)."""
        return self._dir

    @direction.setter
    def direction(self, value: int) -> None:
        if value not in (0, 1):
            raise TravellerError(f"direction must be 1 (forward) or 0 (backward), got {value!r}")
        self._dir = int(value)

    @property
    def is_forward(self) -> bool:
        return self._dir == FORWARD

    @property
    def is_on_track(self) -> bool:
        """On a vector node (junctions and end nodes are not track)."""
        return self._kind == _VECTOR

    @property
    def is_junction(self) -> bool:
        return self._kind == _JUNCTION

    @property
    def is_end(self) -> bool:
        return self._kind == _END

    @property
    def junction_entry_pin(self) -> int:
        """Index of the pin of the current node through which the last node change
        came in (Open Rails' JunctionEntryPinIndex; −1 if none)."""
        return self._entry_pin

    @property
    def offset(self) -> float:
        """Metres from the start of the current vector node, whatever the direction
        (0 on junction and end nodes; slightly negative just after placing a point
        up to 0.5 m before the node start)."""
        if self._row < 0:
            return 0.0
        return self._net.row_start[self._row] + self._soff

    @property
    def track_node_length(self) -> float:
        """Length of the current node in metres (0 for junctions and end nodes)."""
        return self._net.node_len[self._node]

    @property
    def track_node_offset(self) -> float:
        """Metres down the current node in the direction of travel (Open Rails'
        TrackNodeOffset): :attr:`offset` forward, length − offset backward."""
        if self._row < 0:
            return 0.0
        off = self._net.row_start[self._row] + self._soff
        return off if self._dir else self._net.node_len[self._node] - off

    @property
    def state(self) -> tuple[int, int, float, int]:
        """(node_index, section_index, offset, direction)."""
        return (self._node, self._sec, self.offset, self._dir)

    def __repr__(self) -> str:
        d = "forward" if self._dir else "backward"
        kind = {_VECTOR: "", _JUNCTION: " junction", _END: " end"}.get(self._kind, "")
        return f"Traveller(node={self._node}{kind}, section={self._sec}, offset={self.offset:.3f} m, {d})"

    # -- position ------------------------------------------------------------------
    def _anchor(self) -> tuple[int, float, bool] | None:
        """(row, section offset, walking that row forward?) giving the position."""
        if self._row >= 0:
            return self._row, self._soff, self._dir == FORWARD
        net = self._net
        for k, (link, pdir) in enumerate(net.pins[self._node]):
            if net.valid_link(link) and net.kind[link] == _VECTOR and net.count[link]:
                # A traveller leaving by pin k has direction 0 here for pin 0, else 1.
                leave_dir = 0 if k == 0 else 1
                if pdir > 0:
                    row, soff = net.first[link], 0.0
                else:
                    row = net.first[link] + net.count[link] - 1
                    soff = net.length[row]
                return row, soff, (self._dir == leave_dir) == (pdir > 0)
        return None

    def pose(self) -> Pose:
        """Location, heading, pitch, grade and curvature in one go (docs/formats.md §11, §12.5)."""
        a = self._anchor()
        if a is None:
            nan = math.nan
            return Pose(0, 0, nan, nan, nan, nan, nan, nan, nan)
        row, off, fwd = a
        net = self._net
        if net.curved[row]:
            r = net.radius[row]
            s = net.sign[row]
            th = off / r
            h = math.sin(0.5 * th)
            lat = s * r * 2.0 * h * h
            f = r * math.sin(th)
            dh = s * th
        else:
            lat = 0.0
            f = off
            dh = 0.0
        sax, cax = net.sax[row], net.cax[row]
        say, cay = net.say[row], net.cay[row]
        saz, caz = net.saz[row], net.caz[row]
        g = lat * saz * sax + f * cax
        x = net.x[row] + lat * caz * cay + g * say
        y = net.y[row] + lat * saz * cax - f * sax
        z = net.z[row] - lat * caz * say + g * cay
        tx, tz, x, z = _normalise(net.tile_x[row], net.tile_z[row], x, z)
        heading = net.ay[row] + dh
        pitch = net.ax[row]
        grade = -net.tan_ax[row]
        curv = net.curv[row]
        if not fwd:
            heading += math.pi
            pitch = -pitch
            grade = -grade
            curv = -curv
        return Pose(tx, tz, x, y, z, _wrap(heading), _wrap(pitch), grade, curv)

    @property
    def location(self) -> WorldPoint:
        """World position (tile_x, tile_z, x, y, z), x and z normalised to their tile."""
        p = self.pose()
        return WorldPoint(p.tile_x, p.tile_z, p.x, p.y, p.z)

    @property
    def heading(self) -> float:
        """Heading of the direction of travel (rad from +Z towards +X, (−π, π])."""
        return self.pose().heading

    @property
    def pitch(self) -> float:
        """AX in the direction of travel (+ = descending; negated when backward)."""
        return self.pose().pitch

    @property
    def grade(self) -> float:
        """Rise per horizontal metre in the direction of travel (−tan AX forward)."""
        return self.pose().grade

    @property
    def curvature(self) -> float:
        """Signed 1/R in the direction of travel (+ = turning right, 0 on straights)."""
        return self.pose().curvature

    # -- direction and copies ------------------------------------------------------
    def reverse(self) -> Traveller:
        """Turn round in place (heading + π, pitch, grade and curvature negated,
        :attr:`track_node_offset` becomes length − offset). Returns self."""
        self._dir ^= 1
        return self

    def copy(self, reverse: bool = False) -> Traveller:
        """An independent traveller at the same place sharing the same switches."""
        t = Traveller.__new__(Traveller)
        t._net = self._net
        t._switches = self._switches
        t._node, t._kind, t._sec, t._row = self._node, self._kind, self._sec, self._row
        t._soff, t._dir, t._entry_pin, t._align = self._soff, self._dir, self._entry_pin, self._align
        if reverse:
            t._dir ^= 1
        return t

    __copy__ = copy

    # -- stepping (docs/formats.md §12.4) -----------------------------------------------------
    def next_section(self) -> bool:
        """Step to the next section of this node in the direction of travel (offset 0
        forward, the section's length backward), or else to the next node
        (:meth:`next_track_node`). False at the end of the track."""
        if self._row >= 0:
            if self._dir:
                if self._sec < self._net.count[self._node] - 1:
                    self._sec += 1
                    self._row += 1
                    self._soff = 0.0
                    return True
            elif self._sec > 0:
                self._sec -= 1
                self._row -= 1
                self._soff = self._net.length[self._row]
                return True
        return self.next_track_node()

    def next_track_node(self) -> bool:
        """Step into the next node by the pDirection table (module docstring). False,
        and nothing changes, when there is no exit pin or it links nowhere."""
        net = self._net
        node = self._node
        pins = net.pins[node]
        if self._dir:
            pin = 1
            if self._kind == _JUNCTION:
                pin += self._switches.get(node)
        else:
            pin = 0
        if pin >= len(pins):
            return False
        link, pdir = pins[pin]
        if not (0 < link < net.n_nodes) or net.kind[link] == _NONE:
            return False
        d = 1 if pdir > 0 else 0
        kind = net.kind[link]
        self._node = link
        self._kind = kind
        self._dir = d
        c = net.count[link]
        if kind == _VECTOR and c:
            if d:
                self._sec = 0
                self._row = net.first[link]
                self._soff = 0.0
            else:
                self._sec = c - 1
                self._row = net.first[link] + c - 1
                self._soff = net.length[self._row]
        else:
            self._sec = -1
            self._row = -1
            self._soff = 0.0
        entry = -1
        for i, (back, _d) in enumerate(net.pins[link]):
            if back == node:
                entry = i
        self._entry_pin = entry
        if self._align and kind == _JUNCTION and entry >= 1:
            self._switches.align_trailing(link, node, entry)
        return True

    # -- moving (docs/formats.md §12.3) -------------------------------------------------------
    def move(self, distance: float) -> float:
        """Move ``distance`` metres along the track (negative: backwards, the
        direction is kept). Returns the distance *not* travelled, with the sign of
        ``distance``: 0 unless the track ran out, except that, as in Open Rails, a
        rest below 1 mm (:data:`MIN_MOVE`) at a section end is not carried into
        the next section (it is returned: ``abs(rest) < 0.001``)."""
        d = float(distance)
        if d != d:
            d = 0.0
        if d < 0:
            self._dir ^= 1
            try:
                return -self._run(-d, None)
            finally:
                self._dir ^= 1
        return self._run(d, None)

    def move_collect(self, distance: float) -> tuple[float, list[PassedItem]]:
        """:meth:`move`, also returning the track items passed, in the order met.

        An item counts when the traveller reaches it: items exactly at the starting
        point are not counted (a previous move ended on them), items exactly where
        the move ends are. Item positions come from :func:`item_positions`.
        """
        d = float(distance)
        if d != d:
            d = 0.0
        sink: list[PassedItem] = []
        if d < 0:
            self._dir ^= 1
            try:
                rest = -self._run(-d, sink)
            finally:
                self._dir ^= 1
        else:
            rest = self._run(d, sink)
        return rest, sink

    def _flush(
        self,
        sink: list,
        table: _ItemTable | None,
        node: int,
        direction: int,
        a: float,
        b: float,
        closed: bool,
        acc: float,
    ) -> None:
        assert table is not None, "items are collected with their table"
        offs = table.offsets.get(node)
        if not offs:
            return
        pos = table.by_node[node]
        if direction:
            lo = bisect_left(offs, a - _EPS) if closed else bisect_right(offs, a + _EPS)
            hi = bisect_right(offs, b + _EPS)
            for p in pos[lo:hi]:
                sink.append(PassedItem(p.item, max(acc + p.offset - a, 0.0), node, p.offset, 1))
        else:
            lo = bisect_left(offs, b - _EPS)
            hi = bisect_right(offs, a + _EPS) if closed else bisect_left(offs, a - _EPS)
            for p in reversed(pos[lo:hi]):
                sink.append(PassedItem(p.item, max(acc + a - p.offset, 0.0), node, p.offset, 0))

    def _run(self, d: float, sink: list | None) -> float:
        net = self._net
        length = net.length
        count = net.count
        d0 = d
        stalled = 0
        limit = net.stall_limit
        table = _item_table(net.route) if sink is not None else None
        seg_node, seg_dir, seg_a, seg_closed, seg_acc = self._node, self._dir, self.offset, False, 0.0
        open_seg = sink is not None
        while True:
            row = self._row
            if row >= 0:
                if self._dir:
                    step = length[row] - self._soff
                    if d < step:
                        step = d
                    self._soff += step
                else:
                    step = self._soff
                    if d < step:
                        step = d
                    self._soff -= step
                d -= step
                if step > 0:
                    stalled = 0
            if d < MIN_MOVE:
                break
            stalled += 1
            if stalled > limit:
                break
            # The next section of this node, else the next node.
            if row >= 0:
                if self._dir:
                    if self._sec < count[self._node] - 1:
                        self._sec += 1
                        self._row = row + 1
                        self._soff = 0.0
                        continue
                elif self._sec > 0:
                    self._sec -= 1
                    self._row = row - 1
                    self._soff = length[row - 1]
                    continue
            if sink is not None:
                self._flush(sink, table, seg_node, seg_dir, seg_a, self.offset, seg_closed, seg_acc)
                open_seg = False
            if not self.next_track_node():
                break
            if sink is not None:
                seg_node, seg_dir, seg_a, seg_closed = self._node, self._dir, self.offset, True
                seg_acc = d0 - d
                open_seg = True
        if sink is not None and open_seg:
            self._flush(sink, table, seg_node, seg_dir, seg_a, self.offset, seg_closed, seg_acc)
        return d

    # -- distances along the track (docs/formats.md §12.6) ------------------------------------
    def distance_to(
        self,
        target: Traveller | Sequence[float],
        max_distance: float = math.inf,
    ) -> float | None:
        """Distance along the track, ahead in the direction of travel and through the
        switches as they are set, to ``target``; None if it cannot be reached (behind,
        on another branch, beyond an end of the track or beyond ``max_distance``).

        ``target`` is a :class:`Traveller` (its node and offset; a target on a
        junction or end node is reached when the walk enters that node) or a world
        point ``(tile_x, tile_z, x, z)``, tested section by section as Open Rails
        does: the first section ahead that accepts the point (2.5 m / 0.5 m) gives
        the distance, and the walk fails if that section has the point behind; a
        junction within √0.1 m of the point counts as reaching it.
        """
        if isinstance(target, Traveller):
            if target._net is not self._net:
                raise TravellerError("the target traveller is on another route")
            return self._distance_to_node(target._node, target.offset, max_distance)
        try:
            tx, tz, x, z = target
        except (TypeError, ValueError):
            raise TravellerError("target must be a Traveller or (tile_x, tile_z, x, z)") from None
        return self._distance_to_point(int(tx), int(tz), float(x), float(z), max_distance)

    def _distance_to_node(self, node: int, offset: float, max_distance: float) -> float | None:
        t = self.copy()
        net = self._net
        acc = 0.0
        seen: set[tuple[int, int]] = set()
        while True:
            if t._row >= 0:
                c = t.offset
                if t._node == node:
                    if t._dir and offset >= c - _EPS:
                        acc += max(offset - c, 0.0)
                        return acc if acc <= max_distance else None
                    if not t._dir and offset <= c + _EPS:
                        acc += max(c - offset, 0.0)
                        return acc if acc <= max_distance else None
                acc += max(net.node_len[t._node] - c, 0.0) if t._dir else max(c, 0.0)
            elif t._node == node:
                return acc if acc <= max_distance else None
            if acc > max_distance:
                return None
            key = (t._node, t._dir)
            if key in seen:
                return None
            seen.add(key)
            if not t.next_track_node():
                return None

    def _distance_to_point(self, tx: int, tz: int, x: float, z: float, max_distance: float) -> float | None:
        t = self.copy()
        net = self._net
        geom = net.geom
        acc = 0.0
        seen: set[tuple[int, int]] = set()
        X = tx * TILE_SIZE + x
        Z = tz * TILE_SIZE + z
        while acc < max_distance:
            if t._row >= 0:
                row = t._row
                s0 = t._soff
                length = net.length[row]
                if net.known[row]:
                    lat_a, lon_a = locate_in_section(geom, row, tx, tz, x, z)
                    lat, lon = float(lat_a), float(lon_a)
                    if (
                        abs(lat) <= MAX_CENTERLINE_OFFSET
                        and -INIT_ERROR_MARGIN <= lon <= length + INIT_ERROR_MARGIN
                    ):
                        new = min(lon, length)
                        if (new < s0 - _EPS) if t._dir else (new > s0 + _EPS):
                            return None  # the point is behind
                        acc += abs(new - s0)
                        return acc if acc <= max_distance else None
                acc += (length - s0) if t._dir else s0
            if t._row < 0 or t._sec == (net.count[t._node] - 1 if t._dir else 0):
                key = (t._node, t._dir)
                if key in seen:
                    return None
                seen.add(key)
            if not t.next_section():
                return None
            if t._kind == _JUNCTION:
                p = t.pose()
                if (p.tile_x * TILE_SIZE + p.x - X) ** 2 + (p.tile_z * TILE_SIZE + p.z - Z) ** 2 < 0.1:
                    return acc if acc <= max_distance else None
                if not t.next_section():
                    return None
            if t._kind == _END:
                return None
        return None


def _short(v: float, digits: int = 3) -> str:
    return f"{v:.{digits}f}" if abs(v) < 1e9 else f"{v:.6g}"
