"""Track sections as polylines within a chord error, node by node or the whole route in
chunks (docs/formats.md §11; the geometry is :mod:`tdbtools.track.geometry`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..formats.route import Route
from ..formats.tdb import VectorNode
from .geometry import (
    SectionGeometry,
    _norm3,
    absolute_xz,
    point_at,
    section_geometry,
)

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
