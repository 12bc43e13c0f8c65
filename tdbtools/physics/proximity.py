"""The broad phase of the collision checks (docs/physics.md §5.4): which boxes lie within a
pad of each other (:func:`box_pairs`, by a uniform grid), which cars' chords may touch side
by side (:func:`chords_within`), and the distance between segments they both rest on
(:func:`seg_dist`). The owner-by-owner pairing has a compiled kernel
(physics/_lookup_kernel.py ``owner_cross``) with this numpy code as its reference."""

from __future__ import annotations

import functools

import numpy as np

from .kernels import LazyKernel

__all__ = ["box_pairs", "chords_within", "half_chord_dists", "seg_dist"]


def seg_dist(p1: np.ndarray, q1: np.ndarray, p2: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Minimum distance between 2-D segments p1q1 and p2q2 (arrays of shape (k, 2))."""

    def point_seg(p, a, b):  # noqa: ANN001, ANN202
        ab = b - a
        den = np.einsum("ij,ij->i", ab, ab)
        t = np.where(den > 0, np.einsum("ij,ij->i", p - a, ab) / np.where(den > 0, den, 1.0), 0.0)
        t = np.clip(t, 0.0, 1.0)
        c = a + t[:, None] * ab
        return np.hypot(*(p - c).T)

    def cross(o, a, b):  # noqa: ANN001, ANN202
        return (a[:, 0] - o[:, 0]) * (b[:, 1] - o[:, 1]) - (a[:, 1] - o[:, 1]) * (b[:, 0] - o[:, 0])

    d = np.minimum.reduce(
        [point_seg(p1, p2, q2), point_seg(q1, p2, q2), point_seg(p2, p1, q1), point_seg(q2, p1, q1)]
    )
    d1, d2 = cross(p2, q2, p1), cross(p2, q2, q1)
    d3, d4 = cross(p1, q1, p2), cross(p1, q1, q2)
    crossing = (d1 * d2 < 0) & (d3 * d4 < 0)
    return np.where(crossing, 0.0, d)


#: The four pairs of halves of two cars' chords (rear → middle, middle → front), in
#: the order their distances come in (half_chord_dists).
_HALF_PAIRS = ((0, 0), (0, 1), (1, 0), (1, 1))


def half_chord_dists(Pa: np.ndarray, Pb: np.ndarray) -> np.ndarray:
    """The distances between the halves of chords ``Pa[k]`` and ``Pb[k]`` (each of shape
    (n, 3, 2): rear, middle, front), shape (4, n) in the order of ``_HALF_PAIRS``: the four
    segment pairs in one :func:`seg_dist` call (the same arithmetic row by row)."""
    d4 = seg_dist(
        np.concatenate([Pa[:, u] for u, _w in _HALF_PAIRS]),
        np.concatenate([Pa[:, u + 1] for u, _w in _HALF_PAIRS]),
        np.concatenate([Pb[:, w] for _u, w in _HALF_PAIRS]),
        np.concatenate([Pb[:, w + 1] for _u, w in _HALF_PAIRS]),
    )
    return d4.reshape(4, len(Pa))


def _cells(
    lo_x: np.ndarray, hi_x: np.ndarray, lo_z: np.ndarray, hi_z: np.ndarray, grow: float, size: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """First grid cell (x, z) of each grown box and how many cells it spans each way."""
    size = max(size, 1.0)
    cx0 = np.floor((lo_x - grow) / size).astype(np.int64)
    cz0 = np.floor((lo_z - grow) / size).astype(np.int64)
    nx = np.floor((hi_x + grow) / size).astype(np.int64) - cx0 + 1
    nz = np.floor((hi_z + grow) / size).astype(np.int64) - cz0 + 1
    return cx0, cz0, nx, nz


@functools.lru_cache(maxsize=64)
def _triu(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j of n (at most 64: kept, read-only; a check asks each time)."""
    ii, jj = np.triu_indices(n, 1)
    ii.flags.writeable = jj.flags.writeable = False
    return ii, jj


def _run_ends(sorted_keys: np.ndarray) -> np.ndarray:
    """For each entry of a sorted array, the index after the last entry equal to it."""
    n = len(sorted_keys)
    change = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    starts = np.concatenate(([0], change))
    return np.repeat(np.append(change, n), np.diff(np.append(starts, n)))


def box_pairs(
    lo_x: np.ndarray,
    hi_x: np.ndarray,
    lo_z: np.ndarray,
    hi_z: np.ndarray,
    pad: float,
    group: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``i < j`` of axis-aligned boxes within ``pad`` of each other:
    ``lo_x[i] - pad <= hi_x[j]`` and ``lo_x[j] - pad <= hi_x[i]``, the same in z, exactly
    as written; with ``group`` (integers >= 0), only pairs of different groups
    (docs/physics.md §5.4). Each box, grown by half the pad and a metre, goes into every
    cell of a uniform grid it covers; only boxes sharing a cell are compared, each pair
    in the first cell they share. The pairs come in no particular order."""
    lo_x, hi_x = np.asarray(lo_x, dtype=np.float64), np.asarray(hi_x, dtype=np.float64)
    lo_z, hi_z = np.asarray(lo_z, dtype=np.float64), np.asarray(hi_z, dtype=np.float64)
    n = len(lo_x)
    none = np.zeros(0, dtype=np.int64)
    if n < 2:
        return none, none
    if n <= 64:  # a few boxes: every pair costs less than the grid
        ii, jj = _triu(n)
        if group is not None:
            g = np.asarray(group)
            other = g[ii] != g[jj]
            ii, jj = ii[other], jj[other]
        return _within(lo_x, hi_x, lo_z, hi_z, pad, ii, jj)
    grow = 0.5 * pad + 1.0  # > pad / 2 by far more than any rounding
    ext = np.maximum(hi_x - lo_x, hi_z - lo_z)
    k90 = (9 * n) // 10
    # cells twice the size of most grown boxes: most boxes in one to four cells
    # (measured: fewer cells per box pay more than the extra pairs in each cell cost)
    size = 2.0 * (float(np.partition(ext, k90)[k90]) + 2.0 * grow)
    cx0, cz0, nx, nz = _cells(lo_x, hi_x, lo_z, hi_z, grow, size)
    if int((nx * nz).sum()) > 16 * n + 4096:
        # a few boxes far larger than most: cells as large as the largest (<= 4 each)
        cx0, cz0, nx, nz = _cells(lo_x, hi_x, lo_z, hi_z, grow, float(ext.max()) + 2.0 * grow)
    cells = nx * nz
    tot = int(cells.sum())
    if tot == n:
        box, ix, iz = np.arange(n), cx0, cz0
    else:
        box = np.repeat(np.arange(n), cells)
        w = np.arange(tot) - np.repeat(np.cumsum(cells) - cells, cells)
        nxb = nx[box]
        ix, iz = cx0[box] + w % nxb, cz0[box] + w // nxb
    ix_min, iz_min = int(ix.min()), int(iz.min())
    span_z = int(iz.max()) - iz_min + 1
    key = (ix - ix_min) * span_z + (iz - iz_min)
    g = np.arange(tot) if group is None else np.asarray(group, dtype=np.int64)[box]  # None: each its own
    groups = int(g.max()) + 1
    if (int(ix.max()) - ix_min + 1) * span_z * groups >= 2**62:  # (cells over a whole world)
        key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
    gkey = key * groups + g
    order = np.argsort(gkey)
    skey, gkey = key[order], gkey[order]
    # for each entry, the end of its run of one group in its cell and of its cell
    run_end, cell_end = _run_ends(gkey), _run_ends(skey)
    cnt = cell_end - run_end  # the later entries of other groups in the same cell
    m = int(cnt.sum())
    if not m:
        return none, none
    sel = np.flatnonzero(cnt)
    c = cnt[sel]
    p = np.repeat(sel, c)
    q = np.repeat(run_end[sel], c) + (np.arange(m) - np.repeat(np.cumsum(c) - c, c))
    sbox = box[order]
    a, b = sbox[p], sbox[q]
    if tot != n:  # each pair in the first cell both boxes cover only
        op = order[p]
        first = (ix[op] == np.maximum(cx0[a], cx0[b])) & (iz[op] == np.maximum(cz0[a], cz0[b]))
        a, b = a[first], b[first]
    return _within(lo_x, hi_x, lo_z, hi_z, pad, np.minimum(a, b), np.maximum(a, b))


def _within(
    lo_x: np.ndarray,
    hi_x: np.ndarray,
    lo_z: np.ndarray,
    hi_z: np.ndarray,
    pad: float,
    ii: np.ndarray,
    jj: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs whose boxes are within ``pad`` (box_pairs' test as written)."""
    keep = (
        (lo_x[ii] - pad <= hi_x[jj])
        & (lo_x[jj] - pad <= hi_x[ii])
        & (lo_z[ii] - pad <= hi_z[jj])
        & (lo_z[jj] - pad <= hi_z[ii])
    )
    return ii[keep], jj[keep]


def _apart(A: np.ndarray, B: np.ndarray, reach: float) -> np.ndarray:
    """Pairs of cars (rows: rear, middle, front world points, shape (k, 3, 2)) whose
    chords are provably more than ``reach`` apart: B's points all on one side of A's
    rear → front line, beyond A's middle's distance from it plus ``reach``. A car of no
    length is never apart."""
    u = A[:, 2] - A[:, 0]
    norm = np.hypot(u[:, 0], u[:, 1])
    ok = norm > 1e-6
    n = np.stack([-u[:, 1], u[:, 0]], axis=1) / np.where(ok, norm, 1.0)[:, None]
    o = A[:, 0]
    nx, nz = n[:, 0], n[:, 1]
    # B's points from A's line, and A's middle
    d0, d1, d2 = ((B[:, k, 0] - o[:, 0]) * nx + (B[:, k, 1] - o[:, 1]) * nz for k in range(3))
    w = np.abs((A[:, 1, 0] - o[:, 0]) * nx + (A[:, 1, 1] - o[:, 1]) * nz) + reach
    lo, hi = np.minimum(np.minimum(d0, d1), d2), np.maximum(np.maximum(d0, d1), d2)
    return ok & ((lo > w) | (hi < -w))


def chords_within(
    P: np.ndarray, reach: float, group: np.ndarray, owner: np.ndarray | None = None, *, compiled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``i < j`` of cars of different groups whose chords may come closer than
    ``reach``: a superset of the pairs :func:`side_collisions` finds within ``reach``
    (docs/physics.md §5.4). ``P``: each car's rear, middle and front world (X, Z),
    shape (n, 3, 2). Boxes (:func:`box_pairs`), then a band test (:func:`_apart`), then
    the distance between the chords. ``owner`` (optional; each owner's cars in a row
    and of one group): the boxes of whole owners are paired first and only their cars
    compared, the same pairs (a car's box lies inside its owner's). ``compiled``: pair
    the owners' cars with the compiled kernel when numba is there (the same pairs)."""
    X, Z = P[:, :, 0], P[:, :, 1]
    mn, mx = np.minimum, np.maximum  # (faster than reductions over 3 columns)
    lo_x, hi_x = mn(mn(X[:, 0], X[:, 1]), X[:, 2]), mx(mx(X[:, 0], X[:, 1]), X[:, 2])
    lo_z, hi_z = mn(mn(Z[:, 0], Z[:, 1]), Z[:, 2]), mx(mx(Z[:, 0], Z[:, 1]), Z[:, 2])
    if owner is None:
        ii, jj = box_pairs(lo_x, hi_x, lo_z, hi_z, reach, group=group)
    else:
        ii, jj = _owner_pairs(lo_x, hi_x, lo_z, hi_z, reach, np.asarray(group), np.asarray(owner), compiled)
    if len(ii):
        near = ~(_apart(P[ii], P[jj], reach) | _apart(P[jj], P[ii], reach))
        ii, jj = ii[near], jj[near]
    if len(ii):
        near = half_chord_dists(P[ii], P[jj]).min(axis=0) < reach
        ii, jj = ii[near], jj[near]
    return ii, jj


#: the compiled owner_cross, imported on first use (None without numba)
_CROSS = LazyKernel("_lookup_kernel", "owner_cross")


#: Up to this many box pairs from pairs of owners, every box of one owner is compared
#: with every box of the other; above, first only the boxes near the other owner's box
#: (the same pairs; measured: sorting out a few hundred costs more than it saves).
OWNER_CROSS_MAX = 8192


def _owner_pairs(
    lo_x: np.ndarray,
    hi_x: np.ndarray,
    lo_z: np.ndarray,
    hi_z: np.ndarray,
    pad: float,
    group: np.ndarray,
    owner: np.ndarray,
    compiled: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`box_pairs` of the boxes with ``group``, by way of their owners' boxes: a
    pair of boxes within ``pad`` has owners whose boxes (the boxes' bounds) are within
    ``pad``, and each box is within ``pad`` of the other's owner's box (the comparisons
    are monotonic); so only such boxes of such owners are compared, every one of one
    against every one of the other."""
    none = np.zeros(0, dtype=np.int64)
    n = len(owner)
    if n < 2:
        return none, none
    start = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
    size = np.diff(np.append(start, n))
    box = (
        np.minimum.reduceat(lo_x, start),
        np.maximum.reduceat(hi_x, start),
        np.minimum.reduceat(lo_z, start),
        np.maximum.reduceat(hi_z, start),
    )
    oi, oj = box_pairs(*box, pad, group=group[start])
    if not len(oi):
        return none, none
    cross = _CROSS() if compiled else None
    if cross is not None:  # (the same pairs in the same order, compiled)
        f8 = functools.partial(np.ascontiguousarray, dtype=np.float64)
        i8 = functools.partial(np.ascontiguousarray, dtype=np.int64)
        return cross(
            i8(oi), i8(oj), i8(start), i8(size), *map(f8, (lo_x, hi_x, lo_z, hi_z, *box)), float(pad)
        )

    def near_other(mine: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of each pair, the boxes of owner ``mine`` within ``pad`` of owner ``other``'s
        box (a box within pad of one of the other's is), pair by pair; and how many."""
        cnt = size[mine]
        tot = int(cnt.sum())
        c = np.repeat(start[mine], cnt) + (np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        o = np.repeat(other, cnt)
        olo_x, ohi_x, olo_z, ohi_z = box
        keep = (
            (lo_x[c] - pad <= ohi_x[o])
            & (olo_x[o] - pad <= hi_x[c])
            & (lo_z[c] - pad <= ohi_z[o])
            & (olo_z[o] - pad <= hi_z[c])
        )
        return c[keep], np.add.reduceat(keep, np.cumsum(cnt) - cnt).astype(np.int64)

    if int((size[oi] * size[oj]).sum()) <= OWNER_CROSS_MAX:
        ca = cb = np.arange(n)
        na, nb = size[oi], size[oj]
        ca_at, cb_at = start[oi], start[oj]
    else:
        ca, na = near_other(oi, oj)
        cb, nb = near_other(oj, oi)
        ca_at, cb_at = np.cumsum(na) - na, np.cumsum(nb) - nb
    cnt = na * nb
    tot = int(cnt.sum())
    if not tot:
        return none, none
    k = np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    nbr = np.repeat(nb, cnt)
    a = ca[np.repeat(ca_at, cnt) + k // nbr]
    b = cb[np.repeat(cb_at, cnt) + k % nbr]
    return _within(lo_x, hi_x, lo_z, hi_z, pad, np.minimum(a, b), np.maximum(a, b))
