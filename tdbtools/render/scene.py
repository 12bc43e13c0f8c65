"""3-D scenes of a route with pyvista/VTK: track, junctions, end nodes, track items,
a tile grid, and trains from a replay (see :mod:`tdbtools.render.animate`).

pyvista and VTK are imported inside the functions that need them, so
``import tdbtools.render`` stays light; without them, or without a working OpenGL,
every entry point raises a clear :class:`~tdbtools.errors.TdbToolsError`.

**Frame.** MSTS's world is left-handed (X east, Y up, Z north); the scene is
right-handed with z up::

    scene (x, y, z) = (X − X0, Z − Z0, Y)

with absolute X = tile_x·2048 + x, Z = tile_z·2048 + z and ``scene.origin = (X0, Z0)``
the centre of the route's tile extent (subtracted because OpenGL works in float32:
absolute coordinates of ~10⁷ m would be quantised to a metre). East is +x, north is
+y, up is +z; seen from above, the map is the right way round.

**Colours** (``color_by``): ``"kind"`` colours each vector node by what its ends link
to: 0 ``link`` (junction/vector at both ends), 1 ``spur`` (one end at an end node),
2 ``isolated`` (end nodes at both ends); ``"grade"`` colours by the grade in ‰
(+ = rising in the node's direction; clipped to ±40 ‰ for the colour map);
``"speed"`` by the speed limit in km/h (the route's limit, changed by the limit
speed posts along a node in its forward direction).
"""
from __future__ import annotations

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
from ..formats.tdb import EndNode, JunctionNode, PlatformItem, SidingItem, SignalItem, SpeedPostItem

TILE = 2048.0
COLOR_BY = ("kind", "grade", "speed")
MARKER_KINDS = ("junction", "end", "signal", "speedpost", "platform", "siding")
MARKER_COLORS = {"junction": "gold", "end": "red", "signal": "limegreen", "speedpost": "orange",
                 "platform": "deepskyblue", "siding": "violet"}
NO_RENDERER = ("no renderer: 3-D pictures need a working OpenGL. On Debian/Ubuntu: "
               "apt-get install libegl1 libgl1 libgl1-mesa-dri (offscreen, no display needed)")
NO_PYVISTA = "3-D pictures need pyvista: pip install 'tdbtools[render]' (pyvista, imageio, imageio-ffmpeg)"

__all__ = ["Scene", "Markers", "build_scene", "render_png", "show", "check_renderer", "to_scene",
           "train_boxes", "COLOR_BY", "NO_RENDERER"]


def _pv():
    try:
        import pyvista
    except ImportError:
        raise TdbToolsError(NO_PYVISTA) from None
    return pyvista


# -- renderer detection ----------------------------------------------------------------

_PROBE = """
import pyvista as pv
p = pv.Plotter(off_screen=True, window_size=(32, 32))
p.add_mesh(pv.Cube())
img = p.screenshot(return_img=True)
p.close()
assert img is not None and img.shape[:2] == (32, 32), img
print("ok", img.shape)
"""
_probe_cache: tuple[bool, str] | None = None


