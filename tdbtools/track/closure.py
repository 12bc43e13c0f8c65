"""Closure checks: does each section end where the next one starts (docs/formats.md §11;
the geometry is :mod:`tdbtools.track.geometry`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode, VectorNode
from .geometry import (
    _END_CHUNK,
    TILE_SIZE,
    SectionGeometry,
    _norm3,
    absolute_xz,
    section_end_xyz,
    section_geometry,
    wrap_angle,
)

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
