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
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TdbToolsError
from ..formats.route import Route
from ..formats.tdb import EndNode, JunctionNode, SpeedPostItem
from . import items as I
from . import view as V

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
NO_RENDERER = (
    "no renderer: 3-D pictures need a working OpenGL. On Debian/Ubuntu: "
    "apt-get install libegl1 libgl1 libgl1-mesa-dri (offscreen, no display needed)"
)
NO_PYVISTA = "3-D pictures need pyvista: pip install 'tdbtools[render]' (pyvista, imageio, imageio-ffmpeg)"

__all__ = [
    "Scene",
    "Markers",
    "SceneView",
    "build_scene",
    "render_png",
    "show",
    "check_renderer",
    "to_scene",
    "train_boxes",
    "screenshot",
    "resolve_focus",
    "COLOR_BY",
    "NO_RENDERER",
    "LAYER_KEYS",
]


def _quiet_vtk() -> None:
    """Headless VTK first tries X and logs "bad X server connection" before it falls back
    to EGL/OSMesa: only errors go to stderr."""
    try:
        from vtkmodules.vtkCommonCore import vtkLogger
    except ImportError:  # pragma: no cover - old VTK
        return
    vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_ERROR)


def _pv():
    try:
        import pyvista
    except ImportError:
        raise TdbToolsError(NO_PYVISTA) from None
    _quiet_vtk()
    return pyvista


# -- renderer detection ----------------------------------------------------------------

_PROBE = """
from vtkmodules.vtkCommonCore import vtkLogger
vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_ERROR)
import pyvista as pv
p = pv.Plotter(off_screen=True, window_size=(32, 32))
p.add_mesh(pv.Cube())
img = p.screenshot(return_img=True)
p.close()
assert img is not None and img.shape[:2] == (32, 32), img
print("ok", img.shape)
"""
_probe_cache: tuple[bool, str] | None = None


