"""Routes for the picture tests, made in memory from the sample route (nothing written):

* :func:`short_sections`: every straight section split into a 0.4 m piece and the rest,
  the rest's recorded start 2 cm higher and 3 mm aside of where the piece ends, as real
  routes' rounded section starts are (DK24 has 278 sections under a metre). A grade
  taken between sample points a millimetre apart reads 10⁴ ‰ there.
* :func:`with_mileposts`: kilometre posts every 100 m (flags 0x280, as DK24 writes them)
  and speed limits between them.
* :func:`dense_labels`: 50 named sidings within 2 km of track.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tdbtools.formats.tdb import RData, SidingItem, SpeedPostItem, VectorNode
from tdbtools.track.geometry import point_at, section_geometry

PIECE = 0.4
STEP_Y = 0.02
STEP_SIDE = 0.003


def short_sections(route):
    geom = section_geometry(route)
    s = route.tdb.sections
    tab = route.tsection.sections
    rows, ids = tab.rows(s.section_index)
    L = np.asarray(route.section_length, dtype=np.float64)
    straight = ids & np.isnan(tab.radius[rows]) & (L > 3 * PIECE)
    new_ids, new_len = [60000], [PIECE]
    out = {f.name: [] for f in dataclasses.fields(s)}
    lengths = []
    for r in range(len(s)):
        row = {f: getattr(s, f)[r] for f in out}
        if not straight[r]:
            for f in out:
                out[f].append(row[f])
            lengths.append(L[r])
            continue
        first = dict(row, section_index=60000)
        p = point_at(geom, np.array([r]), np.array([PIECE]))
        heading = float(s.ay[r])
        side = (np.cos(heading) * STEP_SIDE, -np.sin(heading) * STEP_SIDE)
        rest_id = 60000 + len(new_ids)
        new_ids.append(rest_id)
        new_len.append(L[r] - PIECE)
        second = dict(
            row,
            section_index=rest_id,
            tile_x=int(p.tile_x[0]),
            tile_z=int(p.tile_z[0]),
            x=float(p.x[0]) + side[0],
            y=float(p.y[0]) + STEP_Y,
            z=float(p.z[0]) + side[1],
        )
        for part, length in ((first, PIECE), (second, L[r] - PIECE)):
            for f in out:
                out[f].append(part[f])
            lengths.append(length)
    secs = dataclasses.replace(s, **{f: np.asarray(v, dtype=getattr(s, f).dtype) for f, v in out.items()})
    n_new = len(new_ids)
    table = dataclasses.replace(
        tab,
        ids=np.concatenate([tab.ids, np.array(new_ids, dtype=tab.ids.dtype)]),
        width=np.concatenate([tab.width, np.full(n_new, 1.5)]),
        length=np.concatenate([tab.length, np.array(new_len)]),
        radius=np.concatenate([tab.radius, np.full(n_new, np.nan)]),
        angle=np.concatenate([tab.angle, np.full(n_new, np.nan)]),
    )
    node_of = secs.node
    nodes = []
    for n in route.tdb.nodes:
        if isinstance(n, VectorNode):
            hit = np.flatnonzero(node_of == n.index)
            n = dataclasses.replace(n, first_section=int(hit[0]), section_count=len(hit))
        nodes.append(n)
    tdb = dataclasses.replace(route.tdb, sections=secs, nodes=tuple(nodes))
    return dataclasses.replace(
        route,
        tdb=tdb,
        tsection=dataclasses.replace(route.tsection, sections=table),
        section_length=np.asarray(lengths, dtype=np.float64),
    )


def _track_places(route, every: float, span: float):
    """(tile_x, tile_z, x, y, z) every ``every`` metres along the route's sections in
    table order (node after node), over at most ``span`` metres."""
    geom = section_geometry(route)
    rows = np.arange(len(geom))
    cum = np.concatenate([[0.0], np.cumsum(geom.length[rows])])
    out = []
    for d in np.arange(every / 2, min(span, cum[-1]), every):
        j = min(int(np.searchsorted(cum, d, side="right")) - 1, len(rows) - 1)
        p = point_at(geom, np.array([rows[j]]), np.array([d - cum[j]]))
        out.append((int(p.tile_x[0]), int(p.tile_z[0]), float(p.x[0]), float(p.y[0]), float(p.z[0])))
    return out


def _with_items(route, items):
    start = len(route.tdb.items)
    items = [dataclasses.replace(it, index=start + k, item_id=start + k) for k, it in enumerate(items)]
    return dataclasses.replace(
        route, tdb=dataclasses.replace(route.tdb, items=route.tdb.items + tuple(items))
    )


def with_mileposts(route):
    posts = []
    for k, (tx, tz, x, y, z) in enumerate(_track_places(route, 100.0, 2000.0)):
        r = RData(x, y, z, tx, tz)
        if k % 2 == 0:
            posts.append(SpeedPostItem(0, r_data=r, flags=0x280, value=float(120 + k // 2)))
        else:
            posts.append(SpeedPostItem(0, r_data=r, flags=0x82, value=float(60 + 10 * (k % 5))))
    return _with_items(route, posts)


def dense_labels(route, n: int = 50, span: float = 2000.0):
    places = _track_places(route, span / n, span)[:n]
    sidings = [
        SidingItem(0, r_data=RData(x, y, z, tx, tz), siding_name=f"Siding {k + 1:02d}")
        for k, (tx, tz, x, y, z) in enumerate(places)
    ]
    return _with_items(route, sidings)
