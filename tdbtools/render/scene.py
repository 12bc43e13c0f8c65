"""Scenes of a route with pyvista/VTK: track, junctions, end nodes, track items, audit
findings, a tile grid, and trains from a replay (see :mod:`tdbtools.render.animate`),
drawn in a top-down map view or a 3-D view with vertical exaggeration (docs/render.md).

pyvista and VTK are imported inside the functions that need them, so
``import tdbtools.render`` stays light; without them, or without a working OpenGL,
every entry point raises a clear :class:`~tdbtools.errors.TdbToolsError`.

**Frame.** MSTS's world is left-handed (X east, Y up, Z north); the scene is
right-handed with z up::

    scene (x, y, z) = (X − X0, Z − Z0, Y)

with absolute X = tile_x·2048 + x, Z = tile_z·2048 + z and ``scene.origin = (X0, Z0)``
the centre of the route's tile extent (subtracted because OpenGL works in float32:
absolute coordinates of ~10⁷ m would be quantised to a metre). East is +x, north is
+y, up is +z; seen from above, the map is the right way round. Heights stay true in
the scene; a view stretches them by its exaggeration when it draws.

**Colours** (``color_by``): ``"kind"`` colours each vector node by what its ends link
to, as categories with a legend: ``link`` (junction/vector at both ends), ``spur``
(one end at an end node), ``isolated`` (end nodes at both ends); ``"grade"`` by the
grade in ‰ (+ = rising in the node's direction) on a symmetric scale from the data's
98th percentile; ``"speed"`` by the speed limit in km/h (the route's limit, changed by
the limit speed posts along a node in its forward direction), 2nd–98th percentile.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TdbToolsError
from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode, SpeedPostItem
from . import items as I
from . import view as V
from .backend import _pv

TILE = 2048.0
COLOR_BY = ("kind", "grade", "speed")
KIND_NAMES = ("link", "spur", "isolated")
KIND_COLORS = ("#1f4e9c", "#2ca02c", "#d62728")
MARKER_KINDS = tuple(k.kind for k in I.KINDS)
MARKER_COLORS = {k.kind: k.color for k in I.KINDS}
#: Glyph diameters in pixels (screen space: the same size at every zoom).
MARKER_PX = {k.kind: k.px for k in I.KINDS}
#: Label priority: findings, stations, signals, speed limits, sidings, mileposts
#: (docs/render.md §4); layers without names have none.
LABEL_PRIORITY = {"finding": 9, "path": 7, **{k.kind: k.priority for k in I.KINDS if k.priority}}


def GRADE_CMAP():  # noqa: N802
    """Blue (falling) – grey (level) – red (rising): level track stays visible on white."""
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list("grade", ["#1f4fb4", "#9a9a9a", "#c41a1a"])


SEVERITY_COLORS = {"error": "#e00000", "warning": "#ff8c00", "info": "#1e64ff"}
GAP_COLOR = "#d400d4"
LAYERS = ("track", "markers", "labels", "audit", "grid", "trains", "paths")
#: Signal glyph colours by aspect category in a replay (docs/render.md §8): the codes of
#: ``scene.extra["signal_aspect"]``, one per signal marker.
ASPECT_NAMES = ("signal: no aspect", "signal: stop", "signal: caution", "signal: clear")
ASPECT_COLORS = ("#9a9a9a", "#e00000", "#f2c200", "#00b050")
#: Keys of the interactive window that show or hide a layer.
LAYER_KEYS = {"1": "markers", "2": "labels", "3": "audit", "4": "grid", "5": "trains", "6": "paths"}
#: Glyph colours of a path's points (docs/render.md §10).
PATH_POINT_COLORS = {
    "start": "#00a000",
    "end": "#d00000",
    "reversal": "#ff00ff",
    "wait": "#ff9900",
    "station": "#0060ff",
}

__all__ = [
    "FOCUS_RADIUS",
    "auto_exaggeration",
    "resolve_focus",
    "Scene",
    "Markers",
    "build_scene",
    "to_scene",
    "train_boxes",
    "COLOR_BY",
    "LAYER_KEYS",
]


# -- the scene -------------------------------------------------------------------------


def to_scene(X, Y, Z, origin: tuple[float, float]) -> np.ndarray:
    """Absolute MSTS (X, Y, Z) → scene points (n, 3) = (X − X0, Z − Z0, Y)."""
    X, Y, Z = (np.asarray(a, dtype=np.float64) for a in (X, Y, Z))
    return np.column_stack([np.ravel(X - origin[0]), np.ravel(Z - origin[1]), np.ravel(Y)])


@dataclass(eq=False)
class Markers:
    """Glyphs of one kind: ``points`` (n, 3) scene positions, ``ids`` (node or item
    indices; finding numbers for ``finding``), ``labels`` (empty strings: no label) and
    ``glyphs`` (a point cloud, drawn at a size in pixels)."""

    kind: str
    points: np.ndarray
    ids: np.ndarray
    labels: tuple[str, ...]
    glyphs: Any  # pyvista.PolyData

    def __len__(self) -> int:
        return len(self.points)


@dataclass(eq=False)
class Scene:
    """A route as pyvista meshes (see the module docstring for the frame)."""

    route_name: str
    color_by: str
    origin: tuple[float, float]  # (X0, Z0) absolute metres subtracted
    track: Any  # PolyData: one line cell per vector node
    scalars: str  # the track array coloured by
    clim: tuple[float, float]
    markers: dict[str, Markers]
    grid: Any  # PolyData: tile boundaries
    glyph_size: float  # scale of the marker glyphs, pixels
    trains: Any = None  # PolyData of car boxes, or None
    title: str = ""
    extra: dict = field(default_factory=dict)
    #: Audit findings drawn (``markers["finding"]`` holds those with a place).
    findings: tuple = ()
    #: Items by index, for picking.
    items: dict = field(default_factory=dict)
    #: Scene points to frame instead of the whole route (``--focus``), or None.
    focus: np.ndarray | None = None
    focus_label: str = ""
    #: Gaps inside vector nodes that the audit found: a line from each computed section
    #: end to the next recorded start (PolyData), or None.
    gaps: Any = None
    #: Items of the road database (car spawners) by index, for picking.
    road_items: dict = field(default_factory=dict)
    #: Paths drawn over the track (:class:`tdbtools.render.paths.PathOverlay`).
    paths: tuple = ()

    @property
    def bounds(self) -> tuple[float, ...]:
        return tuple(self.track.bounds) if self.track.n_points else (0.0,) * 6


def _polyline_cells(offsets: np.ndarray) -> np.ndarray:
    """VTK line connectivity [n, i0 … in−1, n, …] for consecutive polylines."""
    counts = np.diff(offsets)
    total = int(counts.sum() + len(counts))
    cells = np.empty(total, dtype=np.int64)
    heads = np.concatenate([[0], np.cumsum(counts + 1)[:-1]]).astype(np.int64)
    cells[heads] = counts
    mask = np.ones(total, dtype=bool)
    mask[heads] = False
    cells[mask] = np.arange(int(offsets[-1]) - int(offsets[0])) + int(offsets[0])
    return cells


def _node_kind(route: Route, nodes: np.ndarray) -> np.ndarray:
    tdb = route.tdb.nodes
    out = np.zeros(len(nodes), dtype=np.int64)
    for k, i in enumerate(nodes):
        n = tdb[int(i)]
        ends = sum(
            1
            for p in (n.pins if n is not None else ())
            if 0 < p.link < len(tdb) and isinstance(tdb[p.link], EndNode)
        )
        out[k] = min(ends, 2)
    return out


def _along(points: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per point: distance from its polyline's start; per segment start: horizontal
    length and rise (0 at each polyline's last point)."""
    d = np.diff(points, axis=0)
    horiz = np.hypot(d[:, 0], d[:, 2])
    rise = d[:, 1].copy()
    last = offsets[1:] - 1
    valid = last[last < len(points) - 1]
    horiz[valid] = 0.0  # no segment from a polyline's end to the next's start
    rise[valid] = 0.0
    seg = np.concatenate([np.hypot(horiz, rise), [0.0]])
    cum = np.concatenate([[0.0], np.cumsum(seg[:-1])])
    starts = offsets[:-1]
    counts = np.diff(offsets)
    s = cum - np.repeat(cum[starts], counts) if len(starts) else cum
    return s, np.concatenate([horiz, [0.0]]), np.concatenate([rise, [0.0]])


