"""The track items' part of the route audit: references from nodes to the item table,
ids, links between platform/siding/crossover ends and signal directions, and whether each
item lies on its node's sections (the ``ITEM_*`` codes of :mod:`tdbtools.track.audit`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ..formats.route import Route
from ..formats.tdb import (
    CrossoverItem,
    PlatformItem,
    SidingItem,
    SignalItem,
    VectorNode,
)
from .audit_report import AuditFinding, _Places
from .geometry import (
    SectionGeometry,
    WorldPoint,
)
from .spatial import distance_to_sections

_ITEM_ROWS = 1 << 16


def _audit_items(
    route: Route,
    geom: SectionGeometry,
    places: _Places,
    out: list[AuditFinding],
    tol: float,
    unreferenced: bool,
) -> dict:
    nodes: tuple[Any, ...] = route.tdb.nodes  # node kinds are tested where it matters
    items: tuple[Any, ...] = route.tdb.items
    ni = len(items)
    nv = len(nodes)
    refs: dict[int, list[int]] = defaultdict(list)
    pairs: list[tuple[int, int]] = []
    for n in nodes[1:]:
        if not isinstance(n, VectorNode):
            continue
        for i in n.item_refs:
            if not 0 <= i < ni:
                out.append(
                    AuditFinding(
                        "ITEM_REF_MISSING",
                        f"vector node {n.index} refers to item {i}, which is not in the "
                        f"TrItemTable ({ni} items)",
                        (n.index,),
                        (i,),
                        places.node(n.index),
                    )
                )
                continue
            refs[i].append(n.index)
            pairs.append((n.index, i))

    def item_place(i: int) -> WorldPoint | None:
        r = items[i].r_data
        return None if r is None else WorldPoint.of(r.tile_x, r.tile_z, r.x, r.y, r.z)

    for i, it in enumerate(items):
        users = refs.get(i, [])
        if len(users) > 1:
            out.append(
                AuditFinding(
                    "ITEM_REF_DUPLICATE",
                    f"{it.kind} item {i} is referenced {len(users)} times (by node(s) "
                    f"{', '.join(map(str, users))})",
                    tuple(dict.fromkeys(users)),
                    (i,),
                    item_place(i),
                )
            )
        elif not users and unreferenced:
            out.append(
                AuditFinding(
                    "ITEM_UNREFERENCED",
                    f"{it.kind} item {i} is referenced by no track node",
                    (),
                    (i,),
                    item_place(i),
                )
            )
        if it.item_id is not None and it.item_id != i:
            out.append(
                AuditFinding(
                    "ITEM_ID_MISMATCH",
                    f"{it.kind} item at position {i} has TrItemId {it.item_id}",
                    tuple(dict.fromkeys(users)),
                    (i,),
                    item_place(i),
                )
            )
        _item_links(it, i, items, nv, users, item_place, out)

    # Off-track: project each referenced item on its node's sections (vectorised).
    pos_pairs = [(nd, i) for nd, i in pairs if items[i].r_data is not None and nodes[nd].section_count]
    stats: dict = {
        "references": len(pairs),
        "checked": len(pos_pairs),
        "without_position": sum(1 for _, i in pairs if items[i].r_data is None),
    }
    if not pos_pairs:
        return stats
    counts = np.array([nodes[nd].section_count for nd, _ in pos_pairs], dtype=np.int64)
    firsts = np.array([nodes[nd].first_section for nd, _ in pos_pairs], dtype=np.int64)
    rd = [items[i].r_data for _, i in pos_pairs]
    tx_p = np.array([r.tile_x for r in rd], dtype=np.int64)
    tz_p = np.array([r.tile_z for r in rd], dtype=np.int64)
    px_p = np.array([r.x for r in rd])
    pz_p = np.array([r.z for r in rd])
    # Views of the X and Z columns (no copy: 2 × 35 MB on a 200 MB route).
    start_xz = places.start_xyz[:, ::2]
    end_xz = places.end_xyz[:, ::2]
    npair = len(pos_pairs)
    best = np.empty(npair)
    best_rows = np.empty(npair, dtype=np.int64)
    best_off = np.empty(npair)
    # Each item against every section of its node, a few hundred thousand rows at a
    # time: all at once, a 200 MB route's ~10 row-long temporaries held ~0.4 GB. The
    # work is row by row and per item, so the figures are the same.
    ends = np.cumsum(counts)
    k0 = 0
    while k0 < npair:
        k1 = max(k0 + 1, int(np.searchsorted(ends, ends[k0] - counts[k0] + _ITEM_ROWS, side="right")))
        c = counts[k0:k1]
        pair_of = np.repeat(np.arange(k1 - k0), c)
        starts = np.cumsum(c) - c
        rows = firsts[k0:k1][pair_of] + (np.arange(len(pair_of)) - starts[pair_of])
        d, off = distance_to_sections(
            geom,
            start_xz,
            end_xz,
            rows,
            tx_p[k0:k1][pair_of],
            tz_p[k0:k1][pair_of],
            px_p[k0:k1][pair_of],
            pz_p[k0:k1][pair_of],
        )
        d = np.where(np.isnan(d), np.inf, d)
        best[k0:k1] = np.minimum.reduceat(d, starts)
        for k in range(k1 - k0):  # argmin per group (groups are small)
            a = int(starts[k])
            j = a + int(np.argmin(d[a : a + int(c[k])]))
            best_rows[k0 + k] = rows[j]
            best_off[k0 + k] = off[j]
        k0 = k1
    # The along-node offset of the nearest point, for the TrItemSData comparison.
    length0 = np.nan_to_num(geom.length, nan=0.0)
    within = np.cumsum(length0) - length0  # cumulative start of each row …
    node_first = np.array([nodes[nd].first_section for nd, _ in pos_pairs])
    node_off = within[best_rows] - within[node_first] + best_off
    sd = np.array([items[i].s_data.distance if items[i].s_data else np.nan for _, i in pos_pairs])
    finite = best[np.isfinite(best)]
    if len(finite):
        stats.update(
            {
                "distance_p50": float(np.percentile(finite, 50)),
                "distance_p99": float(np.percentile(finite, 99)),
                "distance_max": float(finite.max()),
            }
        )
    delta = np.abs(node_off - sd)
    delta = delta[np.isfinite(delta) & np.isfinite(best) & (best <= tol)]
    if len(delta):
        stats.update(
            {"sdata_offset_p99": float(np.percentile(delta, 99)), "sdata_offset_max": float(delta.max())}
        )
    for k in np.flatnonzero(~(best <= tol)).tolist():
        nd, i = pos_pairs[k]
        dist = "no known section" if not np.isfinite(best[k]) else f"{best[k]:.3f} m"
        out.append(
            AuditFinding(
                "ITEM_OFF_TRACK",
                f"{items[i].kind} item {i}: its TrItemRData position is {dist} from the "
                f"nearest section of vector node {nd} (tolerance {tol} m)",
                (nd,),
                (i,),
                item_place(i),
                float(best[k]),
            )
        )
    return stats


def _item_links(
    it,
    i: int,
    items,
    nv: int,
    users: list[int],
    item_place,  # noqa: ANN001
    out: list[AuditFinding],
) -> None:
    nodes = tuple(dict.fromkeys(users))
    if isinstance(it, (PlatformItem, SidingItem)):
        j = it.linked_item
        problem = None
        if not 0 <= j < len(items):
            problem = f"links to item {j}, which is not in the TrItemTable"
        elif type(items[j]) is not type(it):
            problem = f"links to item {j}, which is a {items[j].kind} item"
        elif items[j].linked_item != i:
            problem = f"links to item {j}, which links to item {items[j].linked_item}, not back"
        if problem:
            out.append(
                AuditFinding(
                    "ITEM_LINK_BROKEN",
                    f"{it.kind} item {i} {problem}",
                    nodes,
                    (i,) if not 0 <= j < len(items) else (i, j),
                    item_place(i),
                )
            )
    elif isinstance(it, SignalItem):
        bad = [d.track_node for d in it.signal_dirs if not 0 < d.track_node < nv]
        if bad:
            out.append(
                AuditFinding(
                    "ITEM_LINK_BROKEN",
                    f"signal item {i}: TrSignalDir names node(s) {', '.join(map(str, bad))}, out of range",
                    nodes,
                    (i,),
                    item_place(i),
                )
            )
    elif isinstance(it, CrossoverItem):
        # The first CrossoverTrItemData value (``track_node`` in the reader, after Open
        # Rails' name) is, in real content, the id of the paired crossover item: DK24's
        # 124 crossover items come in 62 mutual pairs, with values such as 0 and 1.
        j = it.track_node
        problem = None
        if not 0 <= j < len(items):
            problem = f"pairs with item {j}, which is not in the TrItemTable"
        elif not isinstance(items[j], CrossoverItem):
            problem = f"pairs with item {j}, which is a {items[j].kind} item"
        elif items[j].track_node != i:
            problem = f"pairs with item {j}, which pairs with item {items[j].track_node}, not back"
        if problem:
            out.append(
                AuditFinding(
                    "ITEM_LINK_BROKEN",
                    f"crossover item {i} {problem}",
                    nodes,
                    (i,) if not 0 <= j < len(items) else (i, j),
                    item_place(i),
                )
            )
