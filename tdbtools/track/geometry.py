"""Section geometry (docs/formats.md §4, §11): positions along track sections, the inverse
("where is this point in that section"). Polylines are :mod:`tdbtools.track.polylines`,
closure checks :mod:`tdbtools.track.closure`, the node graph :mod:`tdbtools.track.graph`. Everything is numpy float64 and vectorised over sections.

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
from dataclasses import dataclass

import numpy as np

from ..formats.route import Route

TILE_SIZE = 2048.0
HALF_TILE = 1024.0

__all__ = [
    "MAX_OFFSET",
    "TILE_SIZE",
    "SectionGeometry",
    "TrackPoint",
    "WorldPoint",
    "section_geometry",
    "point_at",
    "section_end",
    "section_end_xyz",
    "locate_in_section",
    "absolute_xz",
    "normalize_tile",
    "tile_of",
    "to_tile",
    "wrap_angle",
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


#: Beyond this magnitude (m) :func:`tile_of` leaves a coordinate to :func:`normalize_tile`
#: (whole tiles then no longer fit a float's integers exactly; NaN and ±inf too).
_TILE_OF_MAX = 2.0**50


def tile_of(x: float) -> tuple[int, float] | None:
    """:func:`normalize_tile` of one coordinate in Python floats: ``(tile, offset)`` with
    the same operations and so the same numbers (a replay's engine events are located
    two or three at a time, where numpy's calls cost more than the arithmetic); None
    for a coordinate that is not finite or beyond ±2⁵⁰ m (the caller takes the arrays)."""
    if not -_TILE_OF_MAX < x < _TILE_OF_MAX:
        return None
    k = math.floor((x + HALF_TILE) / TILE_SIZE)
    return k, x - k * TILE_SIZE


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


def _norm3(v: np.ndarray) -> np.ndarray:
    """Lengths of 3-vectors (rows) without overflow for any finite input (hypot scales)."""
    return np.hypot(np.hypot(v[:, 0], v[:, 1]), v[:, 2])
