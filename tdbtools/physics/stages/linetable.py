"""All trains' lines in one table (the global distance every per-car lookup uses)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..trackline import TrackLine


class LineTable:
    """All trains' lines in one table, so that per-car lookups (elevation under each
    bogie, curvature, world position) are single numpy calls over every car. Line k
    occupies [base[k], base[k] + length] of a global distance."""

    GAP = 10.0

    def __init__(self, lines: list[TrackLine], *, compiled: bool = False) -> None:
        """``compiled``: look up with the compiled kernels (the replay's choice,
        kernels.replay_compiled; the same numbers)."""
        self.base = []
        S, Y, X, Z, P1, PC = [], [], [], [], [], []
        base = 0.0
        for ln in lines:
            self.base.append(base)
            S.append(ln.s + base)
            Y.append(ln.y)
            X.append(ln.X)
            Z.append(ln.Z)
            P1.append(ln.pieces.s1 + base)
            PC.append(ln.pieces.curvature)
            base += ln.length + self.GAP
        self.S, self.Y, self.X, self.Z = (np.concatenate(a) for a in (S, Y, X, Z))
        self.P1, self.PC = np.concatenate(P1), np.concatenate(PC)
        # the piece ends around each searchsorted count i: P1[i − 1] and P1[i]
        self.P1_lo = np.concatenate(([-np.inf], self.P1))
        self.P1_hi = np.concatenate((self.P1, [np.inf]))
        # The node traversals of every line, for the collision checks' broad phase:
        # global end distance and node of each, and where each line's rows start.
        self.SEG0 = np.concatenate([ln.seg_s0 + b for ln, b in zip(lines, self.base)])
        self.SEG1 = np.concatenate([ln.seg_s1 + b for ln, b in zip(lines, self.base)])
        self.SEG_NODE = np.concatenate([ln.seg_node for ln in lines])
        self.SEG_DIR = np.concatenate([ln.seg_dir for ln in lines])
        self.SEG_OFF0 = np.concatenate([ln.seg_off0 for ln in lines])
        self.seg_first = np.cumsum([0] + [len(ln.seg_s1) for ln in lines])
        # each line's own distances, for lookups that give what the line's own give
        self.SL = np.concatenate([ln.s for ln in lines])
        self.SEG1L = np.concatenate([ln.seg_s1 for ln in lines])
        self.pt_first = np.cumsum([0] + [len(ln.s) for ln in lines])
        # np.interp compiled, with each point's table row kept per call site between
        # calls (tdbtools.physics._lookup_kernel; the same numbers), when numba is there
        self._interp = None
        self.boxes_near: Callable | None = None  # (the watching stage's sweep of the trains' boxes)
        self._on_lines: Callable | None = None
        if compiled:
            from .._lookup_kernel import boxes_near, interp, on_lines

            self._interp = interp
            self.boxes_near = boxes_near
            self._on_lines = on_lines
        self._base = np.asarray(self.base, dtype=np.float64)
        self._rows: dict[str, np.ndarray] = {}

    def _lookup(self, g: np.ndarray, site: str, f1: np.ndarray, f2: np.ndarray | None = None):
        """``np.interp(g, S, f1)`` (and of ``f2``) for the points of one call ``site``."""
        k = self._interp
        if k is None:
            return np.interp(g, self.S, f1), (None if f2 is None else np.interp(g, self.S, f2))
        g = np.ascontiguousarray(g, dtype=np.float64)
        rows = self._rows.get(site)
        if rows is None or rows.size != g.size:
            rows = self._rows[site] = np.full(g.size, -1, dtype=np.int64)
        o1 = np.empty(g.size)
        o2 = o1 if f2 is None else np.empty(g.size)
        k(g, self.S, f1, f1 if f2 is None else f2, o1, o2, rows, f2 is not None)
        return o1, (None if f2 is None else o2)

    def elevation(self, g: np.ndarray, site: str | None = None) -> np.ndarray:
        if site is None:
            return np.interp(g, self.S, self.Y)
        return self._lookup(g, site, self.Y)[0]

    def curvature(self, g: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.P1, g, side="left")
        return self.PC[np.minimum(i, len(self.PC) - 1)]

    def world_xz(self, g: np.ndarray, site: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        if site is None:
            return np.interp(g, self.S, self.X), np.interp(g, self.S, self.Z)
        X, Z = self._lookup(g, site, self.X, self.Z)
        assert Z is not None
        return X, Z

    def on_lines(self, line: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, ...]:
        """(node, X, Z, height) at distances ``s`` (within [0, length]) of lines ``line``:
        bit for bit what each line's own ``node_offset``, ``world_xz`` and ``elevation``
        give, for points on many lines in one go. The global table finds each row to
        within rounding; a few steps over the line's own distances make it the line's,
        and the linear interpolation is np.interp's, operation for operation (compiled
        when the table is: the same numbers point by point)."""
        k = self._on_lines
        if k is not None:
            n = len(s)
            node, X, Z, Y = np.empty(n, dtype=self.SEG_NODE.dtype), np.empty(n), np.empty(n), np.empty(n)
            k(
                np.ascontiguousarray(line, dtype=np.int64), np.ascontiguousarray(s, dtype=np.float64),
                self._base, self.seg_first, self.SEG1, self.SEG1L, self.pt_first, self.S, self.SL,
                self.SEG_NODE, self.X, self.Z, self.Y, node, X, Z, Y,
            )  # fmt: skip
            return node, X, Z, Y
        g = s + self._base[line]
        # the node traversal: the line's searchsorted(seg_s1, s, "left"), clipped
        f, last = self.seg_first[line], self.seg_first[line + 1] - 1
        i = settle(np.clip(np.searchsorted(self.SEG1, g, side="left"), f, last), f, last, s, self.SEG1L, True)
        # the sample row: the last one at or before s (np.interp's)
        p0, p1 = self.pt_first[line], self.pt_first[line + 1] - 1
        j = settle(np.clip(np.searchsorted(self.S, g, side="right") - 1, p0, p1), p0, p1, s, self.SL, False)
        jn = np.minimum(j + 1, p1)
        sj = self.SL[j]
        den = self.SL[jn] - sj
        den[den == 0.0] = 1.0  # (only at a line's last sample, whose value is taken as it is)
        as_is = (j == p1) | (sj == s)
        left = s < self.SL[p0]
        d = s - sj

        def interp(col: np.ndarray) -> np.ndarray:
            cj = col[j]
            out = np.where(as_is, cj, (col[jn] - cj) / den * d + cj)
            return np.where(left, col[p0], out)

        return self.SEG_NODE[i], interp(self.X), interp(self.Z), interp(self.Y)


def settle(
    i: np.ndarray, lo: np.ndarray, hi: np.ndarray, s: np.ndarray, table: np.ndarray, left: bool
) -> np.ndarray:
    """Rows ``i`` (within [lo, hi] each) moved until ``table[i - 1] < s <= table[i]``
    (``left``; searchsorted "left") or ``table[i] <= s < table[i + 1]`` (else; "right"
    less one), or a bound is reached: what a search of the row's own stretch gives."""
    while True:
        down = (i > lo) & ((table[np.maximum(i - 1, lo)] >= s) if left else (table[i] > s))
        if not down.any():
            break
        i = i - down
    while True:
        up = (i < hi) & ((table[i] < s) if left else (table[np.minimum(i + 1, hi)] <= s))
        if not up.any():
            break
        i = i + up
    return i