def _probe_marker() -> Path | None:
    """Where a successful probe is remembered: keyed by the interpreter, VTK, the probe
    and the display/GL settings, so that any change probes again."""
    import hashlib

    try:
        from vtkmodules.vtkCommonCore import vtkVersion

        from ..formats.cache import cache_dir
    except ImportError:  # pragma: no cover - no VTK: the probe reports it
        return None
    env = [
        os.environ.get(k, "")
        for k in (
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "VTK_DEFAULT_OPENGL_WINDOW",
            "PYVISTA_OFF_SCREEN",
            "LIBGL_ALWAYS_SOFTWARE",
            "GALLIUM_DRIVER",
        )
    ]
    key = "|".join([sys.executable, vtkVersion.GetVTKVersion(), _PROBE, *env])
    return cache_dir() / f"renderer-ok-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _probe(timeout: float = 60.0) -> tuple[bool, str]:
    """Render a 32×32 cube offscreen in a child process (a broken GL may crash it, not
    us). Returns (works, detail). A success is remembered on disk (the child costs
    seconds of start-up on every render otherwise); a failure is not."""
    marker = _probe_marker()
    if marker is not None and marker.is_file():
        return True, f"remembered in {marker}"
    try:
        r = subprocess.run(
            [sys.executable, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYVISTA_OFF_SCREEN": "true"},
        )
    except subprocess.TimeoutExpired:
        return False, f"a test render took more than {timeout:.0f} s"
    except OSError as exc:
        return False, str(exc)
    if r.returncode == 0 and r.stdout.startswith("ok"):
        if marker is not None:
            try:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.write_text(r.stdout.strip() + "\n", encoding="utf-8")
            except OSError:
                pass  # a read-only cache only costs the probe next time
        return True, r.stdout.strip()
    tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
    how = f"exit status {r.returncode}" if r.returncode >= 0 else f"signal {-r.returncode}"
    return False, f"a test render failed ({how}): " + " | ".join(tail)


def check_renderer(*, timeout: float = 60.0) -> None:
    """Raise :class:`TdbToolsError` unless pyvista is installed and an offscreen render
    works (checked once per process, in a subprocess)."""
    global _probe_cache
    _pv()
    if _probe_cache is None:
        _probe_cache = _probe(timeout)
    ok, detail = _probe_cache
    if not ok:
        raise TdbToolsError(f"{NO_RENDERER}\n({detail})")


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
    from ..track.geometry import closure

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
    from ..track.geometry import sample_route, section_geometry

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


# -- rendering ---------------------------------------------------------------------------


def _theme(pv):
    theme = pv.themes.DocumentTheme()
    theme.background = "white"
    theme.font.color = "black"
    theme.font.family = "arial"
    theme.anti_aliasing = None
    theme.multi_samples = 0
    theme.lighting = True
    theme.smooth_shading = False
    return theme


def _rgb(color: str) -> tuple[float, float, float]:
    c = color.lstrip("#")
    return tuple(int(c[i : i + 2], 16) / 255.0 for i in (0, 2, 4))  # type: ignore[return-value]


class SceneView:
    """A scene in a pyvista plotter, seen from one view (``"map"``: top-down, north up;
    ``"3d"``: perspective, heights × ``exaggerate``, automatic when None), framed so that
    the route, or the scene's focus, fills the window with a margin. Overlays: colour
    bar or categorical legend, scale bar, north arrow, labels placed without overlap.
    :meth:`pick` tells what is under a pixel; :meth:`toggle` shows/hides a layer."""

    def __init__(
        self,
        scene: Scene,
        window_size: tuple[int, int] = (1280, 960),
        *,
        off_screen: bool = True,
        view: str = "map",
        exaggerate: float | None = None,
        labels: bool = True,
        base: float | None = None,
    ) -> None:
        if view not in V.VIEWS:
            raise TdbToolsError(f"view must be one of {', '.join(V.VIEWS)}, not {view!r}")
        pv = _pv()
        self.scene = scene
        self.view = view
        self.window_size = (int(window_size[0]), int(window_size[1]))
        tp = np.asarray(scene.track.points) if scene.track.n_points else np.zeros((0, 3))
        # Heights are stretched about the lowest track of the place shown (a focus: its
        # own window), so a local view's track does not float kilometres above the grid.
        self.base = _base_height(scene, tp) if base is None else float(base)
        if view == "map":
            self.exaggeration = 1.0
        elif exaggerate is None:
            self.exaggeration = auto_exaggeration(scene)
        else:
            if not (math.isfinite(exaggerate) and 0 < exaggerate <= 10000):
                raise TdbToolsError(f"exaggerate must be in (0, 10000], not {exaggerate}")
            self.exaggeration = float(exaggerate)
        self.actors: dict[str, list] = {k: [] for k in LAYERS}
        self.visible = {k: True for k in LAYERS}
        self.visible["labels"] = labels
        self._label_actors: list = []
        self._overlay_actors: list = []
        p = pv.Plotter(off_screen=off_screen, window_size=list(self.window_size), theme=_theme(pv))
        self.plotter = p
        e, base = self.exaggeration, self.base

        def lifted(mesh):
            m = mesh.copy(deep=True)
            if m.n_points and e != 1.0:
                m.points = V.exaggerate(m.points, e, base)
            return m

        self._lifted = lifted
        if scene.grid.n_points:
            grid = scene.grid.copy(deep=True)
            gp = np.asarray(grid.points).copy()
            gp[:, 2] = base - 1.0  # just under the lowest track drawn
            grid.points = gp
            self.actors["grid"].append(
                p.add_mesh(grid, color="#d0d0d0", line_width=1, name="grid", lighting=False)
            )
        if scene.track.n_points:
            track = lifted(scene.track)
            self.track_points = np.asarray(track.points)
            common = dict(line_width=4, lighting=False, name="track", nan_color="grey")
            if scene.color_by == "kind":
                from matplotlib.colors import ListedColormap  # pyvista depends on matplotlib

                a = p.add_mesh(
                    track,
                    scalars="kind",
                    cmap=ListedColormap(list(KIND_COLORS)),
                    clim=scene.clim,
                    show_scalar_bar=False,
                    **common,
                )
            else:
                title = "grade (permille, + rising)" if scene.color_by == "grade" else "speed limit (km/h)"
                cmap = GRADE_CMAP() if scene.color_by == "grade" else "viridis"
                a = p.add_mesh(
                    track,
                    scalars=scene.scalars,
                    cmap=cmap,
                    clim=scene.clim,
                    scalar_bar_args={
                        "title": title,
                        "n_labels": 5,
                        "fmt": "%.0f",
                        "vertical": False,
                        "position_x": 0.5,
                        "position_y": 0.015,
                        "width": 0.3,
                        "height": 0.07,
                        "title_font_size": 12,
                        "label_font_size": 11,
                    },
                    **common,
                )
            self.actors["track"].append(a)
        else:
            self.track_points = np.zeros((0, 3))
        self.marker_points: dict[str, np.ndarray] = {}
        for k, m in scene.markers.items():
            if not len(m):
                continue
            pts = lifted(m.glyphs)
            self.marker_points[k] = np.asarray(pts.points)
            if k == "finding":
                sev = np.array(
                    [{"error": 2, "warning": 1}.get(scene.findings[int(i)].severity, 0) for i in m.ids]
                )
                pts.point_data["severity"] = sev
                from matplotlib.colors import ListedColormap

                cm = ListedColormap([SEVERITY_COLORS[s] for s in ("info", "warning", "error")])
                a = p.add_mesh(
                    pts,
                    scalars="severity",
                    cmap=cm,
                    clim=(-0.5, 2.5),
                    show_scalar_bar=False,
                    point_size=16 * scene.glyph_size,
                    render_points_as_spheres=True,
                    name="glyph-finding",
                    lighting=False,
                )
                self.actors["audit"].append(a)
            elif k == "signal" and scene.extra.get("signal_aspect") is not None:
                from matplotlib.colors import ListedColormap

                pts.point_data["aspect"] = np.asarray(scene.extra["signal_aspect"], dtype=np.int64)
                a = p.add_mesh(
                    pts,
                    scalars="aspect",
                    cmap=ListedColormap(list(ASPECT_COLORS)),
                    clim=(-0.5, len(ASPECT_COLORS) - 0.5),
                    show_scalar_bar=False,
                    point_size=(MARKER_PX[k] + 4) * scene.glyph_size,
                    render_points_as_spheres=True,
                    name=f"glyph-{k}",
                    lighting=False,
                )
                self._aspect_glyphs = pts
                self.actors["markers"].append(a)
            else:
                a = p.add_mesh(
                    pts,
                    color=MARKER_COLORS[k],
                    point_size=MARKER_PX[k] * scene.glyph_size,
                    render_points_as_spheres=True,
                    name=f"glyph-{k}",
                    lighting=False,
                )
                self.actors["markers"].append(a)
        if scene.gaps is not None and scene.gaps.n_points:
            self.actors["audit"].append(
                p.add_mesh(lifted(scene.gaps), color=GAP_COLOR, line_width=5, lighting=False, name="gaps")
            )
        self._path_arrows: list[tuple[np.ndarray, np.ndarray, str]] = []
        for j, ov in enumerate(scene.paths):
            self._add_path(pv, j, ov)
        if scene.trains is not None and scene.trains.n_points:
            self.set_trains(scene.trains)
        self._legend()
        self._title = p.add_text(scene.title, font_size=10, position="upper_left", name="title")
        self._info = None
        self.camera = V.frame(self._frame_points(), view, self.window_size)
        self.apply_camera(self.camera)

    def _add_path(self, pv, j: int, ov) -> None:  # noqa: ANN001
        """A path over the track: its line (wide, in its colour), glyphs at its start,
        end, reversals, waits and booked stops; arrowheads in :meth:`_overlays`."""
        p, e, base = self.plotter, self.exaggeration, self.base
        line = ov.line
        if len(line):
            pieces = [q[np.isfinite(q[:, 0])] for q in np.split(line, np.flatnonzero(np.isnan(line[:, 0])))]
            pieces = [q for q in pieces if len(q) >= 2]
            if pieces:
                pts = V.exaggerate(np.vstack(pieces), e, base) + [0.0, 0.0, 0.5]
                offs = np.concatenate([[0], np.cumsum([len(q) for q in pieces])]).astype(np.int64)
                mesh = pv.PolyData(pts, lines=_polyline_cells(offs))
                self.actors["paths"].append(
                    p.add_mesh(
                        mesh, color=ov.color, line_width=7, lighting=False, name=f"path-{j}", opacity=0.8
                    )
                )
        if len(ov.arrows):
            at = V.exaggerate(ov.arrows[:, 0], e, base)
            self._path_arrows.append((at, ov.arrows[:, 1], ov.color))
        for kind, color in PATH_POINT_COLORS.items():
            q = [pt for k, pt, _t in ov.points if k == kind]
            if not q:
                continue
            g = pv.PolyData(V.exaggerate(np.array(q), e, base))
            self.actors["paths"].append(
                p.add_mesh(
                    g,
                    color=color,
                    point_size=12 * self.scene.glyph_size,
                    render_points_as_spheres=True,
                    lighting=False,
                    name=f"path-{j}-{kind}",
                )
            )

    # -- camera and projection

    def _frame_points(self) -> np.ndarray:
        sc = self.scene
        if sc.focus is not None:
            return V.exaggerate(sc.focus, self.exaggeration, self.base)
        pts = [self.track_points] + [v for k, v in self.marker_points.items() if k != "finding"]
        pts = [q for q in pts if len(q)]
        return np.vstack(pts) if pts else np.zeros((1, 3))

    def apply_camera(self, cam: V.Camera) -> None:
        c = self.plotter.camera
        c.parallel_projection = cam.parallel
        c.position, c.focal_point, c.up = cam.position, cam.focal_point, cam.up
        if cam.parallel:
            c.parallel_scale = cam.parallel_scale
        c.view_angle = cam.view_angle
        # The clipping range follows the camera: a stale one cut north-south routes.
        self.plotter.renderer.reset_camera_clipping_range()
        self.camera = cam
        self._overlays()

    def current_camera(self) -> V.Camera:
        c = self.plotter.camera
        return V.Camera(
            tuple(c.position),
            tuple(c.focal_point),
            tuple(c.up),
            bool(c.parallel_projection),
            float(c.parallel_scale),
            float(c.view_angle),
        )

    def project(self, points: np.ndarray) -> np.ndarray:
        """Pixels (x from the left, y from the bottom) of already exaggerated points,
        through VTK's own camera matrix."""
        cam = self.plotter.camera
        w, h = self.window_size
        mat = cam.GetCompositeProjectionTransformMatrix(w / h, -1, 1)
        m = np.array([[mat.GetElement(i, j) for j in range(4)] for i in range(4)])
        q = np.c_[np.asarray(points, dtype=np.float64).reshape(-1, 3), np.ones(len(points))] @ m.T
        with np.errstate(divide="ignore", invalid="ignore"):
            ndc = q[:, :2] / q[:, 3:4]
        ndc[q[:, 3] <= 0] = np.nan
        return np.column_stack([(ndc[:, 0] + 1) * 0.5 * w, (ndc[:, 1] + 1) * 0.5 * h])

    # -- overlays

    def _legend(self) -> None:
        sc = self.scene
        entries = []
        if sc.color_by == "kind" and sc.track.n_points:
            present = set(np.unique(sc.track.cell_data["kind"]).tolist())
            entries += [[f"track: {KIND_NAMES[i]}", KIND_COLORS[i]] for i in range(3) if i in present]
        names = {k.kind: k.name for k in I.KINDS}
        aspects = sc.extra.get("signal_aspect")
        for k in MARKER_KINDS:
            if not len(sc.markers.get(k, ())):
                continue
            if k == "signal" and aspects is not None:
                # Every category the replay shows at any time, so that the legend stays put.
                shown = set(sc.extra.get("signal_aspect_used", np.unique(aspects).tolist()))
                entries += [
                    [ASPECT_NAMES[i], ASPECT_COLORS[i]] for i in range(len(ASPECT_NAMES)) if i in shown
                ]
            else:
                entries.append([names[k], MARKER_COLORS[k]])
        if "finding" in sc.markers and len(sc.markers["finding"]):
            sevs = {f.severity for f in sc.findings}
            entries += [[f"audit {s}", SEVERITY_COLORS[s]] for s in ("error", "warning", "info") if s in sevs]
        if sc.gaps is not None and sc.gaps.n_points:
            entries.append(["gap in a node", GAP_COLOR])
        for ov in sc.paths:
            entries.append([f"path: {ov.name}", ov.color])
        self._legend_box = None
        if not entries:
            return
        from vtkmodules.vtkRenderingCore import vtkTextActor

        w, h = self.window_size
        font, row = 12, 17
        width = 26 + 0.62 * font * max(len(t) for t, _c in entries)
        x0, top = w - width - 10, h - 10
        self._legend_box = ((x0 - 4) / w, (top - row * len(entries) - 4) / h, 1.0, 1.0)
        self._legend_actors: list = []
        from vtkmodules.vtkCommonCore import vtkPoints, vtkUnsignedCharArray
        from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
        from vtkmodules.vtkRenderingCore import vtkActor2D, vtkPolyDataMapper2D

        pts, polys, colors = vtkPoints(), vtkCellArray(), vtkUnsignedCharArray()
        colors.SetNumberOfComponents(3)
        for j, (text, color) in enumerate(entries):
            y = top - row * (j + 1)
            self._text2d(vtkTextActor, text, x0 + 20, y, size=font, bg=True, layer=self._legend_actors)
            polys.InsertNextCell(4)
            for dx, dy in ((2, 2), (14, 2), (14, 14), (2, 14)):
                polys.InsertCellPoint(pts.InsertNextPoint(x0 + dx, y + dy - 1, 0))
            colors.InsertNextTuple3(*(int(255 * c) for c in _rgb(color)))
        pd = vtkPolyData()
        pd.SetPoints(pts)
        pd.SetPolys(polys)
        pd.GetCellData().SetScalars(colors)
        mapper = vtkPolyDataMapper2D()
        mapper.SetInputData(pd)
        actor = vtkActor2D()
        actor.SetMapper(mapper)
        self.plotter.renderer.add_actor(actor, reset_camera=False, pickable=False)
        self._legend_actors.append(actor)

    def _overlays(self) -> None:
        """Scale bar, north arrow and labels for the current camera (again after each
        interaction in a window)."""
        from vtkmodules.vtkCommonCore import vtkPoints
        from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
        from vtkmodules.vtkRenderingCore import vtkActor2D, vtkPolyDataMapper2D, vtkTextActor

        r = self.plotter.renderer
        for a in self._overlay_actors:
            r.remove_actor(a, reset_camera=False, render=False)
        self._overlay_actors = []
        w, h = self.window_size
        cam = self.current_camera()
        mpp = cam.metres_per_pixel(h)
        segs: list[tuple[tuple[float, float], tuple[float, float]]] = []
        # scale bar: a round length near a fifth of the width, bottom left
        L = V.nice_length(mpp * w * 0.2)
        px = L / mpp if mpp > 0 else 0
        x0, y0 = 0.03 * w, 0.035 * h
        if px > 4:
            segs += [
                ((x0, y0), (x0 + px, y0)),
                ((x0, y0 - 4), (x0, y0 + 4)),
                ((x0 + px, y0 - 4), (x0 + px, y0 + 4)),
                ((x0 + px / 2, y0 - 2), (x0 + px / 2, y0 + 2)),
            ]
            text = f"{L / 1000:g} km" if L >= 1000 else f"{L:g} m"
            if not cam.parallel:
                text += " (at centre)"
            if self.exaggeration != 1.0:
                text += f"   heights x{self.exaggeration:.3g}"
            self._text2d(vtkTextActor, text, x0, y0 + 7)
        # north arrow: the screen direction of north at the focal point, bottom right
        f = np.asarray(cam.focal_point)
        ends = V.project(cam, np.array([f, f + [0.0, mpp * 40, 0.0]]), (w, h))
        d = ends[1] - ends[0]
        n = float(np.hypot(*d)) if np.isfinite(d).all() else 0.0
        d = d / n if n > 1e-6 else np.array([0.0, 1.0])
        c = np.array([w - 40.0, 50.0])
        tip, tail = c + d * 22, c - d * 22
        side = np.array([-d[1], d[0]])
        segs += [
            (tuple(tail), tuple(tip)),
            (tuple(tip), tuple(tip - d * 9 + side * 6)),
            (tuple(tip), tuple(tip - d * 9 - side * 6)),
        ]
        self._text2d(vtkTextActor, "N", *(tip + d * 6 - [5, 0]), size=14, bold=True)
        path_segs: list[tuple[tuple, tuple, str]] = []
        if self.visible["paths"]:
            for at, u, color in self._path_arrows:
                a0 = self.project(at)
                a1 = self.project(at + u * mpp * 10)
                for q0, q1 in zip(a0, a1):
                    dd = q1 - q0
                    nn = float(np.hypot(*dd)) if np.isfinite(dd).all() else 0.0
                    if nn < 1e-6 or not (0 <= q0[0] < w and 0 <= q0[1] < h):
                        continue
                    dd = dd / nn
                    sd = np.array([-dd[1], dd[0]])
                    tip_ = q0 + dd * 6
                    for wing in (tip_ - dd * 9 + sd * 6, tip_ - dd * 9 - sd * 6):
                        path_segs.append((tuple(tip_), tuple(wing), color))
        if path_segs:
            self._segments2d(
                [(a_, b_) for a_, b_, _c in path_segs], [c_ for _a, _b, c_ in path_segs], width=3
            )
        pts = vtkPoints()
        lines = vtkCellArray()
        for a_, b_ in segs:
            i = pts.InsertNextPoint(a_[0], a_[1], 0)
            j = pts.InsertNextPoint(b_[0], b_[1], 0)
            lines.InsertNextCell(2)
            lines.InsertCellPoint(i)
            lines.InsertCellPoint(j)
        pd = vtkPolyData()
        pd.SetPoints(pts)
        pd.SetLines(lines)
        mapper = vtkPolyDataMapper2D()
        mapper.SetInputData(pd)
        actor = vtkActor2D()
        actor.SetMapper(mapper)
        actor.GetProperty().SetColor(0, 0, 0)
        actor.GetProperty().SetLineWidth(2)
        r.add_actor(actor, reset_camera=False, pickable=False)
        self._overlay_actors.append(actor)
        self._place_labels()

    def _segments2d(self, segs, colors, *, width: float = 2) -> None:  # noqa: ANN001
        """Screen-space line segments, one colour each, in the overlay layer."""
        from vtkmodules.vtkCommonCore import vtkPoints, vtkUnsignedCharArray
        from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData
        from vtkmodules.vtkRenderingCore import vtkActor2D, vtkPolyDataMapper2D

        pts, lines, cols = vtkPoints(), vtkCellArray(), vtkUnsignedCharArray()
        cols.SetNumberOfComponents(3)
        for (a_, b_), c in zip(segs, colors):
            i = pts.InsertNextPoint(a_[0], a_[1], 0)
            j = pts.InsertNextPoint(b_[0], b_[1], 0)
            lines.InsertNextCell(2)
            lines.InsertCellPoint(i)
            lines.InsertCellPoint(j)
            cols.InsertNextTuple3(*(int(255 * v) for v in _rgb(c)))
        pd = vtkPolyData()
        pd.SetPoints(pts)
        pd.SetLines(lines)
        pd.GetCellData().SetScalars(cols)
        mapper = vtkPolyDataMapper2D()
        mapper.SetInputData(pd)
        actor = vtkActor2D()
        actor.SetMapper(mapper)
        actor.GetProperty().SetLineWidth(width)
        self.plotter.renderer.add_actor(actor, reset_camera=False, pickable=False)
        self._overlay_actors.append(actor)

    def _text2d(
        self,
        cls,
        text: str,
        x: float,
        y: float,
        *,
        size: int = 12,
        bold: bool = False,
        bg: bool = False,
        layer: list | None = None,
    ):
        t = cls()
        t.SetInput(text)
        t.SetDisplayPosition(int(round(x)), int(round(y)))
        tp = t.GetTextProperty()
        tp.SetFontSize(size)
        tp.SetColor(0, 0, 0)
        tp.SetBold(bold)
        tp.SetFontFamilyToArial()
        if bg:
            tp.SetBackgroundColor(1, 1, 1)
            tp.SetBackgroundOpacity(0.75)
        self.plotter.renderer.add_actor(t, reset_camera=False, pickable=False)
        (self._overlay_actors if layer is None else layer).append(t)
        return t

    def label_candidates(self) -> tuple[np.ndarray, list[str], list[int], list[str]]:
        """Anchors (exaggerated scene points), texts, priorities and kinds of every label."""
        P, T, R, K = [], [], [], []
        for k, m in self.scene.markers.items():
            if k not in LABEL_PRIORITY or not len(m):
                continue
            if k == "finding" and not self.visible["audit"]:
                continue
            if k != "finding" and not self.visible["markers"]:
                continue
            pts = self.marker_points[k]
            for q, t in zip(pts, m.labels):
                if t:
                    P.append(q)
                    T.append(t)
                    R.append(LABEL_PRIORITY[k])
                    K.append(k)
        if self.visible["paths"]:
            for ov in self.scene.paths:
                for _k, q, t in ov.points:
                    if t:
                        P.append(V.exaggerate(q, self.exaggeration, self.base)[0])
                        T.append(t)
                        R.append(LABEL_PRIORITY["path"])
                        K.append("path")
        return np.array(P, dtype=np.float64).reshape(-1, 3), T, R, K

    def placed_labels(self) -> list[tuple[str, str, float, float, float, float]]:
        """(kind, text, x0, y0, x1, y1) of each label drawn now, in pixels."""
        return list(getattr(self, "_placed", []))

    def _place_labels(self) -> None:
        from vtkmodules.vtkRenderingCore import vtkTextActor

        r = self.plotter.renderer
        for a in self._label_actors:
            r.remove_actor(a, reset_camera=False, render=False)
        self._label_actors = []
        self._placed = []
        if not self.visible["labels"]:
            return
        P, T, R, K = self.label_candidates()
        if not len(P):
            return
        w, h = self.window_size
        px = self.project(P)
        reserved: list[tuple[float, float, float, float]] = [
            (0.0, 0.0, w, 0.13 * h),
            (0.0, min(h * 0.93, h - 56.0), 0.6 * w, h),
        ]
        if self._legend_box:
            x0, y0, x1, y1 = self._legend_box
            reserved.append((x0 * w, y0 * h, x1 * w, y1 * h))
        if getattr(self, "_speed_bar", False):  # the trains' colour bar, right
            reserved.append((0.84 * w, 0.26 * h, w, 0.7 * h))
        font = 11
        for i, x, y in V.place_labels(
            px, T, R, (w, h), font_px=font, reserved=reserved, max_labels=max(10, int(w * h / 9000))
        ):
            bold = K[i] in ("platform", "finding")
            self._text2d(vtkTextActor, T[i], x, y, size=font, bold=bold, bg=True, layer=self._label_actors)
            self._placed.append((K[i], T[i], x, y, x + 0.62 * font * len(T[i]), y + 1.25 * font))

    # -- layers, trains, picking

    def toggle(self, layer: str, visible: bool | None = None) -> bool:
        """Show or hide a layer (see ``LAYERS``); returns whether it is now visible."""
        if layer not in LAYERS:
            raise TdbToolsError(f"no layer {layer!r} (layers: {', '.join(LAYERS)})")
        on = (not self.visible[layer]) if visible is None else bool(visible)
        self.visible[layer] = on
        for a in self.actors[layer]:
            a.SetVisibility(on)
        self._overlays()  # labels, and the paths' arrowheads
        return on

    def set_trains(
        self,
        mesh,
        scalars: np.ndarray | None = None,
        clim: tuple[float, float] | None = None,
        lift: float = 0.3,
    ):
        """Show car boxes (true heights: each box is raised with the exaggerated track,
        not stretched; ``lift``: the floor's height above the rail as :func:`train_boxes`
        made it); ``scalars`` per box colour them (e.g. speed)."""
        pts = np.asarray(mesh.points, dtype=np.float64).copy()
        if self.exaggeration != 1.0 and len(pts):
            # Each floor corner sits on the exaggerated rail under it (the box follows
            # the drawn slope, else its ends cut into or float over the track); the
            # body keeps its true height above the floor.
            boxes = pts.reshape(-1, 8, 3)
            floor = boxes[:, :4, 2].copy()
            rail = floor - lift
            new_floor = self.base + (rail - self.base) * self.exaggeration + lift
            boxes[:, :4, 2] = new_floor
            boxes[:, 4:, 2] += new_floor - floor
            pts = boxes.reshape(-1, 3)
        if getattr(self, "_trains", None) is None:
            m = mesh.copy(deep=True)
            m.points = pts
            if scalars is not None:
                self._speed_bar = True
                m.cell_data["speed_kmh"] = np.repeat(np.asarray(scalars, dtype=np.float64), 6)
                a = self.plotter.add_mesh(
                    m,
                    scalars="speed_kmh",
                    cmap="plasma",
                    clim=clim,
                    name="trains",
                    scalar_bar_args={
                        "title": "train speed (km/h)",
                        "vertical": True,
                        "position_x": 0.9,
                        "position_y": 0.3,
                        "width": 0.05,
                        "height": 0.35,
                        "fmt": "%.0f",
                        "n_labels": 4,
                        "title_font_size": 11,
                        "label_font_size": 10,
                    },
                )
            else:
                a = self.plotter.add_mesh(m, color="black", name="trains")
            self._trains = m
            self.actors["trains"] = [a]
        else:
            self._trains.points = pts
            if scalars is not None:
                self._trains.cell_data["speed_kmh"] = np.repeat(np.asarray(scalars, dtype=np.float64), 6)
        return pts

    def set_signal_aspects(self, codes: np.ndarray) -> None:
        """Recolour the signal glyphs (codes as ``scene.extra["signal_aspect"]``); the scene
        must have been built with aspects."""
        g = getattr(self, "_aspect_glyphs", None)
        if g is None:
            raise TdbToolsError("this view was built without signal aspects")
        g.point_data["aspect"] = np.asarray(codes, dtype=np.int64)
        g.Modified()

    def pick(self, x: float, y: float, radius: float = 8.0) -> dict | None:
        """What is drawn at pixel (x, y) (from the bottom left), within ``radius`` pixels:
        an audit finding, else an item or node marker, else the track (node, section,
        offset, grade, curvature); None if nothing is near."""
        best: tuple[float, str, int] | None = None
        kinds: tuple[str, ...] = (
            "finding",
            "platform",
            "signal",
            "speedpost",
            "milepost",
            "siding",
            "levelcr",
            "crossover",
            "soundregion",
            "carspawner",
            "junction",
            "end",
        )
        order = [
            k
            for k in kinds
            if k in self.marker_points and self.visible["audit" if k == "finding" else "markers"]
        ]
        for k in order:
            px = self.project(self.marker_points[k])
            d = np.hypot(px[:, 0] - x, px[:, 1] - y)
            d[~np.isfinite(d)] = np.inf
            j = int(np.argmin(d)) if len(d) else -1
            if j >= 0 and d[j] <= radius:
                best = (float(d[j]), k, j)
                break
        sc = self.scene
        if best is not None:
            _d, k, j = best
            m = sc.markers[k]
            i = int(m.ids[j])
            if k == "finding":
                f = sc.findings[i]
                return {
                    "kind": "finding",
                    "code": f.code,
                    "severity": f.severity,
                    "message": f.message,
                    "nodes": list(f.nodes),
                    "items": list(f.items),
                }
            if k in ("junction", "end"):
                return {"kind": k, "node": i}
            table = sc.road_items if k in I.ROAD_KINDS else sc.items
            return {"kind": k, **_item_info(table[i])}
        if not len(self.track_points) or not self.visible["track"]:
            return None
        px = self.project(self.track_points)
        d = np.hypot(px[:, 0] - x, px[:, 1] - y)
        d[~np.isfinite(d)] = np.inf
        j = int(np.argmin(d))
        if d[j] > radius:
            return None
        pd = sc.track.point_data
        out = {
            "kind": "track",
            "node": int(pd["node"][j]),
            "section": int(pd["section"][j]),
            "section_id": int(pd["section_id"][j]),
            "offset_m": round(float(pd["offset_m"][j]), 2),
            "grade_permille": round(float(pd["grade"][j]), 2),
            "curvature_per_km": round(float(pd["curvature_per_km"][j]), 3),
        }
        if "speed_kmh" in pd:
            out["speed_limit_kmh"] = round(float(pd["speed_kmh"][j]), 1)
        if "lat" in pd and np.isfinite(pd["lat"][j]):
            out["lat"] = round(float(pd["lat"][j]), 6)
            out["lon"] = round(float(pd["lon"][j]), 6)
        return out

    # -- output

    def screenshot(self) -> np.ndarray:
        self.plotter.render()
        return np.asarray(self.plotter.screenshot(return_img=True))

    def close(self) -> None:
        self.plotter.close()

    def click(self, x: float, y: float) -> dict | None:
        """What a click at pixel (x, y) shows: :meth:`pick`, written in the lower right
        corner of the window (and returned)."""
        from vtkmodules.vtkRenderingCore import vtkTextActor

        info = self.pick(x, y)
        text = "nothing here" if info is None else "\n".join(f"{k}: {v}" for k, v in info.items())
        self.info_text = text
        # Upper left, below the title and the help line, hanging down: the bottom right
        # holds the north arrow, the bottom the colour bar and the scale bar.
        r = self.plotter.renderer
        old = getattr(self, "_pick_actor", None)
        if old is not None:
            r.remove_actor(old, reset_camera=False, render=False)
        t = self._text2d(vtkTextActor, text, 10, self.window_size[1] - 52, size=11, bg=True, layer=[])
        t.GetTextProperty().SetVerticalJustificationToTop()
        self._pick_actor = t
        return info

    def key(self, key: str) -> bool | None:
        """A key press: 1–5 toggle a layer (``LAYER_KEYS``); returns the layer's new state."""
        layer = LAYER_KEYS.get(key)
        return None if layer is None else self.toggle(layer)

    def interact(self) -> None:
        """Open the window: click a track or marker for its data; keys 1–5 toggle layers."""
        p = self.plotter

        def on_click(*_a):
            self.click(*p.iren.get_event_position())
            p.render()

        def after(*_a):
            self.camera = self.current_camera()
            self._overlays()

        p.iren.add_observer("LeftButtonPressEvent", on_click)
        p.iren.add_observer("EndInteractionEvent", after)
        p.iren.add_observer("MouseWheelForwardEvent", after)
        p.iren.add_observer("MouseWheelBackwardEvent", after)
        for k in LAYER_KEYS:
            p.add_key_event(k, lambda k=k: (self.key(k), p.render()))
        from vtkmodules.vtkRenderingCore import vtkTextActor

        # The second line under the title (it covered the title at the upper edge).
        self._text2d(
            vtkTextActor,
            "click: what is this   keys: " + "  ".join(f"{k} {v}" for k, v in LAYER_KEYS.items()),
            10,
            self.window_size[1] - 44,
            size=10,
            layer=[],
        )
        p.show()


def _plotter(
    scene: Scene,
    window_size: tuple[int, int],
    off_screen: bool,
    *,
    labels: bool = True,
    view: str = "map",
    exaggerate: float | None = None,
) -> SceneView:
    return SceneView(
        scene, window_size, off_screen=off_screen, view=view, exaggerate=exaggerate, labels=labels
    )


def as_scene(scene: Scene | Route) -> Scene:
    """``scene``, or the default scene of a route (:func:`build_scene` with its
    defaults): every drawing function takes either."""
    if isinstance(scene, Route):
        return build_scene(scene)
    if not isinstance(scene, Scene):
        raise TdbToolsError(f"expected a Route or a Scene, not {type(scene).__name__}")
    return scene


def render_png(
    scene: Scene | Route,
    out: str | Path,
    *,
    window_size: tuple[int, int] = (1280, 960),
    labels: bool = True,
    view: str = "map",
    exaggerate: float | None = None,
) -> Path:
    """Render the scene (or a route's default scene) offscreen to a PNG (atomically)."""
    scene = as_scene(scene)
    check_renderer()
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp.png")
    sv = SceneView(scene, window_size, view=view, exaggerate=exaggerate, labels=labels)
    try:
        sv.plotter.screenshot(str(tmp), return_img=False)
        tmp.replace(out)
    finally:
        sv.close()
        tmp.unlink(missing_ok=True)
    return out


def screenshot(
    scene: Scene | Route,
    *,
    window_size: tuple[int, int] = (640, 480),
    labels: bool = True,
    view: str = "map",
    exaggerate: float | None = None,
) -> np.ndarray:
    """The rendered scene (or a route's default scene) as an RGB array (height, width, 3)."""
    scene = as_scene(scene)
    check_renderer()
    sv = SceneView(scene, window_size, view=view, exaggerate=exaggerate, labels=labels)
    try:
        return sv.screenshot()
    finally:
        sv.close()


def show(
    scene: Scene | Route,
    *,
    window_size: tuple[int, int] = (1280, 960),
    view: str = "map",
    exaggerate: float | None = None,
) -> None:
    """An interactive window (needs a display): picking and layer keys, see
    :meth:`SceneView.interact`."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        raise TdbToolsError("no display for an interactive window: use --out FILE.png|.html|.mp4|.gif")
    scene = as_scene(scene)
    SceneView(scene, window_size, off_screen=False, view=view, exaggerate=exaggerate).interact()
