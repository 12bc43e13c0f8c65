"""A self-contained interactive page of a route scene (one .html file, opens in any
browser without Python or a network): plotly.js's WebGL 3-D scatter, embedded in the
file. Pan, zoom and rotate with the mouse; the legend shows and hides each layer;
hovering a track point or a marker shows its data; two buttons switch between the
top-down map and the exaggerated 3-D view. Why plotly: docs/render.md §7.
"""

from __future__ import annotations

import html as _html
import math
from pathlib import Path

import numpy as np

from .._fs import write_bytes_atomic
from ..errors import TdbToolsError
from ..formats.route import Route
from . import items as I
from . import view as V
from .scene import (
    GAP_COLOR,
    KIND_COLORS,
    KIND_NAMES,
    LABEL_PRIORITY,
    MARKER_COLORS,
    MARKER_KINDS,
    PATH_POINT_COLORS,
    SEVERITY_COLORS,
    Scene,
    _item_info,
    auto_exaggeration,
)
from .sceneview import as_scene

NO_PLOTLY = "an HTML page needs plotly: pip install 'tdbtools[render]' (plotly)"
MARKER_NAMES = {
    "junction": "junctions",
    "end": "ends of track",
    "signal": "signals",
    "speedpost": "speed posts",
    "milepost": "mileposts",
    "platform": "platforms",
    "siding": "sidings",
    "crossover": "crossovers",
    "levelcr": "level crossings",
    "soundregion": "sound regions",
    "carspawner": "car spawners",
}
#: Layers shown when the page opens; the others are one legend click away.
SHOWN = ("platform", "signal", "siding", "speedpost", "milepost", "levelcr", "end")

__all__ = ["write_html", "figure"]


def _go():
    try:
        import plotly.graph_objects as go  # type: ignore[import-untyped]
    except ImportError:
        raise TdbToolsError(NO_PLOTLY) from None
    return go


def _with_breaks(points: np.ndarray, offsets: np.ndarray, *cols: np.ndarray) -> list[np.ndarray]:
    """Polylines as one array with a NaN row between lines (plotly breaks the line there)."""
    n = len(offsets) - 1
    idx = np.arange(len(points)) + np.repeat(np.arange(n), np.diff(offsets))
    out = []
    for c in (points, *cols):
        c = np.asarray(c, dtype=np.float64)
        shape = (len(points) + n - 1,) + c.shape[1:]
        a = np.full(shape, np.nan)
        a[idx] = c
        out.append(a)
    return out


def _hover_item(info: dict) -> str:
    return "<br>".join(f"{_html.escape(str(k))}: {_html.escape(str(v))}" for k, v in info.items())


def _marker_notes(scene: Scene) -> list[tuple[np.ndarray, str, str, int, bool]]:
    """(point, text, layer, priority, bold) of every label the page may show: each
    layer's names (a station once, sidings, signals, speed limits, mileposts), audit
    findings and path points. Which are shown is decided in the page (``_FIT_JS``)."""
    out = []
    for k in MARKER_KINDS:
        m = scene.markers.get(k)
        if m is None or not len(m) or k not in LABEL_PRIORITY:
            continue
        out += [
            (p, t, MARKER_NAMES[k], LABEL_PRIORITY[k], k == "platform")
            for p, t in zip(m.points, m.labels)
            if t
        ]
    for ov in scene.paths:
        layer = _html.escape(f"path: {ov.name}")  # the name is the file's: text, never markup
        out += [(p, t, layer, LABEL_PRIORITY["path"], False) for _k, p, t in ov.points if t]
    return out


