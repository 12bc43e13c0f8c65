"""Longitude/latitude of MSTS world coordinates, and the GeoJSON export.

MSTS tiles lie on the Interrupted Goode Homolosine (IGH) projection of a sphere of
radius 6,370,997 m. Open Rails' ``Orts.Common/WorldLatLon.cs`` (``ConvertWTC``)
turns a tile and a tile-relative position into IGH metres with::

    ul_x = -20013965, ul_y = 8674008          # IGH corner (−180°, +90°)
    wt_ew_offset = -16385, wt_ns_offset = 16385, tileSize = 2048
    Gsamp = tileX − wt_ew_offset;  Gline = wt_ns_offset − tileZ
    X = ul_x + (Gsamp − 1)·2048 + x;  Y = ul_y − (Gline − 1)·2048 + z

which simplifies to ``X = 2048·tileX + x + 13,540,467`` and
``Y = 2048·tileZ + z − 24,880,424`` (:data:`IGH_X0`, :data:`IGH_Y0`; x, z relative
to the tile centre, as in the .tdb). The IGH inverse is pyproj's ``+proj=igh
+R=6370997`` (the same Steinwand/Snyder equations, lobe meridians and Mollweide
offset 0.0528035 R that WorldLatLon.cs codes by hand). Latitude and longitude are on
that sphere, as Open Rails gives them (a few hundred metres from WGS84 at most).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Diagnostics, Finding
from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode, VectorNode
from ..track.geometry import TILE_SIZE
from ..track.polylines import sample_route_chunks
from .msts import ExportError, check_target

EARTH_RADIUS = 6370997.0
#: Open Rails WorldLatLon.cs: ul_x + (16384)·2048 and ul_y − 16384·2048.
IGH_UL_X = -20013965
IGH_UL_Y = 8674008
IGH_X0 = IGH_UL_X + 16384 * 2048  # 13,540,467
IGH_Y0 = IGH_UL_Y - 16384 * 2048  # −24,880,424
IGH_PROJ = f"+proj=igh +R={EARTH_RADIUS:.0f} +units=m +no_defs"

__all__ = [
    "EARTH_RADIUS",
    "IGH_X0",
    "IGH_Y0",
    "IGH_PROJ",
    "igh_xy",
    "world_to_lonlat",
    "tile_to_lonlat",
    "route_geojson",
    "geojson_text",
    "write_geojson",
    "OUTSIDE_PROJECTION",
]

#: Finding code of the features a GeoJSON export leaves out (docs/findings.md §4).
OUTSIDE_PROJECTION = "OUTSIDE_PROJECTION"


@lru_cache(maxsize=1)
def _proj():
    try:
        import pyproj
    except ImportError:  # pragma: no cover - depends on the installation
        raise ExportError("longitude/latitude need pyproj: pip install 'tdbtools[geo]'") from None
    return pyproj.Proj(IGH_PROJ)


def igh_xy(tile_x, tile_z, x, z) -> tuple[np.ndarray, np.ndarray]:
    """IGH metres (easting, northing) of tile-relative MSTS positions."""
    gx = np.asarray(tile_x, dtype=np.float64) * TILE_SIZE + np.asarray(x, dtype=np.float64) + IGH_X0
    gy = np.asarray(tile_z, dtype=np.float64) * TILE_SIZE + np.asarray(z, dtype=np.float64) + IGH_Y0
    return gx, gy


def world_to_lonlat(X, Z) -> tuple[np.ndarray, np.ndarray]:
    """(lon, lat) in degrees of absolute MSTS coordinates X = 2048·tileX + x, Z = …."""
    gx = np.asarray(X, dtype=np.float64) + IGH_X0
    gy = np.asarray(Z, dtype=np.float64) + IGH_Y0
    if gx.size == 0:
        return gx.copy(), gy.copy()
    lon, lat = _proj()(gx, gy, inverse=True)
    lon, lat = np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)
    bad = ~np.isfinite(lon) | ~np.isfinite(lat) | (np.abs(lat) > 90) | (np.abs(lon) > 180)
    if bad.any():
        lon = np.where(bad, np.nan, lon)
        lat = np.where(bad, np.nan, lat)
    return lon, lat


def tile_to_lonlat(tile_x, tile_z, x=0.0, z=0.0) -> tuple[np.ndarray, np.ndarray]:
    """(lon, lat) in degrees of tile-relative positions (NaN in the projection's gaps)."""
    X = np.asarray(tile_x, dtype=np.float64) * TILE_SIZE + np.asarray(x, dtype=np.float64)
    Z = np.asarray(tile_z, dtype=np.float64) * TILE_SIZE + np.asarray(z, dtype=np.float64)
    return world_to_lonlat(X, Z)


def _where_off(X: float, Z: float) -> str:
    """Why absolute MSTS (X, Z) has no longitude/latitude, for a message."""
    gx, gy = float(X) + IGH_X0, float(Z) + IGH_Y0
    # Northing of the poles (±8,673.5 km), from the projection itself.
    pole = float(_proj()(0.0, 90.0)[1])
    tile = f"tile ({round(X / TILE_SIZE)}, {round(Z / TILE_SIZE)})"
    if gy < -pole:
        return f"{tile} is {(-pole - gy) / 1000:,.0f} km south of the South Pole"
    if gy > pole:
        return f"{tile} is {(gy - pole) / 1000:,.0f} km north of the North Pole"
    if abs(gx) > math.pi * EARTH_RADIUS:
        return f"{tile} is {(abs(gx) - math.pi * EARTH_RADIUS) / 1000:,.0f} km beyond the 180th meridian"
    return f"{tile} is in a gap between the projection's lobes"


class _Skipped:
    """What :func:`_features` leaves out, counted as it goes."""

    __slots__ = ("kept", "vector", "point", "item", "points", "lines", "first")

    def __init__(self) -> None:
        self.kept = self.vector = self.point = self.item = self.points = self.lines = 0
        self.first: str | None = None

    def left_out(self, kind: str, what: str, X: float, Z: float) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if self.first is None:
            self.first = f"{what} at {_where_off(X, Z)}"

    def report(self, diagnostics: Diagnostics | None) -> None:
        """Nothing when all was kept; else a finding, or (strict) an :class:`ExportError`."""
        if self.first is None:
            return
        out = self.vector + self.point + self.item
        parts = [
            f"{n} {label}{'' if n == 1 else plural}"
            for n, label, plural in (
                (self.vector, "vector node", "s"),
                (self.point, "junction/end node", "s"),
                (self.item, "track item", "s"),
            )
            if n
        ]
        if self.points:
            parts.append(f"{self.points} point(s) of {self.lines} vector node(s) otherwise kept")
        message = (
            f"{out} of {out + self.kept} features lie where the MSTS tile grid maps to no point "
            f"of the Earth (outside the IGH projection's valid area) and were left out: "
            f"{', '.join(parts)}; e.g. {self.first}"
        )
        outside_projection(message, "a lenient export writes the rest", diagnostics)


def outside_projection(message: str, lenient: str, diagnostics: Diagnostics | None) -> None:
    """Report an export's points outside the projection (docs/findings.md §4): raise
    :class:`ExportError` when ``diagnostics`` is strict or None (saying what a lenient
    export does), else add an ``OUTSIDE_PROJECTION`` warning to it."""
    d = diagnostics if diagnostics is not None else Diagnostics(strict=True)
    if d.strict:
        raise ExportError(f"{message} ({lenient})")
    d.add(Finding(message, code=OUTSIDE_PROJECTION, severity="warning"))


# -- GeoJSON ---------------------------------------------------------------------------


def _props(obj) -> dict:
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        out[f.name] = _jsonable(v)
    return out


def _jsonable(v):
    if is_dataclass(v) and not isinstance(v, type):
        return _props(v)
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _coord(lon: Any, lat: Any, y: Any, ndigits: int) -> list:
    return [round(float(lon), ndigits), round(float(lat), ndigits), round(float(y), 3)]


def route_geojson(
    route: Route,
    *,
    max_chord_error: float = 0.5,
    items: bool = True,
    ndigits: int = 7,
    diagnostics: Diagnostics | None = None,
) -> dict:
    """A GeoJSON FeatureCollection (RFC 7946: [lon, lat, elevation]) of the route:
    a LineString per vector node (``node``, ``length`` m, ``kind`` "vector",
    ``sections``), a Point per junction and end node at its UiD (``node``, ``kind``,
    ``shape_index``), and a Point per track item at its TrItemRData (else PData)
    position with all its typed fields (``kind`` = the item kind, ``type`` = token).
    Points where the MSTS tile grid maps to no point of the Earth are left out: an
    :class:`ExportError` names them, or with a lenient ``diagnostics`` one
    ``OUTSIDE_PROJECTION`` finding does."""
    skipped = _Skipped()
    features = list(_features(route, max_chord_error, items, ndigits, skipped))
    skipped.report(diagnostics)
    return {"type": "FeatureCollection", "name": route.name, "features": features}


#: Section rows sampled at a time for the features (memory only: the same polylines in
#: the same order; at sample_route_chunks' 2**17 the points' temporaries were the peak of
#: load + audit + locate + GeoJSON at 92x DK24, benchmarks/README.md, issue 32).
_FEATURE_ROWS = 1 << 15


def _features(
    route: Route, max_chord_error: float, items: bool, ndigits: int, skipped: _Skipped
) -> Iterator[dict]:
    """The features of :func:`route_geojson`, one at a time (a 200 MB route's list of
    them held ~0.5 GB of Python lists)."""
    for poly in sample_route_chunks(route, max_chord_error, rows=_FEATURE_ROWS):
        pts = poly.points
        lon, lat = world_to_lonlat(pts[:, 0], pts[:, 2]) if len(pts) else (np.zeros(0), np.zeros(0))
        for k, node in enumerate(poly.nodes.tolist()):
            a, b = int(poly.offsets[k]), int(poly.offsets[k + 1])
            ok = np.isfinite(lon[a:b]) & np.isfinite(lat[a:b]) & np.isfinite(pts[a:b, 1])
            coords: list = [_coord(lon[i], lat[i], pts[i, 1], ndigits) for i in range(a, b) if ok[i - a]]
            # Points without geometry (a section tsection.dat lacks) are the loader's
            # finding; only those the projection has no place for are counted here.
            off = ~(np.isfinite(lon[a:b]) & np.isfinite(lat[a:b]))
            off &= np.isfinite(pts[a:b, 0]) & np.isfinite(pts[a:b, 2])
            if len(coords) < 2:
                if off.any():
                    bad = a + int(np.argmax(off))
                    skipped.left_out("vector", f"vector node {node}", pts[bad, 0], pts[bad, 2])
                continue
            if off.any():
                skipped.points += int(off.sum())
                skipped.lines += 1
            skipped.kept += 1
            n = route.tdb.nodes[node]
            yield (
                {
                    "type": "Feature",
                    "geometry": {"type": "LineString", "coordinates": coords},
                    "properties": {
                        "kind": "vector",
                        "node": node,
                        "length": round(route.node_length(node), 3),
                        "sections": n.section_count if isinstance(n, VectorNode) else None,
                        "pins": [[p.link, p.direction] for p in n.pins] if n else [],
                    },
                }
            )
    for n in route.tdb.nodes[1:]:
        if not isinstance(n, (JunctionNode, EndNode)) or n.uid is None:
            continue
        u = n.uid
        lo, la = tile_to_lonlat(u.tile_x, u.tile_z, u.x, u.z)
        if not (math.isfinite(lo) and math.isfinite(la)):
            X, Z = u.tile_x * TILE_SIZE + u.x, u.tile_z * TILE_SIZE + u.z
            skipped.left_out("point", f"{n.kind} node {n.index}", X, Z)
            continue
        skipped.kept += 1
        props = {"kind": n.kind, "node": n.index, "pins": [[p.link, p.direction] for p in n.pins]}
        if isinstance(n, JunctionNode):
            props["shape_index"] = n.shape_index
        props["uid"] = _props(u)
        yield (
            {
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": _coord(lo, la, u.y, ndigits)},
                "properties": props,
            }
        )
    if items:
        refs: dict[int, list[int]] = {}
        for n in route.tdb.nodes[1:]:
            if isinstance(n, VectorNode):
                for r in n.item_refs:
                    refs.setdefault(r, []).append(n.index)
        for it in route.tdb.items:
            if it.r_data is not None:
                tx, tz, x, y, z = it.r_data.tile_x, it.r_data.tile_z, it.r_data.x, it.r_data.y, it.r_data.z
            elif it.p_data is not None:
                tx, tz, x, y, z = it.p_data.tile_x, it.p_data.tile_z, it.p_data.x, math.nan, it.p_data.z
            else:
                continue
            lo, la = tile_to_lonlat(tx, tz, x, z)
            if not (math.isfinite(lo) and math.isfinite(la)):
                skipped.left_out("item", f"track item {it.index}", tx * TILE_SIZE + x, tz * TILE_SIZE + z)
                continue
            skipped.kept += 1
            coords = (
                _coord(lo, la, y, ndigits)
                if math.isfinite(y)
                else [round(float(lo), ndigits), round(float(la), ndigits)]
            )
            props = {"kind": it.kind, "type": type(it).token, "nodes": refs.get(it.index, [])}
            props.update(_props(it))
            yield {
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": coords},
                "properties": props,
            }


def geojson_text(route: Route, **kw) -> str:
    return json.dumps(route_geojson(route, **kw), allow_nan=False, ensure_ascii=False)


def _geojson_chunks(
    route: Route,
    *,
    max_chord_error: float = 0.5,
    items: bool = True,
    ndigits: int = 7,
    diagnostics: Diagnostics | None = None,
) -> Iterator[bytes]:
    """:func:`geojson_text` as UTF-8 chunks, each feature encoded as it is made: the
    same bytes (json.dumps writes a list's items with ", " between them)."""
    dumps = json.JSONEncoder(allow_nan=False, ensure_ascii=False).encode
    head = dumps({"type": "FeatureCollection", "name": route.name, "features": []})
    assert head.endswith("[]}")
    out = [head[:-2]]
    size = 0
    sep = ""
    skipped = _Skipped()
    for f in _features(route, max_chord_error, items, ndigits, skipped):
        text = dumps(f)
        out.append(sep + text)
        sep = ", "
        size += len(text)
        if size > 1 << 20:
            yield "".join(out).encode("utf-8")
            out, size = [], 0
    # Strict: raised before the last chunk, so the atomic writer keeps no file.
    skipped.report(diagnostics)
    out.append("]}")
    yield "".join(out).encode("utf-8")


def write_geojson(route: Route, path: str | Path, *, overwrite: bool = False, **kw) -> Path:
    """Write :func:`route_geojson` to ``path`` (UTF-8), atomically, feature by feature
    (nothing written when it refuses features outside the projection)."""
    from .._fs import write_bytes_atomic

    p = check_target(path, overwrite)
    write_bytes_atomic(p, _geojson_chunks(route, **kw))
    return p
