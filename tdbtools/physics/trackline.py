"""A train's line of track: one 1-D run along the network, sampled once so that the
physics can look everything up with numpy (docs/physics.md §5: positions are *measures*, metres
along the line; docs/formats.md §11, §12).

A :class:`TrackLine` is built by walking a :class:`~tdbtools.track.traveller.Traveller`
section by section, so it knows exactly

* every **section piece** it crosses (section row, direction, line distances where it
  starts and ends, section offset at its start): grade and curvature are constant on a
  piece and are looked up exactly (never interpolated);
* every **node traversal** (vector node, direction, line distances, node offset at its
  start): node and offset of any line distance are exact, and so are the node
  intervals a train occupies (:meth:`TrackLine.occupancy`);
* every **junction** passed (line distance, junction node, the route the line takes
  through it, whether it is met facing — from the trunk — or trailing);
* the **speed-limit changes** (line distance, new limit in m/s).

The sample columns (``s``, ``node``, ``offset``, ``direction``, tile and world
coordinates, ``heading``, ``grade``, ``curvature``, ``speed_limit``) are taken every
``step`` metres and at every section boundary, from the same formulas the traveller
uses (:func:`~tdbtools.track.geometry.point_at` on the cleaned geometry), so they are
the traveller's pose at those points. Between samples, continuous quantities (x, y, z,
X, Z, heading) are linearly interpolated (:meth:`TrackLine.at`; ``exact=True``
evaluates the section geometry instead).

Lookups (all vectorised over arrays of line distances)
------------------------------------------------------
:meth:`~TrackLine.at` (every column; ``exact=True`` for the section geometry),
:meth:`~TrackLine.elevation`, :meth:`~TrackLine.grade_at`,
:meth:`~TrackLine.curvature_at`, :meth:`~TrackLine.heading_at`,
:meth:`~TrackLine.limit`, :meth:`~TrackLine.world_xz`, :meth:`~TrackLine.node_offset`,
:meth:`~TrackLine.location` (one :class:`WorldPoint`), :meth:`~TrackLine.occupancy`
(exact node intervals between two line distances) and :meth:`~TrackLine.locate` (node
offset → line distances).
``grade`` and ``curvature`` are the sample columns, hence the ``_at`` names of the
look-up methods.

Conventions
-----------
* ``s`` is metres along the track from the line start (the traveller's metres: arc
  length along the possibly inclined section), increasing in the direction of travel.
* ``grade`` is the traveller's: rise per horizontal metre in the direction of travel,
  ``−tan AX`` (``+tan AX`` walking a section backward). Per metre *along the track* it
  would be ``−sin AX``; the two differ by less than 1e-7 below 1 % grade. The physics
  gets the gravity force from bogie elevations instead (:mod:`.forces`).
* ``curvature`` is signed 1/R in the direction of travel (+ = turning right).
* At a section (or node) boundary a sample belongs to the piece that *ends* there,
  exactly as a traveller that moved up to the boundary reports it.
* ``heading`` is radians from +Z towards +X, wrapped into (−π, π].
* ``speed_limit`` (m/s, passenger values; :meth:`TrackLine.limits` for freight) follows
  :mod:`tdbtools.track.speedposts`: the route limit at the start; a limit post met in
  the direction it governs sets its value for the category (capped at the route
  limit), a "resume" post restores the route limit, warnings and mileposts change
  nothing; posts facing the other way are ignored (docs/running-time.md §1). A post
  exactly at the line start counts (the train stands at it).
* ``ends_at_track_end``: the walk stopped because the track ran out (an end node, a pin
  linking nowhere) within 1 mm of the far end, not because the requested distance was
  reached. ``starts_at_track_end`` is the same for the start, looking backward.

Paths with reversals
--------------------
A line is one direction of travel. A path with reversal points is split into *parts*
at its reversals: part 0 runs from the path start to the first reversal point, part k
from reversal k to the next (or the path end), starting where part k − 1 ended and
facing the other way. Every part is extended beyond its end by ``extend`` metres with
the switches as the path had set them so far. :meth:`TrackLine.path_parts` returns all
parts; :meth:`TrackLine.from_path` one of them (``part``, default 0 — the whole path
when it has no reversal); ``line.part`` / ``line.parts`` say which.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import TdbToolsError
from ..formats.pat import PathFile
from ..formats.route import Route
from ..track.geometry import TILE_SIZE, SectionGeometry, WorldPoint, normalize_tile, point_at, wrap_angle
from ..track.paths import ResolvedPath, resolve_path
from ..track.spatial import cached, track_geometry
from ..track.speedposts import CATEGORIES, SpeedPost, limit_after, speed_posts
from ..track.traveller import Switches, Traveller

__all__ = ["LineJunction", "LinePieces", "TrackLine", "TrackLineError"]

_EPS = 1e-9
#: A walk that stopped this close (m) to the requested end is "at" it.
_END_TOL = 1e-3


class TrackLineError(TdbToolsError, ValueError):
    """A track line cannot be built (path does not resolve, bad start, bad step)."""


class LineJunction(NamedTuple):
    """A junction a line passes: at line distance ``s``, junction node ``node``, taking
    route ``route`` (0 → TrPins[1], 1 → TrPins[2]). ``facing``: met from the trunk (the
    switch decides the way); otherwise trailing (met from branch ``route``)."""

    s: float
    node: int
    route: int
    facing: bool


# -- walking ----------------------------------------------------------------------------


def _section_lengths(route: Route) -> np.ndarray:
    def build() -> np.ndarray:
        g = track_geometry(route)
        ok = g.known & np.isfinite(g.length)
        return np.where(ok, g.length, 0.0)

    return cached(route, "trackline-section-length", build)


class _Walk:
    """Accumulates pieces, node segments and junctions while a traveller walks."""

    def __init__(self, route: Route, t: Traveller) -> None:
        self.route = route
        self.seclen = _section_lengths(route)
        self.t = t
        self.s = 0.0
        self.pieces: list[tuple[int, int, float, float, float]] = []  # row, dir, s0, s1, soff0
        self.segs: list[list] = []  # [node, dir, s0, s1, off0]
        self.junctions: list[LineJunction] = []
        self.hit_end = False
        if t.is_on_track:
            self._open_segment()

    def _open_segment(self) -> None:
        t = self.t
        if self.segs and self.segs[-1][3] is None:
            self.segs[-1][3] = self.s
        self.segs.append([t.node_index, t.direction, self.s, None, t.offset])

    def close(self) -> None:
        if self.segs and self.segs[-1][3] is None:
            self.segs[-1][3] = self.s

    def _cross(self) -> bool:
        """Step into the next section or node; False at the end of the track."""
        t = self.t
        node = t.node_index
        if t.is_end:
            return False
        if not t.next_section():
            return False
        if t.node_index != node or not t.is_on_track:
            if t.is_junction:
                j = t.node_index
                facing = t.direction == 1
                route = t.switches.get(j) if facing else max(t.junction_entry_pin - 1, 0)
                self.junctions.append(LineJunction(self.s, j, int(route), facing))
            elif t.is_end:
                return False
            else:
                self._open_segment()
        return True

    def run(self, distance: float) -> float:
        """Walk ``distance`` metres; returns what could not be walked (track end)."""
        t = self.t
        left = float(distance)
        stalled = 0
        limit = 4 * len(self.seclen) + 64
        while left > _EPS:
            row = t.section_row
            if row >= 0:
                so = t.section_offset
                fwd = t.direction == 1
                avail = (self.seclen[row] - so) if fwd else so
                if avail > _EPS:
                    d = min(avail, left)
                    self.pieces.append((row, int(fwd), self.s, self.s + d, so))
                    t.move(d)
                    self.s += d
                    left -= d
                    stalled = 0
                    continue
            stalled += 1
            if stalled > limit or not self._cross():
                self.hit_end = True
                break
        return max(left, 0.0)

    def at_track_end(self) -> bool:
        """Would the traveller run out of track within 1 mm? (walks a copy)."""
        probe = _Walk(self.route, self.t.copy())  # a copy shares the switches
        return probe.run(_END_TOL) > _EPS


# -- the line ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LinePieces:
    """The section pieces a :class:`TrackLine` walks, in order (one entry per piece):
    ``row`` (of route.tdb.sections; -1 on a synthetic line), ``dir`` (1: walked in the
    section's direction), ``s0``/``s1`` (line distances of its ends), ``soff0`` (the
    section offset at ``s0``), ``grade`` and ``curvature`` along the line, and ``geom``,
    the geometry of their sections (row k = piece k; None on a synthetic line)."""

    row: np.ndarray
    dir: np.ndarray
    s0: np.ndarray
    s1: np.ndarray
    soff0: np.ndarray
    grade: np.ndarray
    curvature: np.ndarray
    geom: SectionGeometry


@dataclass(frozen=True, eq=False)
class TrackLine:
    """A sampled line of track; see the module docstring for the conventions.

    Sample columns (one entry per sample, ``s`` ascending, first 0, last ``length``):
    ``s``, ``node``, ``offset``, ``direction``, ``tile_x``, ``tile_z``, ``x``, ``y``,
    ``z`` (x, z normalised to their tile), ``X``, ``Z`` (absolute), ``heading``,
    ``grade``, ``curvature``, ``speed_limit``.
    """

    route_name: str
    source: str
    step: float
    length: float
    path_length: float  # where the path (part) ends; == length for from_point
    ends_at_track_end: bool
    starts_at_track_end: bool
    # samples
    s: np.ndarray
    node: np.ndarray
    offset: np.ndarray
    direction: np.ndarray
    tile_x: np.ndarray
    tile_z: np.ndarray
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    X: np.ndarray
    Z: np.ndarray
    heading: np.ndarray
    grade: np.ndarray
    curvature: np.ndarray
    speed_limit: np.ndarray
    # exact tables
    seg_node: np.ndarray  # node traversals
    seg_dir: np.ndarray
    seg_s0: np.ndarray
    seg_s1: np.ndarray
    seg_off0: np.ndarray
    pieces: LinePieces  # the section pieces walked, in order
    junction_s: np.ndarray
    junction_node: np.ndarray
    junction_route: np.ndarray
    junction_facing: np.ndarray
    limit_s: np.ndarray  # speed-limit changes: from limit_s[k] on, limit_v[k]
    limit_v: np.ndarray  # passenger values
    limit_v_freight: np.ndarray  # freight values (same limit_s)
    post_s: np.ndarray  # every post met in its direction (limit, warning, resume)
    post_kind: tuple[str, ...]
    part: int = 0
    parts: int = 1
    _heading_u: np.ndarray | None = None

    # -- construction ----------------------------------------------------------------
    @classmethod
    def from_path(
        cls,
        route: Route,
        path: ResolvedPath | PathFile | str | Path,
        *,
        extend: float = 2000.0,
        step: float = 2.0,
        part: int = 0,
        switches: Switches | None = None,
    ) -> TrackLine:
        """The line along a ``.pat`` path (a file, :class:`PathFile` or
        :class:`ResolvedPath`): leg by leg with the switches the path sets, then on
        along the track for up to ``extend`` metres or to a track end. A path with
        reversals is split into parts (module docstring); ``part`` picks one.
        ``switches`` (not modified) gives the positions of junctions the path does
        not set; default: every switch in its MainRoute position."""
        lines = cls.path_parts(route, path, extend=extend, step=step, switches=switches, only=part)
        return lines[0]

    @classmethod
    def path_parts(
        cls,
        route: Route,
        path: ResolvedPath | PathFile | str | Path,
        *,
        extend: float = 2000.0,
        step: float = 2.0,
        switches: Switches | None = None,
        only: int | None = None,
    ) -> list[TrackLine]:
        """One line per reversal-free part of the path (see the module docstring)."""
        _check_step(step)
        res = path if isinstance(path, ResolvedPath) else resolve_path(route, path)
        if not res.ok:
            raise TrackLineError(f"path {res.path} does not resolve: {'; '.join(res.problems)}")
        first = res.legs[0].traversals[0]
        sw = switches.copy() if switches is not None else Switches(route)
        t = Traveller(route, first.node, first.start, first.direction, switches=sw)
        # Legs grouped into parts: a reversal at point r starts a new part with leg r.
        groups: list[list] = [[]]
        for k, leg in enumerate(res.legs):
            if k > 0 and k in res.reversals:
                groups.append([])
            groups[-1].append(leg)
        n_parts = len(groups)
        if only is not None and not 0 <= only < n_parts:
            raise TrackLineError(f"path {res.path} has {n_parts} part(s): no part {only}")
        out: list[TrackLine] = []
        for p, legs in enumerate(groups):
            if p > 0:
                t.reverse()
            if only is not None and p > only:
                break
            if only is not None and p < only:
                for leg in legs:  # walk only to find where the next part starts
                    for j, r in leg.switches:
                        sw.set(j, r)
                    t.move(leg.length)
                continue
            start = t.copy()
            walk = _Walk(route, t.copy())  # shares ``sw``
            for leg in legs:
                for j, r in leg.switches:
                    sw.set(j, r)
                walk.run(leg.length)
            path_len = walk.s
            expected = _dedupe(t.node for leg in legs for t in leg.traversals if t.length > _END_TOL)
            walked = _dedupe(
                g[0] for g in walk.segs if (path_len if g[3] is None else g[3]) - g[2] > _END_TOL
            )
            if walked != expected:
                raise TrackLineError(
                    f"path {res.path}: part {p} walked nodes {walked}, the path has {expected}"
                )
            # Keep where the part ends for the next part, then extend (a traveller that
            # does not align trailing switches never changes them).
            t = walk.t.copy()
            walk.run(extend)
            out.append(cls._build(route, walk, start, step, path_len, res.path, p, n_parts))
        return out

    @classmethod
    def from_point(
        cls,
        route: Route,
        tile_x: int,
        tile_z: int,
        x: float,
        z: float,
        *,
        backward: bool = False,
        length: float = 2000.0,
        step: float = 2.0,
        switches: Switches | None = None,
    ) -> TrackLine:
        """The line from the track point nearest a world point, ``length`` metres along
        the track (the node's forward direction, or backward) or to a track end, with
        the switches as given (default positions)."""
        _check_step(step)
        sw = switches.copy() if switches is not None else None
        t = Traveller.at(route, tile_x, tile_z, x, z, switches=sw)
        if backward:
            t.reverse()
        return cls.from_traveller(
            t, length=length, step=step, source=f"tile ({tile_x}, {tile_z}) x {x} z {z}"
        )

    @classmethod
    def from_traveller(
        cls, traveller: Traveller, *, length: float = 2000.0, step: float = 2.0, source: str = "traveller"
    ) -> TrackLine:
        """The line ahead of a traveller (not moved; its switches are used as they are)."""
        _check_step(step)
        route = traveller.route
        start = traveller.copy()
        walk = _Walk(route, traveller.copy())
        walk.run(length)
        return cls._build(route, walk, start, step, walk.s, source, 0, 1)

    @classmethod
    def _build(
        cls,
        route: Route,
        walk: _Walk,
        start: Traveller,
        step: float,
        path_len: float,
        source: str,
        part: int,
        parts: int,
    ) -> TrackLine:
        walk.close()
        length = walk.s
        ends = walk.hit_end or walk.at_track_end()
        back = _Walk(route, start.copy(reverse=True))
        starts = back.run(_END_TOL) > _EPS
        if not walk.pieces:
            raise TrackLineError(f"{source}: no track to walk from {start!r}")
        pr, pd, ps0, ps1, pso = (np.array(c) for c in zip(*walk.pieces))
        pr = pr.astype(np.int64)
        pd = pd.astype(np.int8)
        geom = track_geometry(route)
        pgeom = geom.take(pr)
        curved = ~np.isnan(pgeom.radius)
        sign = np.sign(np.where(curved, pgeom.angle, 0.0))
        sign = np.where(sign == 0, 1.0, sign)
        rad = np.where(curved, pgeom.radius, 1.0)
        curv = np.where(curved, sign / rad, 0.0)
        dsign = np.where(pd == 1, 1.0, -1.0)
        pgrade = -np.tan(pgeom.ax) * dsign + 0.0  # + 0.0: no −0.0
        pcurv = curv * dsign + 0.0

        segs = [g for g in walk.segs if g[3] is not None and g[3] > g[2] + _EPS] or walk.segs[:1]
        sn = np.array([g[0] for g in segs], dtype=np.int64)
        sd = np.array([g[1] for g in segs], dtype=np.int8)
        s0 = np.array([g[2] for g in segs], dtype=np.float64)
        s1 = np.array([g[3] for g in segs], dtype=np.float64)
        so = np.array([g[4] for g in segs], dtype=np.float64)

        # Sample points: every step, every piece boundary, the end.
        grid = np.arange(0.0, length, step)
        pts = np.unique(np.concatenate([grid, ps0, ps1, [length]]))
        keep = np.concatenate([[True], np.diff(pts) > 1e-7])
        pts = pts[keep]
        pts[-1] = length

        # Speed-limit changes from the posts met in their governed direction
        # (docs/running-time.md §1), one column per train category.
        base = float(route.trk.speed_limit)
        met: list[tuple[float, int, SpeedPost]] = []
        table = speed_posts(route)
        for node, d, a, b, off0 in zip(sn, sd, s0, s1, so):
            span = b - a
            lo, hi = (off0, off0 + span) if d == 1 else (off0 - span, off0)
            for post in table.get(int(node), ()):
                if not post.applies_to(int(d)) or not (lo - _EPS <= post.offset <= hi + _EPS):
                    continue
                at = a + (post.offset - off0 if d == 1 else off0 - post.offset)
                met.append((max(float(at), 0.0), len(met), post))
        met.sort(key=lambda m: (m[0], m[1]))
        steps = [m for m in met if m[2].kind != "warning"]  # trains ignore warnings
        ls = np.array([0.0] + [m[0] for m in steps])
        cols = {}
        for cat in CATEGORIES:
            cur, vals = base, [base]
            for _at, _k, post in steps:
                cur = min(limit_after(post, cat, cur, base), base)
                vals.append(cur)
            cols[cat] = np.array(vals)
        lv, lvf = cols["passenger"], cols["freight"]
        post_kind = tuple(m[2].kind for m in met)

        js = walk.junctions
        line = cls(
            route_name=route.name,
            source=str(source),
            step=float(step),
            length=float(length),
            path_length=float(path_len),
            ends_at_track_end=bool(ends),
            starts_at_track_end=bool(starts),
            s=pts,
            node=np.zeros(0, np.int64),
            offset=np.zeros(0),
            direction=np.zeros(0, np.int8),
            tile_x=np.zeros(0, np.int64),
            tile_z=np.zeros(0, np.int64),
            x=np.zeros(0),
            y=np.zeros(0),
            z=np.zeros(0),
            X=np.zeros(0),
            Z=np.zeros(0),
            heading=np.zeros(0),
            grade=np.zeros(0),
            curvature=np.zeros(0),
            speed_limit=np.zeros(0),
            seg_node=sn,
            seg_dir=sd,
            seg_s0=s0,
            seg_s1=s1,
            seg_off0=so,
            pieces=LinePieces(pr, pd, ps0, ps1, pso, pgrade, pcurv, pgeom),
            junction_s=np.array([j.s for j in js], dtype=np.float64),
            junction_node=np.array([j.node for j in js], dtype=np.int64),
            junction_route=np.array([j.route for j in js], dtype=np.int64),
            junction_facing=np.array([j.facing for j in js], dtype=bool),
            limit_s=ls,
            limit_v=lv,
            limit_v_freight=lvf,
            post_s=np.array([m[0] for m in met], dtype=np.float64),
            post_kind=post_kind,
            part=part,
            parts=parts,
        )
        ex = line._exact(pts)
        hu = np.unwrap(ex["heading"]) if len(pts) else ex["heading"]
        # the samples are looked up on the line of the tables alone, then the line is made
        return dataclasses.replace(
            line,
            node=ex["node"],
            offset=ex["offset"],
            direction=ex["direction"],
            tile_x=ex["tile_x"],
            tile_z=ex["tile_z"],
            x=ex["x"],
            y=ex["y"],
            z=ex["z"],
            X=ex["X"],
            Z=ex["Z"],
            heading=ex["heading"],
            grade=ex["grade"],
            curvature=ex["curvature"],
            speed_limit=ex["speed_limit"],
            _heading_u=hu,
        )

    @classmethod
    def synthetic(
        cls,
        length: float,
        *,
        grade: float = 0.0,
        curvature: float = 0.0,
        route_limit: float = 500.0,
        limits: tuple[tuple[float, float], ...] = (),
        freight_limits: tuple[tuple[float, float], ...] | None = None,
        step: float = 10.0,
        node: int = 1,
        source: str = "synthetic",
    ) -> TrackLine:
        """A straight line of constant ``grade`` (rise per horizontal metre) and
        ``curvature`` on no route, with limit posts ``(s, v)`` (m, m/s): for tests and
        running-time studies. Its node is ``node`` with offset = line distance; it ends
        at a track end."""
        n = max(int(math.ceil(length / step)), 1)
        pts = np.linspace(0.0, float(length), n + 1)
        sin = math.sin(math.atan(grade))
        cos = math.cos(math.atan(grade))
        posts = sorted(limits)
        ls = np.array([0.0] + [float(a) for a, _v in posts])
        lv = np.array([route_limit] + [min(float(v), route_limit) for _a, v in posts])
        fposts = sorted(freight_limits) if freight_limits is not None else posts
        lvf = np.array([route_limit] + [min(float(v), route_limit) for _a, v in fposts])
        if [float(a) for a, _v in fposts] != ls[1:].tolist():
            raise TrackLineError("freight limits must be given at the same posts")
        z = pts * cos
        ones = np.ones_like(pts)
        one = np.array([0.0])
        line = cls(
            route_name="synthetic",
            source=source,
            step=float(step),
            length=float(length),
            path_length=float(length),
            ends_at_track_end=True,
            starts_at_track_end=True,
            s=pts,
            node=np.full(len(pts), node, dtype=np.int64),
            offset=pts.copy(),
            direction=np.ones(len(pts), dtype=np.int8),
            tile_x=np.zeros(len(pts), np.int64),
            tile_z=np.zeros(len(pts), np.int64),
            x=np.zeros_like(pts),
            y=pts * sin,
            z=z,
            X=np.zeros_like(pts),
            Z=z,
            heading=np.zeros_like(pts),
            grade=grade * ones,
            curvature=curvature * ones,
            speed_limit=np.zeros(0),
            seg_node=np.array([node], np.int64),
            seg_dir=np.array([1], np.int8),
            seg_s0=one.copy(),
            seg_s1=np.array([float(length)]),
            seg_off0=one.copy(),
            pieces=LinePieces(
                np.array([-1], np.int64),
                np.array([1], np.int8),
                one.copy(),
                np.array([float(length)]),
                one.copy(),
                np.array([float(grade)]),
                np.array([float(curvature)]),
                None,  # type: ignore[arg-type]  # no section geometry: at(exact=True) fails
            ),
            junction_s=np.zeros(0),
            junction_node=np.zeros(0, np.int64),
            junction_route=np.zeros(0, np.int64),
            junction_facing=np.zeros(0, bool),
            limit_s=ls,
            limit_v=lv,
            limit_v_freight=lvf,
            post_s=ls[1:].copy(),
            post_kind=tuple("limit" for _ in posts),
            _heading_u=np.zeros_like(pts),
        )
        return dataclasses.replace(line, speed_limit=line.limit(pts))

    # -- lookups -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.s)

    def __repr__(self) -> str:
        end = ", track end" if self.ends_at_track_end else ""
        return (
            f"TrackLine({self.source!r}, {self.length:.1f} m, {len(self.s)} samples, "
            f"{len(self.seg_node)} node(s){end})"
        )

    @property
    def junctions(self) -> list[LineJunction]:
        """Every junction the line passes, in order."""
        return [
            LineJunction(float(a), int(b), int(c), bool(d))
            for a, b, c, d in zip(
                self.junction_s, self.junction_node, self.junction_route, self.junction_facing
            )
        ]

    def _piece_index(self, s: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.pieces.s1, s, side="left")
        return np.clip(i, 0, len(self.pieces.s1) - 1)

    def segment_index(self, s: np.ndarray) -> np.ndarray:
        """Index of the node traversal (``seg_*`` arrays) holding each line distance
        (at a boundary: the one ending there)."""
        i = np.searchsorted(self.seg_s1, s, side="left")
        return np.clip(i, 0, len(self.seg_s1) - 1)

    def node_offset(self, s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(node, offset in metres from the node start, direction) at line distances
        ``s`` (exact; clipped to the line). At a node boundary: the node ending there."""
        s = np.clip(np.asarray(s, dtype=np.float64), 0.0, self.length)
        i = self.segment_index(s)
        d = self.seg_dir[i]
        off = self.seg_off0[i] + np.where(d == 1, 1.0, -1.0) * (s - self.seg_s0[i])
        return self.seg_node[i], off, d

    def elevation(self, s) -> np.ndarray:
        """Height (m) at line distances ``s`` (linear between samples)."""
        return np.interp(s, self.s, self.y)

    def grade_at(self, s) -> np.ndarray:
        """Grade (rise per horizontal metre, direction of travel) at ``s`` (exact:
        the grade of the section there)."""
        return self.pieces.grade[self._piece_index(np.asarray(s, dtype=np.float64))]

    def curvature_at(self, s) -> np.ndarray:
        """Signed 1/R at ``s`` (exact: the section's)."""
        return self.pieces.curvature[self._piece_index(np.asarray(s, dtype=np.float64))]

    def limit(self, s, category: str = "passenger") -> np.ndarray:
        """Speed limit (m/s) for ``category`` in force at ``s`` (a change applies from
        its post on)."""
        _s, v = self.limits(category)
        i = np.searchsorted(self.limit_s, np.asarray(s, dtype=np.float64), side="right") - 1
        return v[np.clip(i, 0, len(v) - 1)]

    def limits(self, category: str = "passenger") -> tuple[np.ndarray, np.ndarray]:
        """The limit steps ``(limit_s, v)`` for a train category: ``v[k]`` holds from
        ``limit_s[k]`` on (steps that change nothing are kept)."""
        if category == "passenger":
            return self.limit_s, self.limit_v
        if category == "freight":
            return self.limit_s, self.limit_v_freight
        raise ValueError(f"category must be one of {CATEGORIES}, not {category!r}")

    def world_xz(self, s) -> tuple[np.ndarray, np.ndarray]:
        """Absolute world (X, Z) in metres at ``s`` (linear between samples)."""
        return np.interp(s, self.s, self.X), np.interp(s, self.s, self.Z)

    def heading_at(self, s) -> np.ndarray:
        """Heading (rad, (−π, π]) at ``s`` (linear between samples, unwrapped)."""
        assert self._heading_u is not None, "set by every constructor"
        return wrap_angle(np.interp(s, self.s, self._heading_u))

    def location(self, s: float) -> WorldPoint:
        """World location (tile_x, tile_z, x, y, z) of one line distance."""
        a = self.at(np.array([float(s)]))
        return WorldPoint(
            int(a["tile_x"][0]), int(a["tile_z"][0]), float(a["x"][0]), float(a["y"][0]), float(a["z"][0])
        )

    def at(self, s, *, exact: bool = False) -> dict[str, np.ndarray]:
        """Every column at line distances ``s`` (clipped to [0, length]).

        node, offset, direction, grade, curvature and speed_limit are exact; x, y, z,
        X, Z and heading are interpolated between samples unless ``exact`` (then
        evaluated from the section geometry, like the traveller). tile_x/tile_z/x/z
        are normalised from X/Z.
        """
        if exact:
            return self._exact(s)
        s = np.clip(np.asarray(s, dtype=np.float64), 0.0, self.length)
        node, off, d = self.node_offset(s)
        X, Z = self.world_xz(s)
        tx, tz, x, z = normalize_tile(0, 0, X, Z)
        return dict(
            s=s,
            node=node,
            offset=off,
            direction=d,
            tile_x=tx,
            tile_z=tz,
            x=x,
            y=self.elevation(s),
            z=z,
            X=X,
            Z=Z,
            heading=self.heading_at(s),
            grade=self.grade_at(s),
            curvature=self.curvature_at(s),
            speed_limit=self.limit(s),
        )

    def _exact(self, s) -> dict[str, np.ndarray]:
        s = np.clip(np.asarray(s, dtype=np.float64), 0.0, self.length)
        i = self._piece_index(s)
        fwd = self.pieces.dir[i] == 1
        ds = s - self.pieces.s0[i]
        soff = self.pieces.soff0[i] + np.where(fwd, ds, -ds)
        p = point_at(self.pieces.geom, i, soff)
        X = p.tile_x * TILE_SIZE + p.x
        Z = p.tile_z * TILE_SIZE + p.z
        tx, tz, x, z = normalize_tile(p.tile_x, p.tile_z, p.x, p.z)
        heading = wrap_angle(np.where(fwd, p.heading, p.heading + math.pi))
        node, off, d = self.node_offset(s)
        return dict(
            s=s,
            node=node,
            offset=off,
            direction=d,
            tile_x=tx,
            tile_z=tz,
            x=x,
            y=np.asarray(p.y, dtype=np.float64),
            z=z,
            X=X,
            Z=Z,
            heading=heading,
            grade=self.pieces.grade[i],
            curvature=self.pieces.curvature[i],
            speed_limit=self.limit(s),
        )

    def occupancy(self, s_from: float, s_to: float) -> list[tuple[int, float, float]]:
        """The exact node intervals between two line distances, in line order:
        ``(node, offset at the lower s, offset at the higher s)`` (node metres). The
        part outside [0, length] is not on the line and is left out."""
        a, b = sorted((float(s_from), float(s_to)))
        a, b = max(a, 0.0), min(b, self.length)
        if a > b:
            return []
        # the segment columns as Python lists (made once: this runs for every train at
        # every collision check); the same comparisons and float arithmetic as on the
        # arrays (bisect for searchsorted)
        seg = self.__dict__.get("_seg_lists")
        if seg is None:
            seg = self.__dict__["_seg_lists"] = tuple(
                c.tolist() for c in (self.seg_node, self.seg_dir, self.seg_s0, self.seg_s1, self.seg_off0)
            )
        nodes, dirs, s0s, s1s, off0s = seg
        last = len(s1s) - 1
        i0 = min(bisect.bisect_right(s1s, a), last)
        i1 = min(bisect.bisect_left(s1s, b), last)  # segment_index(b)
        if b - a <= _EPS or i1 < i0:
            node, off, _d = self.node_offset(np.array([a]))
            return [(int(node[0]), float(off[0]), float(off[0]))]
        out = []
        for i in range(i0, i1 + 1):
            s0 = s0s[i]
            lo = max(a, s0)
            hi = min(b, s1s[i])
            if hi < lo:
                continue
            sg = 1.0 if dirs[i] == 1 else -1.0
            o0 = off0s[i]
            out.append((nodes[i], o0 + sg * (lo - s0), o0 + sg * (hi - s0)))
        return out

    def locate(self, node: int, offset: float, tol: float = 1e-6) -> np.ndarray:
        """Every line distance at which the line is at ``offset`` metres on ``node``
        (empty if it never is)."""
        m = self.seg_node == int(node)
        out = []
        for i in np.flatnonzero(m):
            span = self.seg_s1[i] - self.seg_s0[i]
            d = (offset - self.seg_off0[i]) if self.seg_dir[i] == 1 else (self.seg_off0[i] - offset)
            if -tol <= d <= span + tol:
                out.append(self.seg_s0[i] + min(max(d, 0.0), span))
        return np.array(out, dtype=np.float64)


def _dedupe(nodes) -> list[int]:  # noqa: ANN001
    out: list[int] = []
    for n in nodes:
        if not out or out[-1] != n:
            out.append(int(n))
    return out


def _check_step(step: float) -> None:
    if not (isinstance(step, (int, float)) and math.isfinite(step) and step > 0):
        raise TrackLineError(f"the sampling step must be a positive number of metres, got {step!r}")
