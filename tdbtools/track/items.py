"""Track items along their vector nodes: where each referenced item lies (from its
TrItemRData projected on the node, else its TrItemSData distance), cached per route;
and the record of an item a traveller passes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats.route import Route
from ..formats.tdb import TrItem
from .geometry import locate_in_section
from .network import _VECTOR, _net
from .spatial import cached

__all__ = ["ItemPosition", "PassedItem", "item_positions"]

# -- track items along their nodes -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ItemPosition:
    """Where a track item is on a vector node that references it.

    ``offset`` is metres from the node start, from the item's TrItemRData position
    projected onto the node (``source`` "rdata"; ``lateral`` its distance to the right
    of the centre line) or, without RData, its TrItemSData distance ("sdata").
    """

    item: TrItem
    node_index: int
    offset: float
    lateral: float
    source: str


@dataclass(frozen=True, slots=True)
class PassedItem:
    """A track item passed during a move.

    ``distance`` is the distance travelled (≥ 0) from the start of the move to the
    item; ``direction`` the direction of motion through the node (1 = along the
    node's forward direction): compare it with a signal's ``direction``.
    """

    item: TrItem
    distance: float
    node_index: int
    offset: float
    direction: int


class _ItemTable:
    def __init__(self, by_node: dict[int, tuple[ItemPosition, ...]]) -> None:
        self.by_node = by_node
        self.offsets = {n: [p.offset for p in v] for n, v in by_node.items()}


def _item_table(route: Route) -> _ItemTable:
    def build() -> _ItemTable:
        net = _net(route)
        geom = net.geom
        items: tuple[Any, ...] = route.tdb.items
        pair_node: list[int] = []
        pair_item: list[int] = []
        fallback: list[ItemPosition] = []
        for i in range(1, net.n_nodes):
            if net.kind[i] != _VECTOR:
                continue
            for ref in net.nodes[i].item_refs:
                if not 0 <= ref < len(items):
                    continue
                it = items[ref]
                if it.r_data is not None and net.count[i]:
                    pair_node.append(i)
                    pair_item.append(ref)
                elif it.s_data is not None:
                    off = min(max(float(it.s_data.distance), 0.0), net.node_len[i])
                    fallback.append(ItemPosition(it, i, off, math.nan, "sdata"))
        found: list[ItemPosition] = list(fallback)
        if pair_node:
            pn = np.array(pair_node, dtype=np.int64)
            cnt = np.array([net.count[i] for i in pair_node], dtype=np.int64)
            fst = np.array([net.first[i] for i in pair_node], dtype=np.int64)
            rep = np.repeat(np.arange(len(pn)), cnt)
            start = np.cumsum(cnt) - cnt
            rows = fst[rep] + (np.arange(len(rep)) - np.repeat(start, cnt))
            rd = [items[k].r_data for k in pair_item]
            tx = np.array([r.tile_x for r in rd], dtype=np.int64)[rep]
            tz = np.array([r.tile_z for r in rd], dtype=np.int64)[rep]
            px = np.array([r.x for r in rd])[rep]
            pz = np.array([r.z for r in rd])[rep]
            lat, lon = locate_in_section(geom, rows, tx, tz, px, pz)
            length = net.length_a[rows]
            excess = np.maximum(np.maximum(-lon, lon - length), 0.0)
            dist = np.hypot(lat, excess)
            dist = np.where(np.isfinite(dist) & net.known_a[rows], dist, np.inf)
            order = np.lexsort((rows, dist, rep))
            firsts = order[np.r_[True, rep[order][1:] != rep[order][:-1]]]
            for k in firsts:
                p = int(rep[k])
                node = pair_node[p]
                if not np.isfinite(dist[k]):
                    it = items[pair_item[p]]
                    if it.s_data is not None:
                        off = min(max(float(it.s_data.distance), 0.0), net.node_len[node])
                        found.append(ItemPosition(it, node, off, math.nan, "sdata"))
                    continue
                r = int(rows[k])
                soff = min(max(float(lon[k]), 0.0), net.length[r])
                off = min(max(net.row_start[r] + soff, 0.0), net.node_len[node])
                found.append(ItemPosition(items[pair_item[p]], node, off, float(lat[k]), "rdata"))
        by_node: dict[int, list[ItemPosition]] = {}
        for pos in found:
            by_node.setdefault(pos.node_index, []).append(pos)
        return _ItemTable(
            {n: tuple(sorted(v, key=lambda q: (q.offset, q.item.index))) for n, v in sorted(by_node.items())}
        )

    return cached(route, "traveller-items", build)


def item_positions(route: Route) -> dict[int, tuple[ItemPosition, ...]]:
    """Every referenced track item's position along its vector node(s): node index →
    positions sorted by offset (cached per route)."""
    return dict(_item_table(route).by_node)