def _probe(timeout: float = 60.0) -> tuple[bool, str]:
    """Render a 32×32 cube offscreen in a child process (a broken GL may crash it, not
    us). Returns (works, detail)."""
    try:
        r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                           timeout=timeout, env={**os.environ, "PYVISTA_OFF_SCREEN": "true"})
    except subprocess.TimeoutExpired:
        return False, f"a test render took more than {timeout:.0f} s"
    except OSError as exc:
        return False, str(exc)
    if r.returncode == 0 and r.stdout.startswith("ok"):
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
    indices), ``labels`` (empty strings: no label) and the glyph mesh."""

    kind: str
    points: np.ndarray
    ids: np.ndarray
    labels: tuple[str, ...]
    glyphs: Any   # pyvista.PolyData

    def __len__(self) -> int:
        return len(self.points)


@dataclass(eq=False)
class Scene:
    """A route as pyvista meshes (see the module docstring for the frame)."""

    route_name: str
    color_by: str
    origin: tuple[float, float]          # (X0, Z0) absolute metres subtracted
    track: Any                           # PolyData: one line cell per vector node
    scalars: str                         # the track array coloured by
    clim: tuple[float, float]
    markers: dict[str, Markers]
    grid: Any                            # PolyData: tile boundaries
    glyph_size: float
    trains: Any = None                   # PolyData of car boxes, or None
    title: str = ""
    extra: dict = field(default_factory=dict)

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
        ends = sum(1 for p in (n.pins if n is not None else ())
                   if 0 < p.link < len(tdb) and isinstance(tdb[p.link], EndNode))
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
    horiz[valid] = 0.0            # no segment from a polyline's end to the next's start
    rise[valid] = 0.0
    seg = np.concatenate([np.hypot(horiz, rise), [0.0]])
    cum = np.concatenate([[0.0], np.cumsum(seg[:-1])])
    starts = offsets[:-1]
    counts = np.diff(offsets)
    s = cum - np.repeat(cum[starts], counts) if len(starts) else cum
    return s, np.concatenate([horiz, [0.0]]), np.concatenate([rise, [0.0]])


def _grade_points(points: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    _s, horiz, rise = _along(points, offsets)
    g = np.divide(rise, horiz, out=np.zeros_like(rise), where=horiz > 1e-6) * 1000.0
    last = offsets[1:] - 1
    ok = (last > offsets[:-1])
    g[last[ok]] = g[last[ok] - 1]     # a polyline's last point takes its last segment's grade
    return g


def _speed_points(route: Route, points: np.ndarray, offsets: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    from ..track.traveller import item_positions

    base = float(route.trk.speed_limit) * 3.6 if getattr(route.trk, "speed_limit", None) else math.nan
    s, _h, _r = _along(points, offsets)
    out = np.full(len(points), base)
    pos = item_positions(route)
    for k, n in enumerate(nodes):
        posts = [(p.offset, p.item.speed_ms) for p in pos.get(int(n), ())
                 if isinstance(p.item, SpeedPostItem) and p.item.is_limit and p.item.speed_ms]
        if not posts:
            continue
        a, b = int(offsets[k]), int(offsets[k + 1])
        off = np.array([p[0] for p in posts])
        val = np.array([p[1] * 3.6 for p in posts])
        j = np.searchsorted(off, s[a:b], side="right") - 1
        out[a:b] = np.where(j >= 0, val[np.maximum(j, 0)], out[a:b])
    return out


def _item_label(it) -> str:
    if isinstance(it, SpeedPostItem):
        if it.speed_ms:
            return f"{it.speed_ms * 3.6:.0f}"
        return "" if it.value is None else f"{it.value:g}"
    if isinstance(it, PlatformItem):
        return it.platform_name or it.station
    if isinstance(it, SidingItem):
        return it.siding_name
    if isinstance(it, SignalItem):
        return it.signal_type
    return ""


def _glyph_mesh(pv, kind: str, points: np.ndarray, size: float):
    """Copies of a small template mesh at each point (numpy, no VTK filter)."""
    if kind == "junction":
        tpl = pv.Sphere(radius=size * 0.5, theta_resolution=10, phi_resolution=8)
    elif kind == "end":
        tpl = pv.Cube(x_length=size, y_length=size, z_length=size)
    elif kind == "signal":
        tpl = pv.Cone(center=(0, 0, size * 0.75), direction=(0, 0, -1), height=size * 1.5,
                      radius=size * 0.4, resolution=8)
    elif kind == "speedpost":
        tpl = pv.Cylinder(center=(0, 0, size * 0.5), direction=(0, 0, 1), radius=size * 0.35,
                          height=size, resolution=8)
    else:  # platform, siding
        tpl = pv.Cube(center=(0, 0, size * 0.25), x_length=size * 1.6, y_length=size * 1.6,
                      z_length=size * 0.5)
    tpl = tpl.triangulate()
    tp = np.asarray(tpl.points, dtype=np.float64)
    tf = np.asarray(tpl.faces, dtype=np.int64).reshape(-1, 4)
    n = len(points)
    if n == 0:
        return pv.PolyData()
    pts = (points[:, None, :] + tp[None, :, :]).reshape(-1, 3)
    shift = (np.arange(n, dtype=np.int64) * len(tp))[:, None, None]
    faces = tf[None, :, :].copy().repeat(n, axis=0)
    faces[:, :, 1:] += shift
    return pv.PolyData(pts, faces.reshape(-1))


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


def build_scene(route: Route, *, color_by: str = "kind", max_chord_error: float = 0.5,
                glyph_size: float | None = None) -> Scene:
    """The scene of a route: track polylines (one line cell per vector node, coloured
    by ``color_by``), junction and end-node glyphs, signal/speed-post/platform/siding
    glyphs with labels, and the grid of 2048 m tiles. No rendering happens here."""
    if color_by not in COLOR_BY:
        raise TdbToolsError(f"color_by must be one of {', '.join(COLOR_BY)}, not {color_by!r}")
    pv = _pv()
    from ..track.geometry import sample_route

    ext = route.tile_extent()
    origin = ((0.5 * (ext["tile_x_min"] + ext["tile_x_max"]) * TILE,
               0.5 * (ext["tile_z_min"] + ext["tile_z_max"]) * TILE) if ext else (0.0, 0.0))
    poly = sample_route(route, max_chord_error=max_chord_error)
    P = np.asarray(poly.points, dtype=np.float64)
    offsets = np.asarray(poly.offsets, dtype=np.int64)
    nodes = np.asarray(poly.nodes, dtype=np.int64)
    pts = to_scene(P[:, 0], P[:, 1], P[:, 2], origin) if len(P) else np.zeros((0, 3))
    track = pv.PolyData(pts, lines=_polyline_cells(offsets)) if len(nodes) else pv.PolyData()
    if len(nodes):
        track.cell_data["node"] = nodes
        kind = _node_kind(route, nodes)
        track.cell_data["kind"] = kind
        grade = _grade_points(P, offsets)
        track.point_data["grade"] = grade
        if color_by == "speed":
            track.point_data["speed_kmh"] = _speed_points(route, P, offsets, nodes)
    scalars, clim = {"kind": ("kind", (0.0, 2.0)), "grade": ("grade", (-40.0, 40.0)),
                     "speed": ("speed_kmh", (0.0, 160.0))}[color_by]
    if color_by == "speed" and len(nodes):
        v = track.point_data["speed_kmh"]
        v = v[np.isfinite(v)]
        if len(v):
            clim = (0.0, max(float(v.max()), 10.0))
    if glyph_size is None:
        b = track.bounds if track.n_points else (0, 1, 0, 1, 0, 0)
        span = max(b[1] - b[0], b[3] - b[2], 100.0)
        glyph_size = max(span * 0.006, 4.0)
    # markers
    groups: dict[str, tuple[list, list, list]] = {k: ([], [], []) for k in MARKER_KINDS}
    for n in route.tdb.nodes[1:]:
        if isinstance(n, (JunctionNode, EndNode)) and n.uid is not None:
            u = n.uid
            g = groups["junction" if isinstance(n, JunctionNode) else "end"]
            g[0].append((u.tile_x * TILE + u.x, u.y, u.tile_z * TILE + u.z))
            g[1].append(n.index)
            g[2].append("")
    item_cls = {"signal": SignalItem, "speedpost": SpeedPostItem, "platform": PlatformItem, "siding": SidingItem}
    for it in route.tdb.items:
        for k, cls in item_cls.items():
            if isinstance(it, cls) and it.r_data is not None:
                r = it.r_data
                g = groups[k]
                g[0].append((r.tile_x * TILE + r.x, r.y, r.tile_z * TILE + r.z))
                g[1].append(it.index)
                g[2].append(_item_label(it))
    markers = {}
    for k, (xyz, ids, labels) in groups.items():
        a = np.array(xyz, dtype=np.float64).reshape(-1, 3)
        sp = to_scene(a[:, 0], a[:, 1], a[:, 2], origin) if len(a) else np.zeros((0, 3))
        markers[k] = Markers(k, sp, np.array(ids, dtype=np.int64), tuple(labels),
                             _glyph_mesh(pv, k, sp, glyph_size))
    zmin = float(pts[:, 2].min()) - 1.0 if len(pts) else 0.0
    title = f"{route.name}: colour by {color_by}"
    return Scene(route.name, color_by, origin, track, scalars, clim, markers,
                 _grid(pv, route, origin, zmin), glyph_size, title=title)


# -- trains ------------------------------------------------------------------------------


def train_boxes(front: np.ndarray, rear: np.ndarray, length, width, height,
                lift: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
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
    sx = np.array([-1, 1, 1, -1, -1, 1, 1, -1], dtype=np.float64)   # along
    sy = np.array([-1, -1, 1, 1, -1, -1, 1, 1], dtype=np.float64)   # lateral
    sz = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=np.float64)       # up
    pts = (c[:, None, :]
           + (0.5 * L)[:, None, None] * sx[None, :, None] * d[:, None, :]
           + (0.5 * W)[:, None, None] * sy[None, :, None] * lat[:, None, :]
           + (lift + H[:, None, None] * sz[None, :, None]) * vert[:, None, :])
    quads = np.array([[0, 3, 2, 1], [4, 5, 6, 7], [0, 1, 5, 4], [1, 2, 6, 5], [2, 3, 7, 6], [3, 0, 4, 7]],
                     dtype=np.int64)
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


def _plotter(scene: Scene, window_size: tuple[int, int], off_screen: bool, *, labels: bool = True):
    pv = _pv()
    p = pv.Plotter(off_screen=off_screen, window_size=list(window_size), theme=_theme(pv))
    if scene.grid.n_points:
        p.add_mesh(scene.grid, color="lightgrey", line_width=1, name="grid")
    if scene.track.n_points:
        if scene.color_by == "kind":
            bar = {"title": "node kind: 0 link, 1 spur, 2 isolated", "n_labels": 3, "fmt": "%.0f"}
            cmap: str | list[str] = ["#1f4e9c", "#2ca02c", "#d62728"]
        elif scene.color_by == "grade":
            bar = {"title": "grade (permille)", "n_labels": 5, "fmt": "%.0f"}
            cmap = "coolwarm"
        else:
            bar = {"title": "speed limit (km/h)", "n_labels": 5, "fmt": "%.0f"}
            cmap = "viridis"
        p.add_mesh(scene.track, scalars=scene.scalars, cmap=cmap, clim=scene.clim, line_width=3,
                   scalar_bar_args={**bar, "vertical": False, "position_x": 0.3, "position_y": 0.02,
                                    "width": 0.4, "height": 0.06, "title_font_size": 12,
                                    "label_font_size": 11},
                   lighting=False, name="track", nan_color="grey")
    for k, m in scene.markers.items():
        if len(m):
            p.add_mesh(m.glyphs, color=MARKER_COLORS[k], name=f"glyph-{k}")
    if labels:
        pts, text = [], []
        for k in ("platform", "siding", "speedpost", "signal"):
            m = scene.markers[k]
            for q, t in zip(m.points, m.labels):
                if t:
                    pts.append(q + (0.0, 0.0, scene.glyph_size * 1.5))
                    text.append(t)
        if pts:
            p.add_point_labels(np.array(pts), text, font_size=10, shape_opacity=0.5, show_points=False,
                               always_visible=True, name="labels")
    if scene.trains is not None and scene.trains.n_points:
        p.add_mesh(scene.trains, color="black", name="trains")
    p.add_text(scene.title, font_size=10, position="upper_left", name="title")
    p.view_xy()
    if scene.track.n_points:
        p.reset_camera(bounds=scene.track.bounds)
    p.camera.Elevation(-25.0)   # a little tilted, from the south (VTK method)
    return p


def render_png(scene: Scene, out: str | Path, *, window_size: tuple[int, int] = (1280, 960),
               labels: bool = True) -> Path:
    """Render the scene offscreen to a PNG (atomically)."""
    check_renderer()
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp.png")
    p = _plotter(scene, window_size, True, labels=labels)
    try:
        p.screenshot(str(tmp), return_img=False)
        tmp.replace(out)
    finally:
        p.close()
        tmp.unlink(missing_ok=True)
    return out


def screenshot(scene: Scene, *, window_size: tuple[int, int] = (640, 480), labels: bool = True) -> np.ndarray:
    """The rendered scene as an RGB array (height, width, 3)."""
    check_renderer()
    p = _plotter(scene, window_size, True, labels=labels)
    try:
        return np.asarray(p.screenshot(return_img=True))
    finally:
        p.close()


def show(scene: Scene, *, window_size: tuple[int, int] = (1280, 960)) -> None:
    """An interactive window (needs a display)."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise TdbToolsError("no display for an interactive window: use --out FILE.png|.mp4|.gif")
    _pv()
    p = _plotter(scene, window_size, False)
    p.show()