def _speed_points(route: Route, points: np.ndarray, offsets: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    from ..track.traveller import item_positions

    base = float(route.trk.speed_limit) * 3.6 if getattr(route.trk, "speed_limit", None) else math.nan
    s, _h, _r = _along(points, offsets)
    out = np.full(len(points), base)
    pos = item_positions(route)
    for k, n in enumerate(nodes):
        posts = [
            (p.offset, p.item.speed_ms)
            for p in pos.get(int(n), ())
            if isinstance(p.item, SpeedPostItem) and p.item.is_limit and p.item.speed_ms
        ]
        if not posts:
            continue
        a, b = int(offsets[k]), int(offsets[k + 1])
        off = np.array([p[0] for p in posts])
        val = np.array([p[1] * 3.6 for p in posts])
        j = np.searchsorted(off, s[a:b], side="right") - 1
        out[a:b] = np.where(j >= 0, val[np.maximum(j, 0)], out[a:b])
    return out


def _grid(pv, route: Route, origin: tuple[float, float], height: float):
    ext = route.tile_extent()
    if ext is None:
        return pv.PolyData()
    xs = (np.arange(ext["tile_x_min"], ext["tile_x_max"] + 2) - 0.5) * TILE - origin[0]
    zs = (np.arange(ext["tile_z_min"], ext["tile_z_max"] + 2) - 0.5) * TILE - origin[1]
    pts: list[tuple[float, float, float]] = []
    for x in xs:
        pts += [(x, zs[0], height), (x, zs[-1], height)]
    for z in zs:
        pts += [(xs[0], z, height), (xs[-1], z, height)]
    n = len(pts) // 2
    lines = np.column_stack([np.full(n, 2), np.arange(0, 2 * n, 2), np.arange(1, 2 * n, 2)]).ravel()
    return pv.PolyData(np.array(pts, dtype=np.float64), lines=lines)


def _sections_along(
    geom, nodes: np.ndarray, offsets: np.ndarray, s: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per point: the section's position in its node, its TrackSection id, the
    curvature of its centre line (1/km, + = right) and its grade (‰, + = rising in the
    node's direction).

    The grade is the section's own pitch (−tan AX, as ``profile`` and the traveller
    take it), not a difference between sample points: at a join the computed end of
    one section and the recorded start of the next are kept as two points a millimetre
    apart whose heights may differ by centimetres, which read as 10⁴–10⁶ ‰."""
    pos = np.zeros(len(s), dtype=np.int64)
    sid = np.full(len(s), -1, dtype=np.int64)
    curv = np.zeros(len(s))
    grade = np.zeros(len(s))
    if len(geom) == 0:
        return pos, sid, curv, grade
    order = np.argsort(geom.node, kind="stable")
    gnode = geom.node[order]
    k_all = geom.curvature * 1000.0
    g_all = np.nan_to_num(-np.tan(np.asarray(geom.ax, dtype=np.float64)) * 1000.0)
    for k, n in enumerate(nodes):
        lo, hi = np.searchsorted(gnode, [n, n + 1])
        rows = order[lo:hi]
        if len(rows) == 0:
            continue
        a, b = int(offsets[k]), int(offsets[k + 1])
        cum = np.cumsum(np.nan_to_num(geom.length[rows]))
        j = np.minimum(np.searchsorted(cum, s[a:b] - 1e-6, side="left"), len(rows) - 1)
        pos[a:b] = j
        sid[a:b] = geom.section_index[rows][j]
        curv[a:b] = k_all[rows][j]
        grade[a:b] = g_all[rows][j]
    return pos, sid, curv, grade


def _item_info(it) -> dict:
    """An item's fields as plain values (for picking and hover text)."""
    out: dict[str, Any] = {"item": it.index, "type": it.kind}
    for f in dataclasses.fields(it):
        if f.name in ("index", "s_data", "r_data", "p_data"):
            continue
        v = getattr(it, f.name)
        if isinstance(v, (int, float, str)) and v not in ("", None):
            out[f.name] = v
    if isinstance(it, SpeedPostItem):
        if it.is_milepost:
            out["type"] = "milepost"
            out["milepost"] = it.value
        elif it.speed_ms:
            out["speed_kmh"] = round(it.speed_ms * 3.6, 1)
    return out


def _finding_markers(pv, route: Route, report, origin, track_points, node_first) -> tuple[Markers, tuple]:
    """Audit findings with a place (their location, else their first node's start)."""
    xyz, ids, labels = [], [], []
    for i, f in enumerate(report.findings):
        if f.location is not None:
            lo = f.location
            xyz.append(to_scene(lo.tile_x * TILE + lo.x, lo.y, lo.tile_z * TILE + lo.z, origin)[0])
        elif f.nodes and int(f.nodes[0]) in node_first:
            xyz.append(track_points[node_first[int(f.nodes[0])]])
        else:
            continue
        ids.append(i)
        what = f"node {f.nodes[0]}" if f.nodes else (f"item {f.items[0]}" if f.items else "")
        if f.value is not None and math.isfinite(f.value) and f.code.startswith("GAP"):
            what += f", {f.value:.1f} m"
        labels.append(f"{f.code} ({what})" if what else f.code)
    pts = np.array(xyz, dtype=np.float64).reshape(-1, 3)
    return Markers(
        "finding", pts, np.array(ids, dtype=np.int64), tuple(labels), pv.PolyData(pts)
    ), report.findings


def _gap_lines(pv, route: Route, geom, report, origin):
    """Lines across the gaps the audit reports inside nodes (docs/render.md §5)."""
    from ..track.closure import closure

    if not report.by_code("GAP_IN_NODE"):
        return None
    clo = closure(route, geom)
    tol = float(report.thresholds.get("gap_tolerance", 0.5))
    k = np.flatnonzero(np.nan_to_num(clo.join_gap, nan=0.0) > tol)
    if len(k) == 0:
        return None
    rows = clo.join_row[k]
    nxt = rows + 1
    start = to_scene(
        geom.tile_x[nxt] * TILE + geom.x[nxt], geom.y[nxt], geom.tile_z[nxt] * TILE + geom.z[nxt], origin
    )
    d = np.asarray(clo.join_delta[k], dtype=np.float64)
    end = start - np.column_stack([d[:, 0], d[:, 2], d[:, 1]])
    n = len(k)
    pts = np.empty((2 * n, 3))
    pts[0::2], pts[1::2] = end, start
    lines = np.column_stack([np.full(n, 2), np.arange(0, 2 * n, 2), np.arange(1, 2 * n, 2)]).ravel()
    return pv.PolyData(pts, lines=lines)


def build_scene(
    route: Route,
    *,
    color_by: str = "kind",
    max_chord_error: float = 0.5,
    glyph_size: float | None = None,
    audit=None,
    focus: str | None = None,
    lonlat=None,
    paths=(),
) -> Scene:
    """The scene of a route: track polylines (one line cell per vector node, coloured
    by ``color_by``; per point the node, section, offset, grade and curvature),
    junction, end-node and item markers with labels, the grid of 2048 m tiles, and,
    with ``audit`` (True, or an :class:`~tdbtools.track.audit.AuditReport`), every audit
    finding. ``focus``: see :func:`resolve_focus`. ``lonlat``: a function of absolute
    (X, Z) arrays giving (lon, lat) in degrees (e.g.
    :func:`tdbtools.export.geo.world_to_lonlat`), kept per track point for the pick and
    the page's hover. ``paths``: .pat files (or names in the route's PATHS folder) and
    .act activities whose paths are drawn over the track (:mod:`tdbtools.render.paths`). No rendering happens here."""
    if color_by not in COLOR_BY:
        raise TdbToolsError(f"color_by must be one of {', '.join(COLOR_BY)}, not {color_by!r}")
    pv = _pv()
    from ..track.geometry import section_geometry
    from ..track.polylines import sample_route

    ext = route.tile_extent()
    origin = (
        (
            0.5 * (ext["tile_x_min"] + ext["tile_x_max"]) * TILE,
            0.5 * (ext["tile_z_min"] + ext["tile_z_max"]) * TILE,
        )
        if ext
        else (0.0, 0.0)
    )
    geom = section_geometry(route)
    poly = sample_route(geom, max_chord_error=max_chord_error)
    P = np.asarray(poly.points, dtype=np.float64)
    offsets = np.asarray(poly.offsets, dtype=np.int64)
    nodes = np.asarray(poly.nodes, dtype=np.int64)
    pts = to_scene(P[:, 0], P[:, 1], P[:, 2], origin) if len(P) else np.zeros((0, 3))
    track = pv.PolyData(pts, lines=_polyline_cells(offsets)) if len(nodes) else pv.PolyData()
    clim: tuple[float, float] = (0.0, 1.0)
    if len(nodes):
        counts = np.diff(offsets)
        track.cell_data["node"] = nodes
        kind = _node_kind(route, nodes)
        track.cell_data["kind"] = kind
        s, _h, _r = _along(P, offsets)
        track.point_data["node"] = np.repeat(nodes, counts)
        track.point_data["offset_m"] = s
        sec, sid, curv, grade = _sections_along(geom, nodes, offsets, s)
        track.point_data["section"] = sec
        track.point_data["section_id"] = sid
        track.point_data["curvature_per_km"] = curv
        track.point_data["grade"] = grade
        if lonlat is not None:
            lon, lat = lonlat(P[:, 0], P[:, 2])
            track.point_data["lon"] = np.asarray(lon, dtype=np.float64)
            track.point_data["lat"] = np.asarray(lat, dtype=np.float64)
        if color_by == "speed":
            track.point_data["speed_kmh"] = _speed_points(route, P, offsets, nodes)
    scalars = {"kind": "kind", "grade": "grade", "speed": "speed_kmh"}[color_by]
    if color_by == "kind":
        clim = (-0.5, 2.5)
    elif len(nodes):
        v = np.asarray(track.point_data[scalars])
        clim = V.grade_limits(v) if color_by == "grade" else V.robust_limits(v, floor=10.0)
    # markers
    groups: dict[str, tuple[list, list, list]] = {k: ([], [], []) for k in MARKER_KINDS}
    for n in route.tdb.nodes[1:]:
        if isinstance(n, (JunctionNode, EndNode)) and n.uid is not None:
            u = n.uid
            g = groups["junction" if isinstance(n, JunctionNode) else "end"]
            g[0].append((u.tile_x * TILE + u.x, u.y, u.tile_z * TILE + u.z))
            g[1].append(n.index)
            g[2].append("")
    items: dict = {}
    road_items: dict = {}
    seen_station: set[str] = set()
    km = bool(getattr(route.trk, "milepost_units_km", True))
    sources = [(route.tdb.items, items, False)]
    if route.rdb is not None:
        sources.append((route.rdb.items, road_items, True))
    for table, into, road in sources:
        for it in table:
            k = I.item_kind(it, road=road)
            if k is None or it.r_data is None:
                continue
            r = it.r_data
            g = groups[k]
            g[0].append((r.tile_x * TILE + r.x, r.y, r.tile_z * TILE + r.z))
            g[1].append(it.index)
            label = I.item_label(it, milepost_km=km)
            if k == "platform":  # a station's name once, not at each platform end
                label = getattr(it, "station", "") or getattr(it, "platform_name", "")
                label = "" if label in seen_station else label
                seen_station.add(label)
            g[2].append(label)
            into[it.index] = it
    markers = {}
    for k, (xyz, ids, labels) in groups.items():
        a = np.array(xyz, dtype=np.float64).reshape(-1, 3)
        sp = to_scene(a[:, 0], a[:, 1], a[:, 2], origin) if len(a) else np.zeros((0, 3))
        markers[k] = Markers(k, sp, np.array(ids, dtype=np.int64), tuple(labels), pv.PolyData(sp))
    findings: tuple = ()
    gaps = None
    if audit is not None and audit is not False:
        if audit is True:
            from ..track.audit import audit_route

            audit = audit_route(route)
        node_first = {int(n): int(offsets[k]) for k, n in enumerate(nodes)}
        markers["finding"], findings = _finding_markers(pv, route, audit, origin, pts, node_first)
        gaps = _gap_lines(pv, route, geom, audit, origin)
    zmin = float(pts[:, 2].min()) - 1.0 if len(pts) else 0.0
    title = f"{route.name}: colour by {color_by}"
    scene = Scene(
        route.name,
        color_by,
        origin,
        track,
        scalars,
        clim,
        markers,
        _grid(pv, route, origin, zmin),
        1.0 if glyph_size is None else float(glyph_size),
        title=title,
        findings=findings,
        items=items,
        gaps=gaps,
        road_items=road_items,
    )
    if paths:
        from .paths import overlays

        scene.paths = overlays(route, scene, paths)
    if focus:
        scene.focus, scene.focus_label = resolve_focus(route, scene, focus, audit=audit)
        scene.title += f", focus on {scene.focus_label}"
    return scene


FOCUS_RADIUS = 150.0  # metres shown around a focused point, at least


def _base_height(scene: Scene, tp: np.ndarray) -> float:
    """The height exaggeration stretches about: the lowest track point inside the
    focus's horizontal box, else of the whole route."""
    if not len(tp):
        return 0.0
    if scene.focus is not None and len(scene.focus):
        b = np.asarray(scene.focus, dtype=np.float64).reshape(-1, 3)
        lo, hi = b[:, :2].min(axis=0), b[:, :2].max(axis=0)
        sel = ((tp[:, :2] >= lo) & (tp[:, :2] <= hi)).all(axis=1)
        if sel.any():
            return float(tp[sel, 2].min())
    return float(tp[:, 2].min())


def auto_exaggeration(scene: Scene, around: np.ndarray | None = None) -> float:
    """The 3-D view's automatic exaggeration (:func:`view.auto_exaggeration`) for the
    track inside the horizontal box of ``around`` (default: the focus, else the whole
    route), from those points' heights and grades."""
    tp = np.asarray(scene.track.points) if scene.track.n_points else np.zeros((0, 3))
    box = scene.focus if around is None else around
    if box is None or not len(tp):
        sel = np.ones(len(tp), dtype=bool)
    else:
        b = np.asarray(box, dtype=np.float64).reshape(-1, 3)
        lo, hi = b[:, :2].min(axis=0), b[:, :2].max(axis=0)
        sel = ((tp[:, :2] >= lo) & (tp[:, :2] <= hi)).all(axis=1)
        if sel.sum() < 2:
            return V.auto_exaggeration(b)
    grades = np.asarray(scene.track.point_data["grade"])[sel] if len(tp) else None
    return V.auto_exaggeration(tp[sel], grades=grades)


def resolve_focus(route: Route, scene: Scene, spec: str, *, audit=None) -> tuple[np.ndarray, str]:
    """Scene points to frame for ``spec``: ``node:N`` or a bare number (a track node),
    ``item:N`` (a track item), an audit finding code (``GAP_IN_NODE``, ``GAP_IN_NODE:2``
    for the 2nd), ``X,Z`` absolute world metres or ``TX,TZ,x,z`` tile coordinates, or a
    station/platform/siding/signal name (case-insensitive, the first match). Returns the
    points (a node's track, or a place and a ring of ``FOCUS_RADIUS`` metres) and a label."""
    spec = spec.strip()
    tr = scene.track
    pts = np.asarray(tr.points) if tr.n_points else np.zeros((0, 3))

    def around(p, label: str, extra: np.ndarray | None = None):
        p = np.asarray(p, dtype=np.float64).reshape(3)
        r = FOCUS_RADIUS
        ring = p + np.array([[-r, -r, 0], [r, r, 0], [-r, r, 0], [r, -r, 0]], dtype=np.float64)
        near = pts[np.hypot(pts[:, 0] - p[0], pts[:, 1] - p[1]) < r] if len(pts) else pts
        parts = [ring, p[None, :], near[:, :] * [1, 1, 1]]
        if extra is not None:
            parts.append(extra)
        return np.vstack(parts), label

    def node_focus(n: int):
        nodes = route.tdb.nodes
        if not (0 < n < len(nodes)) or nodes[n] is None:
            raise TdbToolsError(f"--focus: no track node {n} (nodes 1…{len(nodes) - 1})")
        nd = nodes[n]
        if isinstance(nd, (JunctionNode, EndNode)):
            u = nd.uid
            if u is None:
                raise TdbToolsError(f"--focus: node {n} has no position")
            return around(
                to_scene(u.tile_x * TILE + u.x, u.y, u.tile_z * TILE + u.z, scene.origin)[0], f"node {n}"
            )
        sel = pts[np.asarray(tr.point_data["node"]) == n] if len(pts) else pts
        if len(sel) == 0:
            raise TdbToolsError(f"--focus: node {n} has no drawable track")
        return around(sel.mean(axis=0), f"node {n}", sel)

    low = spec.lower()
    if low.startswith("node:") or spec.isdigit():
        try:
            return node_focus(int(spec.split(":", 1)[-1]))
        except ValueError:
            raise TdbToolsError(f"--focus {spec!r}: node:N needs a number") from None
    if low.startswith("item:"):
        try:
            i = int(spec.split(":", 1)[1])
        except ValueError:
            raise TdbToolsError(f"--focus {spec!r}: item:N needs a number") from None
        for m in scene.markers.values():
            if m.kind != "finding" and m.kind not in ("junction", "end") and i in m.ids:
                return around(m.points[list(m.ids).index(i)], f"item {i}")
        raise TdbToolsError(f"--focus: no drawable track item {i}")
    parts = [p.strip() for p in spec.split(",")]
    if len(parts) in (2, 4):
        try:
            nums = [float(p) for p in parts]
        except ValueError:
            nums = []
        if nums:
            X, Z = (
                (nums[0], nums[1]) if len(nums) == 2 else (nums[0] * TILE + nums[2], nums[1] * TILE + nums[3])
            )
            q = to_scene(X, 0.0, Z, scene.origin)[0]
            if len(pts):
                q[2] = pts[np.argmin(np.hypot(pts[:, 0] - q[0], pts[:, 1] - q[1])), 2]
            return around(q, f"point {spec}")
    code, _, nth = spec.partition(":")
    if code.isupper() and "_" in code:
        if audit is None or audit is False:
            from ..track.audit import audit_route

            audit = audit_route(route)
        elif audit is True:
            from ..track.audit import audit_route

            audit = audit_route(route)
        hits = audit.by_code(code)
        k = int(nth) if nth.isdigit() else 1
        if not hits:
            raise TdbToolsError(
                f"--focus {spec}: the audit finds no {code} in this route "
                f"(it finds: {', '.join(audit.counts) or 'nothing'})"
            )
        if not 1 <= k <= len(hits):
            raise TdbToolsError(f"--focus {spec}: there are {len(hits)} {code} findings")
        f = hits[k - 1]
        if f.location is not None:
            lo = f.location
            p = to_scene(lo.tile_x * TILE + lo.x, lo.y, lo.tile_z * TILE + lo.z, scene.origin)[0]
            return around(p, f"{code} #{k}")
        if f.nodes:
            pts_f, _ = node_focus(int(f.nodes[0]))
            return pts_f, f"{code} #{k}"
        raise TdbToolsError(f"--focus {spec}: that finding has no place in the route")
    for kind in ("platform", "siding", "signal"):
        m = scene.markers[kind]
        for j, i in enumerate(m.ids):
            it = scene.items.get(int(i))
            names = [getattr(it, a, "") for a in ("station", "platform_name", "siding_name", "signal_type")]
            if any(n and n.lower() == low for n in names):
                sel = [
                    m.points[q]
                    for q, i2 in enumerate(m.ids)
                    if any(
                        getattr(scene.items.get(int(i2)), a, "").lower() == low
                        for a in ("station", "platform_name", "siding_name")
                    )
                ]
                return around(np.mean(sel or [m.points[j]], axis=0), spec, np.array(sel).reshape(-1, 3))
    raise TdbToolsError(
        f"--focus {spec!r}: not a node (node:N), an item (item:N), an audit code, "
        "a point (X,Z or TX,TZ,x,z) or a station/platform/siding name of this route"
    )


# -- trains ------------------------------------------------------------------------------


def train_boxes(
    front: np.ndarray, rear: np.ndarray, length, width, height, lift: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """Oriented boxes for cars placed by their bogies (scene coordinates).

    ``front``/``rear`` are (n, 3) bogie centres; each box is centred between them,
    its long axis along rear → front, ``length``/``width``/``height`` metres
    (scalars or (n,)), floor ``lift`` metres above the rail. Returns (points
    (8n, 3), faces as a VTK face array of 6 quads per box)."""
    front = np.asarray(front, dtype=np.float64).reshape(-1, 3)
    rear = np.asarray(rear, dtype=np.float64).reshape(-1, 3)
    n = len(front)
    L, W, H = (np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)) for v in (length, width, height))
    c = 0.5 * (front + rear)
    d = front - rear
    norm = np.linalg.norm(d, axis=1, keepdims=True)
    d = np.where(norm > 1e-9, d / np.where(norm > 1e-9, norm, 1.0), np.array([1.0, 0.0, 0.0]))
    up = np.array([0.0, 0.0, 1.0])
    lat = np.cross(d, up)
    ln = np.linalg.norm(lat, axis=1, keepdims=True)
    lat = np.where(ln > 1e-9, lat / np.where(ln > 1e-9, ln, 1.0), np.array([0.0, 1.0, 0.0]))
    vert = np.cross(lat, d)
    sx = np.array([-1, 1, 1, -1, -1, 1, 1, -1], dtype=np.float64)  # along
    sy = np.array([-1, -1, 1, 1, -1, -1, 1, 1], dtype=np.float64)  # lateral
    sz = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=np.float64)  # up
    pts = (
        c[:, None, :]
        + (0.5 * L)[:, None, None] * sx[None, :, None] * d[:, None, :]
        + (0.5 * W)[:, None, None] * sy[None, :, None] * lat[:, None, :]
        + (lift + H[:, None, None] * sz[None, :, None]) * vert[:, None, :]
    )
    quads = np.array(
        [[0, 3, 2, 1], [4, 5, 6, 7], [0, 1, 5, 4], [1, 2, 6, 5], [2, 3, 7, 6], [3, 0, 4, 7]], dtype=np.int64
    )
    f = quads[None, :, :] + (np.arange(n, dtype=np.int64) * 8)[:, None, None]
    faces = np.concatenate([np.full((n, 6, 1), 4, dtype=np.int64), f], axis=2).reshape(-1)
    return pts.reshape(-1, 3), faces
