"""Section geometry (docs/formats.md §4, §11): positions along track sections, the inverse
("where is this point in that section"), polylines, closure checks and the
node graph. Everything is numpy float64 and vectorised over sections.

Conventions (docs/formats.md §4):

* MSTS world frame: X east, Y up, Z north. A location is (tile_x, tile_z, x, y, z)
  with x, z relative to the centre of a 2048 m tile and y absolute. Absolute
  coordinates are ``X = tile_x·2048 + x``, ``Z = tile_z·2048 + z``.
* Heading AY is measured from +Z towards +X (clockwise from above): the forward
  unit vector is (sin AY, cos AY) in (X, Z), the right unit vector (cos AY, −sin AY).
* AX is the pitch, positive when the track *descends* forward; AZ is the roll.
* A positive curve angle is a right-hand curve (the heading grows).
* Offsets along a section are **metres** here (arc length on curves); the curve
  angle travelled is ``θ = offset / R``. (Open Rails' traveller keeps radians on
  curves; multiply by R to come here.)
* Lateral offsets are **positive to the right** of the track's forward direction.

Positions returned by :func:`point_at` are expressed relative to the **start tile
of their section** (as Open Rails does), so x and z may leave [−1024, 1024); use
:func:`normalize_tile` to bring them back into the usual range, or
:func:`absolute_xz` / :attr:`TrackPoint.xyz` for absolute coordinates.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode, VectorNode

TILE_SIZE = 2048.0
HALF_TILE = 1024.0

__all__ = [
    "MAX_OFFSET",
    "TILE_SIZE",
    "SectionGeometry",
    "TrackPoint",
    "WorldPoint",
    "Polylines",
    "Closure",
    "Adjacency",
    "section_geometry",
    "point_at",
    "section_end",
    "section_end_xyz",
    "section_start_xyz",
    "locate_in_section",
    "absolute_xz",
    "normalize_tile",
    "to_tile",
    "wrap_angle",
    "sample_node",
    "sample_route",
    "closure",
    "node_lengths",
    "adjacency",
    "connected_components",
]


# -- tiles and angles ------------------------------------------------------------------


def absolute_xz(tile_x, tile_z, x, z) -> tuple[np.ndarray, np.ndarray]:
    """Absolute world coordinates ``(X, Z) = (tile_x·2048 + x, tile_z·2048 + z)``."""
    return (
        np.asarray(tile_x, dtype=np.float64) * TILE_SIZE + np.asarray(x, dtype=np.float64),
        np.asarray(tile_z, dtype=np.float64) * TILE_SIZE + np.asarray(z, dtype=np.float64),
    )


def normalize_tile(tile_x, tile_z, x, z) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Move whole tiles between the tile numbers and the offsets so that x and z
    lie in [−1024, 1024). Returns ``(tile_x, tile_z, x, z)`` (tiles as int64)."""
    x = np.asarray(x, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    kx = np.floor((x + HALF_TILE) / TILE_SIZE)
    kz = np.floor((z + HALF_TILE) / TILE_SIZE)
    return (
        np.asarray(tile_x, dtype=np.int64) + kx.astype(np.int64),
        np.asarray(tile_z, dtype=np.int64) + kz.astype(np.int64),
        x - kx * TILE_SIZE,
        z - kz * TILE_SIZE,
    )


def to_tile(tile_x, tile_z, x, z, target_tile_x, target_tile_z) -> tuple[np.ndarray, np.ndarray]:
    """The offsets ``(x, z)`` of a location expressed relative to another tile."""
    dx = (np.asarray(tile_x, dtype=np.float64) - np.asarray(target_tile_x, dtype=np.float64)) * TILE_SIZE
    dz = (np.asarray(tile_z, dtype=np.float64) - np.asarray(target_tile_z, dtype=np.float64)) * TILE_SIZE
    return np.asarray(x, dtype=np.float64) + dx, np.asarray(z, dtype=np.float64) + dz


def wrap_angle(a) -> np.ndarray:
    """Wrap angles (radians) into (−π, π]."""
    a = np.asarray(a, dtype=np.float64)
    w = np.mod(a + math.pi, 2 * math.pi) - math.pi  # [−π, π)
    return np.where(w == -math.pi, math.pi, w)


#: Offsets beyond this (metres) cannot be put in a tile: not a location.
MAX_OFFSET = 1e12


@dataclass(frozen=True, slots=True)
class WorldPoint:
    """A world location: x, z relative to the centre of tile (tile_x, tile_z), usually
    in [−1024, 1024) (:meth:`of` normalises); y absolute height. The one world-point
    type of tdbtools (poses, audit findings, replay events)."""

    tile_x: int
    tile_z: int
    x: float
    y: float
    z: float

    @classmethod
    def of(cls, tile_x, tile_z, x, y, z) -> WorldPoint | None:  # noqa: ANN001
        """Normalised into the tile holding the point; None if not finite or so far out
        that no tile number holds it (|offset| beyond 1e12 m)."""
        vals = (float(x), float(y), float(z))
        if not all(math.isfinite(v) and abs(v) < MAX_OFFSET for v in vals):
            return None
        tx, tz, nx, nz = normalize_tile(int(tile_x), int(tile_z), vals[0], vals[2])
        return cls(int(tx), int(tz), float(nx), vals[1], float(nz))

    @classmethod
    def absolute(cls, X: float, Y: float, Z: float) -> WorldPoint | None:  # noqa: N803
        return cls.of(0, 0, X, Y, Z)

    @property
    def X(self) -> float:  # noqa: N802 (world axis name)
        """Absolute X (east), metres."""
        return self.tile_x * TILE_SIZE + self.x

    @property
    def Z(self) -> float:  # noqa: N802
        """Absolute Z (north), metres."""
        return self.tile_z * TILE_SIZE + self.z

    def as_tuple(self) -> tuple[int, int, float, float, float]:
        """``(tile_x, tile_z, x, y, z)``."""
        return (self.tile_x, self.tile_z, self.x, self.y, self.z)

    def to_json(self) -> dict:
        return {
            "tile_x": self.tile_x,
            "tile_z": self.tile_z,
            "x": round(self.x, 6),
            "y": round(self.y, 6),
            "z": round(self.z, 6),
        }


# -- the geometry table ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class SectionGeometry:
    """Start pose and shape of a batch of track sections (one entry per row of
    ``route.tdb.sections`` when made by :func:`section_geometry`).

    ``radius`` is NaN on straights; ``angle`` is the signed curve angle in radians
    (positive = right-hand, 0 on straights); ``length`` is metres (arc length on
    curves). Rows whose section id is not in tsection.dat have ``known`` False and
    NaN ``radius``, ``angle`` and ``length``.
    """

    tile_x: np.ndarray  # int64, tile of the section start
    tile_z: np.ndarray
    x: np.ndarray  # start, relative to the start tile's centre
    y: np.ndarray  # absolute height
    z: np.ndarray
    ax: np.ndarray  # pitch, + = descending forward (rad)
    ay: np.ndarray  # heading at the start (rad)
    az: np.ndarray  # roll (rad)
    radius: np.ndarray  # metres, NaN = straight (or unknown)
    angle: np.ndarray  # signed radians, 0 = straight, NaN = unknown
    length: np.ndarray  # metres, NaN = unknown
    known: np.ndarray  # bool: the section id exists in tsection.dat
    node: np.ndarray  # int64: owning vector node (−1 if not from a route)
    section_index: np.ndarray  # int64: TrackSection id (−1 if not from a route)

    def __len__(self) -> int:
        return len(self.x)

    @property
    def curved(self) -> np.ndarray:
        return ~np.isnan(self.radius)

    @property
    def curvature(self) -> np.ndarray:
        """sign(angle)/R on curves, 0 on straights, NaN where unknown (1/m)."""
        r = self.radius
        k = np.zeros(len(r))
        c = ~np.isnan(r)
        k[c] = np.divide(np.sign(self.angle[c]), r[c], out=np.zeros(int(c.sum())), where=r[c] != 0)
        k[~self.known] = np.nan
        return k

    @property
    def unknown_rows(self) -> np.ndarray:
        """Rows whose section id is missing from tsection.dat."""
        return np.flatnonzero(~self.known)

    @classmethod
    def from_arrays(
        cls,
        *,
        tile_x=0,
        tile_z=0,
        x=0.0,
        y=0.0,
        z=0.0,
        ax=0.0,
        ay=0.0,
        az=0.0,
        radius=np.nan,
        angle=0.0,
        length=np.nan,
        node=-1,
        section_index=-1,
    ) -> SectionGeometry:
        """Build a geometry from plain values (broadcast together).

        Curves: give ``radius`` and the signed ``angle`` in radians (``length`` is
        R·|angle|, whatever is given). Straights: leave ``radius`` NaN and give ``length``.
        """
        cols = np.broadcast_arrays(
            *(
                np.asarray(v)
                for v in (tile_x, tile_z, x, y, z, ax, ay, az, radius, angle, length, node, section_index)
            )
        )
        cols = tuple(np.atleast_1d(c) for c in cols)
        f = [np.array(c, dtype=np.float64) for c in cols[2:11]]
        x_, y_, z_, ax_, ay_, az_, r_, a_, l_ = f
        curved = ~np.isnan(r_)
        a_ = np.where(curved, a_, 0.0)
        l_ = np.where(curved, r_ * np.abs(a_), l_)  # a curve's length is R·|angle|
        known = ~np.isnan(l_)
        return cls(
            np.array(cols[0], dtype=np.int64),
            np.array(cols[1], dtype=np.int64),
            x_,
            y_,
            z_,
            ax_,
            ay_,
            az_,
            r_,
            a_,
            l_,
            known,
            np.array(cols[11], dtype=np.int64),
            np.array(cols[12], dtype=np.int64),
        )

    def take(self, rows) -> SectionGeometry:
        """A geometry of the given rows only."""
        rows = np.asarray(rows, dtype=np.intp)
        return SectionGeometry(*(getattr(self, n)[rows] for n in self.__slots__))


def section_geometry(route: Route, *, copy: bool = True) -> SectionGeometry:
    """The geometry of every row of ``route.tdb.sections`` (row-aligned).

    With ``copy=False`` the columns taken as they are from the section table (tile,
    position, angles, node, section id) are shared with it where their dtype already
    fits (read-only on a loaded route): ten row-long arrays, ~140 MB on a 200 MB route."""
    s = route.tdb.sections
    table = route.tsection.sections
    rows, found = table.rows(s.section_index)
    n = len(s)
    if len(table):
        radius = np.where(found, table.radius[rows], np.nan)
        angle_deg = np.where(found, table.angle[rows], np.nan)
    else:
        radius = np.full(n, np.nan)
        angle_deg = np.full(n, np.nan)
    curved = ~np.isnan(radius)
    angle = np.where(curved, np.radians(np.where(curved, angle_deg, 0.0)), np.where(found, 0.0, np.nan))
    length = np.asarray(route.section_length, dtype=np.float64)
    if len(length) != n:  # a Route built by hand: work the lengths out here
        length = np.where(found, table.arc_length[rows] if len(table) else np.nan, np.nan)
    length = np.where(found, length, np.nan)
    own = np.array if copy else np.asarray  # own, writable copies unless told
    f64 = lambda a: own(a, dtype=np.float64)  # noqa: E731
    i64 = lambda a: own(a, dtype=np.int64)  # noqa: E731
    return SectionGeometry(
        i64(s.tile_x),
        i64(s.tile_z),
        f64(s.x),
        f64(s.y),
        f64(s.z),
        f64(s.ax),
        f64(s.ay),
        f64(s.az),
        f64(radius),
        f64(angle),
        f64(length),
        np.array(found, dtype=bool),
        i64(s.node),
        i64(s.section_index),
    )


# -- forward: a point along a section --------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class TrackPoint:
    """Poses along sections (arrays of one shape).

    x and z are relative to the centre of tile (tile_x, tile_z), which is the
    start tile of the section each point was computed in (they are *not*
    normalised into [−1024, 1024)). ``heading`` is wrapped into (−π, π];
    ``pitch``/``roll`` are the section's AX/AZ (constant along a section);
    ``curvature`` is sign(angle)/R of the section's centre line, 0 on straights.
    """

    tile_x: np.ndarray
    tile_z: np.ndarray
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    heading: np.ndarray
    pitch: np.ndarray
    roll: np.ndarray
    curvature: np.ndarray

    def __len__(self) -> int:
        return len(self.x)

    @property
    def X(self) -> np.ndarray:  # noqa: N802 (world axis name)
        return self.tile_x * TILE_SIZE + self.x

    @property
    def Z(self) -> np.ndarray:  # noqa: N802
        return self.tile_z * TILE_SIZE + self.z

    @property
    def xyz(self) -> np.ndarray:
        """Absolute (…, 3) coordinates X, Y, Z."""
        return np.stack([self.X, self.y, self.Z], axis=-1)

    def normalized(self) -> TrackPoint:
        """The same points with x and z moved into [−1024, 1024) of their own tile."""
        tx, tz, x, z = normalize_tile(self.tile_x, self.tile_z, self.x, self.z)
        return TrackPoint(tx, tz, x, self.y, z, self.heading, self.pitch, self.roll, self.curvature)


def _frame_offsets(geom: SectionGeometry, rows: np.ndarray, off: np.ndarray, lat: np.ndarray):
    """(l, f, θ·s, curved, s) of points at ``off`` metres along and ``lat`` metres to
    the right of the centre line, in the section's own (lateral, forward) frame."""
    r = geom.radius[rows]
    curved = ~np.isnan(r)
    s = np.sign(np.where(curved, geom.angle[rows], 0.0))
    rr = np.where(curved, r, 1.0)
    theta = np.divide(off, rr, out=np.zeros(np.shape(off)), where=curved & (rr != 0))
    c, sn = np.cos(theta), np.sin(theta)
    # R(1 − cos θ) = 2R sin²(θ/2) keeps its precision for small θ.
    h = np.sin(theta / 2.0)
    l_curve = s * rr * 2.0 * h * h + lat * c
    f_curve = rr * sn - s * lat * sn
    lt = np.where(curved, l_curve, lat)
    f = np.where(curved, f_curve, off)
    return lt, f, s * theta, curved, s, rr


def point_at(geom: SectionGeometry, rows, offset_m, lateral=0.0) -> TrackPoint:
    """Pose at ``offset_m`` metres from the start of section ``rows`` (docs/formats.md §11).
    The arrays of the result have the broadcast shape of the inputs (0-d for scalars).

    ``rows``, ``offset_m`` and ``lateral`` broadcast together. Straight:
    ``d = offset``. Curve: ``θ = offset/R``, lateral ``l = s·R(1−cos θ)``, forward
    ``f = R·sin θ``, then the AX/AZ/AY terms of §11; heading ``AY + s·θ``.
    ``lateral`` (metres, + = right) offsets the point from the centre line within
    the section's own plane (the inverse of :func:`locate_in_section`). Offsets
    outside [0, length] extrapolate the straight or circle. Rows of unknown
    sections give NaN except at offset 0 (their start is known).
    """
    rows, off, lat = np.broadcast_arrays(
        np.asarray(rows, dtype=np.intp),
        np.asarray(offset_m, dtype=np.float64),
        np.asarray(lateral, dtype=np.float64),
    )
    lt, f, dh, curved, s, rr = _frame_offsets(geom, rows, off, lat)
    ax, ay, az = geom.ax[rows], geom.ay[rows], geom.az[rows]
    sax, cax = np.sin(ax), np.cos(ax)
    say, cay = np.sin(ay), np.cos(ay)
    saz, caz = np.sin(az), np.cos(az)
    g = lt * saz * sax + f * cax
    dx = lt * caz * cay + g * say
    dy = lt * saz * cax - f * sax
    dz = -lt * caz * say + g * cay
    heading = wrap_angle(ay + dh)
    curvature = np.divide(s, rr, out=np.zeros(np.shape(s)), where=curved & (rr != 0))
    x = geom.x[rows] + dx
    y = geom.y[rows] + dy
    z = geom.z[rows] + dz
    bad = ~geom.known[rows]
    if bad.any():
        nan_pos = bad & ((off != 0) | (lat != 0))
        x, y, z, heading = (np.where(nan_pos, np.nan, v) for v in (x, y, z, heading))
        curvature = np.where(bad, np.nan, curvature)
    a = np.asarray
    return TrackPoint(
        a(geom.tile_x[rows]),
        a(geom.tile_z[rows]),
        a(x),
        a(y),
        a(z),
        a(heading),
        np.array(ax),
        np.array(az),
        a(curvature),
    )


def section_end(geom: SectionGeometry) -> TrackPoint:
    """End pose of every section (in its start tile), heading AY + angle."""
    return point_at(geom, np.arange(len(geom)), geom.length)


#: Rows worked at a time by :func:`section_end_xyz` and :func:`closure` (memory only:
#: the work is row by row, so the figures do not depend on it).
_END_CHUNK = 1 << 17


def section_end_xyz(geom: SectionGeometry) -> tuple[np.ndarray, np.ndarray]:
    """``section_end(geom).xyz`` and ``.heading`` only, worked out a run of rows at a
    time: the whole pose and its ~25 temporaries held ~0.3 GB on a 200 MB route."""
    n = len(geom)
    xyz = np.empty((n, 3))
    heading = np.empty(n)
    for a in range(0, n, _END_CHUNK):
        b = min(n, a + _END_CHUNK)
        p = point_at(geom, np.arange(a, b), geom.length[a:b])
        xyz[a:b] = p.xyz
        heading[a:b] = p.heading
    return xyz, heading


# -- inverse: locate a point in a section ----------------------------------------------


def locate_in_section(geom: SectionGeometry, rows, tile_x, tile_z, x, z) -> tuple[np.ndarray, np.ndarray]:
    """Lateral (+ = right) and longitudinal position of world points relative to
    sections: ``(lat, lon)`` in metres, ``lon`` measured along the arc.

    Height is ignored. The point is put into the section's start tile and rotated
    into the section frame (docs/formats.md §11 ``Survey``); the section's pitch and roll
    terms of §11 are then undone, so that ``point_at(geom, row, lon, lat)`` gives
    back the same ground point for any AX/AZ (with AX = AZ = 0 this is exactly the
    spec's rotation). Curves use the exact circle projection: with the centre at
    ``(s·R, 0)`` in (lateral, forward), ``θ = atan2(f, R − s·l)``, ``lon = R·θ``,
    ``lat = s·(R − ρ)``, ρ the distance to the centre (not OR's asin, which is only
    exact on the centre line). Nothing is rejected: callers apply their own
    tolerances. NaN for unknown sections.
    """
    rows, tx, tz, px, pz = np.broadcast_arrays(
        np.asarray(rows, dtype=np.intp),
        np.asarray(tile_x),
        np.asarray(tile_z),
        np.asarray(x, dtype=np.float64),
        np.asarray(z, dtype=np.float64),
    )
    dx = (tx - geom.tile_x[rows]) * TILE_SIZE + (px - geom.x[rows])
    dz = (tz - geom.tile_z[rows]) * TILE_SIZE + (pz - geom.z[rows])
    ay = geom.ay[rows]
    say, cay = np.sin(ay), np.cos(ay)
    u = dx * cay - dz * say  # to the right
    v = dx * say + dz * cay  # forward
    ax, az = geom.ax[rows], geom.az[rows]
    lt = u / np.cos(az)
    f = (v - lt * np.sin(az) * np.sin(ax)) / np.cos(ax)
    r = geom.radius[rows]
    curved = ~np.isnan(r)
    s = np.sign(np.where(curved, geom.angle[rows], 0.0))
    s = np.where(s == 0, 1.0, s)
    rr = np.where(curved, r, 1.0)
    a = rr - s * lt
    theta = np.arctan2(f, a)
    rho = np.hypot(a, f)
    lat = np.where(curved, s * (rr - rho), lt)
    lon = np.where(curved, rr * theta, f)
    bad = ~geom.known[rows]
    if bad.any():
        lat = np.where(bad, np.nan, lat)
        lon = np.where(bad, np.nan, lon)
    return np.asarray(lat), np.asarray(lon)


# -- polylines -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Polylines:
    """Concatenated polylines: node ``nodes[k]`` is ``points[offsets[k]:offsets[k+1]]``
    (absolute X, Y, Z in metres)."""

    points: np.ndarray  # (N, 3)
    offsets: np.ndarray  # (K + 1,) int64
    nodes: np.ndarray  # (K,) int64 node ids

    def __len__(self) -> int:
        return len(self.nodes)

    def polyline(self, k: int) -> np.ndarray:
        return self.points[self.offsets[k] : self.offsets[k + 1]]


def _as_geom(obj: Route | SectionGeometry) -> SectionGeometry:
    # Only read here: share the route's columns (memory on a big route).
    return obj if isinstance(obj, SectionGeometry) else section_geometry(obj, copy=False)


def _segments(geom: SectionGeometry, rows: np.ndarray, max_chord_error: float) -> np.ndarray:
    """Chords per section so that the sagitta R(1 − cos(Δθ/2)) ≤ the bound (1 on a
    straight, 0 for unknown and zero-length sections, which give their start only)."""
    if not max_chord_error > 0:
        raise ValueError(f"max_chord_error must be > 0, got {max_chord_error!r}")
    r = geom.radius[rows]
    a = np.abs(geom.angle[rows])
    curved = ~np.isnan(r) & geom.known[rows]
    n = np.ones(len(rows), dtype=np.int64)
    if curved.any():
        rc = r[curved]
        # R(1 − cos(Δθ/2)) = 2R·sin²(Δθ/4) ≤ e  ⇔  Δθ ≤ 4·asin(√(e/2R)): accurate for tiny e/R.
        q = np.divide(max_chord_error, 2.0 * rc, out=np.ones(len(rc)), where=rc > 0)
        step = 4.0 * np.arcsin(np.sqrt(np.minimum(q, 1.0)))
        k = np.ceil(a[curved] / step)
        n[curved] = np.maximum(k, 1).astype(np.int64)
    n[~geom.known[rows] | (geom.length[rows] == 0)] = 0  # start point only
    return n


def _sample_rows(
    geom: SectionGeometry, rows: np.ndarray, max_chord_error: float, join_tol: float
) -> tuple[np.ndarray, np.ndarray]:
    """Points along ``rows`` (grouped by node, in node order): (points (N,3), node of
    each point)."""
    if len(rows) == 0:
        return np.zeros((0, 3)), np.zeros(0, dtype=np.int64)
    n = _segments(geom, rows, max_chord_error)
    node = geom.node[rows]
    # Drop a section's start where it coincides with the previous section's end.
    ends = point_at(geom, rows, np.where(geom.known[rows], geom.length[rows], 0.0))
    same = np.zeros(len(rows), dtype=bool)
    same[1:] = (node[1:] == node[:-1]) & (rows[1:] == rows[:-1] + 1)
    e_abs = ends.xyz
    sx, sz = absolute_xz(geom.tile_x[rows], geom.tile_z[rows], geom.x[rows], geom.z[rows])
    s_abs = np.stack([sx, geom.y[rows], sz], -1)
    gap = np.full(len(rows), np.inf)
    gap[1:] = _norm3(s_abs[1:] - e_abs[:-1])
    skip_start = same & (gap <= join_tol)  # NaN (unknown previous end) never skips
    # Samples j = 0..n per known section (start, interior, end), just the start if unknown.
    m = n + 1
    rep = np.repeat(np.arange(len(rows)), m)
    first = np.cumsum(m) - m
    j = np.arange(len(rep)) - np.repeat(first, m)
    keep = ~((j == 0) & skip_start[rep])
    rep, j = rep[keep], j[keep]
    nn = n[rep]
    length = np.where(geom.known[rows], geom.length[rows], 0.0)[rep]
    frac = np.divide(j, nn, out=np.zeros(len(j)), where=nn > 0)
    frac[j == nn] = 1.0  # exact end
    pts = point_at(geom, rows[rep], length * frac).xyz
    return pts, node[rep]


def sample_node(
    route_or_geom: Route | SectionGeometry,
    node: int,
    max_chord_error: float = 0.05,
    *,
    join_tol: float = 1e-3,
) -> np.ndarray:
    """Polyline (N×3 absolute X, Y, Z) along vector node ``node``, start to end.

    Straights give their end points; a curve of radius R is cut into equal chords
    of angle Δθ ≤ 2·acos(1 − e/R), so no point of the true arc (of the section's
    own §11 geometry) is farther than ``max_chord_error`` (e) from the polyline.
    Consecutive sections share one point when the computed end of one is within
    ``join_tol`` of the recorded start of the next; otherwise both are kept, so
    gaps in the data show as a straight jump. Unknown sections give their start
    point only.
    """
    if isinstance(route_or_geom, SectionGeometry):
        geom = route_or_geom
        rows = np.flatnonzero(geom.node == node)
    else:
        n = route_or_geom.tdb.nodes[node]
        if not isinstance(n, VectorNode):
            raise TypeError(f"node {node} is not a vector node")
        geom = section_geometry(route_or_geom)
        rows = np.arange(n.section_slice.start, n.section_slice.stop)
    pts, _ = _sample_rows(geom, rows, max_chord_error, join_tol)
    return pts


def sample_route(
    route_or_geom: Route | SectionGeometry, max_chord_error: float = 0.05, *, join_tol: float = 1e-3
) -> Polylines:
    """:func:`sample_node` for every vector node at once (one vectorised pass).

    Rows are taken in table order; a node's rows must be contiguous (as
    :func:`section_geometry` makes them).
    """
    geom = _as_geom(route_or_geom)
    rows = np.arange(len(geom))
    pts, pnode = _sample_rows(geom, rows, max_chord_error, join_tol)
    if len(pnode) == 0:
        return Polylines(pts, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    change = np.flatnonzero(pnode[1:] != pnode[:-1]) + 1
    starts = np.concatenate([[0], change])
    offsets = np.concatenate([starts, [len(pnode)]]).astype(np.int64)
    nodes = pnode[starts]
    if len(np.unique(nodes)) != len(nodes):
        raise ValueError("the rows of a vector node are not contiguous")
    return Polylines(pts, offsets, nodes.astype(np.int64))


def sample_route_chunks(
    route_or_geom: Route | SectionGeometry,
    max_chord_error: float = 0.05,
    *,
    join_tol: float = 1e-3,
    rows: int = 1 << 17,
) -> Iterator[Polylines]:
    """:func:`sample_route` a piece at a time: the same polylines, in the same order,
    from runs of about ``rows`` section rows cut between vector nodes (a 200 MB
    route's points and their temporaries at once took ~0.4 GB)."""
    geom = _as_geom(route_or_geom)
    node = geom.node
    n = len(node)
    if n == 0:
        yield sample_route(geom, max_chord_error, join_tol=join_tol)
        return
    starts = np.concatenate([[0], np.flatnonzero(node[1:] != node[:-1]) + 1])
    if len(np.unique(node[starts])) != len(starts):
        raise ValueError("the rows of a vector node are not contiguous")
    a = 0
    while a < n:
        k = int(np.searchsorted(starts, a + max(int(rows), 1)))
        b = int(starts[k]) if k < len(starts) else n
        # A run starts a node: its first row joins no previous section, as in the
        # whole-route pass.
        pts, pnode = _sample_rows(geom, np.arange(a, b), max_chord_error, join_tol)
        change = np.flatnonzero(pnode[1:] != pnode[:-1]) + 1
        first = np.concatenate([[0], change])
        offsets = np.concatenate([first, [len(pnode)]]).astype(np.int64)
        yield Polylines(pts, offsets, pnode[first].astype(np.int64))
        a = b


# -- closure ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Closure:
    """How well the data closes.

    Joins (one per pair of consecutive sections inside a vector node): the computed
    end of section ``join_row`` against the recorded start of ``join_row + 1``.
    ``join_section`` is the position of the first section of the pair in its node
    (0-based); ``join_delta`` is recorded start minus computed end (absolute dX, dY,
    dZ); ``join_gap`` its length; ``join_turn`` the heading difference (rad, next
    start AY minus computed end heading, wrapped).

    Ends (one per vector-node pin): pin 0 compares the node start (recorded start
    of its first section), pin 1 the node end (computed end of its last section)
    with the node the pin links to: the UiD position of a junction or end node, or
    the start (pin direction 1) / end (0) of a vector node. NaN where the target
    has no position.
    """

    join_row: np.ndarray
    join_node: np.ndarray
    join_section: np.ndarray
    join_delta: np.ndarray
    join_gap: np.ndarray
    join_turn: np.ndarray
    end_node: np.ndarray
    end_pin: np.ndarray
    end_link: np.ndarray
    end_delta: np.ndarray
    end_gap: np.ndarray

    def join_stats(self) -> dict[str, float]:
        g = self.join_gap[~np.isnan(self.join_gap)]
        if len(g) == 0:
            return {"count": 0}
        p50, p99 = np.percentile(g, [50, 99])
        return {"count": int(len(g)), "p50": float(p50), "p99": float(p99), "max": float(g.max())}


def _norm3(v: np.ndarray) -> np.ndarray:
    """Lengths of 3-vectors (rows) without overflow for any finite input (hypot scales)."""
    return np.hypot(np.hypot(v[:, 0], v[:, 1]), v[:, 2])


def section_start_xyz(geom: SectionGeometry) -> np.ndarray:
    """Absolute (X, Y, Z) of each section's start, one row per section (across tiles,
    as :func:`section_end_xyz` gives the ends)."""
    X, Z = absolute_xz(geom.tile_x, geom.tile_z, geom.x, geom.z)
    return np.stack([X, geom.y, Z], axis=-1)


def closure(
    route: Route,
    geom: SectionGeometry | None = None,
    *,
    ends: tuple[np.ndarray, np.ndarray] | None = None,
) -> Closure:
    """Gaps between consecutive sections and between vector nodes and their
    neighbours (see :class:`Closure`). Coordinates are absolute, across tiles.
    ``ends`` is :func:`section_end_xyz` of ``geom`` if the caller has it already."""
    if geom is None:
        geom = section_geometry(route, copy=False)
    end_xyz, end_heading = section_end_xyz(geom) if ends is None else ends
    node = geom.node
    same = node[1:] == node[:-1]
    i = np.flatnonzero(same)
    # Row by row, a run at a time: the whole start table and its gathers held
    # ~0.2 GB on a 200 MB route. Element-wise, so the figures are the same.
    delta = np.empty((len(i), 3))
    gap = np.empty(len(i))
    turn = np.empty(len(i))
    for a in range(0, len(i), _END_CHUNK):
        ii = i[a : a + _END_CHUNK]
        d = section_start_xyz(geom.take(ii + 1)) - end_xyz[ii]
        delta[a : a + len(ii)] = d
        gap[a : a + len(ii)] = _norm3(d)
        turn[a : a + len(ii)] = wrap_angle(geom.ay[ii + 1] - end_heading[ii])
    # position of each row within its node
    first_row = np.ones(len(node), dtype=bool)
    first_row[1:] = ~same
    grp_start = np.maximum.accumulate(np.where(first_row, np.arange(len(node)), 0))
    join_section = (i - grp_start[i]).astype(np.int64)
    del first_row, grp_start

    nodes: tuple[Any, ...] = route.tdb.nodes  # kinds are tested where it matters
    nv = len(nodes)
    node_start = np.full((nv, 3), np.nan)
    node_end = np.full((nv, 3), np.nan)
    uid_pos = np.full((nv, 3), np.nan)
    vec_ids, first_rows, last_rows = [], [], []
    for n in nodes[1:]:
        if isinstance(n, VectorNode):
            vec_ids.append(n.index)
            # -1: a node without sections keeps NaN ends
            first_rows.append(n.section_slice.start if n.section_count else -1)
            last_rows.append(n.section_slice.stop - 1 if n.section_count else -1)
        elif isinstance(n, (JunctionNode, EndNode)) and n.uid is not None:
            u = n.uid
            uid_pos[n.index] = (u.tile_x * TILE_SIZE + u.x, u.y, u.tile_z * TILE_SIZE + u.z)
    vec = np.array(vec_ids, dtype=np.int64)
    first_a = np.array(first_rows, dtype=np.int64)
    has = first_a >= 0
    if has.any():
        node_start[vec[has]] = section_start_xyz(geom.take(first_a[has]))
        node_end[vec[has]] = end_xyz[np.array(last_rows, dtype=np.int64)[has]]
    # One pin at a time, but as indices (kind, row) into the tables above, not ~1
    # million numpy row views: 0 = node_start, 1 = node_end, 2 = uid_pos, 3 = NaN.
    tables = np.stack([node_start, node_end, uid_pos, np.full((nv, 3), np.nan)])
    e_node, e_pin, e_link, h_kind, t_kind, t_row = [], [], [], [], [], []
    for idx in vec_ids:
        n = nodes[idx]
        for p, pin in enumerate(n.pins[:2]):
            link = pin.link
            target = nodes[link] if 0 < link < nv else None
            if isinstance(target, VectorNode):
                t_kind.append(0 if pin.direction > 0 else 1)
                t_row.append(link)
            elif target is not None:
                t_kind.append(2)
                t_row.append(link)
            else:
                t_kind.append(3)
                t_row.append(0)
            e_node.append(idx)
            e_pin.append(p)
            e_link.append(link)
            h_kind.append(0 if p == 0 else 1)
    e_idx = np.array(e_node, dtype=np.int64)
    e_here = tables[np.array(h_kind, dtype=np.intp), e_idx].reshape(-1, 3)
    e_there = tables[np.array(t_kind, dtype=np.intp), np.array(t_row, dtype=np.intp)].reshape(-1, 3)
    del tables
    e_delta = e_there - e_here
    return Closure(
        join_row=i.astype(np.int64),
        join_node=node[i].astype(np.int64),
        join_section=join_section,
        join_delta=delta,
        join_gap=gap,
        join_turn=turn,
        end_node=e_idx,
        end_pin=np.array(e_pin, dtype=np.int64),
        end_link=np.array(e_link, dtype=np.int64),
        end_delta=e_delta,
        end_gap=_norm3(e_delta),
    )


# -- the node graph --------------------------------------------------------------------


def node_lengths(route: Route) -> np.ndarray:
    """Length in metres of every track node, indexed by node id (slot 0, junctions
    and end nodes are 0). Unknown sections count 0, as in :meth:`Route.node_length`."""
    nv = len(route.tdb.nodes)
    s = route.tdb.sections
    w = np.nan_to_num(np.asarray(route.section_length, dtype=np.float64), nan=0.0)
    return np.bincount(np.asarray(s.node, dtype=np.intp), weights=w, minlength=nv)[:nv]


@dataclass(frozen=True, slots=True, eq=False)
class Adjacency:
    """Every TrPin of the track nodes as an edge list, sorted by (src, pin).

    ``src`` node's pin number ``pin`` links to ``dst``, which the traveller enters
    with direction ``direction`` (§6.4). ``kind`` is node kind per node id
    ("" for slot 0). Links outside 1..N are kept, with ``valid`` False.
    """

    src: np.ndarray
    pin: np.ndarray
    dst: np.ndarray
    direction: np.ndarray
    valid: np.ndarray
    kind: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.src)

    def neighbours(self, node: int) -> list[int]:
        a, b = np.searchsorted(self.src, [node, node + 1])
        return [int(v) for v in self.dst[a:b]]

    def one_way(self) -> np.ndarray:
        """Indices of valid edges whose target has no pin back to the source."""
        back = set(zip(self.src[self.valid].tolist(), self.dst[self.valid].tolist()))
        return np.array(
            [k for k in np.flatnonzero(self.valid) if (int(self.dst[k]), int(self.src[k])) not in back],
            dtype=np.int64,
        )


def adjacency(route: Route) -> Adjacency:
    """The node graph from the TrPins (docs/formats.md §6.4)."""
    nodes: tuple[Any, ...] = route.tdb.nodes  # kinds are tested where it matters
    nv = len(nodes)
    src, pin, dst, d = [], [], [], []
    for n in nodes[1:]:
        if n is None:
            continue
        for p, tp in enumerate(n.pins):
            src.append(n.index)
            pin.append(p)
            dst.append(tp.link)
            d.append(tp.direction)
    src_a = np.array(src, dtype=np.int64)
    dst_a = np.array(dst, dtype=np.int64)
    kinds = tuple("" if n is None else n.kind for n in nodes)
    valid = (dst_a >= 1) & (dst_a < nv)
    if len(dst_a):
        ok = np.flatnonzero(valid)
        valid[ok] = np.array([nodes[int(k)] is not None for k in dst_a[ok]], dtype=bool)
    return Adjacency(src_a, np.array(pin, dtype=np.int64), dst_a, np.array(d, dtype=np.int64), valid, kinds)


def connected_components(route: Route) -> tuple[np.ndarray, int]:
    """Label of every node id (``labels[0]`` and missing nodes are −1) and the
    number of components. Pins are taken as undirected links; labels are numbered
    0, 1, … in order of each component's lowest node id."""
    adj = adjacency(route)
    nv = len(route.tdb.nodes)
    parent = list(range(nv))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in zip(adj.src[adj.valid].tolist(), adj.dst[adj.valid].tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            if ra < rb:
                parent[rb] = ra
            else:
                parent[ra] = rb
    labels = np.full(nv, -1, dtype=np.int64)
    roots: dict[int, int] = {}
    for i in range(1, nv):
        if route.tdb.nodes[i] is None:
            continue
        r = find(i)
        labels[i] = roots.setdefault(r, len(roots))
    return labels, len(roots)
