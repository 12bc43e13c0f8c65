"""Locating many world points on the track at once: the vectorised search behind
:meth:`Traveller.locate_many <tdbtools.track.traveller.Traveller.locate_many>` (a grid of
sections near each point, then the exact inverse per candidate; docs/formats.md §12)."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from ..formats.route import Route
from .geometry import TILE_SIZE, locate_in_section
from .network import TravellerError, _net
from .spatial import section_grid

__all__: list[str] = []


def _as_points(tile_x, tile_z, x, z) -> tuple[np.ndarray, ...]:
    tx, tz, px, pz = np.broadcast_arrays(
        np.asarray(tile_x),
        np.asarray(tile_z),
        np.asarray(x, dtype=np.float64),
        np.asarray(z, dtype=np.float64),
    )
    tx = np.atleast_1d(tx).ravel()
    tz = np.atleast_1d(tz).ravel()
    if not (np.issubdtype(tx.dtype, np.integer) and np.issubdtype(tz.dtype, np.integer)):
        if not (
            np.all(np.isfinite(tx))
            and np.all(np.isfinite(tz))
            and np.array_equal(tx, np.round(tx))
            and np.array_equal(tz, np.round(tz))
        ):
            raise TravellerError("tile numbers must be whole numbers")
    return (tx.astype(np.int64), tz.astype(np.int64), np.atleast_1d(px).ravel(), np.atleast_1d(pz).ravel())


def _locate(route: Route, tile_x, tile_z, x, z, max_lateral: float, margin: float) -> tuple[np.ndarray, ...]:
    """The arrays of :class:`~tdbtools.track.traveller.Located` for the points, in its field order."""
    if not (max_lateral >= 0 and margin >= 0):
        raise TravellerError(f"max_lateral and margin must be >= 0, got {max_lateral!r}, {margin!r}")
    tx, tz, px, pz = _as_points(tile_x, tile_z, x, z)
    n = len(tx)
    net = _net(route)
    geom = net.geom
    grid = section_grid(route, pad=max(3.0, float(max_lateral) + float(margin)))
    X = tx * TILE_SIZE + px
    Z = tz * TILE_SIZE + pz
    found = np.zeros(n, dtype=bool)
    node = np.zeros(n, dtype=np.int64)
    sec = np.full(n, -1, dtype=np.int64)
    row = np.full(n, -1, dtype=np.int64)
    off = np.full(n, np.nan)
    soff = np.full(n, np.nan)
    lat_out = np.full(n, np.nan)
    # Points a run at a time: on a big route a cell holds thousands of sections, and
    # the candidate pairs of 10,000 points with their temporaries took ~0.25 GB. Each
    # point's pairs are worked out on their own, so the results are the same.
    for p0, p1 in _point_runs(grid.counts(X, Z)):
        pi, rows = grid.pairs(X[p0:p1], Z[p0:p1])
        _locate_run(
            net,
            geom,
            pi,
            rows,
            (tx[p0:p1], tz[p0:p1], px[p0:p1], pz[p0:p1]),
            max_lateral,
            margin,
            (found[p0:p1], node[p0:p1], row[p0:p1], soff[p0:p1], lat_out[p0:p1]),
        )
    ok = found
    sec[ok] = row[ok] - net.first_a[node[ok]]
    off[ok] = net.row_start_a[row[ok]] + soff[ok]
    return found, node, sec, row, off, soff, lat_out


#: Candidate (point, section) pairs located at a time by :func:`_locate` (memory only:
#: each pair takes ~200 bytes of temporaries; at 1 << 20, 10,000 points on a 200 MB
#: route, whose big grid cells give millions of pairs, held ~210 MB at once, the peak of
#: load + audit + locate + GeoJSON; the time is the same, benchmarks/README.md, issue 32).
_LOCATE_PAIRS = 1 << 18


def _point_runs(counts: np.ndarray) -> list[tuple[int, int]]:
    """Runs ``[p0, p1)`` of points with at most :data:`_LOCATE_PAIRS` candidate pairs
    together (at least one point each)."""
    ends = np.cumsum(counts)
    runs, p0, n = [], 0, len(counts)
    while p0 < n:
        done = int(ends[p0 - 1]) if p0 else 0
        p1 = max(p0 + 1, int(np.searchsorted(ends, done + _LOCATE_PAIRS, side="right")))
        runs.append((p0, p1))
        p0 = p1
    return runs


def _locate_run(net, geom, pi, rows, points, max_lateral, margin, out) -> None:
    """Locate one run of points from their candidate pairs (``pi`` indexes ``points``),
    writing into the views ``out`` = (found, node, row, soff, lat_out)."""
    tx, tz, px, pz = points
    found, node, row, soff, lat_out = out
    if len(rows):
        lat, lon = locate_in_section(geom, rows, tx[pi], tz[pi], px[pi], pz[pi])
        length = net.length_a[rows]
        with np.errstate(invalid="ignore"):
            ok = (np.abs(lat) <= max_lateral) & (lon >= -margin) & (lon <= length + margin)
        pi, rows, lat, lon, length = pi[ok], rows[ok], lat[ok], lon[ok], length[ok]
        if len(rows):
            nd = geom.node[rows]
            # The first accepting section of each node: rows of a point come in
            # ascending order and a node's rows are contiguous.
            o = np.lexsort((rows, nd, pi))
            pi, rows, lat, lon, length, nd = pi[o], rows[o], lat[o], lon[o], length[o], nd[o]
            first = np.r_[True, (pi[1:] != pi[:-1]) | (nd[1:] != nd[:-1])]
            group = np.cumsum(first) - 1  # (point, node) group of each pair
            g_first = np.flatnonzero(first)  # the first accepting section
            # The first later section of the group that has the point within its
            # length (the section the point is really in, past the first one's end).
            inside = ~first & (lon >= 0) & (lon <= length)
            g_inside = np.full(len(g_first), -1, dtype=np.int64)
            k_in = np.flatnonzero(inside)
            if len(k_in):
                gk = group[k_in]
                keep = np.r_[True, gk[1:] != gk[:-1]]
                g_inside[gk[keep]] = k_in[keep]
            # Then the smallest |lateral| of the first sections, ties to the lowest node.
            gp, gl, gn = pi[g_first], lat[g_first], nd[g_first]
            o = np.lexsort((gn, np.abs(gl), gp))
            o = o[np.r_[True, gp[o][1:] != gp[o][:-1]]]  # winning groups
            k = g_first[o]
            p = pi[k]
            r = rows[k].copy()
            s_off = lon[k].copy()
            # Open Rails clips lon at the first section's far end, up to 0.5 m short of
            # a point in the next section: use the section holding the point instead.
            past = s_off > length[k]
            use = past & (g_inside[o] >= 0)
            ki = g_inside[o][use]
            la = lat[k].copy()
            r[use] = rows[ki]
            s_off[use] = lon[ki]
            la[use] = lat[ki]
            found[p] = True
            node[p] = nd[k]
            row[p] = r
            soff[p] = s_off
            lat_out[p] = la
            # Past the first section with no later section holding it (a gap or the
            # node end): carry the excess on along the node, stopping at its end.
            for j in np.flatnonzero(past & ~use):
                pj, rj = int(p[j]), int(r[j])
                n_ = int(nd[k[j]])
                o_ = min(net.row_start[rj] + float(s_off[j]), net.node_len[n_])
                cum = net.cum[n_]
                s_ = min(max(bisect_right(cum, o_) - 1, 0), net.count[n_] - 1)
                row[pj] = net.first[n_] + s_
                soff[pj] = o_ - cum[s_]
