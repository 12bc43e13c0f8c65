"""A spatial index of track sections: which sections can be near a world point.

A :class:`SectionGrid` is a uniform grid over absolute world X/Z (metres, across
tiles). Every section is cut into pieces no longer than a cell (curves also into
pieces of at most π/32); each piece is entered in the cells its padded box touches,
and a query returns the sections entered in the cell of a point. The boxes cover
the whole centre line (the sagitta of curved pieces is added) grown by ``pad``
metres, so **every section whose centre line passes within ``pad`` metres of a
point is among the point's candidates**. Memory grows with the length of track,
never with the area a long section spans, and the cell grows when a route claims
more track than :data:`MAX_PIECES` cells can hold. Building and querying are
vectorised with numpy; batch queries return (point, section row) pairs.

The grid, and the cleaned section geometry the traveller works on
(:func:`track_geometry`), are cached per route object on first use. Routes can
neither be hashed nor weakly referenced, so the cache is keyed by ``id(route)``,
keeps the route it was built for (an identity check, so a recycled id never
returns stale data), and holds the last few routes only (:data:`CACHE_SIZE`).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats.route import Route
from .geometry import TILE_SIZE, SectionGeometry, locate_in_section, point_at, section_end, section_geometry

__all__ = [
    "CACHE_SIZE",
    "MAX_PIECES",
    "SectionGrid",
    "clear_route_cache",
    "distance_to_sections",
    "nearest_track",
    "route_cache",
    "section_grid",
    "track_geometry",
]

#: How many routes keep their derived data (geometry, grid, item positions).
CACHE_SIZE = 4

_CACHE: OrderedDict[int, tuple[Route, dict[str, Any]]] = OrderedDict()


def route_cache(route: Route) -> dict[str, Any]:
    """The dictionary of derived data kept for ``route`` (made on first use)."""
    key = id(route)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is route:
        _CACHE.move_to_end(key)
        return hit[1]
    data: dict[str, Any] = {}
    _CACHE[key] = (route, data)
    _CACHE.move_to_end(key)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return data


def cached(route: Route, name: str, factory: Callable[[], Any]) -> Any:
    """``route_cache(route)[name]``, computed by ``factory()`` the first time."""
    data = route_cache(route)
    try:
        return data[name]
    except KeyError:
        value = data[name] = factory()
        return value


def clear_route_cache() -> None:
    """Forget every route's derived data."""
    _CACHE.clear()


# -- the geometry the traveller works on -------------------------------------------------


def clean_geometry(geom: SectionGeometry) -> SectionGeometry:
    """A copy of ``geom`` in which degenerate curves are straights.

    Real routes have zero-length "curves" (DK24: route-local ids such as 50004 with
    radius 5e-43 and angle 0). As circles they have no usable direction: the exact
    projection would accept any point within the lateral tolerance of the section's
    start *whatever its direction*, and Open Rails' asin gives NaN. Treated as a
    straight of length 0 along the recorded heading AY, they accept only points
    beside their start. Curves with a radius or angle of 0 (length 0) become such
    straights; the length of every other row is unchanged.
    """
    r = geom.radius
    degenerate = ~np.isnan(r) & ((r <= 1e-6) | (geom.angle == 0))
    if not degenerate.any():
        return geom
    radius = np.where(degenerate, np.nan, r)
    angle = np.where(degenerate, 0.0, geom.angle)
    length = np.where(degenerate & geom.known, r * np.abs(geom.angle), geom.length)
    length = np.where(degenerate & geom.known & ~np.isfinite(length), 0.0, length)
    return SectionGeometry(
        geom.tile_x,
        geom.tile_z,
        geom.x,
        geom.y,
        geom.z,
        geom.ax,
        geom.ay,
        geom.az,
        radius,
        angle,
        length,
        geom.known,
        geom.node,
        geom.section_index,
    )


def track_geometry(route: Route) -> SectionGeometry:
    """:func:`~tdbtools.track.geometry.section_geometry` of ``route`` with degenerate
    curves made straights (:func:`clean_geometry`); cached per route."""
    return cached(route, "geometry", lambda: clean_geometry(section_geometry(route, copy=False)))


# -- the grid ----------------------------------------------------------------------------


#: At most about this many pieces of centre line are indexed: the cell grows for routes
#: whose total length would need more (docs/security.md §2), so that memory is bounded
#: whatever lengths a file claims. DK24 (830 km) needs about 26,000
#: at the default cell; 100,000 take about 0.3 s to index.
MAX_PIECES = 100_000
#: Curves are cut into pieces of at most this angle (π/32) for their sagitta bound ...
_PIECE_ANGLE = math.pi / 32
#: ... and into at most this many pieces by angle (a real curve turns less than 2π).
_MAX_ANGLE_PIECES = 64
#: Rows (and pieces) handled at a time while building a grid (memory, not results).
_CHUNK = 1 << 17


