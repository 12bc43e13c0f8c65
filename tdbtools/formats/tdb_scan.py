"""The compiled walk of a large TrackNodes table (formats/_nodes_kernel.py), made once by
the STF lexer's table-run hint and handed to the bulk reader with the table's block
(docs/formats.md §6, "The compiled node scanner").

The kernel reads bytes: the table's text goes to it a few MB at a time (``CHUNK``
characters, encoded latin-1), so no copy of the whole table is ever made. What it finds is
kept in a few compact arrays (about 75 bytes a node: 17 MB for the 231,932 nodes of a
200 MB file, held from the parse to the bulk reader). A text it does not read exactly (a
character past latin-1, any node it does not take) gives None: the callers then walk the
table with the regular expressions of grammars/tdb_nodes.lark, the reference, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CHUNK", "NodeScan", "scan_nodes"]

#: Characters of the table given to the kernel at a time (doubled for a node longer).
CHUNK = 4 << 20
#: No node is shorter than this (an end node written tightly is ~74 characters).
_MIN_NODE = 40


@dataclass(eq=False)
class NodeScan:
    """The nodes of ``text[start:end]`` (``end``: after the last node) as the kernel read
    them (formats/_nodes_kernel.scan_nodes' outputs, positions in the whole text). Its
    reader drops what it has made objects of (``release_others``): the arrays are the
    size of a few hundred thousand nodes."""

    start: int
    end: int
    kinds: np.ndarray  # int8: 0 vector, 1 junction, 2 end
    vspan: np.ndarray  # int64 (vectors, 2): the sections' text
    vpins: np.ndarray  # int32 (vectors, 4)
    vrefs: np.ndarray  # int64 (vectors,): end of each node's references in ``refs``
    refs: np.ndarray  # int32
    ospan: np.ndarray  # int64 (others, 2): the TrJunctionNode / TrEndNode values' text
    oints: np.ndarray  # int32 (others, 12): 6 UiD ints, then the pins (2 or 6 values)
    oflts: np.ndarray  # float64 (others, 6): the UiD floats (0 where ``slow`` lists one)
    slow: np.ndarray  # int64 (n, 4): UiD floats off the kernel's fast path: row, which, span

    def release_others(self) -> None:
        """Forgets the junction and end nodes' arrays (made into nodes already)."""
        self.ospan, self.oints, self.oflts, self.slow = _EMPTY_OTHERS

    @property
    def nbytes(self) -> int:
        return sum(
            a.nbytes
            for a in (
                self.kinds,
                self.vspan,
                self.vpins,
                self.vrefs,
                self.refs,
                self.ospan,
                self.oints,
                self.oflts,
                self.slow,
            )
        )


_EMPTY_OTHERS = (
    np.empty((0, 2), np.int64),
    np.empty((0, 12), np.int32),
    np.empty((0, 6), np.float64),
    np.empty((0, 4), np.int64),
)


def scan_nodes(text: str, start: int, count: int, stop: int | None = None) -> NodeScan | None:
    """The nodes of a TrackNodes table's text from ``start`` (just after its count) up to
    ``stop`` (default: the text's end), numbered from 1, or None where the kernel does
    not take them all or they are more than ``count`` (see the module's text). The walk
    ends before white space and a ")" or at ``stop``; the callers check what follows,
    as after the reference's walk."""
    from ._nodes_kernel import DONE, GIVE_UP
    from ._nodes_kernel import scan_nodes as kernel

    if stop is None:
        stop = len(text)
    # Made once at their largest size (never more than the text can hold): pages not
    # written are never given memory, and resize gives the tail back in place (no
    # slices joined: those and their copy were ~150 MB more at the parse's peak).
    cap = max(min(count, (stop - start) // _MIN_NODE + 1), 0)
    kinds = np.empty(cap, dtype=np.int8)
    vspan = np.empty((cap, 2), dtype=np.int64)
    vpins = np.empty((cap, 4), dtype=np.int32)
    vrefs = np.empty(cap, dtype=np.int64)
    refs = np.empty((stop - start) // 12 + 1, dtype=np.int32)  # ("TrItemRef(1)" and a space)
    ospan = np.empty((cap, 2), dtype=np.int64)
    oints = np.zeros((cap, 12), dtype=np.int32)
    oflts = np.empty((cap, 6), dtype=np.float64)
    # UiD floats off the fast path: usually none; more than this many (a table of
    # nothing else) and the kernel gives up: the regex walk reads it, as before.
    slow = np.empty((cap // 4 + 64, 4), dtype=np.int64)
    counters = np.zeros(5, dtype=np.int64)
    base, size = start, CHUNK
    while True:
        hi = min(base + size, stop)
        last = hi == stop
        try:
            buf = np.frombuffer(text[base:hi].encode("latin-1"), dtype=np.uint8)
        except UnicodeEncodeError:
            return None
        before = int(counters[0])
        status, pos = kernel(
            buf, base, last, counters, kinds, vspan, vpins, vrefs, refs, ospan, oints, oflts, slow
        )
        del buf
        if status == GIVE_UP:
            return None
        if status == DONE:
            break
        if counters[0] == before:
            size *= 2  # a node longer than the buffer, or one the last buffer will refuse
        else:
            base, size = base + pos, CHUNK
    nn, nv, no, nr, ns = (int(c) for c in counters)
    arrays = []
    for a, rows in (
        (kinds, nn),
        (vspan, nv),
        (vpins, nv),
        (vrefs, nv),
        (refs, nr),
        (ospan, no),
        (oints, no),
        (oflts, no),
        (slow, ns),
    ):
        a.resize((rows,) + a.shape[1:], refcheck=False)
        arrays.append(a)
    return NodeScan(start, base + pos, *arrays)
