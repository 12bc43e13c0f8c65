"""The node graph of a route's track database: node lengths, adjacency and connected
components (docs/formats.md §11)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats.route import Route

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