def _piece_boxes(geom: SectionGeometry, rows: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Boxes Xmin, Zmin, Xmax, Zmax (absolute) of the centre line of ``rows`` cut into
    pieces no longer than ``cell`` (and no more than π/32 of a curve), with the row of
    each piece. A long section is many small boxes, never one box of its whole extent."""
    length = geom.length[rows]
    angle = np.abs(geom.angle[rows])
    curved = ~np.isnan(geom.radius[rows])
    k_len = np.ceil(length / cell)
    k_ang = np.where(curved, np.minimum(np.ceil(angle / _PIECE_ANGLE), _MAX_ANGLE_PIECES), 1.0)
    k = np.maximum(np.maximum(k_len, k_ang), 1.0).astype(np.int64)
    m = k + 1
    rep = np.repeat(np.arange(len(rows)), m)
    first = np.cumsum(m) - m
    j = np.arange(len(rep)) - np.repeat(first, m)
    frac = j / k[rep]
    p = point_at(geom, rows[rep], length[rep] * frac)
    X = p.tile_x * TILE_SIZE + p.x
    Z = p.tile_z * TILE_SIZE + p.z
    # Piece i of a row runs from sample i to sample i + 1 (the last sample ends a row).
    last = np.zeros(len(rep), dtype=bool)
    last[first + k] = True
    a = np.flatnonzero(~last)
    piece_row = rep[a]
    box = np.empty((len(a), 4))
    box[:, 0] = np.minimum(X[a], X[a + 1])
    box[:, 1] = np.minimum(Z[a], Z[a + 1])
    box[:, 2] = np.maximum(X[a], X[a + 1])
    box[:, 3] = np.maximum(Z[a], Z[a + 1])
    # A curved piece bulges by its sagitta R(1 − cos(Δθ/2)) from its chord; a piece of
    # more than a half turn (only a capped, implausible curve) by up to 2R.
    r = geom.radius[rows]
    dtheta = angle / k
    sag = np.where(curved, np.where(dtheta <= math.pi, r * (1 - np.cos(dtheta / 2)), 2 * r), 0.0)
    sag_p = sag[piece_row]
    box[:, :2] -= sag_p[:, None]
    box[:, 2:] += sag_p[:, None]
    return box, rows[piece_row]


def _piece_cells(
    geom: SectionGeometry, rows: np.ndarray, cell: float, pad: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lowest and highest cell (ix, iz) of the padded boxes of :func:`_piece_boxes`,
    and their rows; pieces whose cells are not finite or beyond ±2^40 are dropped."""
    with np.errstate(all="ignore"):  # absurd geometry gives inf/NaN, dropped here
        box, piece_rows = _piece_boxes(geom, rows, cell)
        box[:, :2] -= pad
        box[:, 2:] += pad
        lo_f = np.floor(box[:, :2] / cell)
        hi_f = np.floor(box[:, 2:] / cell)
    del box
    ok = (
        np.isfinite(lo_f).all(axis=1)
        & np.isfinite(hi_f).all(axis=1)
        & (np.abs(lo_f) < 2.0**40).all(axis=1)
        & (np.abs(hi_f) < 2.0**40).all(axis=1)
    )
    if not ok.all():
        lo_f, hi_f, piece_rows = lo_f[ok], hi_f[ok], piece_rows[ok]
    return lo_f.astype(np.int64), hi_f.astype(np.int64), piece_rows


@dataclass(frozen=True, slots=True, eq=False)
class SectionGrid:
    """Sections by grid cell (see the module docstring).

    ``keys`` are the sorted distinct cell keys in use, section rows of cell
    ``keys[i]`` are ``rows[starts[i]:starts[i + 1]]`` (ascending). A cell key is
    ``(ix − ix0)·nz + (iz − iz0)`` with ``ix = floor(X / cell)``.
    """

    cell: float
    pad: float
    ix0: int
    iz0: int
    nx: int
    nz: int
    keys: np.ndarray
    starts: np.ndarray
    rows: np.ndarray

    @classmethod
    def build(cls, geom: SectionGeometry, *, pad: float = 3.0, cell: float = 32.0) -> SectionGrid:
        """Index the rows of ``geom`` whose section id is known (unknown sections
        have no geometry and are never candidates)."""
        if not (pad >= 0 and cell > 0):
            raise ValueError(f"pad must be >= 0 and cell > 0, got pad={pad!r} cell={cell!r}")
        rows = np.flatnonzero(geom.known & np.isfinite(geom.length) & (geom.length >= 0))
        if len(rows) == 0:
            e = np.zeros(0, dtype=np.int64)
            return cls(float(cell), float(pad), 0, 0, 1, 1, e, np.zeros(1, dtype=np.int64), e)
        with np.errstate(all="ignore"):  # absurd geometry gives inf/NaN, dropped below
            total = float(np.sum(geom.length[rows]))
            # Bounded by construction: the cell grows until the pieces fit the budget,
            # and is never smaller than the padding (a piece then spans ≤ 3 x 3 cells).
            cell = max(float(cell), 2.0 * float(pad), total / MAX_PIECES if math.isfinite(total) else 0.0)
            # Row by row, so in chunks: point_at's ~25 temporaries over all the samples
            # of a 200 MB route held ~0.5 GB at once; only each chunk's cell ranges
            # are kept (element-wise, so the same as over the whole table).
            parts = [_piece_cells(geom, rows[a : a + _CHUNK], cell, pad) for a in range(0, len(rows), _CHUNK)]
        piece_rows = np.concatenate([r for _, _, r in parts])
        if len(piece_rows) == 0:
            e = np.zeros(0, dtype=np.int64)
            return cls(float(cell), float(pad), 0, 0, 1, 1, e, np.zeros(1, dtype=np.int64), e)
        lo = np.concatenate([lo_c for lo_c, _, _ in parts])
        hi = np.concatenate([hi_c for _, hi_c, _ in parts])
        del parts
        ix0, iz0 = int(lo[:, 0].min()), int(lo[:, 1].min())
        nx = int(hi[:, 0].max()) - ix0 + 1
        nz = int(hi[:, 1].max()) - iz0 + 1
        keys_parts, rows_parts = [], []
        for c0 in range(0, len(piece_rows), _CHUNK):  # the same entries, in the same order
            lo_c, hi_c = lo[c0 : c0 + _CHUNK], hi[c0 : c0 + _CHUNK]
            wx = hi_c[:, 0] - lo_c[:, 0] + 1
            wz = hi_c[:, 1] - lo_c[:, 1] + 1
            n = wx * wz
            rep = np.repeat(np.arange(len(lo_c)), n)
            first = np.cumsum(n) - n
            k = np.arange(len(rep)) - np.repeat(first, n)
            cx = lo_c[rep, 0] + k // wz[rep] - ix0
            cz = lo_c[rep, 1] + k % wz[rep] - iz0
            keys_parts.append(cx * nz + cz)
            rows_parts.append(piece_rows[c0 : c0 + _CHUNK][rep])
        del lo, hi, piece_rows
        key = np.concatenate(keys_parts)
        entry_rows = np.concatenate(rows_parts)
        del keys_parts, rows_parts
        # A section's neighbouring pieces share cells: keep each (cell, section) once.
        order = np.lexsort((entry_rows, key))
        key = key[order]
        entry_rows = entry_rows[order]
        del order
        keep = np.ones(len(key), dtype=bool)
        keep[1:] = (key[1:] != key[:-1]) | (entry_rows[1:] != entry_rows[:-1])
        key = key[keep]
        cell_rows = entry_rows[keep]
        keys, starts = np.unique(key, return_index=True)
        starts = np.append(starts, len(key)).astype(np.int64)
        return cls(float(cell), float(pad), ix0, iz0, nx, nz, keys, starts, cell_rows)

    def __len__(self) -> int:
        """The number of (cell, section) entries."""
        return len(self.rows)

    def _cells(self, X: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(start, stop) into :attr:`rows` for every point (empty where no section)."""
        with np.errstate(invalid="ignore"):
            ix = np.floor(X / self.cell) - self.ix0
            iz = np.floor(Z / self.cell) - self.iz0
        inside = (ix >= 0) & (ix < self.nx) & (iz >= 0) & (iz < self.nz)  # NaN → False
        key = np.where(inside, ix, 0).astype(np.int64) * self.nz + np.where(inside, iz, 0).astype(np.int64)
        pos = np.searchsorted(self.keys, key)
        pos = np.minimum(pos, max(len(self.keys) - 1, 0))
        hit = inside & (len(self.keys) > 0)
        if len(self.keys):
            hit &= self.keys[pos] == key
        a = np.where(hit, self.starts[pos], 0)
        b = np.where(hit, self.starts[np.minimum(pos + 1, len(self.starts) - 1)], 0)
        return a, b

    def counts(self, X, Z) -> np.ndarray:
        """The number of candidate section rows of each absolute point X, Z."""
        X = np.atleast_1d(np.asarray(X, dtype=np.float64))
        Z = np.atleast_1d(np.asarray(Z, dtype=np.float64))
        a, b = self._cells(X, Z)
        return b - a

    def pairs(self, X, Z) -> tuple[np.ndarray, np.ndarray]:
        """Candidate (point index, section row) pairs for absolute points X, Z
        (1-d arrays), grouped by point, rows ascending within a point."""
        X = np.atleast_1d(np.asarray(X, dtype=np.float64))
        Z = np.atleast_1d(np.asarray(Z, dtype=np.float64))
        a, b = self._cells(X, Z)
        n = b - a
        total = int(n.sum())
        pidx = np.repeat(np.arange(len(X)), n)
        first = np.cumsum(n) - n
        off = np.arange(total) - np.repeat(first, n)
        return pidx, self.rows[np.repeat(a, n) + off]

    def candidates(self, X: float, Z: float) -> np.ndarray:
        """Section rows that may lie within :attr:`pad` of the absolute point (X, Z)."""
        a, b = self._cells(np.array([float(X)]), np.array([float(Z)]))
        return self.rows[int(a[0]) : int(b[0])]


def section_grid(route: Route, pad: float = 3.0, cell: float = 32.0) -> SectionGrid:
    """The :class:`SectionGrid` of ``route``'s :func:`track_geometry` (cached per
    route, pad and cell)."""
    return cached(
        route,
        f"grid:{float(pad)!r}:{float(cell)!r}",
        lambda: SectionGrid.build(track_geometry(route), pad=pad, cell=cell),
    )


# -- the nearest section, by exhaustive scan -------------------------------------------


def distance_to_sections(
    geom: SectionGeometry, start_xz: np.ndarray, end_xz: np.ndarray, rows, tile_x, tile_z, x, z
) -> tuple[np.ndarray, np.ndarray]:
    """Horizontal distance from points to sections (broadcast), and the offset along
    each section of the nearest point of it (metres, clamped to [0, length]).

    Inside the section's extent (0 ≤ lon ≤ length) the distance is |lat| from the exact
    inverse (:func:`locate_in_section`); outside, the distance to the nearer end point.
    Unknown sections count from their start point only."""
    rows = np.asarray(rows, dtype=np.intp)
    lat, lon = locate_in_section(geom, rows, tile_x, tile_z, x, z)
    length = geom.length[rows]
    PX = np.asarray(tile_x, dtype=np.float64) * TILE_SIZE + np.asarray(x, dtype=np.float64)
    PZ = np.asarray(tile_z, dtype=np.float64) * TILE_SIZE + np.asarray(z, dtype=np.float64)
    d_start = np.hypot(PX - start_xz[rows, 0], PZ - start_xz[rows, 1])
    d_end = np.hypot(PX - end_xz[rows, 0], PZ - end_xz[rows, 1])
    d_end = np.where(np.isnan(d_end), np.inf, d_end)
    inside = (lon >= 0) & (lon <= length)  # False where NaN
    d = np.where(inside, np.abs(lat), np.minimum(d_start, d_end))
    off = np.where(inside, lon, np.where(d_start <= d_end, 0.0, length))
    return d, np.nan_to_num(off, nan=0.0)


def nearest_track(
    route: Route, tile_x, tile_z, x, z, *, geom: SectionGeometry | None = None, chunk: int = 64
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each world point, the nearest section of any vector node by horizontal
    distance (an exhaustive, vectorised scan over all sections — no spatial index).

    Returns ``(distance m, section row, offset m along that row)``; row −1 and
    distance inf when the route has no sections."""
    geom = section_geometry(route) if geom is None else geom
    tx, tz, px, pz = (np.atleast_1d(np.asarray(a)) for a in np.broadcast_arrays(tile_x, tile_z, x, z))
    n = len(px)
    dist = np.full(n, np.inf)
    row = np.full(n, -1, dtype=np.int64)
    off = np.zeros(n)
    S = len(geom)
    if S == 0 or n == 0:
        return dist, row, off
    end = section_end(geom)
    start_xz = np.stack([geom.tile_x * TILE_SIZE + geom.x, geom.tile_z * TILE_SIZE + geom.z], -1)
    end_xz = np.stack([end.X, end.Z], -1)
    rows = np.arange(S)[None, :]
    step = max(1, int(chunk))
    for a in range(0, n, step):
        b = min(n, a + step)
        d, o = distance_to_sections(
            geom, start_xz, end_xz, rows, tx[a:b, None], tz[a:b, None], px[a:b, None], pz[a:b, None]
        )
        d = np.where(np.isnan(d), np.inf, d)
        k = np.argmin(d, axis=1)
        r = np.arange(b - a)
        dist[a:b] = d[r, k]
        row[a:b] = k
        off[a:b] = o[r, k]
    return dist, row, off