def figure(scene: Scene, *, exaggerate: float | None = None):
    """The plotly figure of a scene (see :func:`write_html`)."""

    go = _go()
    tr = scene.track
    pts = np.asarray(tr.points, dtype=np.float64) if tr.n_points else np.zeros((0, 3))
    base = float(pts[:, 2].min()) if len(pts) else 0.0
    e = auto_exaggeration(scene) if exaggerate is None else float(exaggerate)
    if not (math.isfinite(e) and e > 0):
        raise TdbToolsError(f"exaggerate must be a positive number, not {exaggerate}")
    traces = []
    # Text drawn inside WebGL costs seconds per label set in plotly; labels are SVG
    # annotations pinned to 3-D points instead (they follow the camera as well). Each
    # has its layer and priority in ``meta``: the page shows those that fit.
    notes: list[dict] = []
    note_meta: list[list] = []  # [priority, layer or "", fixed]

    def note(p, text, layer="", priority=0, fixed=False, **kw):
        notes.append(_note(p, text, **kw))
        note_meta.append([priority, layer, fixed])

    if len(pts):
        pd = tr.point_data
        offsets = _offsets_from_nodes(np.asarray(pd["node"]))
        cols = [
            pd["node"],
            pd["section"],
            pd["section_id"],
            pd["offset_m"],
            pd["grade"],
            pd["curvature_per_km"],
        ]
        hover = (
            "node %{customdata[0]:.0f}, section %{customdata[1]:.0f} (id %{customdata[2]:.0f})<br>"
            "offset %{customdata[3]:.1f} m<br>grade %{customdata[4]:.2f} ‰<br>"
            "curvature %{customdata[5]:.3f} /km"
        )
        if "lat" in pd:
            cols += [pd["lat"], pd["lon"]]
            hover += "<br>lat %{customdata[6]:.6f}, lon %{customdata[7]:.6f}"
        hover += "<extra>track</extra>"
        custom = np.column_stack(cols)
        if scene.color_by == "kind":
            kind_pt = np.repeat(np.asarray(tr.cell_data["kind"]), np.diff(offsets))
            for ki, name in enumerate(KIND_NAMES):
                sel_cells = np.flatnonzero(np.asarray(tr.cell_data["kind"]) == ki)
                if not len(sel_cells):
                    continue
                mask = kind_pt == ki
                sub_off = np.concatenate([[0], np.cumsum(np.diff(offsets)[sel_cells])])
                P, C = _with_breaks(pts[mask], sub_off, custom[mask])
                P, C = P.astype(np.float32), C.astype(np.float64)
                traces.append(
                    go.Scatter3d(
                        x=P[:, 0],
                        y=P[:, 1],
                        z=P[:, 2],
                        mode="lines",
                        name=f"track: {name}",
                        line=dict(color=KIND_COLORS[ki], width=5),
                        customdata=C,
                        hovertemplate=hover,
                        legendgroup="track",
                    )
                )
        else:
            vals = np.asarray(pd[scene.scalars], dtype=np.float64)
            P, C, S = _with_breaks(pts, offsets, custom, vals)
            P, S = P.astype(np.float32), S.astype(np.float32)
            title = "grade ‰" if scene.color_by == "grade" else "limit km/h"
            scale = (
                [[0, "#1f4fb4"], [0.5, "#9a9a9a"], [1, "#c41a1a"]] if scene.color_by == "grade" else "Viridis"
            )
            traces.append(
                go.Scatter3d(
                    x=P[:, 0],
                    y=P[:, 1],
                    z=P[:, 2],
                    mode="lines",
                    name="track",
                    line=dict(
                        color=np.nan_to_num(S),
                        colorscale=scale,
                        cmin=scene.clim[0],
                        cmax=scene.clim[1],
                        width=5,
                        showscale=True,
                        colorbar=dict(title=dict(text=title), len=0.5, y=0.3, thickness=14),
                    ),
                    customdata=C,
                    hovertemplate=hover,
                    legendgroup="track",
                )
            )
    for k in MARKER_KINDS:
        m = scene.markers.get(k)
        if m is None or not len(m):
            continue
        if k in ("junction", "end"):
            text = [f"{k} node {int(i)}" for i in m.ids]
        else:
            table = scene.road_items if k in I.ROAD_KINDS else scene.items
            text = [_hover_item(_item_info(table[int(i)])) for i in m.ids]
        traces.append(
            go.Scatter3d(
                x=m.points[:, 0],
                y=m.points[:, 1],
                z=m.points[:, 2],
                mode="markers",
                name=MARKER_NAMES[k],
                marker=dict(size=5 if k != "platform" else 7, color=MARKER_COLORS[k]),
                hovertext=text,
                hoverinfo="text",
                visible=True if k in SHOWN else "legendonly",
            )
        )
    for p, t, layer, prio, bold in _marker_notes(scene):
        note(p, t, layer, prio, bold=bold)
    f = scene.markers.get("finding")
    if f is not None and len(f):
        sev = [scene.findings[int(i)].severity for i in f.ids]
        text = [
            _hover_item(
                {
                    "code": scene.findings[int(i)].code,
                    "severity": s,
                    "message": scene.findings[int(i)].message,
                }
            )
            for i, s in zip(f.ids, sev)
        ]
        traces.append(
            go.Scatter3d(
                x=f.points[:, 0],
                y=f.points[:, 1],
                z=f.points[:, 2],
                mode="markers",
                name="audit findings",
                marker=dict(size=10, color=[SEVERITY_COLORS[s] for s in sev], symbol="diamond"),
                hovertext=text,
                hoverinfo="text",
            )
        )
        for p, t, s in zip(f.points, _cluster_labels(f.points, list(f.labels), sev), sev):
            if t:
                note(p, t, "audit findings", LABEL_PRIORITY["finding"], color=SEVERITY_COLORS[s])
    if scene.gaps is not None and scene.gaps.n_points:
        g = np.asarray(scene.gaps.points)
        P = np.full((len(g) // 2 * 3, 3), np.nan)
        P[0::3], P[1::3] = g[0::2], g[1::2]
        traces.append(
            go.Scatter3d(
                x=P[:, 0],
                y=P[:, 1],
                z=P[:, 2],
                mode="lines",
                name="gaps in nodes",
                line=dict(color=GAP_COLOR, width=8),
                hoverinfo="skip",
                legendgroup="audit findings",
            )
        )
    frame_pts = pts if scene.focus is None else np.asarray(scene.focus)
    span_all = float(np.ptp(frame_pts[:, :2], axis=0).max()) if len(frame_pts) else 1.0
    for ov in scene.paths:
        traces += _path_traces(go, ov, max(span_all, 1.0))
    # scale bar and north arrow, as 3-D objects so that they stay true when turned;
    # below the framed place (the route, or the focus), so they are in view with it
    extra: list = []
    if len(frame_pts):
        lo, hi = frame_pts.min(axis=0), frame_pts.max(axis=0)
        span = float(max(hi[0] - lo[0], hi[1] - lo[1], 1.0))
        L = V.nice_length(span * 0.2)
        y0 = lo[1] - 0.04 * span
        z0 = base
        label = f"{L / 1000:g} km" if L >= 1000 else f"{L:g} m"
        traces.append(
            go.Scatter3d(
                x=[lo[0], lo[0] + L],
                y=[y0, y0],
                z=[z0, z0],
                mode="lines",
                name="scale bar",
                line=dict(color="black", width=6),
                hoverinfo="skip",
            )
        )
        note((lo[0] + L / 2, y0, z0), label, "scale bar", 100, fixed=True, yanchor="top")
        # the arrow's tip at the scale bar's height: below the place, so it never covers track
        ax, ay = lo[0] + L + 0.06 * span, y0 - 0.08 * span
        traces.append(
            go.Scatter3d(
                x=[ax, ax, ax - 0.012 * span, ax, ax + 0.012 * span],
                y=[ay, ay + 0.08 * span, ay + 0.055 * span, ay + 0.08 * span, ay + 0.055 * span],
                z=[z0] * 5,
                mode="lines",
                name="north arrow",
                line=dict(color="black", width=5),
                hoverinfo="skip",
            )
        )
        note((ax, ay + 0.08 * span, z0), "N", "north arrow", 100, fixed=True, bold=True, yanchor="bottom")
        extra = [[lo[0], y0 - 0.02 * span, z0], [lo[0] + L, y0, z0], [ax, ay, z0], [ax, ay + 0.09 * span, z0]]
    fig = go.Figure(traces)
    fig.layout.meta = {"tdb_frame_extra": extra, "tdb_notes": note_meta}
    # The aspect ratio of the whole route (every point stays in the scene, so a focus
    # page pans to the rest of the route); the page's script zooms onto the frame.
    all_pts = pts if len(pts) else frame_pts
    ext = np.ptp(all_pts, axis=0) if len(all_pts) else np.ones(3)
    ext = np.maximum(ext, 1.0)
    big = float(max(ext[0], ext[1]))
    ratio = dict(x=ext[0] / big, y=ext[1] / big, z=max(ext[2] * e / big, 0.02))
    map_cam = dict(
        eye=dict(x=0, y=0, z=2.2),
        up=dict(x=0, y=1, z=0),
        center=dict(x=0, y=0, z=0),
        projection=dict(type="orthographic"),
    )
    d3_cam = dict(
        eye=dict(x=-0.5, y=-1.5, z=0.9),
        up=dict(x=0, y=0, z=1),
        center=dict(x=0, y=0, z=-0.1),
        projection=dict(type="perspective"),
    )
    axis = dict(visible=False)
    fig.update_layout(
        title=dict(text=_html.escape(scene.title) + f"  (3-D heights x{e:.3g})", x=0.01, font=dict(size=15)),
        paper_bgcolor="white",
        margin=dict(l=0, r=0, t=40, b=40),
        hovermode="closest",
        legend=dict(
            orientation="h",
            x=0.0,
            y=0.0,
            yanchor="top",
            bgcolor="rgba(255,255,255,0.8)",
            title=dict(text="layers (click to show/hide):"),
        ),
        scene=dict(
            aspectmode="manual",
            aspectratio=ratio,
            camera=map_cam,
            dragmode="orbit",
            annotations=notes,
            xaxis=axis,
            yaxis=axis,
            zaxis=axis,
        ),
        updatemenus=[
            dict(
                type="buttons",
                direction="right",
                x=0.62,
                xanchor="left",
                y=1.0,
                yanchor="bottom",
                buttons=[
                    dict(
                        label="map (top-down)",
                        method="relayout",
                        args=[{"scene.camera": map_cam, "scene.aspectratio": ratio}],
                    ),
                    dict(
                        label="3-D",
                        method="relayout",
                        args=[{"scene.camera": d3_cam, "scene.aspectratio": ratio}],
                    ),
                ],
            )
        ],
    )
    return fig


def _path_traces(go, ov, span: float) -> list:  # noqa: ANN001
    """A path's line, arrowheads (chevrons 1.2 % of the frame long) and points."""
    group = _html.escape(f"path: {ov.name}")  # the name is the file's: text, never markup
    out = []
    if len(ov.line):
        L = ov.line.astype(np.float32)
        out.append(
            go.Scatter3d(
                x=L[:, 0],
                y=L[:, 1],
                z=L[:, 2] + 0.5,
                mode="lines",
                name=group,
                legendgroup=group,
                line=dict(color=ov.color, width=9),
                opacity=0.8,
                hovertext=_html.escape(f"{ov.name}: {ov.length / 1000:.2f} km"),
                hoverinfo="text",
            )
        )
    if len(ov.arrows):
        a = 0.012 * span
        rows = []
        for p, u in ov.arrows:
            side = np.array([-u[1], u[0], 0.0])
            tip = p + u * a * 0.5
            rows += [tip - u * a + side * a * 0.6, tip, tip - u * a - side * a * 0.6, [np.nan] * 3]
        A = np.array(rows, dtype=np.float32)
        out.append(
            go.Scatter3d(
                x=A[:, 0],
                y=A[:, 1],
                z=A[:, 2] + 0.6,
                mode="lines",
                name=group,
                legendgroup=group,
                showlegend=False,
                line=dict(color=ov.color, width=6),
                hoverinfo="skip",
            )
        )
    if ov.points:
        P = np.array([p for _k, p, _t in ov.points])
        out.append(
            go.Scatter3d(
                x=P[:, 0],
                y=P[:, 1],
                z=P[:, 2] + 0.7,
                mode="markers",
                name=group,
                legendgroup=group,
                showlegend=False,
                marker=dict(size=8, color=[PATH_POINT_COLORS[k] for k, _p, _t in ov.points], symbol="circle"),
                hovertext=[_html.escape(f"{ov.name}: {k} {t}") for k, _p, t in ov.points],
                hoverinfo="text",
            )
        )
    return out


def _note(p, text: str, *, bold: bool = False, color: str = "black", yanchor: str = "bottom") -> dict:
    return dict(
        x=float(p[0]),
        y=float(p[1]),
        z=float(p[2]),
        text=f"<b>{_html.escape(text)}</b>" if bold else _html.escape(text),
        showarrow=False,
        xanchor="left",
        yanchor=yanchor,
        xshift=4,
        font=dict(size=12, color=color),
        bgcolor="rgba(255,255,255,0.7)",
    )


def _cluster_labels(points: np.ndarray, labels: list[str], severity: list[str]) -> list[str]:
    """Text for finding markers without a pile of overlapping labels: the most severe
    finding of each cluster (8 % of the extent) is labelled, with how many it stands for."""
    rank = {"error": 0, "warning": 1, "info": 2}
    span = float(np.ptp(points[:, :2], axis=0).max()) if len(points) > 1 else 1.0
    r = 0.08 * max(span, 1.0)
    order = sorted(range(len(labels)), key=lambda i: (rank.get(severity[i], 3), i))
    heads: list[int] = []
    count: dict[int, int] = {}
    for i in order:
        near = [h for h in heads if np.hypot(*(points[i, :2] - points[h, :2])) < r]
        if near:
            count[near[0]] += 1
        else:
            heads.append(i)
            count[i] = 1
    return [
        (labels[i] + (f" (+{count[i] - 1})" if count[i] > 1 else "")) if i in count else ""
        for i in range(len(labels))
    ]


def _offsets_from_nodes(node: np.ndarray) -> np.ndarray:
    change = np.flatnonzero(node[1:] != node[:-1]) + 1
    return np.concatenate([[0], change, [len(node)]]).astype(np.int64)


#: Runs in the page after plotting (docs/render.md §7): zooms and centres the camera on
#: the route (or the focus) so that it fills the plot with a margin, now and after each
#: view button; then places the labels as the pictures do: in order of priority, each
#: beside its point where it overlaps no label already placed, nor the legend, title or
#: buttons, else hidden; again after each zoom, pan, turn or layer toggle.
#: window.tdbProject gives the pixel of a data point (used by the browser tests).
_FIT_JS = """
(function () {
  var gd = document.getElementById('{plot_id}');
  var FRAME = %s;
  var NOTES = (gd.layout.meta && gd.layout.meta.tdb_notes) || [];
  var sizes = null, placing = false, busy = true, timer = null;
  function mul(m, v) { var o = [0, 0, 0, 0]; for (var i = 0; i < 4; i++) for (var j = 0; j < 4; j++) o[i] += m[j * 4 + i] * v[j]; return o; }
  function canvasRect() { return gd.querySelector('.gl-container canvas').getBoundingClientRect(); }
  window.tdbProject = function (p) {
    var sc = gd._fullLayout.scene._scene, cp = sc.glplot.cameraParams, ds = sc.dataScale;
    var v = [p[0] * ds[0], p[1] * ds[1], p[2] * ds[2], 1];
    v = mul(cp.projection, mul(cp.view, mul(cp.model, v)));
    var r = canvasRect();
    if (v[3] <= 0) return [NaN, NaN];
    return [r.left + (v[0] / v[3] + 1) / 2 * r.width, r.top + (1 - (v[1] / v[3] + 1) / 2) * r.height];
  };
  function model(p) {   // a data point in the camera's (normalised) scene coordinates
    var sc = gd._fullLayout.scene._scene, cp = sc.glplot.cameraParams, ds = sc.dataScale;
    return mul(cp.model, [p[0] * ds[0], p[1] * ds[1], p[2] * ds[2], 1]);
  }
  function state() {
    var r = canvasRect();
    var x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9, behind = false;
    var lo = [1e18, 1e18, 1e18], hi = [-1e18, -1e18, -1e18];
    FRAME.forEach(function (p) { var q = window.tdbProject(p); if (!isFinite(q[0]) || !isFinite(q[1])) behind = true;
      x0 = Math.min(x0, q[0]); x1 = Math.max(x1, q[0]); y0 = Math.min(y0, q[1]); y1 = Math.max(y1, q[1]);
      for (var k = 0; k < 3; k++) { lo[k] = Math.min(lo[k], p[k]); hi[k] = Math.max(hi[k], p[k]); } });
    if (behind) return {f: 2, off: 0, mid: null};   // part of the frame is behind the camera: step back
    // a perspective view keeps a wider margin
    var k = gd._fullLayout.scene.camera.projection.type === 'orthographic' ? 1.0 : 0.85;
    var f = Math.max((x1 - x0) / (0.86 * k * r.width), (y1 - y0) / (0.80 * k * (r.height - 40)));
    var off = Math.max(Math.abs((x0 + x1) / 2 - (r.left + r.width / 2)) / r.width,
                       Math.abs((y0 + y1) / 2 - (r.top + (r.height - 40) / 2)) / r.height);
    return {f: f, off: off, mid: [(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2]};
  }
  function fit(n) {
    var sc = gd._fullLayout.scene._scene;
    if (!sc || !sc.glplot || !sc.glplot.cameraParams) return;
    var s = state();
    if (!(s.f > 0) || (Math.abs(s.f - 1) < 0.03 && s.off < 0.01) || n <= 0) {
      requestAnimationFrame(function () { requestAnimationFrame(function () { place(true); }); });
      return;
    }
    var cam = gd._fullLayout.scene.camera, upd = {}, f = s.f;
    var ortho = cam.projection.type === 'orthographic';
    var c = s.mid ? model(s.mid) : [cam.center.x, cam.center.y, cam.center.z];
    if (ortho) {   // plotly zooms an orthographic view by the aspect ratio (the model scales with it)
      var ar = gd._fullLayout.scene.aspectratio;
      // heights keep their scale: a focus on 300 m of a 200 km route would otherwise
      // stretch them past the camera, and WebGL clips the whole track away
      upd['scene.aspectratio'] = {x: ar.x / f, y: ar.y / f, z: ar.z};
      c = [c[0] / f, c[1] / f, c[2]];
      f = 1;
    }
    var e = cam.eye, o = cam.center;
    // centred on the frame (a focus page shows its place, yet every point of the route
    // stays in the scene, to pan to), the eye moved with the centre
    upd['scene.camera.center'] = {x: c[0], y: c[1], z: c[2]};
    upd['scene.camera.eye'] = {x: c[0] + (e.x - o.x) * f, y: c[1] + (e.y - o.y) * f, z: c[2] + (e.z - o.z) * f};
    Plotly.relayout(gd, upd).then(function () { requestAnimationFrame(function () { fit(n - 1); }); });
  }
  function measure() {
    sizes = {};
    gd.querySelectorAll('.annotation-scene').forEach(function (el) {
      var i = +el.getAttribute('data-index'), b = el.getBoundingClientRect();
      if (isFinite(i) && b.width > 0) sizes[i] = [b.width, b.height];
    });
  }
  function boxOf(sel) {
    var el = gd.querySelector(sel); if (!el) return null;
    var b = el.getBoundingClientRect(); return b.width > 0 ? [b.left, b.top, b.right, b.bottom] : null;
  }
  function hit(b, boxes, pad) {
    for (var j = 0; j < boxes.length; j++) { var o = boxes[j];
      if (b[0] < o[2] + pad && b[2] + pad > o[0] && b[1] < o[3] + pad && b[3] + pad > o[1]) return true; }
    return false;
  }
  function place(first) {
    var anns = (gd.layout.scene && gd.layout.scene.annotations) || [];   // _fullLayout drops a hidden one's place
    if (!anns.length) { busy = false; gd.dataset.fitted = '1'; return; }
    if (!sizes) measure();
    var shown = {};
    gd._fullData.forEach(function (t) { if (t.visible === true) shown[t.name] = true; });
    var r = canvasRect(), boxes = [];
    ['.legend', '.gtitle', '.updatemenu-container', '.colorbar'].forEach(function (q) {
      gd.querySelectorAll(q).forEach(function (el) { var b = el.getBoundingClientRect();
        if (b.width > 0) boxes.push([b.left, b.top, b.right, b.bottom]); }); });
    var order = anns.map(function (a, i) { return i; });
    order.sort(function (a, b) { return ((NOTES[b] || [0])[0] - (NOTES[a] || [0])[0]) || (a - b); });
    var upd = {}, placed = 0;
    order.forEach(function (i) {
      var a = anns[i], meta = NOTES[i] || [0, '', false], key = 'scene.annotations[' + i + ']';
      var sz = sizes[i] || [7.5 * String(a.text).length + 8, 20];
      var q = window.tdbProject([a.x, a.y, a.z]);
      var ok = meta[1] === '' || shown[meta[1]] || meta[2];
      var spot = null;
      if (ok && isFinite(q[0]) && q[0] >= r.left && q[0] <= r.right && q[1] >= r.top && q[1] <= r.bottom) {
        var spots = meta[2] ? [[a.xanchor, a.yanchor, a.xshift, a.yshift]] :
          [['left', 'bottom', 6, 4], ['right', 'bottom', -6, 4], ['left', 'top', 6, -4], ['right', 'top', -6, -4]];
        for (var s = 0; s < spots.length && !spot; s++) {
          var sp = spots[s], x0 = q[0] + sp[2] - (sp[0] === 'right' ? sz[0] : sp[0] === 'center' ? sz[0] / 2 : 0);
          var y1 = q[1] - sp[3] + (sp[1] === 'top' ? sz[1] : sp[1] === 'middle' ? sz[1] / 2 : 0);
          var b = [x0, y1 - sz[1], x0 + sz[0], y1];
          if (meta[2] || (b[0] >= r.left && b[2] <= r.right && b[1] >= r.top && b[3] <= r.bottom && !hit(b, boxes, 4))) {
            spot = sp; boxes.push(b);
          }
        }
      }
      var vis = !!spot;
      if ((a.visible !== false) !== vis) upd[key + '.visible'] = vis;
      if (spot && !meta[2] && (a.xanchor !== spot[0] || a.yanchor !== spot[1] || a.xshift !== spot[2])) {
        upd[key + '.xanchor'] = spot[0]; upd[key + '.yanchor'] = spot[1];
        upd[key + '.xshift'] = spot[2]; upd[key + '.yshift'] = spot[3];
      }
      if (vis) placed++;
    });
    gd.dataset.labels = String(placed);
    placedSig = sig();
    var done = function () { placing = false; busy = false; placedSig = sig(); requestAnimationFrame(function () { requestAnimationFrame(function () { gd.dataset.fitted = '1'; }); }); };
    if (Object.keys(upd).length) { placing = true; Plotly.relayout(gd, upd).then(done); } else done();
  }
  function later() {
    if (placing || busy) return;
    gd.dataset.fitted = '';
    clearTimeout(timer); timer = setTimeout(function () { placedSig = sig(); place(false); }, 120);
  }
  // Every way the view changes (drag, wheel, buttons, relayout) changes the camera
  // matrices: when they have changed and then held still for a moment, place again.
  var placedSig = '', lastSig = '';
  function sig() {
    var sc = gd._fullLayout.scene._scene; if (!sc || !sc.glplot || !sc.glplot.cameraParams) return '';
    var cp = sc.glplot.cameraParams, r = canvasRect();
    return [cp.view, cp.projection, cp.model].map(function (m) { return Array.prototype.map.call(m, function (v) { return v.toPrecision(6); }).join(','); }).join('|') + r.width + 'x' + r.height;
  }
  setInterval(function () {
    if (placing || busy) return;
    var s = sig();
    if (s !== lastSig) { lastSig = s; return; }
    if (s !== placedSig) later();
  }, 150);
  window.tdbPlace = later;
  window.tdbFit = function () { busy = true; gd.dataset.fitted = ''; requestAnimationFrame(function () { fit(8); }); };
  gd.on('plotly_buttonclicked', function () { setTimeout(window.tdbFit, 0); });
  gd.on('plotly_restyle', later);
  window.tdbFit();
})();
"""


def _frame_points(scene: Scene, n: int = 1500) -> list:
    pts = scene.focus if scene.focus is not None else np.asarray(scene.track.points)
    if len(pts) == 0:
        return []
    step = max(1, len(pts) // n)
    return np.round(np.asarray(pts)[::step], 2).tolist()


def _vendored_plotlyjs() -> str | None:
    """plotly.js's 3-D bundle shipped with tdbtools (vendor/README.md), if it matches the
    plotly.js version of the installed plotly; else None (the full bundle is embedded)."""
    from importlib.resources import files

    try:
        from plotly.offline import get_plotlyjs_version  # type: ignore[import-untyped]

        text = (files(__package__) / "vendor" / "plotly-gl3d.min.js").read_text(encoding="utf-8")
    except (ImportError, OSError):
        return None
    head = text[:200]
    if f"v{get_plotlyjs_version()}" not in head:
        return None
    return text.replace("</script", "<\\/script")


def write_html(scene: Scene | Route, out: str | Path, *, exaggerate: float | None = None) -> Path:
    """Write the scene (or a route's default scene) as one self-contained HTML page
    (plotly.js embedded; no network or Python needed to open it), atomically."""
    import json

    scene = as_scene(scene)

    fig = figure(scene, exaggerate=exaggerate)
    out = Path(out)
    bundle = _vendored_plotlyjs()
    page = fig.to_html(
        include_plotlyjs=bundle is None,
        full_html=True,
        include_mathjax=False,
        config={"displaylogo": False, "scrollZoom": True, "responsive": True},
        default_width="100%",
        default_height="96vh",
        post_script=_FIT_JS % json.dumps(_frame_points(scene) + fig.layout.meta["tdb_frame_extra"]),
    )
    head = f"<head>\n    <title>{_html.escape(scene.title)}</title>"
    if bundle is not None:
        head += f'\n    <script type="text/javascript">{bundle}</script>'
    page = page.replace("<head>", head, 1)
    write_bytes_atomic(out, page.encode("utf-8"))
    return out
