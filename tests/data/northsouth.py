"""A synthetic north–south route: the sample route turned by 90° about its centre, so
that its long axis runs from south to north (the shape that was cut off at both ends
by the old 3-D camera). Written with tdbtools' own MSTS writer into a temporary folder.

    python tests/data/northsouth.py OUT_FOLDER
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_routes" / "sample" / "ROUTES" / "SAMPLE"
TILE = 2048.0


def _turn(tx, tz, x, z, centre, phi):
    """Absolute (X, Z) turned by ``phi`` (counter-clockwise seen from above) about
    ``centre``, back in tile coordinates."""
    from tdbtools.track.geometry import normalize_tile

    X = np.asarray(tx, dtype=np.float64) * TILE + np.asarray(x, dtype=np.float64) - centre[0]
    Z = np.asarray(tz, dtype=np.float64) * TILE + np.asarray(z, dtype=np.float64) - centre[1]
    c, s = math.cos(phi), math.sin(phi)
    X2, Z2 = centre[0] + X * c - Z * s, centre[1] + X * s + Z * c
    return normalize_tile(np.zeros_like(X2, dtype=np.int64), np.zeros_like(Z2, dtype=np.int64), X2, Z2)


def turned_route(route, phi: float = math.pi / 2):
    """A copy of ``route`` turned by ``phi`` about the centre of its track. A heading
    AY (clockwise from north) becomes AY − phi."""
    s = route.tdb.sections
    X = s.tile_x * TILE + s.x
    Z = s.tile_z * TILE + s.z
    centre = (float(np.mean(X)), float(np.mean(Z)))
    tx, tz, x, z = _turn(s.tile_x, s.tile_z, s.x, s.z, centre, phi)
    secs = dataclasses.replace(
        s, tile_x=tx.astype(s.tile_x.dtype), tile_z=tz.astype(s.tile_z.dtype), x=x, z=z, ay=s.ay - phi
    )

    def uid(u):
        if u is None:
            return None
        a, b, c, d = _turn([u.tile_x], [u.tile_z], [u.x], [u.z], centre, phi)
        return dataclasses.replace(
            u, tile_x=int(a[0]), tile_z=int(b[0]), x=float(c[0]), z=float(d[0]), ay=u.ay - phi
        )

    nodes = tuple(
        n if n is None or not hasattr(n, "uid") else dataclasses.replace(n, uid=uid(n.uid))
        for n in route.tdb.nodes
    )
    items = []
    for it in route.tdb.items:
        if it.r_data is not None:
            r = it.r_data
            a, b, c, d = _turn([r.tile_x], [r.tile_z], [r.x], [r.z], centre, phi)
            it = dataclasses.replace(
                it,
                r_data=dataclasses.replace(
                    r, tile_x=int(a[0]), tile_z=int(b[0]), x=float(c[0]), z=float(d[0])
                ),
            )
        items.append(it)
    tdb = dataclasses.replace(route.tdb, sections=secs, nodes=nodes, items=tuple(items))
    return dataclasses.replace(route, tdb=tdb)


def make_northsouth(out: Path) -> Path:
    """Write the north–south route into ``out``/ROUTES/NORTHSOUTH (with the sample's
    GLOBAL folder beside it) and return the route folder."""
    from tdbtools import load_route
    from tdbtools.export import convert_route

    route = load_route(SAMPLE, cache=False)
    folder = Path(out) / "ROUTES" / "NORTHSOUTH"
    folder.mkdir(parents=True, exist_ok=True)
    glob = SAMPLE.parents[1] / "GLOBAL"
    if glob.is_dir() and not (Path(out) / "GLOBAL").exists():
        shutil.copytree(glob, Path(out) / "GLOBAL")
    convert_route(turned_route(route), folder, overwrite=True)
    return folder


if __name__ == "__main__":
    print(make_northsouth(Path(sys.argv[1])))
